// The development set of real TPU measurements (scenarios/real/real_tpu.measurements.yaml; issue
// 26): every row loads, names a profile per chip generation, runs its scenario on that chip,
// and converts its published figure to the step time its source implies. The simulations
// themselves run in calibrate's and validate's tests; here only what the file states.
#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "cli_helpers.hpp"
#include "sim/scenario/calibration_files.hpp"
#include "sim/scenario/published_figures.hpp"
#include "sim/scenario/scenario.hpp"

using namespace podsim;

TEST_CASE("real measurements: every row loads on its generation's chip, with its step time", "[real]") {
  const MeasurementFile file = load_measurements(podsim_test::source_path("scenarios/real/real_tpu.measurements.yaml"));
  const std::map<std::string, std::string> chip_of = {
      {"v4", "v4p"}, {"v5e", "v5e"}, {"v5p", "v5p"}, {"v6e", "v6e"}, {"tpu7x", "tpu7x"}};
  std::set<std::string> profiles;
  std::map<std::string, double> step_s;
  for (Measurement m : file.measurements) {
    INFO(m.name);
    const Scenario s = load_scenario(m.scenario_path, m.overrides);
    REQUIRE(chip_of.count(m.profile));
    CHECK(s.topology.chip.name == chip_of.at(m.profile));
    CHECK(s.topology.chip.compute_model == ComputeModel::Kernels);
    CHECK(s.topology.chip.mxu_padding);   // the MXU pads, on every real chip
    CHECK(s.topology.chip.antipodal_split);   // and rings split the opposite chip's shard (modelling.md)
    resolve_published_figure(m, s);
    CHECK(m.measured > 0);
    step_s[m.name] = m.measured;
    profiles.insert(m.profile);
  }
  CHECK(profiles == std::set<std::string>{"v4", "v5e", "v5p", "v6e", "tpu7x"});
  // 31 training steps (issue 43 added V6-T6, V6-T7 on four slice sizes and V5-T1), C1's psum,
  // P1's decode step, S2's serving run, V6-S1's six, the book's v5e AllGathers (F1's nine sizes,
  // #22, #23); issue 44's Ironwood rows: IW-C1's ten gathers, four training steps, IW-I3a
  CHECK(file.measurements.size() == 51 + 15);
  // The step times MaxText's counts imply (docs/calibration.md, "Real hardware"): T1's 328
  // TFLOP/s of 3252.4 TFLOP a chip, M3's 120 of 1279.0 (non-causal attention counted), M1's
  // 156 of 2157.3 (6 N S B only); the v6e rows are step times as printed.
  CHECK(step_s.at("T1") == Approx(9.916).epsilon(1e-3));
  CHECK(step_s.at("M3-1x") == Approx(10.66).epsilon(1e-3));
  CHECK(step_s.at("M1-1x") == Approx(13.83).epsilon(1e-3));
  CHECK(step_s.at("T14d") == 42.656);
  CHECK(step_s.at("T17") == 24.706);
  CHECK(step_s.at("V6-T6") == 6.320);
  CHECK(step_s.at("V6-T7-v6e-128") == 4.602);
  CHECK(step_s.at("V5-T1") == 24.792);
  CHECK(step_s.at("C1") == Approx(5.121e-3));
  CHECK(step_s.at("P1") == Approx(4.7e-3));
  // A rate (a field ending in _per_s) is a number, not a time.
  CHECK(step_s.at("S2") == 3663);
  CHECK(step_s.at("V6-S1-64-ttft") == Approx(251.04e-3));
  CHECK(step_s.at("V6-S1-128-tput") == Approx(3544.46));
  // F1's times are bytes / the figure's BW (book-cases.md): 4.3e9 B at 9e10 B/s.
  CHECK(step_s.at("F1-4.3e9") == Approx(4.3e9 / 9e10).epsilon(1e-3));
  CHECK(step_s.at("K22") == Approx(680e-6));
  CHECK(step_s.at("K23") == Approx(8e-6));
  // IW-C1: m x 8 x 128 f32 elements a device, the figure m x 8 x 128 x 4 B x 3 x 2 / t.
  CHECK(step_s.at("IW-C1-2x2x1-16777216") == Approx(16777216.0 * 4 * 3 * 2 / 178.7714158e9).epsilon(1e-3));
  CHECK(step_s.at("IW-T15") == 7.93);
  CHECK(step_s.at("IW-I3a") == Approx(6556.72));
}
