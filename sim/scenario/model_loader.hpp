#pragma once
// Internal to the scenario loader: a workload's `model` (a preset name, or a preset or shape
// with its dimensions, attention and experts), shared by training, inference and serving; and
// the `moe.<field>` names an expectation may give (docs/scenario-schema.md).
#include <string>
#include <vector>

#include "sim/scenario/yaml_fields.hpp"
#include "workloads/model_spec.hpp"

namespace podsim::detail {

constexpr int kMaxModelDim = 1 << 30;   // any model dimension, layer count or token count

// A preset name or a model mapping; `sequence_length` the longest sequence it will see.
TransformerSpec parse_model_field(const yaml_fields::Field& field, int sequence_length);

}  // namespace podsim::detail
