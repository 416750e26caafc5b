#include "collectives/collective.hpp"

#include "topology/topology.hpp"

namespace podsim {

int collective_group_size(const TopologySpec& topology, const CollectiveSpec& spec) {
  int n = 1;
  for (size_t i = 0; i < spec.axes.size(); ++i)
    n *= !spec.slices.empty() && spec.slices[i].size != 0 ? spec.slices[i].size
                                                           : topology.axes.at(static_cast<size_t>(spec.axes[i])).size;
  if (spec.over_dcn) n *= topology.slices;
  return n;
}

std::string_view to_string(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::AllGather: return "all_gather";
    case CollectiveKind::ReduceScatter: return "reduce_scatter";
    case CollectiveKind::AllReduce: return "all_reduce";
    case CollectiveKind::AllToAll: return "all_to_all";
  }
  return "?";
}

std::string_view to_string(DcnAlgorithm algorithm) {
  return algorithm == DcnAlgorithm::Hierarchical ? "hierarchical" : "flat_ring";
}

std::string_view to_string(HopModel model) { return model == HopModel::Floor ? "floor" : "additive"; }

}  // namespace podsim
