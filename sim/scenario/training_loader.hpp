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

// An expectation's `field` for a training workload: a top-level summary field,
// "exposed_comm_by_axis_s.<axis>" or "per_layer.<...>"; returns the name whose suffix gives the unit.
std::string check_training_field(const yaml_fields::Field& field);

}  // namespace podsim::detail
