// A DCN transfer's fixed cost (ChipSpec::dcn_latency_s, a calibration parameter): half on each
// NIC of its path, so every message between slices pays it once, under either hop model, and
// the symmetry reduction still equals the full replay.
#include <catch2/catch.hpp>

#include "scenario_errors.hpp"
#include "sim/commands/scenario_run.hpp"
#include "sim/scenario/scenario.hpp"

using namespace podsim;

namespace {

// Two v5p 2x2 slices (one host each), an AllReduce of `bytes` over the slice axis only: a
// ring of 2, one DCN message in its ReduceScatter step and one in its AllGather step.
std::string scenario(const std::string& bytes, const std::string& extra_hardware) {
  return "version: 1\nhardware:\n  preset: v5p\n  profile: ideal\n" + extra_hardware +
         "topology: {mesh: {X: 2, Y: 2}, slices: 2}\nsimulation: {hop_model: additive}\n"
         "workload:\n  kind: collectives\n  operations:\n"
         "    - {name: ar, kind: all_reduce, axes: [], dcn: true, bytes: \"" + bytes + "\"}\n";
}

double time_s(const std::string& text, Fidelity fidelity) {
  const Scenario s = load_scenario_text(text, podsim_test::kScenarioFile);
  RunOptions options;
  options.fidelity = fidelity;
  return run_program(s.topology, simulation_settings(s), collectives_program(s), options).total_time_s;
}

}  // namespace

TEST_CASE("dcn_latency adds its cost to every DCN transfer, in full and reduced replays", "[calibrate][dcn]") {
  for (const char* bytes : {"4 kB", "64 MB"}) {
    INFO(bytes);
    const double ideal = time_s(scenario(bytes, ""), Fidelity::Full);
    const double slow = time_s(scenario(bytes, "  overrides: {dcn_latency: \"50 us\"}\n"), Fidelity::Full);
    // Two DCN messages in sequence (ReduceScatter, then AllGather), each 50 us later.
    CHECK(slow - ideal == Approx(2 * 50e-6).epsilon(1e-9));
    CHECK(time_s(scenario(bytes, "  overrides: {dcn_latency: \"50 us\"}\n"), Fidelity::Auto) ==
          Approx(slow).epsilon(1e-12));
  }
  podsim_test::require_error(scenario("4 kB", "  overrides: {dcn_latency: \"1 s\"}\n"), "hardware.overrides.dcn_latency",
                             "1 s", "overrides:");
}
