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

namespace {

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
    if (plan.collective_matmul) throw std::invalid_argument("2D weight-stationary sharding with collective matmuls is not supported yet");
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
    if (model.attention != AttentionKind::Gqa)
      throw std::invalid_argument("context parallelism needs standard (grouped-query) attention");
    if (model.moe) throw std::invalid_argument("context parallelism with a mixture-of-experts model is not supported yet");
    if (!plan.d_axes.empty()) throw std::invalid_argument("context parallelism with 2D weight-stationary sharding is not supported yet");
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

bool whole_step_attention_shift_holds(const TransformerSpec& model, const InferencePlan& plan) {
  return model.attention == AttentionKind::None || !plan.collective_matmul;
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
  return {static_cast<double>(batch), batch * context, batch * context, true};
}

StepShape prefill_shape(int batch, int chunk, int offset) {
  // A chunk attends over the cached prefix and itself (the full square, as the FLOP count
  // of transformers.md does), reads the prefix's cache and writes its own.
  return {static_cast<double>(batch) * chunk, static_cast<double>(batch) * chunk * (offset + chunk),
          static_cast<double>(batch) * (offset + chunk), false};
}

StepCompute step_compute(const TransformerSpec& model, const InferencePlan& plan, const ChipSpec& chip,
                         int model_degree, const StepShape& shape) {
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
  out.attention_flops = (2 * shape.tokens * p_attn + score_flops) / y;
  out.attention_s =
      roofline((2 * shape.tokens * p_attn * padded(attention_weight_shapes(model, model_degree)) + score_flops) / y,
               (p_attn * plan.weight_bytes + layer_kv + io) / y, p_attn / y);
  out.mlp_flops = 2 * shape.tokens * p_mlp / y;
  out.mlp_s = roofline(out.mlp_flops * padded(mlp_weight_shapes(model, model.d_ff, model_degree)),
                       (p_mlp * plan.weight_bytes + io) / y, p_mlp / y);
  out.unembed_flops = 2 * shape.tokens * p_out / y;
  out.unembed_s =
      roofline(out.unembed_flops * padded(unembed_weight_shapes(model, model_degree)), p_out * plan.weight_bytes / y, p_out / y);
  out.activation_bytes = activation_bytes(model, shape.tokens);
  out.score_flops = score_flops / y;
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
  return step_compute(model, plan, topology.chip, model_parallel_degree(plan, topology), local);
}

Program inference_step_program(const TransformerSpec& model, const InferencePlan& plan, const TopologySpec& topology,
                               const StepShape& shape) {
  const int model_degree = model_parallel_degree(plan, topology);
  // Expert parallelism: outside the experts each group of model-parallel chips serves its
  // 1/EP of the batch (data-parallel attention, its sequences' caches).
  const int ep = expert_parallel_degree(plan, topology);
  const int cp = context_degree(plan, topology);
  const double local_tokens = shape.tokens / (ep * cp);
  const StepCompute cost = chip_step_compute(model, plan, topology, shape);
  Program program;
  std::vector<int> previous;
  auto add = [&](ProgramOp op, std::vector<int> after) {
    op.after = std::move(after);
    program.push_back(std::move(op));
    return static_cast<int>(program.size() - 1);
  };
  const std::vector<int> batch_axes = shape.decode ? kv_batch_axes(model, plan, topology) : std::vector<int>{};
  auto on_axes = [&](const std::string& name, CollectiveKind kind, const std::vector<int>& axes, double bytes, int layer,
                     OpRole role, std::vector<int> after) {
    ProgramOp op;
    op.name = name;
    op.kind = ProgramOpKind::Collective;
    op.collective.kind = kind;
    op.collective.axes = axes;
    op.collective.bytes = bytes;
    op.layer = layer;
    op.role = role;
    return add(std::move(op), std::move(after));
  };
  // Megatron's: the [tokens, D] activations over the model axes (AllToAlls over the batch axes).
  auto collective = [&](const std::string& name, CollectiveKind kind, int layer, OpRole role,
                        std::vector<int> after) {
    return on_axes(name, kind, kind == CollectiveKind::AllToAll ? batch_axes : plan.model_axes, cost.activation_bytes,
                   layer, role, std::move(after));
  };
  auto compute = [&](const std::string& name, double seconds, double flops, int layer, OpRole role,
                     std::vector<int> after) {
    ProgramOp op;
    op.name = name;
    op.kind = ProgramOpKind::Compute;
    op.compute_s = seconds;
    op.flops = flops;
    op.layer = layer;
    op.role = role;
    return add(std::move(op), std::move(after));
  };
  // One block: gather the activations, its matmuls, scatter the partial sums (Megatron). With
  // collective matmuls (sharding.md, "collective matmuls") the gather streams in while the
  // first half of the block computes and the scatter streams out while the second half does.
  // Where the cache is also sharded over batch (more model shards than KV heads), attention
  // moves Q to batch sharding and its output back: two AllToAlls over the batch axes
  // (inference.md, "KV[2, B_Z, S, K_Y, H]").
  // Context parallelism: attention's projections, then its scores as ring attention, the chip's
  // K and V (its tokens, its KV heads) passed round the context axis a block at a time.
  const std::vector<int> replicated_kv = kv_batch_axes(model, plan, topology);
  int kv_heads_split = model_degree;
  for (int a : replicated_kv) kv_heads_split /= topology.axes[a].size;
  const double kv_block_bytes = local_tokens * 2.0 * model.kv_heads * model.head_dim * 2.0 / kv_heads_split;   // bf16 K, V
  // The scores' share of an attention block's roofline (its FLOPs' share).
  auto ring_s = [&](double seconds, double flops) { return flops > 0 ? seconds * cost.score_flops / flops : 0.0; };
  auto ring = [&](const std::string& name, double seconds, double flops, int layer, OpRole role,
                  const std::vector<int>& after) {
    ProgramBuilder b(std::move(program));
    const int last = emit_ring_attention(b, name, plan.context_axis, cp, ring_s(seconds, flops) / cp,
                                         cost.score_flops / cp, kv_block_bytes, after, layer, role);
    program = b.take();
    return last;
  };
  // The block's compute: one op, or with `ringed` its projections and then the ring.
  auto attend = [&](const std::string& name, double seconds, double flops, int layer, OpRole role,
                    std::vector<int> after, bool ringed) {
    if (!ringed) return compute(name, seconds, flops, layer, role, std::move(after));
    ProgramBuilder b(std::move(program));
    const int last = emit_ring_block(b, name, plan.context_axis, cp, seconds, flops, ring_s(seconds, flops),
                                     cost.score_flops, kv_block_bytes, std::move(after), layer, role).last;
    program = b.take();
    return last;
  };
  auto block = [&](const std::string& name, double seconds, double flops, int layer, OpRole role,
                   bool attention) {
    const bool ringed = attention && cp > 1;
    if (model_degree <= 1) {
      previous = {attend(name, seconds, flops, layer, role, previous, ringed)};
      return;
    }
    const bool to_batch = attention && !batch_axes.empty();
    const int gather = collective(name + ".allgather", CollectiveKind::AllGather, layer, OpRole::ModelAllGather, previous);
    if (!plan.collective_matmul) {
      int before = gather;
      if (to_batch) before = collective(name + ".alltoall_q", CollectiveKind::AllToAll, layer, OpRole::KvAllToAll, {gather});
      int c = attend(name, seconds, flops, layer, role, {before}, ringed);
      if (to_batch) c = collective(name + ".alltoall_out", CollectiveKind::AllToAll, layer, OpRole::KvAllToAll, {c});
      previous = {collective(name + ".reducescatter", CollectiveKind::ReduceScatter, layer, OpRole::ModelReduceScatter, {c})};
      return;
    }
    // Context parallelism: the ring between the halves, as in training (block_ops.cpp).
    const double score_s = ringed ? ring_s(seconds, flops) : 0.0;
    const double score_flops = ringed ? cost.score_flops : 0.0;
    const double half_s = (seconds - score_s) / 2, half_flops = (flops - score_flops) / 2;
    const int first = compute(name + ".matmul1", half_s, half_flops, layer, role, previous);
    std::vector<int> ready = {first, gather};
    if (to_batch) {
      const int q = collective(name + ".alltoall_q", CollectiveKind::AllToAll, layer, OpRole::KvAllToAll, ready);
      ready = {collective(name + ".alltoall_out", CollectiveKind::AllToAll, layer, OpRole::KvAllToAll, {q})};
    }
    if (ringed) ready = {ring(name, seconds, flops, layer, role, ready)};
    const int second = compute(name + ".matmul2", half_s, half_flops, layer, role, ready);
    const int scatter = collective(name + ".reducescatter", CollectiveKind::ReduceScatter, layer, OpRole::ModelReduceScatter, ready);
    previous = {second, scatter};
  };
  // 2D weight-stationary (inference.md Question 7, Appendix B; ESTI sec. 3.2.2): weights
  // [D_X, F_YZ] and [F_YZ, D_X]. The [T, D/X] input is gathered over YZ, the first matmul's
  // [T, F/YZ] partial sums reduced over X, the second's [T, D/X] partial sums scattered over
  // YZ: the book's 2BD/(2X W) + 4BF/(YZ W) + 2BD/(2X W). Attention does the same around its
  // projections, with its scores on 1/X of the batch between them: the Q, K, V partial sums
  // reduce-scattered over X by sequence, the output gathered back (one AllReduce's traffic).
  // The block's roofline is split over its parts by FLOPs (a chain: the sum is what counts).
  int x_degree = 1, yz_degree = 1;
  for (int a : plan.d_axes) x_degree *= topology.axes[a].size;
  for (int a : plan.model_axes) yz_degree *= topology.axes[a].size;
  auto block_2d = [&](const std::string& name, double seconds, double flops, int layer, OpRole role,
                      bool attention) {
    const double t = local_tokens;
    const double io_bytes = cost.activation_bytes / x_degree;
    const int gather = on_axes(name + ".allgather", CollectiveKind::AllGather, plan.model_axes, io_bytes, layer,
                               OpRole::ModelAllGather, previous);
    int last = gather;
    if (!attention) {
      // Gated MLPs reduce both [T, F] projections before the gate.
      const double hidden = (model.gated_mlp ? 2.0 : 1.0) * t * model.d_ff * 2.0 / yz_degree;
      const double first = model.gated_mlp ? 2.0 / 3.0 : 0.5;
      last = compute(name + ".matmul1", seconds * first, flops * first, layer, role, {last});
      last = on_axes(name + ".allreduce", CollectiveKind::AllReduce, plan.d_axes, hidden, layer, OpRole::ModelAllReduce, {last});
      last = compute(name + ".matmul2", seconds * (1 - first), flops * (1 - first), layer, role, {last});
    } else {
      const double nh = static_cast<double>(model.heads) * model.head_dim;
      const double qkv = nh + 2.0 * model.kv_heads * model.head_dim;
      const double weight_flops = 2 * t * model.d_model * (qkv + nh) / (x_degree * yz_degree);
      const double f_qkv = weight_flops > 0 ? std::min(1.0, 2 * t * model.d_model * qkv / (x_degree * yz_degree) / flops) : 0;
      const double f_out = weight_flops > 0 ? std::min(1.0 - f_qkv, 2 * t * model.d_model * nh / (x_degree * yz_degree) / flops) : 0;
      last = compute(name + ".qkv", seconds * f_qkv, flops * f_qkv, layer, role, {last});
      last = on_axes(name + ".reducescatter_qkv", CollectiveKind::ReduceScatter, plan.d_axes, t * qkv * 2.0 / yz_degree,
                     layer, OpRole::ModelReduceScatter, {last});
      last = compute(name + ".scores", seconds * (1 - f_qkv - f_out), flops * (1 - f_qkv - f_out), layer, role, {last});
      last = on_axes(name + ".allgather_out", CollectiveKind::AllGather, plan.d_axes, t * nh * 2.0 / yz_degree, layer,
                     OpRole::ModelAllGather, {last});
      last = compute(name + ".out", seconds * f_out, flops * f_out, layer, role, {last});
    }
    previous = {on_axes(name + ".reducescatter", CollectiveKind::ReduceScatter, plan.model_axes, io_bytes, layer,
                        OpRole::ModelReduceScatter, {last})};
  };
  // An MoE layer's MLP (workloads/moe_layer.hpp): the router and shared experts as a block of
  // their own, then the routed experts, reached by a dispatch AllToAll over the expert axes and
  // left by a combine; the model axes split every expert's d_ff (Megatron, blocking).
  const double C = matmul_rate(plan, topology.chip);
  auto moe_block = [&](const std::string& name, int layer) {
    const double dense_params = router_params_per_layer(model) + model.moe->shared_experts * expert_params(model);
    const double io = 2 * local_tokens * model.d_model * 2.0;
    const double shared_flops = 2 * local_tokens * dense_params / model_degree;
    const double shared_s = roofline_s(shared_flops * mxu_padding_factor(local_tokens,
                                                                         router_shared_weight_shapes(model, model_degree),
                                                                         topology.chip),
                                       (dense_params * plan.weight_bytes + io) / model_degree, C, topology.chip,
                                       plan.efficiency, dequant_s(dense_params / model_degree, plan, topology.chip));
    std::vector<int> before = previous;
    if (model_degree > 1) before = {collective(name + ".allgather", CollectiveKind::AllGather, layer, OpRole::ModelAllGather, previous)};
    const int shared = compute(name + ".router_shared", shared_s, shared_flops, layer, OpRole::Mlp, before);
    const MoeLayerWork w = moe_layer_work(model, plan.routing, local_tokens, ep, layer - model.moe->dense_layers, 0);
    const double row_bytes = model.d_model * 2.0;   // bf16 activations
    auto all_to_all = [&](const std::string& op_name, bool transposed, std::vector<int> after, OpRole role) {
      if (ep <= 1) return after;
      std::vector<double> pairs = moe_pair_bytes(w, row_bytes, transposed);
      ProgramOp op;
      op.name = op_name;
      op.collective.kind = CollectiveKind::AllToAll;
      op.collective.axes = plan.expert_axes;
      std::sort(op.collective.axes.begin(), op.collective.axes.end());
      for (double b : pairs) op.collective.bytes += b;
      if (!w.uniform) op.collective.pair_bytes = std::move(pairs);
      op.layer = layer;
      op.role = role;
      return std::vector<int>{add(std::move(op), std::move(after))};
    };
    const std::vector<int> arrived = all_to_all(name + ".dispatch", false, {shared}, OpRole::MoeDispatch);
    // Each rank reads the weights of its experts that received tokens (a grouped matmul skips
    // the empty ones; padded buffers fill every expert) and computes its rows.
    const int per_rank = model.moe->experts / ep;
    const bool padded = plan.routing.spec.capacity_factor > 0 && plan.routing.pad_to_capacity;
    std::vector<double> by_rank(ep);
    double flops_sum = 0;
    for (int r = 0; r < ep; ++r) {
      int used = 0;
      for (int e = r * per_rank; e < (r + 1) * per_rank; ++e) used += padded || w.loads.kept[e] > 0;
      const double rows = w.rows_per_rank[r];
      const double flops = 2 * rows * expert_params(model) / model_degree;
      const double bytes = (used * expert_params(model) * plan.weight_bytes + 2 * rows * row_bytes) / model_degree;
      // Each expert's grouped-matmul slice pads its own rows: the rank's mean rows per expert.
      const double padding =
          mxu_padding_factor(used > 0 ? rows / used : 0.0, mlp_weight_shapes(model, model.moe->expert_d_ff, model_degree),
                             topology.chip);
      by_rank[r] = roofline_s(flops * padding, bytes, C, topology.chip, plan.efficiency,
                              dequant_s(used * expert_params(model) / model_degree, plan, topology.chip));
      flops_sum += flops;
    }
    const int experts = compute(name + ".experts", 0, flops_sum / ep, layer, OpRole::Experts, arrived);
    const bool even = std::all_of(by_rank.begin(), by_rank.end(), [&](double t) { return t == by_rank[0]; });
    if (even) {
      program[experts].compute_s = by_rank[0];
    } else {
      double mean = 0;
      for (double t : by_rank) mean += t / ep;
      program[experts].compute_s = mean;
      program[experts].vary_axes = plan.expert_axes;
      std::sort(program[experts].vary_axes.begin(), program[experts].vary_axes.end());
      program[experts].compute_s_by_position = by_rank;
    }
    previous = all_to_all(name + ".combine", true, {experts}, OpRole::MoeCombine);
    if (model_degree > 1)
      previous = {collective(name + ".reducescatter", CollectiveKind::ReduceScatter, layer, OpRole::ModelReduceScatter, previous)};
  };
  for (int l = 0; l < model.layers; ++l) {
    const std::string name = "L" + std::to_string(l);
    // Attention projects, attends over the cache (read when decoding, written when
    // prefilling) and projects back; then the MLP.
    if (!plan.d_axes.empty()) {
      if (model.attention != AttentionKind::None)
        block_2d(name + ".attn", cost.attention_s, cost.attention_flops, l, OpRole::Attention, true);
      block_2d(name + ".mlp", cost.mlp_s, cost.mlp_flops, l, OpRole::Mlp, false);
      continue;
    }
    if (model.attention != AttentionKind::None)
      block(name + ".attn", cost.attention_s, cost.attention_flops, l, OpRole::Attention, true);
    if (model.moe && l >= model.moe->dense_layers) moe_block(name + ".mlp", l);
    else block(name + ".mlp", cost.mlp_s, cost.mlp_flops, l, OpRole::Mlp, false);
  }
  compute("unembed", cost.unembed_s, cost.unembed_flops, model.layers, OpRole::Unembed, previous);
  return program;
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
  layout.fits_hbm = layout.memory_per_chip_bytes <= chip.hbm_bytes;
  // Clamped before the conversion: a double beyond int's range is undefined behaviour to cast.
  const double max_batch = ep * std::floor(cp * (y * chip.hbm_bytes - weights_per_group) /
                                           (context * layout.kv_cache_bytes_per_token));
  layout.max_batch = static_cast<int>(std::clamp(max_batch, 0.0, double(std::numeric_limits<int>::max())));
  std::vector<int> powers_of_two;
  for (int chips = 1; chips <= 8192; chips *= 2) powers_of_two.push_back(chips);
  const auto smallest = smallest_slice(model, plan.weight_bytes, plan.kv_bytes, static_cast<int>(context),
                                       chip.hbm_bytes, powers_of_two);
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
  for (const auto& op : program) layout.flops += op.flops * layout.chips;
  layout.tokens *= layout.replicas;
  layout.max_batch = static_cast<int>(std::clamp(static_cast<double>(layout.max_batch) * layout.replicas, 0.0,
                                                 double(std::numeric_limits<int>::max())));
  return program;
}

}  // namespace podsim
