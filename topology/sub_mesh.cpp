#include "topology/sub_mesh.hpp"

#include <algorithm>
#include <optional>
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

namespace {

// Box `box` seen from the sub-mesh at `position`, if it holds any of its chips.
std::optional<ChipBox> box_on_sub_mesh(const ChipBox& box, const std::vector<int>& kept_axes,
                                       const std::vector<int>& position) {
  if (!box.slices.contains(0)) return std::nullopt;
  ChipBox out;
  for (int a = 0; a < static_cast<int>(box.axes.size()); ++a) {
    const bool kept = std::find(kept_axes.begin(), kept_axes.end(), a) != kept_axes.end();
    if (kept) out.axes.push_back(box.axes[a]);
    else if (!box.axes[a].contains(position[a])) return std::nullopt;
  }
  return out;
}

}  // namespace

std::vector<Perturbation> sub_mesh_perturbations(const TopologySpec& slice, const std::vector<int>& kept_axes,
                                                 const std::vector<int>& position) {
  std::vector<Perturbation> out;
  for (const Perturbation& p : slice.perturbations) {
    if (p.kind == PerturbationKind::Nics)
      throw std::invalid_argument("perturbation " + p.name + ": a NIC perturbation on a sub-mesh");
    Perturbation q = p;
    if (p.kind == PerturbationKind::Links) {
      const auto it = std::find(kept_axes.begin(), kept_axes.end(), p.axis);
      if (it == kept_axes.end()) continue;
      q.axis = static_cast<int>(it - kept_axes.begin());
    }
    q.chips.clear();
    for (const ChipBox& box : p.chips)
      if (auto on = box_on_sub_mesh(box, kept_axes, position)) q.chips.push_back(*on);
    if (!q.chips.empty()) out.push_back(std::move(q));
  }
  return out;
}

}  // namespace podsim
