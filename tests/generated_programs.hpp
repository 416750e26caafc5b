#pragma once
// The generated programs of the property tests (tests/test_symmetry_property.cpp compares the
// reduced replay with the full one on them, tests/test_native_replay.cpp the native replay with
// SimGrid's): seeded random programs of 1-4 collectives on random meshes up to 4x4x8, with
// perturbations, random stragglers and uneven MoE-shaped work in shares of the cases (each
// share from its own stream, so adding one leaves the others' cases as they were).
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "seeded_rng.hpp"
#include "topology/stragglers.hpp"
#include "sim/engine/run.hpp"
#include "topology/topology.hpp"
#include "workloads/program.hpp"

namespace podsim_test {

using namespace podsim;

// Two replays' times of one span agree: within 1e-9 relative (and 1e-15 s absolute).
inline bool close(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b)) + 1e-15; }

inline constexpr double kPerturbedShare = 0.35;
inline constexpr double kUnevenShare = 0.3;

struct Case {
  TopologySpec topology;
  Program program;
  SimulationSettings settings;
  std::string description;
};

inline const char* kind_name(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::AllGather: return "AG";
    case CollectiveKind::ReduceScatter: return "RS";
    case CollectiveKind::AllReduce: return "AR";
    case CollectiveKind::AllToAll: return "A2A";
  }
  return "?";
}

inline Rng rng_for_perturbations(uint64_t seed, int index) {
  return Rng{seed ^ (0x2545f4914f6cdd1dULL * static_cast<uint64_t>(index + 1)) ^ 0x9e3779b97f4a7c15ULL};
}

// A box: one random chip, a random range on one axis (the rest whole), or the whole mesh.
inline ChipBox random_box(Rng& rng, const TopologySpec& t, std::ostringstream& d) {
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

// In some perturbed cases (from a stream of their own: the other draws stay as they were), one
// link direction of one chip fails (bandwidth 0), where ICI routing can go round it
// (Topology::hop_route): rings and blocks through it take the 3-link detour.
inline void add_failed_link(Rng rng, TopologySpec& t, const std::vector<int>& link_axes, std::ostringstream& d) {
  if (link_axes.size() < 2 || !rng.chance(0.5)) return;
  Perturbation p;
  p.name = "failed";
  p.kind = PerturbationKind::Links;
  p.axis = link_axes[rng.below(static_cast<int>(link_axes.size()))];
  p.direction = rng.chance(0.5) ? +1 : -1;
  p.bandwidth_scale = 0;
  ChipBox box;
  for (const auto& axis : t.axes) {
    const int at = rng.below(axis.size);
    box.axes.push_back({at, at});
  }
  const int slice = rng.below(t.slices);
  box.slices = {slice, slice};
  // Half of them the links of a whole line along another axis: chips along that line stay
  // alike (the symmetry reduction may still fold it), and a third axis has the way round.
  const int along = link_axes[rng.below(static_cast<int>(link_axes.size()))];
  const bool line = along != p.axis && rng.chance(0.5);
  if (line) box.axes[along] = {0, t.axes[along].size - 1};
  p.chips.push_back(box);
  TopologySpec with = t;
  with.perturbations.push_back(p);
  try {
    const Topology topo(with);
    std::vector<int> at;
    for (const auto& r : box.axes) at.push_back(r.first);
    for (int k = 0; k < (line ? t.axes[along].size : 1); ++k) {
      if (line) at[along] = k;
      const ChipId chip = topo.chip_at(slice, at);
      if (!topo.link_toward(chip, p.axis, p.direction)) return;   // a line's end: no link there
      (void)topo.hop_route(chip, p.axis, p.direction);
    }
  } catch (const std::invalid_argument&) {
    return;   // no way round it: a case for the loader's error, not for the replays
  }
  d << " {failed link " << t.axes[p.axis].name << (p.direction > 0 ? "+" : "-")
    << (line ? " along all of " + t.axes[along].name : std::string()) << "}";
  t.perturbations.push_back(std::move(p));
}

inline void add_perturbations(Rng rng, Case& c, std::ostringstream& d) {
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
  add_failed_link(Rng{Rng(rng).next() ^ 0x5851f42d4c957f2dULL}, t, link_axes, d);
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
  // On half the cases a host transfer behind the compute (remat offload's DMA over PCIe), from a
  // stream of its own so the other draws stay as they were: a slow chip does not stretch it, in
  // every replay and reduction alike; the collective after the compute waits for it too.
  Rng dma{Rng(rng).next() ^ 0x9e3779b97f4a7c15ULL};
  int host_index = -1;
  if (dma.chance(0.5)) {
    ProgramOp host;
    host.name = "host_transfer";
    host.work = HostTransferWork{std::exp(dma.uniform(std::log(1e4), std::log(1e8))), dma.chance(0.5)};
    host.after = {compute_index};
    host_index = static_cast<int>(c.program.size());
    c.program.push_back(std::move(host));
    d << " +host DMA";
  }
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
    if (host_index >= 0) op.after.push_back(host_index);
    c.program.push_back(std::move(op));
  }
  d << " +compute";
}

// The number of slices past two, from a stream of its own (so every other draw stays as it was
// before programs had more than two slices): 2-4 slices, 2 where that would pass 256 chips.
inline int more_slices(uint64_t seed, int index, int chips_per_slice) {
  Rng rng{seed ^ (0xd6e8feb86659fd93ULL * static_cast<uint64_t>(index + 1)) ^ 0x94d049bb133111ebULL};
  const int slices = 2 + rng.below(3);
  return chips_per_slice * slices > 256 ? 2 : slices;
}

inline Rng rng_for_uneven(uint64_t seed, int index) {
  return Rng{seed ^ (0x94d049bb133111ebULL * static_cast<uint64_t>(index + 1)) ^ 0xbf58476d1ce4e5b9ULL};
}

// An uneven AllToAll over 1-2 used axes, a compute op that varies along one of them, and an
// AllReduce over any axis after both (so the uneven finish times propagate).
inline void add_uneven(Rng rng, Case& c, std::ostringstream& d, int& uneven_cases) {
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

// With `all_to_all` false (for what does not cover AllToAll yet), the AllToAlls drawn become
// AllReduces over the same axes and no uneven work is added; every other draw stays the same.
inline Case generate(uint64_t seed, int index, int& uneven_cases, bool all_to_all = true) {
  Rng rng = podsim_test::case_rng(seed, index);
  Case c;
  std::ostringstream d;
  // Chips: v4p (hosts 2x2x1, 3D) or v5e (hosts 4x2, 2D); sizes up to 4x4x8; 1-4 slices.
  const bool three_d = rng.chance(0.6);
  c.topology.chip = *find_chip_preset(three_d ? "v4p" : "v5e");
  int axes = three_d ? 1 + rng.below(3) : 1 + rng.below(2);
  const int choices[] = {1, 2, 3, 4, 4, 8};
  const char* names[] = {"X", "Y", "Z", "C"};
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
  // A third of the 3D cases on tpu7x: each chip's two devices an axis C of their own, joined by
  // the die-to-die link (a stream of its own, so the other cases' draws stay as they were).
  if (three_d && Rng{Rng(rng).next() ^ 0x2545f4914f6cdd1dULL}.chance(0.35)) {
    c.topology.chip = *find_chip_preset("tpu7x");
    c.topology.axes.push_back(MeshAxis{"C", 2, false, true});
    ++axes;
    chips *= 2;
    d << "x2(C)";
  }
  c.topology.slices = rng.chance(0.25) ? more_slices(seed, index, chips) : 1;
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
  if (all_to_all) {
    add_uneven(rng_for_uneven(seed, index), c, d, uneven_cases);
  } else {
    for (auto& op : c.program) {
      if (op.is(ProgramOpKind::Collective) && op.collective().kind == CollectiveKind::AllToAll) {
        op.collective().kind = CollectiveKind::AllReduce;
        d << " (A2A as AR)";
      }
    }
  }
  c.description = d.str();
  return c;
}

}  // namespace podsim_test
