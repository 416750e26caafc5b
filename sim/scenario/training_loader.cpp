// Parses `workload.kind: training` for the scenario loader: the model (a preset or a shape),
// the parallelism plan (data / fsdp / tensor / pipeline over mesh axes and topology.split parts),
// batch and microbatch checks. The fields an expectation may name are summary_field_names.hpp's.
// The schema is documented in docs/scenario-schema.md.
#include "sim/scenario/training_loader.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "sim/scenario/model_loader.hpp"
#include "sim/scenario/plan_axes.hpp"
#include "sim/scenario/routing_loader.hpp"
#include "sim/scenario/units.hpp"
#include "workloads/layer_kernels.hpp"

namespace podsim {
namespace {

using namespace yaml_fields;   // the field readers every loader uses

using detail::kMaxModelDim;
using detail::parse_expert_axes;
using detail::parse_one_whole_axis;
using detail::parse_plan_axes;
using detail::require_whole_heads;
constexpr double kMaxBatchTokens = 9007199254740992.0;   // 2^53: every whole number is exact

// Pipeline chunks (stages x virtual stages) must each get at least one layer (uneven counts
// are split ceil/floor, pipeline.cpp).
void check_stages(const Field& field, int stages, int virtual_stages, const TransformerSpec& model) {
  const int chunks = stages * virtual_stages;
  const std::string what = virtual_stages > 1 ? std::to_string(stages) + " stages x " + std::to_string(virtual_stages) +
                                                    " virtual stages = " + std::to_string(chunks) + " pipeline chunks"
                                              : std::to_string(stages) + " pipeline stages";
  if (chunks > model.layers) {
    fail(field, what + " for " + std::to_string(model.layers) + " layers of " + model.name +
                    "; expected at most one per layer");
  }
}

// The pipeline: its axis (a mesh axis or the slices), schedule and virtual stages, checked
// against the layers.
void parse_pipeline(const MapReader& reader, const TopologySpec& topology, const TransformerSpec& model,
                    std::vector<std::pair<std::string, std::string>>& used, TrainingPlan& plan) {
  const int slices = topology.slices;
  if (auto pipeline = reader.optional("pipeline"); pipeline && pipeline->node.IsScalar() &&
                                                   pipeline->node.Scalar() == "slices") {
    if (slices < 2) fail(*pipeline, "a pipeline over slices needs topology.slices >= 2");
    if (plan.dcn_data_parallel)
      fail(*reader.optional("dcn_data"), "the pipeline's stages take the slices, which leaves none for data "
                                         "parallelism over DCN; expected dcn_data: false, or a pipeline over a mesh axis");
    if (plan.dcn_fsdp)
      fail(*reader.optional("dcn_fsdp"), "the pipeline's stages take the slices, which leaves none for FSDP over "
                                         "DCN; expected dcn_fsdp: false, or a pipeline over a mesh axis");
    plan.pipeline_axis = Topology::kSliceAxis;
  } else if (pipeline) {
    plan.pipeline_axis = parse_one_whole_axis(*pipeline, topology, used, "pipeline",
                                              "expected one mesh axis name (the stages lie along it) or slices");
    if (plan.dcn_fsdp)
      fail(*reader.optional("dcn_fsdp"), "FSDP over DCN with a pipeline is not supported; expected dcn_fsdp: false "
                                         "or no pipeline");
  }
  if (auto schedule = reader.optional("schedule")) {
    if (plan.pipeline_axis < 0) fail(*schedule, "a schedule needs a pipeline axis; expected parallelism.pipeline");
    plan.schedule = read_choice<PipelineSchedule>(*schedule, {{"gpipe", PipelineSchedule::GPipe},
                                                             {"1f1b", PipelineSchedule::OneFOneB},
                                                             {"interleaved_1f1b", PipelineSchedule::Interleaved1F1B},
                                                             {"zb_h1", PipelineSchedule::ZeroBubbleH1}});
  }
  const auto virtual_stages = reader.optional("virtual_stages");
  if (virtual_stages) {
    if (plan.schedule != PipelineSchedule::Interleaved1F1B)
      fail(*virtual_stages, "virtual stages need schedule: interleaved_1f1b; expected no virtual_stages with " +
                                std::string(schedule_name(plan.schedule)));
    plan.virtual_stages = read_int(*virtual_stages, 2, kMaxModelDim);
  } else if (plan.schedule == PipelineSchedule::Interleaved1F1B) {
    plan.virtual_stages = 2;   // Megatron's smallest interleaving
  }
  if (auto pipeline = reader.optional("pipeline")) {
    const int stages = stage_count(plan, topology);
    check_stages(virtual_stages ? *virtual_stages : *pipeline, stages, plan.virtual_stages, model);
  }
}

// parallelism.fsdp_transpose: further FSDP axes beside the data axes.
void read_fsdp_transpose(const MapReader& reader, const TopologySpec& topology,
                         std::vector<std::pair<std::string, std::string>>& used, TrainingPlan& plan) {
  if (auto transpose = reader.optional("fsdp_transpose")) {
    // MaxText's fsdp_transpose mesh axis (ici_fsdp_transpose_parallelism): a second FSDP axis.
    // Its logical rules (base.yml:601-606 at e591f30) shard an MLP weight's hidden dimension
    // ('mlp') over fsdp_transpose and its model dimension ('embed') over fsdp, attention's
    // 'embed' over both; the batch splits over both (activation_batch). Each weight is still
    // gathered whole over both axes before its matmul and its gradient reduce-scattered over
    // both: FSDP over the product of the axes.
    if (!plan.fsdp) fail(*transpose, "a second FSDP axis; expected fsdp: true beside it");
    auto parsed = parse_plan_axes(*transpose, topology, used, "fsdp_transpose");
    if (!plan.data_slices.empty() || !parsed.slices.empty()) {
      if (plan.data_slices.empty()) plan.data_slices.assign(plan.data_axes.size(), AxisSlice{1, 0});
      if (parsed.slices.empty()) parsed.slices.assign(parsed.axes.size(), AxisSlice{1, 0});
    }
    plan.data_axes.insert(plan.data_axes.end(), parsed.axes.begin(), parsed.axes.end());
    plan.data_slices.insert(plan.data_slices.end(), parsed.slices.begin(), parsed.slices.end());
  }
}

// parallelism.dcn_fsdp: the slices join FSDP.
void read_dcn_fsdp(const MapReader& reader, int slices, const TransformerSpec& model, TrainingPlan& plan) {
  if (auto dcn_fsdp = reader.optional("dcn_fsdp")) {
    // MaxText's dcn_fsdp_parallelism equal to the slices (training.hpp, TrainingPlan::dcn_fsdp).
    plan.dcn_fsdp = read_bool(*dcn_fsdp);
    if (plan.dcn_fsdp && slices < 2) fail(*dcn_fsdp, "FSDP over DCN needs topology.slices >= 2");
    if (plan.dcn_fsdp && !plan.fsdp)
      fail(*dcn_fsdp, "shards the weights across slices as FSDP does within one; expected fsdp: true beside it");
    if (plan.dcn_fsdp && plan.dcn_data_parallel)
      fail(*dcn_fsdp, "the slices form one DCN axis, which carries data parallelism or FSDP, not both (MaxText's "
                      "dcn_data_parallelism x dcn_fsdp_parallelism splitting the slices is not supported); expected "
                      "dcn_data: false");
    if (plan.dcn_fsdp && model.moe)
      fail(*dcn_fsdp, model.name + " has routed experts, whose weights podsim shards within a slice only; expected "
                      "dcn_data with fsdp, or a dense model");
  }
}

void parse_parallelism(const Field& field, const TopologySpec& topology, const TransformerSpec& model,
                       TrainingPlan& plan) {
  const int slices = topology.slices;
  const MapReader reader(field, SchemaMap::TrainingParallelism);
  reader.reject_unknown();
  std::vector<std::pair<std::string, std::string>> used;
  if (auto data = reader.optional("data")) {
    auto parsed = parse_plan_axes(*data, topology, used, "data");
    plan.data_axes = parsed.axes;
    plan.data_slices = parsed.slices;
  }
  if (auto tensor = reader.optional("tensor")) {
    auto parsed = parse_plan_axes(*tensor, topology, used, "tensor");
    plan.tensor_axes = parsed.axes;
    plan.tensor_slices = parsed.slices;
    int degree = 1;
    for (size_t i = 0; i < parsed.axes.size(); ++i)
      degree *= !parsed.slices.empty() && parsed.slices[i].size != 0 ? parsed.slices[i].size
                                                                     : topology.axes[parsed.axes[i]].size;
    require_whole_heads(*tensor, model, degree);
  }
  if (auto expert = reader.optional("expert")) {
    plan.expert_axes = parse_expert_axes(*expert, topology, model, [&](int axis, const Field& item) {
      const std::string& name = topology.axes[axis].name;
      for (size_t i = 0; i < plan.data_axes.size(); ++i) {
        if (plan.data_axes[i] != axis) continue;
        if (plan.data_slices.empty() || plan.data_slices[i].size == 0) return;
        fail(item, "only part of " + name + " (a split axis) carries data parallelism; expected whole data axes "
                   "as expert axes");
      }
      std::vector<std::string> data;
      for (int a : plan.data_axes) data.push_back(topology.axes[a].name);
      fail(item, name + " is not a data axis (data: " + (data.empty() ? std::string("none") : join(data)) +
                     "); expected expert axes among parallelism.data: tokens are data-parallel across the expert "
                     "ranks, and an AllToAll over the expert axes takes each token to its experts' chips and back");
    });
  }
  if (auto fsdp = reader.optional("fsdp")) plan.fsdp = read_bool(*fsdp);
  if (auto zero = reader.optional("zero")) {
    // ZeRO-1/2 over the data axes (stage 3 is fsdp: true).
    plan.zero_stage = read_int(*zero, 1, 2);
    if (plan.fsdp) fail(*zero, "fsdp: true is ZeRO-3; expected zero: 1 or 2 without fsdp, or fsdp alone");
    if (plan.data_axes.empty()) fail(*zero, "ZeRO shards over the data axes; expected parallelism.data beside it");
  }
  if (auto overlap = reader.optional("tensor_overlap")) plan.tensor_overlap = read_bool(*overlap);
  if (auto context = reader.optional("context")) {
    // Context parallelism: a data axis for the weights (synchronised over it), which splits
    // each sequence rather than the batch.
    const int axis =
        parse_one_whole_axis(*context, topology, used, "context", "expected one mesh axis name (each sequence is split along it)");
    if (model.attention == AttentionKind::None)
      fail(*context, "context parallelism rings keys and values between a sequence's chips; " + model.name +
                         " has no attention, so splitting its sequences is splitting its batch: expected "
                         "parallelism.data instead");
    plan.context_axis = axis;
    plan.data_axes.push_back(plan.context_axis);
    if (!plan.data_slices.empty()) plan.data_slices.push_back(AxisSlice{1, 0});
  }
  read_fsdp_transpose(reader, topology, used, plan);
  if (auto dcn = reader.optional("dcn_data")) {
    plan.dcn_data_parallel = read_bool(*dcn);
    if (plan.dcn_data_parallel && slices < 2) fail(*dcn, "data parallelism over DCN needs topology.slices >= 2");
  }
  read_dcn_fsdp(reader, slices, model, plan);
  parse_pipeline(reader, topology, model, used, plan);
  if (auto sync = reader.optional("dcn_sync")) {
    plan.dcn_sync = read_choice<DcnSync>(*sync, {{"per_block", DcnSync::PerBlock},
                                                 {"after_backward", DcnSync::AfterBackward},
                                                 {"pipelined", DcnSync::Pipelined}});
    if (plan.dcn_sync != DcnSync::PerBlock && (!plan.dcn_data_parallel || !(plan.fsdp || plan.zero_stage > 0) ||
                                               plan.pipeline_axis >= 0))
      fail(*sync, plan.dcn_fsdp ? "moves sharded gradients' DCN all-reduce within a scanned layer loop; under dcn_fsdp "
                                  "gradients are reduce-scattered across slices, with no all-reduce to move"
                                : "moves sharded gradients' DCN all-reduce within a scanned layer loop; expected "
                                  "dcn_data: true with fsdp or zero, and no pipeline");
  }
}

double read_batch_tokens(const Field& field) {
  const std::string expected = "expected a whole number of tokens > 0, e.g. 3145728 or 3.0e6";
  if (!field.node.IsScalar()) fail(field, expected);
  const std::string& text = field.node.Scalar();
  double value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(value) || value <= 0 ||
      value != std::floor(value))
    fail(field, expected);
  // From 2^52 on a decimal can round to a neighbouring whole double (9007199254740993 reads as
  // 2^53, and would pass the bound below): there the text must be plain digits, read exactly.
  if (value >= 0x1p52) {
    uint64_t exact = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), exact);
    if (error != std::errc() || end != text.data() + text.size() || exact > static_cast<uint64_t>(kMaxBatchTokens))
      fail(field, "expected at most 2^53 = 9007199254740992 tokens, written as plain digits from 2^52 on so that "
                  "no value is rounded");
    return static_cast<double>(exact);
  }
  return value;
}

std::string data_shards_text(const TrainingPlan& plan, const std::vector<MeshAxis>& mesh, int64_t degree,
                             int slices) {
  if (plan.data_axes.empty() && !slices_split_batch(plan)) return "1 data shard (no data axes)";
  std::vector<std::string> sizes;
  if (slices_split_batch(plan)) sizes.push_back("slices=" + std::to_string(slices));
  for (size_t i = 0; i < plan.data_axes.size(); ++i) {
    const int axis = plan.data_axes[i];
    if (axis == plan.context_axis) continue;   // splits sequences, not the batch
    const int part = plan.data_slices.empty() ? 0 : plan.data_slices[i].size;
    sizes.push_back(mesh[axis].name + (part != 0 ? "/" : "=") + std::to_string(part != 0 ? part : mesh[axis].size));
  }
  if (sizes.empty()) return "1 data shard (no data axes)";
  return std::to_string(degree) + " data shards (" + join(sizes, " x ") + ")";
}

// The data shards the batch splits into: the slices (when they split it) x the data axes, less
// the context axis (it splits sequences).
int64_t data_degree(const TrainingPlan& plan, const std::vector<MeshAxis>& mesh, int slices) {
  int64_t degree = slices_split_batch(plan) ? slices : 1;
  for (size_t i = 0; i < plan.data_axes.size(); ++i) {
    if (plan.data_axes[i] == plan.context_axis) continue;
    const int part = plan.data_slices.empty() ? 0 : plan.data_slices[i].size;
    degree *= part != 0 ? part : mesh[plan.data_axes[i]].size;
  }
  return degree;
}

// The batch must be whole sequences, split evenly over the data shards and the microbatches.
void check_batch(const Field& batch_field, const std::optional<Field>& microbatch_field,
                 const TrainingPlan& plan, const std::vector<MeshAxis>& mesh, int slices) {
  const double tokens = plan.global_batch_tokens;
  const double length = plan.sequence_length;
  const std::string tokens_text = std::to_string(static_cast<int64_t>(tokens));
  if (std::fmod(tokens, length) != 0.0)
    fail(batch_field, tokens_text + " tokens is not a whole number of " + std::to_string(plan.sequence_length) +
                          "-token sequences; expected a multiple of sequence_length");
  const int64_t sequences = static_cast<int64_t>(tokens / length);
  int64_t degree = slices_split_batch(plan) ? slices : 1;   // slices split the batch too
  for (size_t i = 0; i < plan.data_axes.size(); ++i) {
    if (plan.data_axes[i] == plan.context_axis) continue;   // splits sequences, not the batch
    const int part = plan.data_slices.empty() ? 0 : plan.data_slices[i].size;
    degree *= part != 0 ? part : mesh[plan.data_axes[i]].size;
  }
  const int64_t ways = degree * plan.microbatches;
  if (sequences % ways == 0) return;
  const std::string message =
      tokens_text + " tokens = " + std::to_string(sequences) + " sequences of " +
      std::to_string(plan.sequence_length) + " tokens, which do not divide over " +
      data_shards_text(plan, mesh, degree, slices) + " x " + std::to_string(plan.microbatches) + " microbatches = " +
      std::to_string(ways) + "; expected a multiple of " + std::to_string(ways) + " sequences (" +
      std::to_string(ways * plan.sequence_length) + " tokens)";
  // When the data shards alone divide the batch, the microbatch count is what breaks it.
  fail(microbatch_field && sequences % degree == 0 ? *microbatch_field : batch_field, message);
}

// remat_policy (MaxText's names, remat_policy.hpp) in place of checkpointing, and with `custom`
// the `remat` mapping of tensor names to device, offload or remat.
void read_remat(const MapReader& reader, const std::optional<Field>& checkpointing, const TransformerSpec& model,
                TrainingPlan& plan) {
  const auto policy = reader.optional("remat_policy");
  const auto custom = reader.optional("remat");
  if (!policy) {
    if (custom) fail(*custom, "a per-tensor policy needs remat_policy: custom");
    return;
  }
  if (checkpointing) fail(*policy, "says what is kept, as checkpointing does; expected one of the two");
  // An MLA layer's kernels carry MaxText's checkpoint names too (layer_kernels.cpp,
  // append_mla_attention), so every policy prices on it as on GQA.
  const std::string name = read_string(*policy);
  if (name != "custom") {
    if (custom) fail(*custom, "only with remat_policy: custom (" + name + " says what each tensor does)");
    try {
      plan.remat = remat_policy(name);
    } catch (const std::invalid_argument&) {
      fail(*policy, "expected one of: " + join(remat_policy_names()));
    }
    return;
  }
  if (!custom) fail(*policy, "custom needs a remat mapping: each tensor device, offload or remat");
  std::map<std::string, std::string> fates;
  const MapReader tensors(*custom, SchemaMap::Remat);
  tensors.reject_unknown();
  // The tensors this model's layers produce: MaxText accepts the name of one its layer lacks
  // and it keeps nothing, which a scenario would not mean.
  std::set<std::string> produced{kDecoderLayerInput};
  for (const auto& k : layer_kernels(model, 1, 1, 1, ChipSpec{})) produced.insert(k.name);
  for (const auto& entry : tensors.entries()) {
    fates[entry.name] = read_choice<std::string>(entry.value, {{"device", "device"}, {"offload", "offload"},
                                                              {"remat", "remat"}});
    if (entry.name == kDecoderLayerInput && fates[entry.name] == "remat")
      fail(entry.value, "each layer's input is where the backward's rerun of the layer starts (the scan's carry), "
                        "which MaxText refuses to rematerialise (pyconfig.py:436 at 3eb77db3); expected device or "
                        "offload");
    const auto& mla = mla_remat_tensor_names();
    if (std::find(mla.begin(), mla.end(), entry.name) != mla.end() && !produced.count(entry.name))
      fail(entry.value, entry.name + " is an MLA layer's latent (attention_mla.py at e591f30), which " + model.name +
                            (model.attention == AttentionKind::Mla
                                 ? " lacks (q_lora_rank 0: its queries have no latent)"
                                 : " does not have (its attention is not MLA)") +
                            "; expected one of its layers' tensors");
  }
  plan.remat = custom_remat_policy(fates);
}

}  // namespace

namespace {

// MaxText's weight_ and act_quantization_calibration_method for fp8 (qwix): "absmax", the
// default (a scale read from each tensor), or "fixed,LO,HI" (the Ironwood recipes' fixed,-224,224:
// a constant scale, a cast); only with quantization fp8.
void read_calibration_methods(const MapReader& reader, MatmulQuantization& q) {
  for (const char* key : {"weight_quantization_calibration_method", "act_quantization_calibration_method"}) {
    const auto field = reader.optional(key);
    if (!field) continue;
    if (!q.fp8) fail(*field, "a calibration method of fp8 training; expected it with quantization: fp8_full");
    const std::string method = read_string(*field);
    double lo = 0, hi = 0;
    char tail = 0;
    const bool fixed = std::sscanf(method.c_str(), "fixed,%lf,%lf%c", &lo, &hi, &tail) == 2 && lo < hi;
    if (method != "absmax" && !fixed)
      fail(*field, "expected absmax (MaxText's default) or fixed,LO,HI with LO < HI, e.g. \"fixed,-224,224\"");
    (std::string(key).rfind("weight", 0) == 0 ? q.fixed_weight_scale : q.fixed_act_scale) = fixed;
  }
}

}  // namespace

namespace detail {

// quantization (MaxText's key: "" or none, int8, fp8 or fp8_full, qwix's fp8 training) and
// quantization_local_shard_count (MaxText's: -1 the slices, 0 the weight gradients in bf16, k > 0
// local AQT over k parts; int8 only).
void read_quantization(const MapReader& reader, const TopologySpec& topology, TrainingPlan& plan) {
  const auto quantization = reader.optional("quantization");
  const auto shards = reader.optional("quantization_local_shard_count");
  if (quantization) {
    const std::string kind = read_choice<std::string>(
        *quantization, {{"none", "none"}, {"int8", "int8"}, {"fp8", "fp8"}, {"fp8_full", "fp8"}});
    plan.quantization.int8 = kind == "int8";
    plan.quantization.fp8 = kind == "fp8";
    if (kind != "none" && topology.chip.compute_model != ComputeModel::Kernels)
      fail(*quantization, kind + " training is priced kernel by kernel (its quantize passes are ops of their own); "
                          "expected hardware.overrides.compute_model: kernels (a real profile's, the default)");
    if (plan.quantization.fp8 && !(topology.chip.fp8_flops_per_s > 0))
      fail(*quantization, topology.chip.name + " has no fp8 matmuls (tpu7x has; the book's table lists bf16 and int8 "
                          "rates only); expected none or int8, or a rate in hardware.overrides.fp8_flops");
  }
  read_calibration_methods(reader, plan.quantization);
  if (!shards) {
    // AQT's default, one part a slice; fp8's weight gradient is one product (qwix splits none).
    plan.quantization.local_shards = plan.quantization.int8 ? topology.slices : 1;
    return;
  }
  if (!plan.quantization.int8) fail(*shards, "how int8 weight gradients are split; expected it with quantization: int8");
  const int k = read_int(*shards, -1, kMaxChips);
  plan.quantization.weight_gradients = k != 0;
  plan.quantization.local_shards = k < 0 ? topology.slices : std::max(k, 1);
}

// master_weights, gradients and weight_dtype: the dtypes a parameter is kept and reduced in.
void read_precision(const MapReader& reader, TrainingWorkload& workload) {
  // Mixed-precision bookkeeping as Megatron counts it: an fp32 master copy of the weights (4 B
  // a parameter, sharded like the optimizer state) and fp32 gradient accumulation (4 B instead
  // of 2): 2 + 4 + 4 + 8 = 18 B a parameter with Adam.
  if (auto master = reader.optional("master_weights"))
    workload.model.master_weight_bytes_per_param = read_bool(*master) ? 4.0 : 0.0;
  if (auto gradients = reader.optional("gradients"))
    workload.model.gradient_bytes_per_param = read_choice<double>(*gradients, {{"bf16", 2.0}, {"fp32", 4.0}});
  if (auto dtype = reader.optional("weight_dtype")) {
    // MaxText's weight_dtype (base.yml:174 at e591f30, default float32): the dtype the weights
    // are stored in. Each layer casts its shard to bf16 before FSDP's gather (linears.py:297),
    // so gathers and matmuls stay bf16; the gradients are the stored weights' dtype (grad_dtype
    // float32, train.py:535) unless `gradients` says otherwise; the optimizer reads and writes
    // the fp32 weights.
    workload.model.weight_dtype_bytes = read_choice<double>(*dtype, {{"float32", 4.0}, {"bfloat16", 2.0}});
    if (workload.model.weight_dtype_bytes == 4.0 && workload.model.master_weight_bytes_per_param > 0)
      fail(*dtype, "float32 weights are MaxText's only copy of the weights, which master_weights: true would count "
                   "twice; expected one of weight_dtype: float32 or master_weights: true");
  }
}

// num_vocab_tiling, checked against a data shard's microbatch tokens.
void read_vocab_tiling(const MapReader& reader, const TopologySpec& topology, TrainingPlan& plan) {
  if (auto tiles = reader.optional("num_vocab_tiling")) {
    plan.num_vocab_tiling = read_int(*tiles, 1, kMaxModelDim);
    // MaxText's check (types.py:4001 at e591f30): a data shard's tokens split into whole tiles.
    const double per_shard = plan.global_batch_tokens / plan.microbatches /
                             (static_cast<double>(data_degree(plan, topology.axes, topology.slices)));
    if (std::fmod(per_shard, plan.num_vocab_tiling) != 0)
      fail(*tiles, "does not divide the " + std::to_string(static_cast<int64_t>(per_shard)) +
                       " tokens of a microbatch on one data shard (per_device_batch_size x max_target_length in "
                       "MaxText); expected a divisor of it");
  }
}

TrainingWorkload parse_training(const MapReader& reader, const TopologySpec& topology) {
  TrainingWorkload workload;
  TrainingPlan& plan = workload.plan;
  const Field length = reader.required("sequence_length");
  plan.sequence_length = read_int(length, 1, kMaxModelDim);
  workload.model = detail::parse_model_field(reader.required("model"), plan.sequence_length);
  if (plan.sequence_length > workload.model.max_sequence_length)
    fail(length, "longer than " + workload.model.name + "'s max_sequence_length of " +
                     std::to_string(workload.model.max_sequence_length) + "; expected at most that");
  if (auto parallelism = reader.optional("parallelism")) parse_parallelism(*parallelism, topology, workload.model, plan);
  if (plan.context_axis >= 0 && plan.sequence_length % (2 * topology.axes[plan.context_axis].size) != 0) {
    const int cp = topology.axes[plan.context_axis].size;
    fail(length, "does not split into 2 x " + std::to_string(cp) + " = " + std::to_string(2 * cp) +
                     " equal chunks over context axis " + topology.axes[plan.context_axis].name +
                     " (zig-zag load balancing); expected a multiple of " + std::to_string(2 * cp));
  }
  const auto microbatches = reader.optional("microbatches");
  if (microbatches) plan.microbatches = read_int(*microbatches, 1, kMaxChips);
  if (plan.pipeline_axis >= 0) {
    const int stages = stage_count(plan, topology);
    const auto why = check_pipeline_schedule(plan.schedule, stages, plan.microbatches, plan.virtual_stages);
    if (!why.empty()) fail(microbatches ? *microbatches : reader.required("parallelism"), why);
  }
  const Field batch = reader.required("batch_tokens");
  plan.global_batch_tokens = read_batch_tokens(batch);
  check_batch(batch, microbatches, plan, topology.axes, topology.slices);
  const auto checkpointing = reader.optional("checkpointing");
  if (checkpointing)
    plan.checkpointing = read_choice<Checkpointing>(
        *checkpointing, {{"none", Checkpointing::None}, {"block", Checkpointing::Block}, {"book", Checkpointing::Book}});
  read_remat(reader, checkpointing, workload.model, plan);
  if (auto kernel = reader.optional("attention_kernel"))
    plan.attention_run.flash = read_choice<bool>(*kernel, {{"flash", true}, {"dot_product", false}});
  if (auto causal = reader.optional("causal_attention")) plan.attention_run.causal = read_bool(*causal);
  if (auto block = reader.optional("flash_block")) {
    if (!plan.attention_run.flash) fail(*block, "a flash attention block size; expected attention_kernel: flash");
    plan.attention_run.block = read_int(*block, 1, 1 << 20);
  }
  read_quantization(reader, topology, plan);
  if (auto efficiency = reader.optional("matmul_efficiency")) {
    plan.matmul_efficiency = read_real(*efficiency);
    if (plan.matmul_efficiency <= 0.0 || plan.matmul_efficiency > 1.0)
      fail(*efficiency, "expected a fraction in (0, 1]");
  }
  if (auto attention = reader.optional("attention_flops")) plan.attention_flops = read_bool(*attention);
  if (auto strict = reader.optional("strict_memory")) workload.strict_memory = read_bool(*strict);
  read_precision(reader, workload);
  read_vocab_tiling(reader, topology, plan);
  if (auto budget = reader.optional("token_budget")) {
    workload.token_budget = read_real(*budget);
    if (!(workload.token_budget >= plan.global_batch_tokens && workload.token_budget <= 1e18))
      fail(*budget, "expected the tokens a run trains on, from one batch (" + std::to_string(plan.global_batch_tokens) +
                        ") to 1e18, e.g. 15e12");
  }
  if (auto routing = reader.optional("routing")) plan.routing = parse_routing(*routing, workload.model, true);
  return workload;
}

}  // namespace detail
}  // namespace podsim
