#include "topology/sub_mesh.hpp"

#include <algorithm>
#include <stdexcept>

namespace podsim {

TopologySpec sub_mesh(const TopologySpec& slice, const std::vector<int>& kept_axes) {
  if (!slice.splits.empty()) throw std::invalid_argument("a sub-mesh of a slice with axis splits");
  if (!slice.perturbations.empty()) throw std::invalid_argument("a sub-mesh of a slice with perturbations");
  if (slice.slices != 1) throw std::invalid_argument("a sub-mesh of more than one slice");
  if (kept_axes.empty() || !std::is_sorted(kept_axes.begin(), kept_axes.end()))
    throw std::invalid_argument("a sub-mesh keeps at least one axis, in ascending order");
  TopologySpec sub;
  sub.chip = slice.chip;
  sub.dcn_oversubscription = slice.dcn_oversubscription;
  const auto& shape = slice.chip.host_shape;
  // A host's block along each axis, clamped to the axis as Topology does.
  auto extent = [&](size_t a) { return std::min(a < shape.size() ? shape[a] : 1, slice.axes[a].size); };
  int host_chips = 1, kept_chips = 1;
  for (size_t a = 0; a < slice.axes.size(); ++a) host_chips *= extent(a);
  sub.chip.host_shape.clear();
  for (int a : kept_axes) {
    if (a < 0 || a >= static_cast<int>(slice.axes.size())) throw std::invalid_argument("a sub-mesh axis out of range");
    sub.axes.push_back(slice.axes[a]);
    sub.chip.host_shape.push_back(extent(static_cast<size_t>(a)));
    kept_chips *= extent(static_cast<size_t>(a));
  }
  sub.chip.chips_per_host = kept_chips;
  sub.chip.dcn_bandwidth_per_host_Bps = slice.chip.dcn_bandwidth_per_host_Bps * kept_chips / host_chips;
  return sub;
}

}  // namespace podsim
