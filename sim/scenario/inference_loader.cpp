// Parses `workload.kind: inference` for the scenario loader, and what serving shares with it:
// the numerics (dtypes, efficiency) and the model-parallel axes (model, model_d, replica,
// expert). The schema is documented in docs/scenario-schema.md.
#include "sim/scenario/inference_loader.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "sim/scenario/model_loader.hpp"
#include "sim/scenario/plan_axes.hpp"
#include "sim/scenario/routing_loader.hpp"
#include "sim/scenario/units.hpp"

namespace podsim::detail {

using namespace yaml_fields;   // the field readers every loader uses

void parse_inference_numerics(const MapReader& reader, const ChipSpec& chip, InferencePlan& plan) {
  // fp8 stores one byte like int8; int4 half a byte (seed 000's int4 rows cache K and V at it).
  if (auto weights = reader.optional("weights")) {
    plan.weight_bytes = read_choice<double>(*weights, {{"bf16", 2.0}, {"int8", 1.0}, {"fp8", 1.0}, {"int4", 0.5}});
  }
  if (auto kv = reader.optional("kv_cache"))
    plan.kv_bytes = read_choice<double>(*kv, {{"bf16", 2.0}, {"int8", 1.0}, {"fp8", 1.0}, {"int4", 0.5}});
  if (auto compute = reader.optional("compute")) {
    const std::string type = read_choice<std::string>(*compute, {{"bf16", "bf16"}, {"int8", "int8"}, {"fp8", "fp8"}});
    plan.int8_compute = type == "int8";
    plan.fp8_compute = type == "fp8";
    if (plan.fp8_compute && !(chip.fp8_flops_per_s > 0))
      fail(*compute, chip.name + " has no fp8 matmuls (the book's TPU table lists bf16 and int8 rates only); expected "
                     "bf16 or int8, or a rate in hardware.overrides.fp8_flops");
  }
  if (auto efficiency = reader.optional("efficiency")) plan.efficiency = read_fraction(*efficiency);
  if (auto attention = reader.optional("attention_flops")) plan.attention_flops = read_bool(*attention);
  if (auto overlap = reader.optional("collective_matmul")) plan.collective_matmul = read_bool(*overlap);
}

double read_fraction(const Field& field) {
  const double value = read_real(field);
  if (value <= 0 || value > 1) fail(field, "expected a fraction in (0, 1]");
  return value;
}

ModelParallelAxes parse_model_parallelism(const Field& parallelism, const TopologySpec& topology,
                                          const TransformerSpec& model) {
  const MapReader reader(parallelism, SchemaMap::ModelParallelism);
  reader.reject_unknown();
  ModelParallelAxes out;
  std::vector<std::pair<std::string, std::string>> used;
  if (auto model_axes = reader.optional("model")) {
    out.model = parse_whole_axes(*model_axes, topology, used, "model", "expected whole mesh axes for model parallelism");
    out.model_given = true;
    int degree = 1;
    for (int a : out.model) degree *= topology.axes[a].size;
    require_whole_heads(*model_axes, model, degree);
  }
  if (auto model_d = reader.optional("model_d")) {
    // 2D weight-stationary (inference.md Question 7): D over these axes, F or heads over model.
    if (!out.model_given)
      fail(*model_d, "2D weight-stationary sharding splits F (or heads) over parallelism.model and D over "
                     "model_d; expected parallelism.model beside it");
    const std::vector<int> d_axes = parse_whole_axes(*model_d, topology, used, "model_d", "expected whole mesh axes for model_d");
    if (model.moe) fail(*model_d, "2D weight-stationary sharding of a mixture-of-experts model is not supported; expected "
                                  "no model_d");
    int yz = 1;
    for (int a : out.model) yz *= topology.axes[a].size;
    if (model.attention != AttentionKind::None && model.kv_heads % yz != 0)
      fail(*model_d, std::to_string(model.kv_heads) + " KV heads of " + model.name + " do not split over the " +
                         std::to_string(yz) + " chips of parallelism.model (2D attention splits the heads over them); "
                         "expected model axes whose product divides the KV heads");
    out.model_d = d_axes;
  }
  if (auto replica = reader.optional("replica")) {
    // Data-parallel replicas: the batch split over these axes, a model copy on the others.
    out.replica = parse_whole_axes(*replica, topology, used, "replica", "expected whole mesh axes for replicas");
  }
  if (auto context = reader.optional("context")) {
    // Context parallelism (prefill): one whole axis, apart from the others.
    const int axis = parse_one_whole_axis(*context, topology, used, "context",
                                          "expected one mesh axis name (the prompts' tokens are split along it)");
    if (model.attention == AttentionKind::None)
      fail(*context, "context parallelism rings keys and values between a prompt's chips; " + model.name +
                         " has no attention, so splitting its prompts is splitting its batch: expected no context axis");
    out.context = axis;
  }
  if (auto expert = reader.optional("expert")) {
    out.expert = parse_expert_axes(*expert, topology, model, [&](int axis, const Field& item) {
      if (std::find(out.model.begin(), out.model.end(), axis) != out.model.end())
        fail(item, topology.axes[axis].name + " already carries model parallelism; expected expert axes apart from "
                   "parallelism.model: the batch is split over the expert axes outside the MoE blocks, and an "
                   "AllToAll over them takes each token to its experts' chips and back");
    });
  }
  return out;
}

InferenceWorkload parse_inference(const MapReader& reader, const TopologySpec& topology) {
  InferenceWorkload workload;
  InferencePlan& plan = workload.plan;
  if (auto phase = reader.optional("phase")) {
    plan.phase = read_choice<InferencePhase>(*phase, {{"decode", InferencePhase::Decode}, {"prefill", InferencePhase::Prefill}});
  }
  const bool decode = plan.phase == InferencePhase::Decode;
  const Field length = reader.required(decode ? "context_length" : "prompt_length");
  const int tokens = read_int(length, 1, kMaxModelDim);
  (decode ? plan.context_length : plan.prompt_length) = tokens;
  if (auto wrong = reader.optional(decode ? "prompt_length" : "context_length")) {
    fail(*wrong, decode ? "applies to phase: prefill; expected context_length for a decode step"
                        : "applies to phase: decode; expected prompt_length for a prefill");
  }
  workload.model = parse_model_field(reader.required("model"), tokens);
  if (tokens > workload.model.max_sequence_length) {
    fail(length, "longer than " + workload.model.name + "'s max_sequence_length of " +
                     std::to_string(workload.model.max_sequence_length) + "; expected at most that");
  }
  plan.batch = read_int(reader.required("batch"), 1, kMaxChips);
  parse_inference_numerics(reader, topology.chip, plan);
  if (auto parallelism = reader.optional("parallelism")) {
    const ModelParallelAxes axes = parse_model_parallelism(*parallelism, topology, workload.model);
    plan.model_axes = axes.model;
    plan.expert_axes = axes.expert;
    plan.d_axes = axes.model_d;
    plan.replica_axes = axes.replica;
    int replicas = 1;
    for (int a : plan.replica_axes) replicas *= topology.axes[a].size;
    if (plan.batch % replicas != 0)
      fail(reader.required("batch"), "does not split over the " + std::to_string(replicas) +
                                         " replicas of parallelism.replica; expected a multiple of " +
                                         std::to_string(replicas));
    int x = 1;
    for (int a : plan.d_axes) x *= topology.axes[a].size;
    if (workload.model.attention != AttentionKind::None && plan.batch % x != 0)
      fail(reader.required("batch"), "does not split over the " + std::to_string(x) +
                                         " chips of parallelism.model_d (2D attention splits the batch over them); "
                                         "expected a multiple of " + std::to_string(x));
    plan.context_axis = axes.context;
    if (axes.context >= 0) {
      const Field context = MapReader(*parallelism, SchemaMap::ModelParallelism).required("context");
      const int cp = topology.axes[axes.context].size;
      if (!decode) {
        if (plan.prompt_length % (2 * cp) != 0)
          fail(length, "does not split into 2 x " + std::to_string(cp) + " equal chunks over context axis " +
                           topology.axes[axes.context].name + " (the zig-zag split); expected a multiple of " +
                           std::to_string(2 * cp));
      } else {
        fail(context, "context parallelism splits a prompt's tokens; expected phase: prefill, or no context axis");
      }
    }
  }
  if (auto routing = reader.optional("routing")) plan.routing = parse_routing(*routing, workload.model, false);
  if (auto strict = reader.optional("strict_memory")) workload.strict_memory = read_bool(*strict);
  return workload;
}

}  // namespace podsim::detail
