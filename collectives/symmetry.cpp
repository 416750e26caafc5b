#include "collectives/symmetry.hpp"

#include <numeric>

namespace podsim {
namespace {

int host_extent(const TopologySpec& spec, int axis) {
  const auto& shape = spec.chip.host_shape;
  const int extent = axis < static_cast<int>(shape.size()) ? shape[axis] : 1;
  return std::max(1, std::min(extent, spec.axes[axis].size));
}

// What one axis must keep, gathered over the whole program.
struct AxisNeeds {
  bool used = false;           // some op moves data along it
  std::string user;            // the first such op, for reasons
  int period = 1;              // lcm of the ops' translation periods
  int min_size = 1;            // the shortest quotient every op can be planned on
  std::string keep_whole;      // non-empty: a reason the axis cannot be reduced
};

std::string describe(const CollectiveSpec& op, size_t index, const std::vector<std::string>& names) {
  const std::string name = index < names.size() ? "'" + names[index] + "'" : std::to_string(index);
  return "op " + name + " (" + std::string(to_string(op.kind)) + ")";
}

}  // namespace

namespace {

// What the program's ops need of each axis, and of the DCN.
struct ProgramNeeds {
  std::vector<AxisNeeds> axes;
  bool any_dcn = false;
  std::string flat_ring;       // the first op on a flat DCN ring (which keeps everything whole)
  std::string flat_ring_reason() const { return "kept: " + flat_ring + " is a flat DCN ring snaking through every chip"; }
};

// One op's needs along one of its axes (`k`-th): its translation period, the shortest ring it
// can be planned on, or why the axis cannot be reduced.
// (Names are built only where a reason needs them: a program may hold a million ops.)
void note_axis(const TopologySpec& real, const CollectiveSpec& op, size_t k, size_t index,
               const std::vector<std::string>& names, bool two_route_rings, AxisNeeds& need) {
  const int a = op.axes[k];
  const int n = real.axes[a].size;
  if (!need.used) need.user = describe(op, index, names);
  need.used = true;
  const AxisSlice slice = op.slices.empty() ? AxisSlice{} : op.slices[k];
  // A quotient ring of 2 strides makes a ring's +1 and -1 neighbours one chip, joined by
  // two routes: the engine relays the second (replay.cpp) under the floor model only, and
  // only for rings of an even number of positions (each real chip then maps to the
  // quotient with both its neighbours; an odd ring folded onto 2 was measured off by up
  // to 0.04% against the full replay). Otherwise a ring of 3 or more positions needs 3
  // strides, one-way too, since other traffic on the axis (a line's closing hop, another
  // op) may go the other way.
  const bool ring = op.kind != CollectiveKind::AllToAll;
  if (!ring && !op.pair_bytes.empty() && need.keep_whole.empty()) {
    need.keep_whole = describe(op, index, names) + " sends uneven blocks along it (per-pair sizes), so chips differ by position";
  }
  auto ring_needs = [&](int stride, int positions) {
    if (!ring || positions < 3 || (two_route_rings && positions % 2 == 0)) return 2 * stride;
    return 3 * stride;
  };
  if (slice.size == 0) {   // the whole axis: invariant under any translation
    need.min_size = std::max(need.min_size, ring_needs(1, n));
    return;
  }
  // A slice's rings are blocks of stride*size chips (lines unless they span the axis);
  // an outer ring that spans the axis is invariant under translation by one chip, but its
  // neighbour is `stride` chips on, so the simulated ring must hold whole strides.
  const int span = slice.stride * slice.size;
  const bool outer = span == n && real.axes[a].wraparound;
  const int period = outer ? slice.stride : span;
  need.min_size = std::max(need.min_size, outer ? ring_needs(slice.stride, slice.size) : span);
  if (n % period != 0 && need.keep_whole.empty()) {
    need.keep_whole = describe(op, index, names) + " takes blocks of " + std::to_string(period) + " that do not tile it";
  }
  need.period = std::lcm(need.period, period);
}

ProgramNeeds program_needs(const TopologySpec& real, const std::vector<CollectiveSpec>& ops,
                           const std::vector<std::string>& names, bool two_route_rings) {
  ProgramNeeds out;
  out.axes.resize(real.axes.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    const auto& op = ops[i];
    const bool crosses = op.over_dcn && real.slices > 1;
    out.any_dcn = out.any_dcn || crosses;
    if (crosses && op.dcn_algorithm == DcnAlgorithm::FlatRing && out.flat_ring.empty())
      out.flat_ring = describe(op, i, names);
    for (size_t k = 0; k < op.axes.size(); ++k) {
      if (real.axes[op.axes[k]].size <= 1) continue;
      note_axis(real, op, k, i, names, two_route_rings, out.axes[op.axes[k]]);
    }
  }
  return out;
}

// Axis a's reduction: the shortest period every op is invariant under (whole hosts where DCN
// traffic shares their NICs), or the reason it stays whole.
AxisReduction reduce_axis(const TopologySpec& real, int a, const ProgramNeeds& program, bool full_fidelity) {
  const auto& axis = real.axes[a];
  const int n = axis.size;
  AxisReduction r{axis.name, n, n, n, ""};
  const auto& need = program.axes[a];
  if (full_fidelity) {
    r.reason = "full fidelity";
  } else if (n <= 1) {
    r.period = 1;
    r.reason = "a single chip";
  } else if (!program.flat_ring.empty()) {
    r.reason = program.flat_ring_reason();
  } else if (!need.keep_whole.empty()) {
    r.reason = "kept: " + need.keep_whole;
  } else if (need.used && !axis.wraparound) {
    r.reason = "kept: " + need.user + " runs along it and it has no wraparound, so chips differ by position";
  } else {
    // Proven b-periodic (or unused: independent identical groups).
    int b = need.used ? need.period : 1;
    std::string why = need.used ? "every op is invariant under translation by " + std::to_string(b) +
                                      " chip(s) along this wrapped axis"
                                : "no collective uses it: the pod splits into identical groups on disjoint links";
    if (program.any_dcn) {
      const int e = host_extent(real, a);
      if (n % e != 0) {
        r.reason = "kept: hosts of " + std::to_string(e) + " chips do not tile it (DCN traffic shares a NIC)";
        return r;
      }
      if (b % e != 0) {
        b = std::lcm(b, e);
        why += "; whole hosts of " + std::to_string(e) + " chips, which share a NIC for DCN traffic";
      }
    }
    int p = b;
    while (p < need.min_size) p += b;
    if (p >= n) {
      r.reason = "kept: no shorter period than the axis (" + why + ")";
    } else {
      r.simulated_size = p;
      r.period = b;
      r.reason = why;
    }
  }
  return r;
}

// The slices' reduction (symmetry.hpp): a ring of 2 where ops cross the DCN, one slice where
// none does, or the reason they stay whole.
AxisReduction reduce_slices(const TopologySpec& real, const ProgramNeeds& program, const std::string& differ,
                            bool full_fidelity) {
  const int n = real.slices;
  AxisReduction r{"slices", n, n, n, ""};
  if (n <= 1) {
    r.period = 1;
    r.reason = "a single slice";
  } else if (full_fidelity) {
    r.reason = "full fidelity";
  } else if (!program.flat_ring.empty()) {
    r.reason = program.flat_ring_reason();
  } else if (!differ.empty()) {
    r.reason = "kept: " + differ;
  } else if (!program.any_dcn) {
    r.simulated_size = 1;
    r.period = 1;
    r.reason = "no collective crosses the DCN: the slices are identical groups on disjoint links";
  } else if (n > 2) {
    r.simulated_size = 2;
    r.period = 1;
    r.reason = "every op crossing the DCN is a ring over all slices, invariant under moving one slice on; "
               "the oversubscribed core's capacity scales with the simulated slices";
  } else {
    r.reason = "kept: no shorter ring than 2 slices";
  }
  return r;
}

}  // namespace

SymmetryReduction reduce_by_symmetry(const TopologySpec& real, const std::vector<CollectiveSpec>& ops,
                                     bool full_fidelity, const std::vector<DifferingAxis>& differing,
                                     const std::vector<std::string>& names, bool two_route_rings) {
  SymmetryReduction out;
  out.reduced = real;
  const int axes = static_cast<int>(real.axes.size());
  for (const auto& axis : real.axes) out.real.axes.push_back(axis.size);
  out.real.slices = real.slices;
  ProgramNeeds program = program_needs(real, ops, names, two_route_rings);
  std::string slices_differ;
  for (const auto& d : differing) {
    if (d.axis >= 0 && d.axis < axes && program.axes[d.axis].keep_whole.empty()) program.axes[d.axis].keep_whole = d.reason;
    if (d.axis == Topology::kSliceAxis && slices_differ.empty()) slices_differ = d.reason;
  }
  out.slices = reduce_slices(real, program, slices_differ, full_fidelity);
  out.reduced.slices = out.slices.simulated_size;
  out.identity = out.slices.simulated_size == real.slices;
  for (int a = 0; a < axes; ++a) {
    const AxisReduction r = reduce_axis(real, a, program, full_fidelity);
    out.reduced.axes[a].size = r.simulated_size;
    if (r.simulated_size != real.axes[a].size) out.identity = false;
    out.axes.push_back(r);
  }
  if (!out.identity) {
    std::vector<int> sizes;
    for (const auto& axis : out.reduced.axes) sizes.push_back(axis.size);
    out.reduced.perturbations = restrict_perturbations(real.perturbations, sizes, out.reduced.slices);
  }
  return out;
}

ChipId SymmetryReduction::representative(const Topology& real, const Topology& simulated, ChipId real_chip) const {
  if (identity) return real_chip;
  auto coords = real.coords(real_chip);
  for (size_t a = 0; a < coords.size(); ++a) {
    const int size = reduced.axes[a].size;
    if (size != this->real.axes[a]) coords[a] %= size;
  }
  return simulated.chip_at(real.slice_of(real_chip) % reduced.slices, coords);
}

}  // namespace podsim
