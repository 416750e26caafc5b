#include "workloads/inference.hpp"

#include <algorithm>
#include <limits>
#include <cmath>
#include <set>
#include <stdexcept>
#include <string>

#include "workloads/matmul_shapes.hpp"
#include "workloads/moe_layer.hpp"
#include "workloads/program_builder.hpp"
#include "workloads/ring_attention.hpp"
#include "workloads/roofline.hpp"

namespace podsim {

double kv_cache_bytes_per_token(const TransformerSpec& model, double kv_bytes) {
  // GQA: 2 L K H elements (inference.md, "KV cache"); MLA: L (kv_lora_rank + qk_rope_head_dim)
  // (model_spec.hpp, kv_cache_elements_per_token).
  return kv_cache_elements_per_token(model) * kv_bytes;
}

SmallestSlice smallest_slice(const TransformerSpec& model, double weight_bytes, double kv_bytes, int context,
                             double hbm_bytes_per_chip, const std::vector<int>& shapes) {
  SmallestSlice out;
  const double params = param_count(model) * weight_bytes;
  for (int chips : shapes) {
    const double free = chips * hbm_bytes_per_chip - params;
    if (free <= 0) continue;
    out.chips = chips;
    out.free_bytes = free;
    // No cache (a model without attention): as many sequences as an int holds.
    out.kv_caches = static_cast<int>(std::clamp(std::floor(free / (context * kv_cache_bytes_per_token(model, kv_bytes))), 0.0,
                                                double(std::numeric_limits<int>::max())));
    return out;
  }
  return out;
}

// The rate matmuls achieve for the plan's compute type (the chip's calibration applied).
double matmul_rate(const InferencePlan& plan, const ChipSpec& chip) {
  if (plan.fp8_compute) return chip.achieved_fp8_flops_per_s();
  return plan.int8_compute ? chip.achieved_int8_ops_per_s() : chip.achieved_bf16_flops_per_s();
}

// Converting `weights` quantised weights to bf16 before bf16 matmuls (weight-only int8/int4);
// int8 x int8 matmuls and bf16 weights need none.
double dequant_s(double weights, const InferencePlan& plan, const ChipSpec& chip) {
  const bool weight_only = plan.weight_bytes < 2 && !plan.int8_compute && !(plan.fp8_compute && plan.weight_bytes == 1);
  return weight_only && chip.dequant_weights_per_s > 0 ? weights / chip.dequant_weights_per_s : 0.0;
}

namespace {

void check_plan(const TransformerSpec& model, const InferencePlan& plan, const TopologySpec& topology) {
  std::set<int> seen;
  for (int a : plan.model_axes) {
    if (a < 0 || a >= static_cast<int>(topology.axes.size())) throw std::invalid_argument("model axis not in the mesh");
    if (!seen.insert(a).second) throw std::invalid_argument("axis " + topology.axes[a].name + " listed twice");
  }
  if (plan.batch < 1) throw std::invalid_argument("the batch must be at least 1");
  const int length = plan.phase == InferencePhase::Decode ? plan.context_length : plan.prompt_length;
  if (length < 1 || length > model.max_sequence_length) {
    throw std::invalid_argument("a context of " + std::to_string(length) + " tokens is outside 1.." +
                                std::to_string(model.max_sequence_length) + " for " + model.name);
  }
  if (plan.efficiency <= 0 || plan.efficiency > 1) throw std::invalid_argument("efficiency must be in (0, 1]");
  if (plan.fp8_compute && plan.int8_compute) throw std::invalid_argument("fp8 and int8 compute exclude each other");
  if (plan.fp8_compute && !(topology.chip.fp8_flops_per_s > 0)) {
    throw std::invalid_argument(topology.chip.name + " has no fp8 matmul rate; give hardware.overrides.fp8_flops");
  }
  if (!plan.expert_axes.empty() && !model.moe) throw std::invalid_argument("expert parallelism needs a model with experts");
  for (int a : plan.expert_axes) {
    if (a < 0 || a >= static_cast<int>(topology.axes.size())) throw std::invalid_argument("expert axis not in the mesh");
    if (!seen.insert(a).second) throw std::invalid_argument("axis " + topology.axes[a].name + " carries both experts and weights");
  }
  if (!plan.d_axes.empty()) {
    int x = 1;
    for (int a : plan.d_axes) {
      if (a < 0 || a >= static_cast<int>(topology.axes.size())) throw std::invalid_argument("D axis not in the mesh");
      if (!seen.insert(a).second) throw std::invalid_argument("axis " + topology.axes[a].name + " listed twice");
      x *= topology.axes[a].size;
    }
    if (plan.model_axes.empty()) throw std::invalid_argument("2D weight-stationary sharding needs model axes (F) beside the D axes");
    if (model.moe) throw std::invalid_argument("2D weight-stationary sharding of a mixture-of-experts model is not supported yet");
    // Attention splits the batch over X between its projections (each X shard attends for its
    // sequences over its heads).
    if (model.attention != AttentionKind::None && plan.batch % x != 0) {
      throw std::invalid_argument("a batch of " + std::to_string(plan.batch) + " does not split over the " +
                                  std::to_string(x) + " chips of the D axes (2D attention splits the batch over them)");
    }
    int yz = 1;
    for (int a : plan.model_axes) yz *= topology.axes[a].size;
    if (model.attention != AttentionKind::None && model.kv_heads % yz != 0) {
      throw std::invalid_argument(std::to_string(model.kv_heads) + " KV heads do not split over the " + std::to_string(yz) +
                                  " chips of the model axes (2D attention splits heads over them)");
    }
  }
  int replicas = 1;
  for (int a : plan.replica_axes) {
    if (a < 0 || a >= static_cast<int>(topology.axes.size())) throw std::invalid_argument("replica axis not in the mesh");
    if (!seen.insert(a).second) throw std::invalid_argument("axis " + topology.axes[a].name + " listed twice");
    replicas *= topology.axes[a].size;
  }
  if (plan.batch % replicas != 0) {
    throw std::invalid_argument("a batch of " + std::to_string(plan.batch) + " does not split over " +
                                std::to_string(replicas) + " replicas");
  }
  const int ep = expert_parallel_degree(plan, topology);
  if (model.moe && model.moe->experts % ep != 0) {
    throw std::invalid_argument(std::to_string(model.moe->experts) + " experts do not split evenly over " +
                                std::to_string(ep) + " expert-parallel chips");
  }
  if (plan.batch % ep != 0) {
    throw std::invalid_argument("a batch of " + std::to_string(plan.batch) + " does not split over " + std::to_string(ep) +
                                " expert-parallel groups (the batch is data-parallel across them outside the experts)");
  }
  if (plan.context_axis >= 0) {
    const int a = plan.context_axis;
    if (a >= static_cast<int>(topology.axes.size())) throw std::invalid_argument("context axis not in the mesh");
    if (!seen.insert(a).second) throw std::invalid_argument("axis " + topology.axes[a].name + " listed twice");
    if (plan.phase != InferencePhase::Prefill)
      throw std::invalid_argument("context parallelism splits a prompt's tokens; a decode step has one a sequence");
    if (model.attention == AttentionKind::None)
      throw std::invalid_argument("context parallelism rings keys and values between a prompt's chips; " + model.name +
                                  " has no attention, so splitting its prompts is splitting its batch");
    const int cp = topology.axes[a].size;
    if (plan.prompt_length % (2 * cp) != 0) {
      throw std::invalid_argument("a prompt of " + std::to_string(plan.prompt_length) + " tokens does not split into 2 x " +
                                  std::to_string(cp) + " equal chunks (context parallelism's zig-zag)");
    }
  }
}

}  // namespace

int expert_parallel_degree(const InferencePlan& plan, const TopologySpec& topology) {
  int degree = 1;
  for (int a : plan.expert_axes) degree *= topology.axes.at(a).size;
  return degree;
}

bool serving_prices_whole_steps(const TransformerSpec& model) {
  return model.moe.has_value() || model.attention == AttentionKind::None;
}

bool serving_prices_whole_steps(const TransformerSpec& model, const InferencePlan& plan) {
  return serving_prices_whole_steps(model) || !plan.d_axes.empty();
}

int d_batch_degree(const TransformerSpec& model, const InferencePlan& plan, const TopologySpec& topology) {
  if (model.attention == AttentionKind::None) return 1;
  int x = 1;
  for (int a : plan.d_axes) x *= topology.axes.at(a).size;
  return x;
}

double server_weight_bytes(const TransformerSpec& model, const InferencePlan& plan, const TopologySpec& topology) {
  const double routed = model.moe ? moe_layer_count(model) * static_cast<double>(model.moe->experts) * expert_params(model) : 0.0;
  return ((param_count(model) - routed) * expert_parallel_degree(plan, topology) + routed) * plan.weight_bytes;
}

int context_degree(const InferencePlan& plan, const TopologySpec& topology) {
  return plan.context_axis >= 0 ? topology.axes.at(plan.context_axis).size : 1;
}

int model_parallel_degree(const InferencePlan& plan, const TopologySpec& topology) {
  int degree = 1;
  for (int a : plan.model_axes) degree *= topology.axes[a].size;
  for (int a : plan.d_axes) degree *= topology.axes[a].size;
  return degree;
}

std::vector<int> kv_batch_axes(const TransformerSpec& model, const InferencePlan& plan, const TopologySpec& topology) {
  // Heads over the leading model axes while they divide the KV heads, batch over the rest.
  std::vector<int> batch;
  int heads = 1;
  for (int a : plan.model_axes) {
    const int n = topology.axes[a].size;
    if (batch.empty() && model.kv_heads % (heads * n) == 0) heads *= n;
    else batch.push_back(a);
  }
  return batch;
}

double activation_bytes(const TransformerSpec& model, double tokens) {
  return tokens * model.d_model * 2.0;   // bf16
}

StepShape decode_shape(int batch, double context) {
  StepShape shape{static_cast<double>(batch), batch * context, batch * context, true};
  shape.sequences = batch;
  return shape;
}

StepShape prefill_shape(int batch, int chunk, int offset) {
  // A chunk attends over the cached prefix and itself (the full square, as the FLOP count
  // of transformers.md does), reads the prefix's cache and writes its own.
  StepShape shape{static_cast<double>(batch) * chunk, static_cast<double>(batch) * chunk * (offset + chunk),
                  static_cast<double>(batch) * (offset + chunk), false};
  shape.sequences = batch;
  return shape;
}

StepCompute step_compute(const TransformerSpec& model, const InferencePlan& plan, const ChipSpec& chip,
                         int model_degree, const StepShape& shape, double ring_unpack_flops) {
  const double y = model_degree;
  const double C = matmul_rate(plan, chip);
  const double activation = 2.0;   // bf16 activations
  const double layer_kv = shape.kv_tokens * kv_cache_bytes_per_token(model, plan.kv_bytes) / model.layers;
  // QK^T and AV: 2 x context x N x H FLOPs each per token (transformers.md).
  // (MLA: QK^T over d_h + d_h^R and AV over v_head_dim: attention_flops_per_token_forward.)
  const double score_flops =
      plan.attention_flops ? shape.attended_tokens * attention_flops_per_token_forward(model, 1.0) / model.layers : 0.0;
  auto roofline = [&](double flops, double bytes, double weights) {
    return roofline_s(flops, bytes, C, chip, plan.efficiency, dequant_s(weights, plan, chip));
  };
  const double p_attn = attention_params_per_layer(model);
  const double p_mlp = mlp_params_per_layer(model);
  const double p_out = static_cast<double>(model.vocab) * model.d_model;
  const double io = 2 * shape.tokens * model.d_model * activation;
  // The MXU does the padded work of each block's shapes (matmul_shapes.hpp; 1 on the ideal machine).
  auto padded = [&](const std::vector<WeightShape>& shapes) { return mxu_padding_factor(shape.tokens, shapes, chip); };
  StepCompute out;
  // The ring's unpacking, like the scores, has no weights to pad or read.
  const double weightless_flops = score_flops + ring_unpack_flops;
  out.attention_flops = (2 * shape.tokens * p_attn + weightless_flops) / y;
  out.attention_s =
      roofline((2 * shape.tokens * p_attn * padded(attention_weight_shapes(model, model_degree)) + weightless_flops) / y,
               (p_attn * plan.weight_bytes + layer_kv + io) / y, p_attn / y) +
      shape.sequences * chip.attention_sequence_overhead_s;
  out.mlp_flops = 2 * shape.tokens * p_mlp / y;
  out.mlp_s = roofline(out.mlp_flops * padded(mlp_weight_shapes(model, model.d_ff, model_degree)),
                       (p_mlp * plan.weight_bytes + io) / y, p_mlp / y);
  const double logit_rows = shape.logit_rows > 0 ? shape.logit_rows : shape.tokens;
  out.unembed_flops = 2 * logit_rows * p_out / y;
  out.unembed_s = roofline(out.unembed_flops * mxu_padding_factor(logit_rows, unembed_weight_shapes(model, model_degree), chip),
                           p_out * plan.weight_bytes / y, p_out / y);
  out.activation_bytes = activation_bytes(model, shape.tokens);
  out.score_flops = score_flops / y;
  out.ring_unpack_flops = ring_unpack_flops / y;
  return out;
}

StepCompute chip_step_compute(const TransformerSpec& model, const InferencePlan& plan, const TopologySpec& topology,
                              const StepShape& shape) {
  // Each expert-parallel group its 1/EP of the sequences; each context-parallel chip its 1/CP
  // of every prompt's tokens, attending over the whole prompt (the full square, split evenly:
  // the zig-zag split balances the causal half too).
  const int split = expert_parallel_degree(plan, topology) * context_degree(plan, topology);
  StepShape local = shape;
  local.tokens /= split;
  local.attended_tokens /= split;
  local.kv_tokens /= split;
  local.logit_rows /= split;
  // The sequences each chip's attention walks: its expert-parallel group's share, its D shard's
  // under 2D attention (block_2d), and, decoding, its share of a cache sharded by batch over the
  // model axes the KV heads do not cover; a context-parallel chip walks every sequence (its
  // 1/CP of each).
  int batch_ways = expert_parallel_degree(plan, topology) * d_batch_degree(model, plan, topology);
  if (shape.decode)
    for (int a : kv_batch_axes(model, plan, topology)) batch_ways *= topology.axes[a].size;
  local.sequences = shape.sequences / batch_ways;
  // MLA: each of the CP - 1 latent blocks a chip receives (as many tokens as its own)
  // up-projected to K and V heads (model_spec.hpp); no scores, no ring.
  const int cp = context_degree(plan, topology);
  const double unpack = cp > 1 && plan.attention_flops
                            ? (cp - 1) * local.tokens * mla_up_projection_flops_per_layer(model)
                            : 0.0;
  return step_compute(model, plan, topology.chip, model_parallel_degree(plan, topology), local, unpack);
}

Program inference_program(const TransformerSpec& model, const InferencePlan& whole, const TopologySpec& topology,
                          InferenceLayout& layout) {
  check_plan(model, whole, topology);
  // Replicas inside the slice: everything below is one replica's, with its share of the
  // batch; throughput, FLOPs and capacity then count every replica.
  layout.replicas = 1;
  for (int a : whole.replica_axes) layout.replicas *= topology.axes[a].size;
  InferencePlan plan = whole;
  plan.batch = whole.batch / layout.replicas;
  const ChipSpec& chip = topology.chip;
  layout.model_degree = model_parallel_degree(plan, topology);
  layout.chips = topology.slices * topology.chips_per_slice();
  const double y = layout.model_degree;
  const bool decode = plan.phase == InferencePhase::Decode;
  const double C = plan.fp8_compute ? chip.fp8_flops_per_s : plan.int8_compute ? chip.int8_ops_per_s : chip.bf16_flops_per_s;
  const double W = chip.hbm_bandwidth_Bps;
  const double B = plan.batch;
  // Tokens through the weights this step: one per sequence when decoding, the prompts when
  // prefilling; the context each attends over.
  const double tokens = decode ? B : B * plan.prompt_length;
  const double context = decode ? plan.context_length : plan.prompt_length;
  layout.tokens = tokens;
  layout.kv_cache_bytes_per_token = kv_cache_bytes_per_token(model, plan.kv_bytes);
  layout.param_bytes = param_count(model) * plan.weight_bytes;
  const double kv_batch_bytes = B * context * layout.kv_cache_bytes_per_token;
  // Expert parallelism: routed experts split EP ways, the rest replicated over the expert
  // axes; each group holds its 1/EP of the batch's caches.
  const int ep = expert_parallel_degree(plan, topology);
  layout.expert_degree = ep;
  const double routed_bytes =
      model.moe ? moe_layer_count(model) * static_cast<double>(model.moe->experts) * expert_params(model) * plan.weight_bytes : 0.0;
  const double weights_per_group = layout.param_bytes - routed_bytes + routed_bytes / ep;
  // Context parallelism: the weights on every context chip, each prompt's cache split over them.
  const int cp = context_degree(plan, topology);
  layout.memory_per_chip_bytes = (weights_per_group + kv_batch_bytes / (ep * cp)) / y;
  // HBM less the chip's headroom (chip_spec.hpp): what weights and caches may fill.
  const double hbm = chip.usable_hbm_bytes();
  layout.fits_hbm = layout.memory_per_chip_bytes <= hbm;
  // Clamped before the conversion: a double beyond int's range is undefined behaviour to cast.
  const double max_batch = ep * std::floor(cp * (y * hbm - weights_per_group) /
                                           (context * layout.kv_cache_bytes_per_token));
  layout.max_batch = static_cast<int>(std::clamp(max_batch, 0.0, double(std::numeric_limits<int>::max())));
  std::vector<int> powers_of_two;
  for (int chips = 1; chips <= 8192; chips *= 2) powers_of_two.push_back(chips);
  const auto smallest = smallest_slice(model, plan.weight_bytes, plan.kv_bytes, static_cast<int>(context),
                                       hbm, powers_of_two);
  layout.smallest_slice_chips = smallest.chips;
  layout.smallest_slice_kv_caches = smallest.kv_caches;
  const double p_matmul = matmul_flops_per_token_forward(model) / 2;   // weights a token passes through
  // MoE: the FLOPs follow the activated weights, the HBM term every weight the slice holds
  // (at batches where every expert gets tokens: inference.md Question 5 (2), B_crit x E / k),
  // over the y x EP chips.
  const double p_read = model.moe ? param_count(model) - (model.tied_embeddings ? 0.0 : static_cast<double>(model.vocab) * model.d_model) : p_matmul;
  const double chips_used = y * ep;
  // Context parallelism splits the tokens (the FLOPs) over cp times the chips; each still reads
  // its model shard's weights.
  layout.rule_of_thumb_s =
      (decode ? kv_batch_bytes / (chips_used * W) : 0.0) +
      std::max(2 * tokens * p_matmul / (chips_used * cp * C * plan.efficiency), p_read * plan.weight_bytes / (chips_used * W));

  const StepShape shape = decode ? decode_shape(plan.batch, plan.context_length)
                                  : prefill_shape(plan.batch, plan.prompt_length, 0);
  Program program = inference_step_program(model, plan, topology, shape);
  for (const auto& op : program) layout.flops += op.flops() * layout.chips;
  layout.tokens *= layout.replicas;
  layout.max_batch = static_cast<int>(std::clamp(static_cast<double>(layout.max_batch) * layout.replicas, 0.0,
                                                 double(std::numeric_limits<int>::max())));
  return program;
}

}  // namespace podsim
