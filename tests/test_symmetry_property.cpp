// The symmetry reduction is proven equal to the full replay on programs it was not written
// for: seeded random programs of 1-4 collectives (every kind, random axes and axis slices,
// latency- to bandwidth-bound sizes, one- and two-way, random `after` so that some run
// concurrently) on random meshes up to 4x4x8, with and without wraparound, on one or two DCN
// slices. Every chip's start and end of every op must agree within 1e-9 relative.
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

#include "seeded_rng.hpp"
#include "sim/engine/run.hpp"
#include "topology/stragglers.hpp"

using namespace podsim;
using podsim_test::env_int;
using podsim_test::Rng;

namespace {

constexpr int kDefaultCases = 240;
constexpr uint64_t kDefaultSeed = 20261122;
constexpr double kPerturbedShare = 0.35;
constexpr double kUnevenShare = 0.3;

struct Case {
  TopologySpec topology;
  Program program;
  SimulationSettings settings;
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

Rng rng_for_perturbations(uint64_t seed, int index) {
  return Rng{seed ^ (0x2545f4914f6cdd1dULL * static_cast<uint64_t>(index + 1)) ^ 0x9e3779b97f4a7c15ULL};
}

// A box: one random chip, a random range on one axis (the rest whole), or the whole mesh.
ChipBox random_box(Rng& rng, const TopologySpec& t, std::ostringstream& d) {
  ChipBox box;
  box.slices = {0, t.slices - 1};
  const int shape = rng.below(3);
  for (const auto& axis : t.axes) box.axes.push_back({0, axis.size - 1});
  if (shape == 0) {
    for (size_t a = 0; a < t.axes.size(); ++a) {
      const int p = rng.below(t.axes[a].size);
      box.axes[a] = {p, p};
    }
    const int s = rng.below(t.slices);
    box.slices = {s, s};
    d << "chip";
  } else if (shape == 1) {
    const int a = rng.below(static_cast<int>(t.axes.size()));
    const int first = rng.below(t.axes[a].size);
    box.axes[a] = {first, first + rng.below(t.axes[a].size - first)};
    d << t.axes[a].name << "=" << box.axes[a].first << "-" << box.axes[a].last;
  } else {
    d << "all";
    if (t.slices > 1 && rng.chance(0.5)) {
      box.slices = {1, 1};
      d << " of slice 1";
    }
  }
  return box;
}

void add_perturbations(Rng rng, Case& c, std::ostringstream& d) {
  if (!rng.chance(kPerturbedShare)) return;
  TopologySpec& t = c.topology;
  std::vector<int> link_axes;
  for (int a = 0; a < static_cast<int>(t.axes.size()); ++a) {
    if (t.axes[a].size > 1) link_axes.push_back(a);
  }
  const int count = 1 + rng.below(2);
  for (int i = 0; i < count; ++i) {
    Perturbation p;
    p.name = "p" + std::to_string(i);
    const int kind = rng.below(3);
    d << " {" << p.name << " ";
    if (kind == 2 && t.slices > 1) {
      p.kind = PerturbationKind::Nics;
      d << "nic ";
    } else if (kind == 1 && !link_axes.empty()) {
      p.kind = PerturbationKind::Links;
      p.axis = link_axes[rng.below(static_cast<int>(link_axes.size()))];
      p.direction = rng.below(3) - 1;
      d << "link " << t.axes[p.axis].name << (p.direction > 0 ? "+" : p.direction < 0 ? "-" : "+-") << " ";
    } else {
      p.kind = PerturbationKind::SlowChips;
      p.compute_slowdown = rng.uniform(1.1, 3.0);
      d << "slow x" << p.compute_slowdown << " ";
    }
    p.chips.push_back(random_box(rng, t, d));
    if (p.kind != PerturbationKind::SlowChips) {
      p.bandwidth_scale = rng.uniform(0.2, 0.9);
      if (rng.chance(0.5)) p.extra_latency_s = rng.uniform(0, 5e-6);
      d << " bw x" << p.bandwidth_scale << " +" << p.extra_latency_s * 1e6 << "us";
    }
    d << "}";
    t.perturbations.push_back(std::move(p));
  }
  // Random stragglers (topology/stragglers.hpp) in some of the perturbed cases, from a stream of
  // their own so that the cases' other draws stay as they were: every chip slow by its own factor
  // with some probability, as `stragglers:` draws them.
  Rng side{Rng(rng).next() ^ 0xda942042e4dd58b5ULL};
  if (side.chance(0.4)) {
    StragglerSpec spec;
    spec.name = "stragglers";
    spec.probability = side.uniform(0.02, 0.3);
    spec.factor_low = 1.05;
    spec.factor_high = side.uniform(1.1, 2.0);
    spec.seed = side.next();
    const auto drawn = draw_stragglers(t, spec);
    for (const auto& p : drawn) t.perturbations.push_back(p);
    d << " {stragglers p=" << spec.probability << ": " << drawn.size() << " chips}";
  }
  // A compute op after some of the collectives, and a collective after it: slow chips start it late.
  ProgramOp compute;
  compute.name = "compute";
  compute.work = ComputeWork{rng.uniform(1e-6, 1e-3), 0, {}, {}};
  for (int j = 0; j < static_cast<int>(c.program.size()); ++j) {
    if (rng.chance(0.5)) compute.after.push_back(j);
  }
  const int compute_index = static_cast<int>(c.program.size());
  c.program.push_back(std::move(compute));
  if (!link_axes.empty() || t.slices > 1) {
    ProgramOp op;
    op.name = "after_compute";
    op.collective().kind = rng.chance(0.5) ? CollectiveKind::AllReduce : CollectiveKind::AllGather;
    for (int a : link_axes) {
      if (rng.chance(0.6)) op.collective().axes.push_back(a);
    }
    op.collective().over_dcn = t.slices > 1 && (op.collective().axes.empty() || rng.chance(0.5));
    if (op.collective().axes.empty() && !op.collective().over_dcn) op.collective().axes.push_back(link_axes.front());
    op.collective().bytes = std::exp(rng.uniform(std::log(1e3), std::log(6e7)));
    op.after = {compute_index};
    c.program.push_back(std::move(op));
  }
  d << " +compute";
}

Rng rng_for_uneven(uint64_t seed, int index) {
  return Rng{seed ^ (0x94d049bb133111ebULL * static_cast<uint64_t>(index + 1)) ^ 0xbf58476d1ce4e5b9ULL};
}

// An uneven AllToAll over 1-2 used axes, a compute op that varies along one of them, and an
// AllReduce over any axis after both (so the uneven finish times propagate).
void add_uneven(Rng rng, Case& c, std::ostringstream& d, int& uneven_cases) {
  if (!rng.chance(kUnevenShare)) return;
  const auto& t = c.topology;
  std::vector<int> usable;
  for (int a = 0; a < static_cast<int>(t.axes.size()); ++a)
    if (t.axes[a].size > 1) usable.push_back(a);
  if (usable.empty()) return;
  ++uneven_cases;
  ProgramOp a2a;
  a2a.name = "uneven_a2a";
  a2a.collective().kind = CollectiveKind::AllToAll;
  for (int a : usable)
    if (rng.chance(0.5)) a2a.collective().axes.push_back(a);
  if (a2a.collective().axes.empty()) a2a.collective().axes.push_back(usable[rng.below(static_cast<int>(usable.size()))]);
  long long g = 1;
  for (int a : a2a.collective().axes) g *= t.axes[a].size;
  a2a.collective().bidirectional = rng.chance(0.75);
  for (long long k = 0; k < g * g; ++k) {
    const double b = rng.chance(0.2) ? 0.0 : std::exp(rng.uniform(std::log(1e2), std::log(4e6)));
    a2a.collective().pair_bytes.push_back(b);
    a2a.collective().bytes += b;
  }
  if (!c.program.empty() && rng.chance(0.5)) a2a.after.push_back(rng.below(static_cast<int>(c.program.size())));
  const int a2a_index = static_cast<int>(c.program.size());
  c.program.push_back(a2a);
  ProgramOp work;
  work.name = "uneven_compute";
  ComputeWork& uneven = work.work.emplace<ComputeWork>();
  uneven.vary_axes = {a2a.collective().axes[rng.below(static_cast<int>(a2a.collective().axes.size()))]};
  for (int p = 0; p < t.axes[uneven.vary_axes[0]].size; ++p) uneven.compute_s_by_position.push_back(rng.uniform(1e-6, 1e-3));
  if (rng.chance(0.6)) work.after.push_back(a2a_index);
  const int work_index = static_cast<int>(c.program.size());
  c.program.push_back(work);
  ProgramOp after;
  after.name = "after_uneven";
  after.collective().kind = CollectiveKind::AllReduce;
  after.collective().axes = {usable[rng.below(static_cast<int>(usable.size()))]};
  after.collective().bytes = std::exp(rng.uniform(std::log(1e3), std::log(6e7)));
  after.after = {a2a_index, work_index};
  c.program.push_back(after);
  d << " +uneven A2A(" << g << " chips) compute on " << work.compute().vary_axes[0];
}

Case generate(uint64_t seed, int index, int& uneven_cases) {
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
    auto& spec = op.collective();
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
  add_perturbations(rng_for_perturbations(seed, index), c, d);
  add_uneven(rng_for_uneven(seed, index), c, d, uneven_cases);
  c.description = d.str();
  return c;
}

bool close(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b)) + 1e-15; }

}  // namespace

TEST_CASE("generated programs: the reduced replay equals the full replay on every chip", "[replay][property]") {
  const uint64_t seed = static_cast<uint64_t>(env_int("PODSIM_PROPERTY_SEED", static_cast<int>(kDefaultSeed)));
  const int cases = env_int("PODSIM_PROPERTY_CASES", kDefaultCases);
  const int only = env_int("PODSIM_PROPERTY_CASE", -1);
  int reduced_cases = 0, drawn_cases = 0;
  int perturbed_cases = 0, perturbed_reduced_cases = 0, perturbation_kept_axes = 0;
  int uneven_cases = 0, uneven_reduced_cases = 0;
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
    if (!c.topology.perturbations.empty()) {
      ++perturbed_cases;
      if (reduced.simulated.chip_count() < full.simulated.chip_count()) ++perturbed_reduced_cases;
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
  }
  // The generator must exercise the reduction, not only meshes it leaves whole.
  if (only < 0) {
    INFO(reduced_cases << " of the " << cases - drawn_cases << " cases without drawn stragglers reduced; " << drawn_cases
                       << " cases drew stragglers");
    CHECK(reduced_cases * 3 >= cases - drawn_cases);
    CHECK(drawn_cases * 20 >= cases);   // about 14%: 40% of the 35% perturbed
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
    INFO(perturbed_cases << " perturbed cases, " << perturbed_reduced_cases << " of them reduced, "
                         << perturbation_kept_axes << " axes kept whole for a perturbation");
    CHECK(perturbed_cases * 5 >= cases);
    CHECK(perturbed_reduced_cases * 10 >= perturbed_cases);
    CHECK(perturbation_kept_axes * 4 >= perturbed_cases);
  }
}
