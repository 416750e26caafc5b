#pragma once
// Internal to the scenario loader: `workload.routing` (training, inference and serving), how an
// MoE model's tokens pick their experts (docs/scenario-schema.md).
#include <string>
#include <vector>

#include "sim/scenario/yaml_fields.hpp"
#include "workloads/model_spec.hpp"
#include "workloads/moe_routing.hpp"

namespace podsim::detail {

// The routing mapping: distribution (uniform, zipf or loads from a CSV file relative to the
// scenario's directory), zipf_s, capacity_factor, pad_to_capacity, dispatch (a training step's
// only: `training`), shuffle and seed, each checked against the others and the model's experts.
// Routing on a dense model is an error at `field`.
MoeRouting parse_routing(const yaml_fields::Field& field, const TransformerSpec& model, bool training);

}  // namespace podsim::detail
