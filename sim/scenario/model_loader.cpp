// Parses a workload's `model` for the scenario loader: a preset, or a mapping of a preset's
// overrides or a whole shape, with its attention (GQA or MLA) and experts.
#include "sim/scenario/model_loader.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "sim/scenario/units.hpp"

namespace podsim {
namespace {

using namespace yaml_fields;   // the field readers every loader uses
using detail::kMaxModelDim;

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

// `key` of `reader`, when given, into `target`: a model dimension of at least `min`.
void read_dim(const MapReader& reader, std::string_view key, int& target, int64_t min) {
  if (auto value = reader.optional(key)) target = read_int(*value, min, kMaxModelDim);
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
  auto set = [&](std::string_view key, int& target, int64_t min) { read_dim(moe, key, target, min); };
  set("experts", m.experts, 1);
  set("experts_per_token", m.experts_per_token, 1);
  set("shared_experts", m.shared_experts, 0);
  set("expert_d_ff", m.expert_d_ff, 1);
  set("dense_layers", m.dense_layers, 0);
  set("interleave_moe_layer_step", m.interleave_moe_layer_step, 1);
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
  auto set = [&](std::string_view key, int& target, int64_t min) { read_dim(attention, key, target, min); };
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
  auto set = [&](std::string_view key, int& target, int64_t min) { read_dim(reader, key, target, min); };
  set("layers", model.layers, 1);
  set("d_model", model.d_model, 1);
  set("d_ff", model.d_ff, 1);
  set("heads", model.heads, 1);
  set("kv_heads", model.kv_heads, 1);
  set("head_dim", model.head_dim, 1);
  set("vocab", model.vocab, 0);
  set("max_sequence_length", model.max_sequence_length, 1);
  if (auto gated = reader.optional("gated_mlp")) model.gated_mlp = read_bool(*gated);
  const auto parallel = reader.optional("parallel_block");
  if (parallel) model.parallel_block = read_bool(*parallel);
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
  if (model.parallel_block && (model.moe || model.attention != AttentionKind::Gqa))
    fail(*parallel, "a parallel block is modelled for dense GQA layers; expected false for " + model.name);
  try {
    validate_transformer_spec(model);
  } catch (const std::invalid_argument& error) {
    fail_model(reader, moe ? &*moe : nullptr, attention ? &*attention : nullptr, error.what());
  }
  return model;
}

}  // namespace

namespace detail {

TransformerSpec parse_model_field(const Field& field, int sequence_length) { return parse_model(field, sequence_length); }

}  // namespace detail
}  // namespace podsim
