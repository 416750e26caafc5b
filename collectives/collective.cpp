#include "collectives/collective.hpp"

namespace podsim {

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
