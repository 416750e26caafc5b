#include "collectives/symmetry.hpp"

#include <numeric>

namespace podsim {
namespace {

int host_extent(const TopologySpec& spec, int axis) {
  const auto& shape = spec.chip.host_shape;
  const int extent = axis < static_cast<int>(shape.size()) ? shape[axis] : 1;
  return std::max(1, std::min(extent, spec.axes[axis].size));
}

}  // namespace

SymmetryReduction reduce_by_symmetry(const TopologySpec& real, const std::vector<CollectiveSpec>& ops,
                                     bool full_fidelity, const std::vector<int>& full_axes) {
  SymmetryReduction out;
  out.reduced = real;
  for (const auto& axis : real.axes) out.real_sizes.push_back(axis.size);
  if (full_fidelity) return out;

  const int axes = static_cast<int>(real.axes.size());
  std::vector<bool> ring_axis(axes, false), keep_full(axes, false);
  std::vector<int> period(axes, 0);   // block length of sliced axes
  bool any_dcn = false;
  for (int a : full_axes) keep_full.at(a) = true;
  for (const auto& op : ops) {
    const bool crosses = op.over_dcn && real.slices > 1;
    any_dcn = any_dcn || crosses;
    if (crosses && op.dcn_algorithm == DcnAlgorithm::FlatRing) {
      keep_full.assign(axes, true);  // the flat ring snakes through every chip
    }
    for (int a : op.axes) ring_axis[a] = true;   // AllToAll included: see plan_all_to_all
    // Slices of a wrapped axis into blocks of k repeat every k chips: two blocks stand for
    // all (each link still carries one hop of every outer ring). Otherwise keep it whole.
    for (size_t i = 0; i < op.slices.size(); ++i) {
      const auto& slice = op.slices[i];
      if (slice.size == 0) continue;
      const int a = op.axes[i];
      const int n = real.axes[a].size;
      const int block = slice.stride == 1 ? slice.size : slice.stride;
      const bool tiles = slice.stride == 1 ? n % slice.size == 0 : slice.stride * slice.size == n;
      if (!real.axes[a].wraparound || !tiles || n % (2 * block) != 0 ||
          (period[a] != 0 && period[a] != block)) {
        keep_full[a] = true;
      }
      period[a] = block;
    }
  }
  for (int a = 0; a < axes; ++a) {
    const int n = real.axes[a].size;
    const bool wraps = real.axes[a].wraparound && n >= 2;
    int size = n;
    if (!keep_full[a]) {
      if (!ring_axis[a]) size = 1;
      else if (period[a] != 0) size = 2 * period[a];
      else if (wraps) size = std::min(n, 2);
      if (any_dcn && size < n) {
        // Keep whole hosts; the reduction needs the host blocks to tile the axis.
        const int e = host_extent(real, a);
        const int q = std::lcm(size, e);
        size = (n % q == 0) ? q : n;
      }
    }
    out.reduced.axes[a].size = size;
    if (size != n) out.identity = false;
  }
  return out;
}

ChipId SymmetryReduction::representative(const Topology& real, const Topology& simulated, ChipId real_chip) const {
  if (identity) return real_chip;
  auto coords = real.coords(real_chip);
  for (size_t a = 0; a < coords.size(); ++a) {
    const int size = reduced.axes[a].size;
    if (size != real_sizes[a]) coords[a] %= size;
  }
  return simulated.chip_at(real.slice_of(real_chip), coords);
}

}  // namespace podsim
