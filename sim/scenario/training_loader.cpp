// Parses `workload.kind: training` for the scenario loader: the model (a preset or a shape),
// the parallelism plan (data / fsdp / tensor / pipeline over mesh axes and topology.split parts),
// batch and microbatch checks, and the fields a training expectation may name.
// The schema is documented in docs/scenario-schema.md.
#include "sim/scenario/training_loader.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "sim/scenario/routing_loader.hpp"
#include "sim/scenario/units.hpp"

namespace podsim {
namespace {

using yaml_fields::Field;
using yaml_fields::MapReader;
using yaml_fields::axis_index;
using yaml_fields::axis_names;
using yaml_fields::fail;
using yaml_fields::join;
using yaml_fields::kMaxChips;
using yaml_fields::read_bool;
using yaml_fields::read_choice;
using yaml_fields::read_int;
using yaml_fields::read_list;
using yaml_fields::read_real;
using yaml_fields::read_string;

constexpr int kMaxModelDim = 1 << 30;
constexpr double kMaxBatchTokens = 9007199254740992.0;   // 2^53: every whole number is exact

const std::vector<std::string> kModelDims = {"layers", "d_model", "d_ff", "heads", "kv_heads", "head_dim", "vocab"};

const TransformerSpec& read_model_preset(const Field& field) {
  const std::string name = read_string(field);
  if (const TransformerSpec* model = find_model_preset(name)) return *model;
  std::vector<std::string> names;
  for (const TransformerSpec& model : model_presets()) names.push_back(model.name);
  for (const TransformerSpec& model : moe_model_presets()) names.push_back(model.name);
  fail(field, "unknown model preset; expected one of: " + join(names) + ", or a mapping of the model's shape");
}

// validate_transformer_spec names the field it rejects ("TransformerSpec 'x': heads ...", or
// "moe.<key>" / "mla.<key>" for the nested mappings); blame that key where the scenario gave it,
// else the mapping it belongs to, else the whole model.
[[noreturn]] void fail_model(const MapReader& reader, const MapReader* moe, const MapReader* attention,
                             const std::string& message) {
  const size_t start = message.find("': ");
  std::string key;
  if (start != std::string::npos) {
    const size_t end = message.find_first_of(" (", start + 3);
    key = message.substr(start + 3, end == std::string::npos ? std::string::npos : end - start - 3);
  }
  // "heads (N) must be a multiple of kv_heads (K)": the override is likelier the kv_heads.
  if (key == "heads" && message.find("kv_heads") != std::string::npos && reader.optional("kv_heads"))
    key = "kv_heads";
  const MapReader* where = &reader;
  if (key.starts_with("moe.") || key.starts_with("mla.")) {
    where = key.starts_with("moe.") ? moe : attention;
    key = key.substr(4);
    // "experts_per_token (k) must be at most experts (E)": when only experts was given, blame it;
    // "dense_layers (n) must be at most layers (L)": when only layers was, blame that.
    if (key == "experts_per_token" && where && !where->optional(key) && where->optional("experts")) key = "experts";
    if (key == "dense_layers" && (!where || !where->optional(key)) && reader.optional("layers")) {
      where = &reader;
      key = "layers";
    }
    if (!where) fail(reader.self(), message);
  }
  fail(where->optional(key).value_or(where->self()), message);
}

// `moe:` over the preset's experts, or, on a dense model, a whole MoE block.
MoeSpec parse_moe(const MapReader& moe, const std::optional<MoeSpec>& base) {
  moe.reject_unknown();
  if (!base) {
    for (const char* key : {"experts", "experts_per_token", "expert_d_ff"})
      if (!moe.optional(key))
        fail(moe.self(), std::string("missing ") + key +
                             "; a dense model made MoE needs experts, experts_per_token and expert_d_ff "
                             "(shared_experts and dense_layers default to 0)");
  }
  MoeSpec m = base.value_or(MoeSpec{});
  auto set = [&](std::string_view key, int& target, int64_t min) {
    if (auto value = moe.optional(key)) target = read_int(*value, min, kMaxModelDim);
  };
  set("experts", m.experts, 1);
  set("experts_per_token", m.experts_per_token, 1);
  set("shared_experts", m.shared_experts, 0);
  set("expert_d_ff", m.expert_d_ff, 1);
  set("dense_layers", m.dense_layers, 0);
  return m;
}

// `attention:`: the kind (gqa, the default, or mla) and, for mla, its latent dims.
void parse_attention(const MapReader& attention, TransformerSpec& model) {
  attention.reject_unknown();
  const bool was_mla = model.attention == AttentionKind::Mla;
  if (auto kind = attention.optional("kind"))
    model.attention = read_choice<AttentionKind>(
        *kind, {{"gqa", AttentionKind::Gqa}, {"mla", AttentionKind::Mla}, {"none", AttentionKind::None}});
  const std::vector<std::string> dims = {"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
                                         "v_head_dim"};
  if (model.attention != AttentionKind::Mla) {
    for (const std::string& dim : dims)
      if (auto value = attention.optional(dim))
        fail(*value, "applies to kind: mla; expected kind: mla beside it, or no " + dim + " for gqa attention");
    return;
  }
  if (!was_mla) {
    for (const char* dim : {"kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"})
      if (!attention.optional(dim))
        fail(attention.self(), std::string("missing ") + dim + "; kind: mla needs kv_lora_rank, qk_nope_head_dim, "
                               "qk_rope_head_dim and v_head_dim (q_lora_rank defaults to 0: no query latent)");
  }
  auto set = [&](std::string_view key, int& target, int64_t min) {
    if (auto value = attention.optional(key)) target = read_int(*value, min, kMaxModelDim);
  };
  set("q_lora_rank", model.mla.q_lora_rank, 0);
  set("kv_lora_rank", model.mla.kv_lora_rank, 1);
  set("qk_nope_head_dim", model.mla.qk_nope_head_dim, 1);
  set("qk_rope_head_dim", model.mla.qk_rope_head_dim, 1);
  set("v_head_dim", model.mla.v_head_dim, 1);
}

// A preset name, or a mapping: a preset with overrides, or a whole custom shape.
TransformerSpec parse_model(const Field& field, int sequence_length) {
  if (field.node.IsScalar()) return read_model_preset(field);
  const MapReader reader(field, SchemaMap::Model);
  reader.reject_unknown();
  TransformerSpec model;
  const auto preset = reader.optional("preset");
  if (preset) {
    model = read_model_preset(*preset);
  } else {
    for (const std::string& dim : kModelDims)
      if (!reader.optional(dim))
        fail(field, "missing " + dim + "; without a preset the model needs all of " + join(kModelDims) +
                        " (or give preset: to start from a published shape)");
    model.name = "custom";
    model.max_sequence_length = sequence_length;   // no published limit: whatever is asked
  }
  auto set = [&](std::string_view key, int& target, int64_t min) {
    if (auto value = reader.optional(key)) target = read_int(*value, min, kMaxModelDim);
  };
  set("layers", model.layers, 1);
  set("d_model", model.d_model, 1);
  set("d_ff", model.d_ff, 1);
  set("heads", model.heads, 1);
  set("kv_heads", model.kv_heads, 1);
  set("head_dim", model.head_dim, 1);
  set("vocab", model.vocab, 0);
  set("max_sequence_length", model.max_sequence_length, 1);
  if (auto gated = reader.optional("gated_mlp")) model.gated_mlp = read_bool(*gated);
  if (auto tied = reader.optional("tied_embeddings")) model.tied_embeddings = read_bool(*tied);
  std::optional<MapReader> moe, attention;
  if (auto field = reader.optional("moe")) {
    moe.emplace(*field, SchemaMap::ModelMoe);
    model.moe = parse_moe(*moe, model.moe);
  }
  if (auto field = reader.optional("attention")) {
    attention.emplace(*field, SchemaMap::ModelAttention);
    parse_attention(*attention, model);
  }
  if (auto name = reader.optional("name")) model.name = read_string(*name);
  else if (preset && reader.entries().size() > 1) model.name += "-modified";
  try {
    validate_transformer_spec(model);
  } catch (const std::invalid_argument& error) {
    fail_model(reader, moe ? &*moe : nullptr, attention ? &*attention : nullptr, error.what());
  }
  return model;
}

// Axis names of one kind of parallelism: mesh axes, or logical axes from topology.split. Each
// axis carries at most one kind, once; the inner and outer parts of a split axis may carry
// one kind each.
struct PlanAxes {
  std::vector<int> axes;
  std::vector<AxisSlice> slices;
};

// The names an axes value lists: a list, one name, or `all` (every mesh axis, in order).
std::vector<Field> axis_items(const Field& field, const TopologySpec& topology) {
  std::vector<Field> items;
  if (field.node.IsScalar() && field.node.Scalar() == "all") {   // every mesh axis, in order
    for (const auto& axis : topology.axes) {
      Field item = field;
      item.node = YAML::Node(axis.name);
      items.push_back(item);
    }
  } else if (field.node.IsScalar()) {
    items.push_back(field);   // "data: X" for a single axis
  } else {
    items = read_list(field);
  }
  return items;
}

PlanAxes parse_plan_axes(const Field& field, const TopologySpec& topology,
                         std::vector<std::pair<std::string, std::string>>& used, const std::string& kind) {
  const std::vector<Field> items = axis_items(field, topology);
  PlanAxes out;
  const auto& mesh = topology.axes;
  for (const Field& item : items) {
    const std::string name = read_string(item);
    int index = axis_index(mesh, name);
    AxisSlice slice{1, 0};
    std::string key = name;   // what conflicts: "Z", or "Z:inner" / "Z:outer"
    if (index < 0) {
      for (const auto& split : topology.splits) {
        if (name != split.inner && name != split.outer) continue;
        index = split.axis;
        const int n = mesh[split.axis].size;
        slice = name == split.inner ? AxisSlice{1, split.inner_size} : AxisSlice{split.inner_size, n / split.inner_size};
        key = mesh[split.axis].name + (name == split.inner ? ":inner" : ":outer");
      }
    }
    if (index < 0) {
      std::string known = axis_names(mesh);
      for (const auto& split : topology.splits) known += ", " + split.inner + ", " + split.outer;
      fail(item, "not a mesh axis; the mesh has " + known);
    }
    const std::string physical = mesh[index].name;
    for (const auto& [other, owner] : used) {
      const bool clash = other == key || other == physical || (key == physical && other.rfind(physical + ":", 0) == 0);
      if (clash) {
        fail(item, owner == kind ? "axis listed twice"
                                 : "axis already carries " + owner +
                                       " parallelism; expected each mesh axis (or each part of a split axis) in at "
                                       "most one of data, tensor and pipeline");
      }
    }
    used.emplace_back(key, kind);
    out.axes.push_back(index);
    out.slices.push_back(slice);
  }
  return out;
}

// Pipeline chunks (stages x virtual stages) must each get a whole, equal share of the layers.
void check_stages(const Field& field, int stages, int virtual_stages, const TransformerSpec& model) {
  const int chunks = stages * virtual_stages;
  const std::string what = virtual_stages > 1 ? std::to_string(stages) + " stages x " + std::to_string(virtual_stages) +
                                                    " virtual stages = " + std::to_string(chunks) + " pipeline chunks"
                                              : std::to_string(stages) + " pipeline stages";
  if (chunks > model.layers) {
    fail(field, what + " for " + std::to_string(model.layers) + " layers of " + model.name +
                    "; expected at most one per layer");
  }
  if (model.layers % chunks != 0) {
    fail(field, std::to_string(model.layers) + " layers do not split evenly over " + what +
                    "; expected a count dividing the layers");
  }
}

// `expert:` axes (expert parallelism): whole mesh axes, each once, on a model with experts, and
// as many expert ranks as divide the experts. `check` adds what the workload needs of each axis
// (training: a data axis; inference: not a model axis), before the divisibility is checked.
using ExpertAxisCheck = std::function<void(int axis, const Field& item)>;

std::vector<int> parse_expert_axes(const Field& field, const TopologySpec& topology, const TransformerSpec& model,
                                   const ExpertAxisCheck& check) {
  // Its own list of used axes: in training the expert axes are data axes too.
  std::vector<std::pair<std::string, std::string>> used;
  const PlanAxes parsed = parse_plan_axes(field, topology, used, "expert");
  const std::vector<Field> items = axis_items(field, topology);
  for (size_t i = 0; i < parsed.axes.size(); ++i) {
    if (parsed.slices[i].size != 0)
      fail(items[i], "part of a split axis; expected whole mesh axes for expert parallelism");
  }
  if (parsed.axes.empty()) return {};
  if (!model.moe)
    fail(field, "the model has no experts (" + model.name + " is dense); expected no expert axes, or a model with moe");
  for (size_t i = 0; i < parsed.axes.size(); ++i) check(parsed.axes[i], items[i]);
  int64_t ranks = 1;
  std::vector<std::string> sizes;
  for (int axis : parsed.axes) {
    ranks *= topology.axes[axis].size;
    sizes.push_back(topology.axes[axis].name + "=" + std::to_string(topology.axes[axis].size));
  }
  const int experts = model.moe->experts;
  if (experts % ranks != 0)
    fail(field, std::to_string(experts) + " experts do not divide over the expert axes (" + join(sizes, " x ") +
                    (sizes.size() > 1 ? " = " + std::to_string(ranks) : std::string()) +
                    " ranks); expected expert axes whose sizes multiply to a divisor of " + model.name + "'s " +
                    std::to_string(experts) + " experts");
  return parsed.axes;
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
    if (model.moe) fail(*zero, "ZeRO-1/2 with an MoE model is not supported; expected fsdp or no zero");
  }
  if (auto overlap = reader.optional("tensor_overlap")) plan.tensor_overlap = read_bool(*overlap);
  if (auto context = reader.optional("context")) {
    // Context parallelism: a data axis for the weights (synchronised over it), which splits
    // each sequence rather than the batch.
    if (!context->node.IsScalar()) fail(*context, "expected one mesh axis name (each sequence is split along it)");
    const auto parsed = parse_plan_axes(*context, topology, used, "context");
    if (parsed.slices.at(0).size != 0) fail(*context, "expected a whole mesh axis, not part of a split one");
    if (model.moe) fail(*context, "context parallelism with an MoE model is not supported; expected no context axis");
    if (model.attention != AttentionKind::Gqa)
      fail(*context, "context parallelism needs standard (grouped-query) attention; " + model.name + " has none");
    if (plan.tensor_overlap)
      fail(*context, "context parallelism with tensor_overlap (collective matmuls) is not supported; expected "
                     "tensor_overlap: false");
    plan.context_axis = parsed.axes.at(0);
    plan.data_axes.push_back(plan.context_axis);
    if (!plan.data_slices.empty()) plan.data_slices.push_back(AxisSlice{1, 0});
  }
  if (auto dcn = reader.optional("dcn_data")) {
    plan.dcn_data_parallel = read_bool(*dcn);
    if (plan.dcn_data_parallel && slices < 2) fail(*dcn, "data parallelism over DCN needs topology.slices >= 2");
  }
  // Expert parallelism is planned over data axes of one step, not across pipeline stages
  // (issue 11): refused here, at the key, rather than left to the program.
  if (auto pipeline = reader.optional("pipeline"); pipeline && model.moe)
    fail(*pipeline, "pipeline parallelism with an MoE model is not supported; expected data, fsdp, tensor and "
                    "expert axes without a pipeline");
  if (auto pipeline = reader.optional("pipeline"); pipeline && pipeline->node.IsScalar() &&
                                                   pipeline->node.Scalar() == "slices") {
    if (slices < 2) fail(*pipeline, "a pipeline over slices needs topology.slices >= 2");
    if (plan.dcn_data_parallel)
      fail(*reader.optional("dcn_data"), "the pipeline's stages take the slices, which leaves none for data "
                                         "parallelism over DCN; expected dcn_data: false, or a pipeline over a mesh axis");
    plan.pipeline_axis = Topology::kSliceAxis;
  } else if (pipeline) {
    if (!pipeline->node.IsScalar()) fail(*pipeline, "expected one mesh axis name (the stages lie along it) or slices");
    const auto parsed = parse_plan_axes(*pipeline, topology, used, "pipeline");
    if (parsed.slices.at(0).size != 0) fail(*pipeline, "expected a whole mesh axis, not part of a split one");
    plan.pipeline_axis = parsed.axes.at(0);
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

double read_batch_tokens(const Field& field) {
  const std::string expected = "expected a whole number of tokens > 0, e.g. 3145728 or 3.0e6";
  if (!field.node.IsScalar()) fail(field, expected);
  const std::string& text = field.node.Scalar();
  double value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(value) || value <= 0 ||
      value != std::floor(value))
    fail(field, expected);
  if (value > kMaxBatchTokens) fail(field, "expected at most 2^53 tokens");
  return value;
}

std::string data_shards_text(const TrainingPlan& plan, const std::vector<MeshAxis>& mesh, int64_t degree,
                             int slices) {
  if (plan.data_axes.empty() && !plan.dcn_data_parallel) return "1 data shard (no data axes)";
  std::vector<std::string> sizes;
  if (plan.dcn_data_parallel) sizes.push_back("slices=" + std::to_string(slices));
  for (size_t i = 0; i < plan.data_axes.size(); ++i) {
    const int axis = plan.data_axes[i];
    if (axis == plan.context_axis) continue;   // splits sequences, not the batch
    const int part = plan.data_slices.empty() ? 0 : plan.data_slices[i].size;
    sizes.push_back(mesh[axis].name + (part != 0 ? "/" : "=") + std::to_string(part != 0 ? part : mesh[axis].size));
  }
  if (sizes.empty()) return "1 data shard (no data axes)";
  return std::to_string(degree) + " data shards (" + join(sizes, " x ") + ")";
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
  int64_t degree = plan.dcn_data_parallel ? slices : 1;   // slices split the batch too
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

const std::vector<std::string> kTrainingFields = {"step_time_s",   "mfu",          "tokens_per_s_per_chip",
                                                  "time_to_train_s", "training_cost_usd", "steps_to_train",
                                                  "compute_time_s", "exposed_comm_s", "memory_per_chip_bytes", "memory_peak_bytes",
                                                  "fits_hbm",      "total_time_s", "pipeline_bubble_fraction",
                                                  "total_flops",   "parameters",   "hfu",
                                                  "recompute_flops"};
const std::vector<std::string> kMemoryParts = {"params", "grads", "optimizer", "activations", "logits",
                                               "gathered_weights"};
// summary.json's "moe" of a training step (report.cpp) and of an inference step.
const std::vector<std::string> kTrainingMoeFields = {
    "all_to_all_time_s",        "exposed_all_to_all_s",       "dispatch_bytes_per_chip", "dropped_fraction",
    "busiest_expert_over_mean", "busiest_chip_over_mean",     "max_busiest_chip_over_mean",
    "expert_compute_mean_s",    "expert_compute_busiest_s",   "busiest_extra_s"};
const std::vector<std::string> kInferenceMoeFields = {"expert_compute_mean_s", "expert_compute_busiest_s",
                                                      "all_to_all_time_s", "dispatch_bytes_per_chip"};

// "moe.<name>" for one of `names`: the name (its suffix gives the unit); "" when `text` is not moe.*.
std::string moe_field(const Field& field, const std::string& text, const std::vector<std::string>& names) {
  if (!text.starts_with("moe.")) return "";
  const std::string name = text.substr(4);
  if (std::find(names.begin(), names.end(), name) == names.end())
    fail(field, "expected moe.<one of: " + join(names) + ">");
  return name;
}

}  // namespace

namespace detail {

TrainingWorkload parse_training(const MapReader& reader, const TopologySpec& topology) {
  TrainingWorkload workload;
  TrainingPlan& plan = workload.plan;
  const Field length = reader.required("sequence_length");
  plan.sequence_length = read_int(length, 1, kMaxModelDim);
  workload.model = parse_model(reader.required("model"), plan.sequence_length);
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
  if (auto checkpointing = reader.optional("checkpointing"))
    plan.checkpointing = read_choice<Checkpointing>(
        *checkpointing, {{"none", Checkpointing::None}, {"block", Checkpointing::Block}, {"book", Checkpointing::Book}});
  if (auto efficiency = reader.optional("matmul_efficiency")) {
    plan.matmul_efficiency = read_real(*efficiency);
    if (plan.matmul_efficiency <= 0.0 || plan.matmul_efficiency > 1.0)
      fail(*efficiency, "expected a fraction in (0, 1]");
  }
  if (auto attention = reader.optional("attention_flops")) plan.attention_flops = read_bool(*attention);
  if (auto strict = reader.optional("strict_memory")) workload.strict_memory = read_bool(*strict);
  // Mixed-precision bookkeeping as Megatron counts it: an fp32 master copy of the weights (4 B
  // a parameter, sharded like the optimizer state) and fp32 gradient accumulation (4 B instead
  // of 2): 2 + 4 + 4 + 8 = 18 B a parameter with Adam.
  if (auto master = reader.optional("master_weights"))
    workload.model.master_weight_bytes_per_param = read_bool(*master) ? 4.0 : 0.0;
  if (auto gradients = reader.optional("gradients"))
    workload.model.gradient_bytes_per_param = read_choice<double>(*gradients, {{"bf16", 2.0}, {"fp32", 4.0}});
  if (auto budget = reader.optional("token_budget")) {
    workload.token_budget = read_real(*budget);
    if (!(workload.token_budget >= plan.global_batch_tokens && workload.token_budget <= 1e18))
      fail(*budget, "expected the tokens a run trains on, from one batch (" + std::to_string(plan.global_batch_tokens) +
                        ") to 1e18, e.g. 15e12");
  }
  if (auto routing = reader.optional("routing")) plan.routing = parse_routing(*routing, workload.model);
  return workload;
}

std::string check_training_field(const Field& field) {
  const std::string text = read_string(field);
  if (std::find(kTrainingFields.begin(), kTrainingFields.end(), text) != kTrainingFields.end()) return text;
  const std::string by_axis = "exposed_comm_by_axis_s.";
  const std::string per_layer = "per_layer.";
  if (text.starts_with(by_axis) && text.size() > by_axis.size()) return "exposed_comm_by_axis_s";
  if (text.starts_with(per_layer) && text.size() > per_layer.size() && !text.ends_with("."))
    return text.substr(text.rfind('.') + 1);
  const std::string by_category = "exposed_comm_by_category_s.";
  if (text.starts_with(by_category) && text.size() > by_category.size()) return "exposed_comm_by_category_s";
  const std::string memory = "memory_breakdown_bytes.";
  if (text.starts_with(memory) &&
      std::find(kMemoryParts.begin(), kMemoryParts.end(), text.substr(memory.size())) != kMemoryParts.end())
    return "memory_breakdown_bytes";
  if (auto moe = moe_field(field, text, kTrainingMoeFields); !moe.empty()) return moe;
  fail(field, "expected one of: " + join(kTrainingFields) +
                  ", exposed_comm_by_axis_s.<axis>, exposed_comm_by_category_s.<category>, memory_breakdown_bytes.<" +
                  join(kMemoryParts) + ">, moe.<...> or per_layer.<...>");
}

namespace {

const std::vector<std::string> kInferenceFields = {"decode_step_time_s", "prefill_time_s", "tokens_per_s",
                                                   "tokens_per_s_per_chip", "kv_cache_bytes_per_token", "max_batch",
                                                   "memory_per_chip_bytes", "fits_hbm", "total_time_s",
                                                   "rule_of_thumb_s", "exposed_comm_s", "compute_time_s",
                                                   "smallest_slice_chips", "smallest_slice_kv_caches",
                                                   "cost_per_million_tokens_usd"};

}  // namespace

TransformerSpec parse_model_field(const Field& field, int sequence_length) { return parse_model(field, sequence_length); }

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
    const auto parsed = parse_plan_axes(*model_axes, topology, used, "model");
    for (const auto& slice : parsed.slices) {
      if (slice.size != 0) fail(*model_axes, "expected whole mesh axes for model parallelism");
    }
    out.model = parsed.axes;
    out.model_given = true;
  }
  if (auto model_d = reader.optional("model_d")) {
    // 2D weight-stationary (inference.md Question 7): D over these axes, F or heads over model.
    if (!out.model_given)
      fail(*model_d, "2D weight-stationary sharding splits F (or heads) over parallelism.model and D over "
                     "model_d; expected parallelism.model beside it");
    const auto parsed = parse_plan_axes(*model_d, topology, used, "model_d");
    for (const auto& slice : parsed.slices) {
      if (slice.size != 0) fail(*model_d, "expected whole mesh axes for model_d");
    }
    if (model.moe) fail(*model_d, "2D weight-stationary sharding of a mixture-of-experts model is not supported; expected "
                                  "no model_d");
    int yz = 1;
    for (int a : out.model) yz *= topology.axes[a].size;
    if (model.attention != AttentionKind::None && model.kv_heads % yz != 0)
      fail(*model_d, std::to_string(model.kv_heads) + " KV heads of " + model.name + " do not split over the " +
                         std::to_string(yz) + " chips of parallelism.model (2D attention splits the heads over them); "
                         "expected model axes whose product divides the KV heads");
    out.model_d = parsed.axes;
  }
  if (auto replica = reader.optional("replica")) {
    // Data-parallel replicas: the batch split over these axes, a model copy on the others.
    const auto parsed = parse_plan_axes(*replica, topology, used, "replica");
    for (const auto& slice : parsed.slices) {
      if (slice.size != 0) fail(*replica, "expected whole mesh axes for replicas");
    }
    out.replica = parsed.axes;
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
  workload.model = parse_model(reader.required("model"), tokens);
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
    if (!plan.d_axes.empty() && plan.collective_matmul)
      fail(reader.required("collective_matmul"), "collective matmuls with 2D weight-stationary sharding are not "
                                                 "modelled; expected false beside parallelism.model_d");
    int x = 1;
    for (int a : plan.d_axes) x *= topology.axes[a].size;
    if (workload.model.attention != AttentionKind::None && plan.batch % x != 0)
      fail(reader.required("batch"), "does not split over the " + std::to_string(x) +
                                         " chips of parallelism.model_d (2D attention splits the batch over them); "
                                         "expected a multiple of " + std::to_string(x));
  }
  if (auto routing = reader.optional("routing")) plan.routing = parse_routing(*routing, workload.model);
  return workload;
}

std::string check_inference_field(const Field& field) {
  const std::string text = read_string(field);
  if (std::find(kInferenceFields.begin(), kInferenceFields.end(), text) != kInferenceFields.end()) return text;
  if (auto moe = moe_field(field, text, kInferenceMoeFields); !moe.empty()) return moe;
  fail(field, "expected one of: " + join(kInferenceFields) + " or moe.<...>");
  return text;
}

}  // namespace detail
}  // namespace podsim
