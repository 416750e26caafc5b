// The symmetry reduction is proven equal to the full replay on programs it was not written
// for: seeded random programs of 1-4 collectives (every kind, random axes and axis slices,
// latency- to bandwidth-bound sizes, one- and two-way, random `after` so that some run
// concurrently) on random meshes up to 4x4x8, with and without wraparound, on one to four DCN
// slices (more than two reduce to two, or to one where nothing crosses the DCN). Every chip's start and end of every op must agree within 1e-9 relative.
// A share of the cases (kPerturbedShare, from their own seeded stream, so the other cases stay
// as they were) add perturbations (topology/perturbation.hpp): slow chips, links with less
// bandwidth or more latency, degraded NICs, selected as one chip, a box or the whole mesh
// (the last invariant, so the reduction keeps its part of them), with a compute op the slow
// chips feel and a collective after it; 40% of those also draw random stragglers
// (topology/stragglers.hpp: every chip slow with some probability, each by its own factor).
// The hop model stays `floor`: under `additive`, blocks
// shorter than SimGrid's 1 ns timing precision make reduced and full differ by about one
// block's transfer time whatever the perturbations (docs/modelling.md, known limits);
// tests/test_perturbation_replay.cpp checks the additive model's extra latency separately.
//
// Another share (kUnevenShare, from a third stream) adds MoE-shaped work that differs by
// position: an AllToAll with per-pair sizes (some pairs empty) and a compute op whose time
// depends on the chip's coordinates (ProgramOp::vary_axes), with a collective after both; the
// reduction must keep those axes whole and may still reduce the others.
//
// The default suite runs kDefaultCases cases. For thousands:
//   PODSIM_PROPERTY_CASES=3000 build/tests/podsim_tests "[property]"
// PODSIM_PROPERTY_SEED=<n> changes the seed; a failure prints the case index and its program,
// and PODSIM_PROPERTY_CASE=<index> replays that one case alone.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "generated_programs.hpp"
#include "seeded_rng.hpp"
#include "sim/engine/run.hpp"
#include "topology/stragglers.hpp"

using namespace podsim;
using podsim_test::env_int;
using podsim_test::Rng;
using podsim_test::Case;
using podsim_test::close;
using podsim_test::generate;

namespace {

constexpr int kDefaultCases = 240;
constexpr uint64_t kDefaultSeed = 20261122;

}  // namespace

TEST_CASE("generated programs: the reduced replay equals the full replay on every chip", "[replay][property]") {
  const uint64_t seed = static_cast<uint64_t>(env_int("PODSIM_PROPERTY_SEED", static_cast<int>(kDefaultSeed)));
  const int cases = env_int("PODSIM_PROPERTY_CASES", kDefaultCases);
  const int only = env_int("PODSIM_PROPERTY_CASE", -1);
  int reduced_cases = 0, drawn_cases = 0;
  int perturbed_cases = 0, perturbed_reduced_cases = 0, perturbation_kept_axes = 0, failed_cases = 0;
  int uneven_cases = 0, uneven_reduced_cases = 0, slice_reduced_cases = 0;
  for (int index = (only >= 0 ? only : 0); index < (only >= 0 ? only + 1 : cases); ++index) {
    const int uneven_before = uneven_cases;
    const Case c = generate(seed, index, uneven_cases);
    const bool uneven = uneven_cases > uneven_before;
    INFO("seed " << seed << " case " << index << ": " << c.description);
    std::optional<RunResult> reduced_run, full_run;
    try {
      reduced_run.emplace(run_program(c.topology, c.settings, c.program, {Fidelity::Auto, false, {}}));
      full_run.emplace(run_program(c.topology, c.settings, c.program, {Fidelity::Full, false, {}}));
    } catch (const std::invalid_argument& e) {
      // The generator may ask for what podsim refuses (e.g. a slice that does not tile): both
      // modes must refuse it alike.
      INFO(e.what());
      CHECK_THROWS_AS(run_program(c.topology, c.settings, c.program, {Fidelity::Full, false, {}}), std::invalid_argument);
      continue;
    }
    const RunResult& reduced = *reduced_run;
    const RunResult& full = *full_run;
    // Drawn stragglers slow chips all over the mesh, so those cases rarely reduce: the share of
    // reduced cases is counted without them.
    const bool drawn = c.description.find("{stragglers") != std::string::npos;
    drawn_cases += drawn ? 1 : 0;
    if (!drawn && reduced.simulated.chip_count() < full.simulated.chip_count()) ++reduced_cases;
    if (uneven && reduced.simulated.chip_count() < full.simulated.chip_count()) ++uneven_reduced_cases;
    if (reduced.simulated.slice_count() < full.simulated.slice_count()) ++slice_reduced_cases;
    // A failed link breaks every translation but along its line (tests/generated_programs.hpp):
    // those cases are counted on their own.
    const bool failed = c.description.find("{failed link") != std::string::npos;
    failed_cases += failed ? 1 : 0;
    if (!c.topology.perturbations.empty()) {
      ++perturbed_cases;
      if (!failed && reduced.simulated.chip_count() < full.simulated.chip_count()) ++perturbed_reduced_cases;
      for (const auto& axis : reduced.reduction.axes) {
        if (axis.reason.find("perturbation") != std::string::npos) ++perturbation_kept_axes;
      }
    }
    int wrong = 0;
    std::string first;
    for (ChipId chip = 0; chip < full.topology.chip_count(); ++chip) {
      for (int op = 0; op < static_cast<int>(c.program.size()); ++op) {
        const auto& r = reduced.span(op, 0, chip);
        const auto& f = full.span(op, 0, chip);
        if (!close(r.start_s, f.start_s) || !close(r.end_s, f.end_s)) {
          if (wrong++ == 0) {
            std::ostringstream o;
            o.precision(17);
            o << "chip " << full.topology.chip_name(chip) << " op " << op << ": reduced [" << r.start_s << ", "
              << r.end_s << "] full [" << f.start_s << ", " << f.end_s << "]";
            first = o.str();
          }
        }
      }
    }
    INFO("reduced to " << reduced.simulated.chip_count() << " of " << full.topology.chip_count() << " chips; "
                       << wrong << " spans differ, first: " << first);
    CHECK(wrong == 0);
    // What the reports read off the spans agrees too: each op's time, its median and most over
    // the chips (chip_times.hpp: a median weighted by the simulated chips' classes on the
    // reduced mesh) and each chip's wait for peers (from its instance's last entry).
    const double tolerance = 1e-9 * full.total_time_s;
    auto near = [&](double a, double b) { return std::abs(a - b) <= tolerance; };
    int figures_wrong = 0;
    for (int op = 0; op < static_cast<int>(c.program.size()); ++op) {
      const OperationResult& r = reduced.operations[op];
      const OperationResult& f = full.operations[op];
      if (!near(r.time_s, f.time_s) || !near(r.chip_time_median_s, f.chip_time_median_s) ||
          !near(r.chip_time_max_s, f.chip_time_max_s) || !near(r.wait_for_peers_median_s, f.wait_for_peers_median_s) ||
          !near(r.wait_for_peers_max_s, f.wait_for_peers_max_s)) {
        ++figures_wrong;
      }
      for (ChipId chip = 0; chip < full.topology.chip_count(); ++chip)
        if (!near(reduced.wait_for_peers_s(op, 0, chip), full.wait_for_peers_s(op, 0, chip))) ++figures_wrong;
    }
    INFO(figures_wrong << " op figures or chip waits differ");
    CHECK(figures_wrong == 0);
  }
  // The generator must exercise the reduction, not only meshes it leaves whole.
  if (only < 0) {
    INFO(reduced_cases << " of the " << cases - drawn_cases << " cases without drawn stragglers reduced; " << drawn_cases
                       << " cases drew stragglers");
    CHECK(reduced_cases * 3 >= cases - drawn_cases);
    CHECK(drawn_cases * 20 >= cases);   // about 14%: 40% of the 35% perturbed
    INFO(slice_reduced_cases << " cases simulated fewer slices than they have");
    CHECK(slice_reduced_cases * 40 >= cases);
  }
  // ... with uneven work, some of which still reduces along the axes it does not vary on.
  if (only < 0) {
    INFO(uneven_cases << " cases with uneven work, " << uneven_reduced_cases << " of them reduced");
    CHECK(uneven_cases * 5 >= cases);
    CHECK(uneven_reduced_cases * 10 >= uneven_cases);
  }
  // ... and with perturbations: some cases keep axes whole for them, some still reduce (their
  // perturbations invariant along the reduced axes).
  if (only < 0) {
    INFO(perturbed_cases << " perturbed cases, " << failed_cases << " of them with a failed link, "
                         << perturbed_reduced_cases << " of the others reduced, " << perturbation_kept_axes
                         << " axes kept whole for a perturbation");
    CHECK(perturbed_cases * 5 >= cases);
    CHECK(failed_cases * 40 >= cases);
    // 2 of the 49 without failed links reduce (5 before a third of the 3D cases became tpu7x,
    // whose perturbations pin axis C and their small meshes' other axes more often).
    CHECK(perturbed_reduced_cases * 30 >= perturbed_cases - failed_cases);
    CHECK(perturbation_kept_axes * 4 >= perturbed_cases);
  }
}
