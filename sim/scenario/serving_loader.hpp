#pragma once
// Internal to the scenario loader: the part of the schema for `workload.kind: serving`
// (docs/scenario-schema.md).
#include <functional>
#include <string>

#include "sim/scenario/scenario.hpp"
#include "sim/scenario/yaml_fields.hpp"

namespace podsim::detail {

using TopologyParser = std::function<TopologySpec(const yaml_fields::Field&)>;

// The serving workload from the `workload` mapping (its keys already checked): the model, the
// servers, the batching policy and the requests, checked against HBM and the model's context.
ServingWorkload parse_serving(const yaml_fields::MapReader& reader, const TopologySpec& topology,
                              const TopologyParser& parse_topology);

}  // namespace podsim::detail
