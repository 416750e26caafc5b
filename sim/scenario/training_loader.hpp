#pragma once
// Internal to the scenario loader: the part of the schema for `workload.kind: training`
// (docs/scenario-schema.md), parsed by training_loader.cpp for scenario_loader.cpp.
#include <string>

#include "sim/scenario/scenario.hpp"
#include "sim/scenario/yaml_fields.hpp"

namespace podsim::detail {

// The training workload from the `workload` mapping (its keys already checked): model,
// parallelism, batch, microbatches and the rest, checked against the topology.
TrainingWorkload parse_training(const yaml_fields::MapReader& reader, const TopologySpec& topology);

}  // namespace podsim::detail
