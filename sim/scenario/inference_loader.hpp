#pragma once
// Internal to the scenario loader: the part of the schema for `workload.kind: inference`
// (docs/scenario-schema.md), parsed by inference_loader.cpp, and the parts serving shares.
#include <string>
#include <vector>

#include "sim/scenario/scenario.hpp"
#include "sim/scenario/yaml_fields.hpp"

namespace podsim::detail {

// The inference workload (kind: inference): model, phase, batch, context or prompt length,
// dtypes, model- and expert-parallel axes, routing.
InferenceWorkload parse_inference(const yaml_fields::MapReader& reader, const TopologySpec& topology);

// Shared by inference and serving: weights, kv_cache, compute, efficiency, attention_flops.
void parse_inference_numerics(const yaml_fields::MapReader& reader, const ChipSpec& chip, InferencePlan& plan);
// `parallelism: {model: [axes], expert: [axes]}` (inference, serving, a serving prefill): whole
// mesh axes, each once; expert axes only on an MoE model, dividing its experts, and apart from
// the model axes.
struct ModelParallelAxes {
  std::vector<int> model;     // [] when parallelism.model is not given
  std::vector<int> expert;
  std::vector<int> model_d;   // 2D weight-stationary: the axes D is split over (parallelism.model_d)
  std::vector<int> replica;   // data-parallel replicas in the slice (parallelism.replica)
  int context = -1;           // prefill: the axis prompts' tokens are split over (parallelism.context)
  bool model_given = false;   // serving gives a missing model list the axes the experts leave
};
ModelParallelAxes parse_model_parallelism(const yaml_fields::Field& parallelism, const TopologySpec& topology,
                                          const TransformerSpec& model);
// A number in (0, 1].
double read_fraction(const yaml_fields::Field& field);

}  // namespace podsim::detail
