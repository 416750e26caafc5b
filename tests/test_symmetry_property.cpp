// The symmetry reduction is proven equal to the full replay on programs it was not written
// for: seeded random programs of 1-4 collectives (every kind, random axes and axis slices,
// latency- to bandwidth-bound sizes, one- and two-way, random `after` so that some run
// concurrently) on random meshes up to 4x4x8, with and without wraparound, on one or two DCN
// slices. Every chip's start and end of every op must agree within 1e-9 relative.
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

#include "seeded_rng.hpp"
#include "sim/engine/run.hpp"

using namespace podsim;
using podsim_test::env_int;
using podsim_test::Rng;

namespace {

constexpr int kDefaultCases = 240;
constexpr uint64_t kDefaultSeed = 20261122;

struct Case {
  TopologySpec topology;
  Program program;
  std::string description;
};

const char* kind_name(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::AllGather: return "AG";
    case CollectiveKind::ReduceScatter: return "RS";
    case CollectiveKind::AllReduce: return "AR";
    case CollectiveKind::AllToAll: return "A2A";
  }
  return "?";
}

Case generate(uint64_t seed, int index) {
  Rng rng = podsim_test::case_rng(seed, index);
  Case c;
  std::ostringstream d;
  // Chips: v4p (hosts 2x2x1, 3D) or v5e (hosts 4x2, 2D); sizes up to 4x4x8.
  const bool three_d = rng.chance(0.6);
  c.topology.chip = *find_chip_preset(three_d ? "v4p" : "v5e");
  const int axes = three_d ? 1 + rng.below(3) : 1 + rng.below(2);
  const int choices[] = {1, 2, 3, 4, 4, 8};
  const char* names[] = {"X", "Y", "Z"};
  int chips = 1;
  for (int a = 0; a < axes; ++a) {
    int n = choices[rng.below(6)];
    if (a == 2 && n > 4) n = 4;   // at most 4x4x8 (or 8x4x4 ...)
    if (chips * n > 128) n = 2;
    chips *= n;
    const bool wraps = n >= 2 && rng.chance(0.7);
    c.topology.axes.push_back({names[a], n, wraps});
    d << (a ? "x" : "") << n << (wraps ? "w" : "");
  }
  c.topology.slices = rng.chance(0.25) ? 2 : 1;
  if (c.topology.slices > 1 && rng.chance(0.3)) c.topology.dcn_oversubscription = 2.0;
  d << " " << c.topology.chip.name << " slices=" << c.topology.slices;
  if (c.topology.dcn_oversubscription != 1.0) d << " oversub=2";
  d << ":";

  std::vector<int> usable;
  for (int a = 0; a < axes; ++a) {
    if (c.topology.axes[a].size > 1) usable.push_back(a);
  }
  const int ops = 1 + rng.below(4);
  for (int i = 0; i < ops; ++i) {
    ProgramOp op;
    op.name = "op" + std::to_string(i);
    op.kind = ProgramOpKind::Collective;
    auto& spec = op.collective;
    spec.kind = static_cast<CollectiveKind>(rng.below(4));
    for (int a : usable) {
      if (rng.chance(0.5)) spec.axes.push_back(a);
    }
    if (spec.axes.empty() && !usable.empty()) spec.axes.push_back(usable[rng.below(static_cast<int>(usable.size()))]);
    spec.over_dcn = c.topology.slices > 1 && spec.kind != CollectiveKind::AllToAll && rng.chance(0.5);
    if (spec.axes.empty() && !spec.over_dcn) {
      spec.kind = CollectiveKind::AllGather;   // nothing to move: an empty op still has spans
    }
    // A split axis: an inner block (a line of k neighbours) or the outer ring (stride k).
    if (spec.kind != CollectiveKind::AllToAll && !spec.axes.empty() && rng.chance(0.25)) {
      const int pick = rng.below(static_cast<int>(spec.axes.size()));
      const int n = c.topology.axes[spec.axes[pick]].size;
      if (n >= 4 && n % 2 == 0) {
        spec.slices.assign(spec.axes.size(), AxisSlice{});
        const int k = 2;
        spec.slices[pick] = rng.chance(0.5) ? AxisSlice{1, k} : AxisSlice{k, n / k};
      }
    }
    spec.bytes = std::exp(rng.uniform(std::log(1e3), std::log(6e7)));
    spec.bidirectional = rng.chance(0.75);
    for (int j = 0; j < i; ++j) {
      if (rng.chance(0.4)) op.after.push_back(j);
    }
    d << " [" << i << " " << kind_name(spec.kind) << " axes=";
    for (size_t k = 0; k < spec.axes.size(); ++k) {
      d << (k ? "," : "") << names[spec.axes[k]];
      if (!spec.slices.empty() && spec.slices[k].size != 0) {
        d << "(" << spec.slices[k].stride << "x" << spec.slices[k].size << ")";
      }
    }
    if (spec.over_dcn) d << "+DCN";
    d << " " << static_cast<long long>(spec.bytes) << "B" << (spec.bidirectional ? "" : " oneway") << " after=";
    for (size_t k = 0; k < op.after.size(); ++k) d << (k ? "," : "") << op.after[k];
    d << "]";
    c.program.push_back(std::move(op));
  }
  c.description = d.str();
  return c;
}

bool close(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b)) + 1e-15; }

}  // namespace

TEST_CASE("generated programs: the reduced replay equals the full replay on every chip", "[replay][property]") {
  const uint64_t seed = static_cast<uint64_t>(env_int("PODSIM_PROPERTY_SEED", static_cast<int>(kDefaultSeed)));
  const int cases = env_int("PODSIM_PROPERTY_CASES", kDefaultCases);
  const int only = env_int("PODSIM_PROPERTY_CASE", -1);
  int reduced_cases = 0;
  for (int index = (only >= 0 ? only : 0); index < (only >= 0 ? only + 1 : cases); ++index) {
    const Case c = generate(seed, index);
    INFO("seed " << seed << " case " << index << ": " << c.description);
    std::optional<RunResult> reduced_run, full_run;
    try {
      reduced_run.emplace(run_program(c.topology, {}, c.program, {Fidelity::Auto, false, {}}));
      full_run.emplace(run_program(c.topology, {}, c.program, {Fidelity::Full, false, {}}));
    } catch (const std::invalid_argument& e) {
      // The generator may ask for what podsim refuses (e.g. a slice that does not tile): both
      // modes must refuse it alike.
      INFO(e.what());
      CHECK_THROWS_AS(run_program(c.topology, {}, c.program, {Fidelity::Full, false, {}}), std::invalid_argument);
      continue;
    }
    const RunResult& reduced = *reduced_run;
    const RunResult& full = *full_run;
    if (reduced.simulated.chip_count() < full.simulated.chip_count()) ++reduced_cases;
    int wrong = 0;
    std::string first;
    for (ChipId chip = 0; chip < full.topology.chip_count(); ++chip) {
      for (int op = 0; op < static_cast<int>(c.program.size()); ++op) {
        const auto& r = reduced.span(op, 0, chip);
        const auto& f = full.span(op, 0, chip);
        if (!close(r.start_s, f.start_s) || !close(r.end_s, f.end_s)) {
          if (wrong++ == 0) {
            std::ostringstream o;
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
  }
  // The generator must exercise the reduction, not only meshes it leaves whole.
  if (only < 0) CHECK(reduced_cases * 3 >= cases);
}
