#include "workloads/memory.hpp"

#include "workloads/layer_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace podsim {

namespace {

void require_degree(const char* field, int value) {
  if (value < 1) {
    throw std::invalid_argument(std::string("ShardingDegrees: ") + field + " must be >= 1, got " +
                                std::to_string(value));
  }
}

}  // namespace

double activation_bytes_per_token_per_layer(const TransformerSpec& spec, Checkpointing policy,
                                            int tensor) {
  require_degree("tensor", tensor);
  const double d = spec.d_model;
  const double f = spec.d_ff;
  const double t = tensor;
  // Megatron TP (training.md, tensor parallelism: In[B,D] . W_in[D,F_Y] -> Tmp[B,F_Y]) splits the
  // F-sized and head-sized tensors Y ways; D-sized ones (layer input, residual stream, norms)
  // stay replicated across the TP group (no sequence parallelism assumed).
  double elements = 0;
  switch (policy) {
    case Checkpointing::Block:
      // transformers.md "Block remat": only the input to each layer, one [B, D] per layer.
      elements = d;
      break;
    case Checkpointing::Book:
      // training.md:L678-L682: checkpoints after the three big MLP matmuls, shapes BF, BF, BD,
      // i.e. 2 bytes * L * B * (D + 2F). Without the gating einsum only one F-sized output.
      elements = d + (spec.gated_mlp ? 2.0 : 1.0) * f / t;
      break;
    case Checkpointing::None: {
      // Every intermediate node of a pre-norm layer (transformers.md "Gradient checkpointing":
      // "counting every intermediate node", roughly 20 D-sized per layer). Flash attention is
      // assumed, so no T x T score matrix is kept.
      //   D-sized (6): layer input, norm1 out, O-projection out, residual, norm2 out, MLP out
      //   head-sized: Q [N*H], K and V [K*H each], attention output [N*H]
      //   F-sized: gated: W_in1 out, W_in2 out, sigma(W_in1 out), product (4); plain: 2
      // For F = 4D, N*H = D, K = N, plain MLP this is 6D + 4D + 8D = 18D, the book's "~20".
      const double nh = static_cast<double>(spec.heads) * spec.head_dim;
      const double kh = static_cast<double>(spec.kv_heads) * spec.head_dim;
      elements = 6 * d + (2 * nh + 2 * kh) / t + (spec.gated_mlp ? 4.0 : 2.0) * f / t;
      break;
    }
  }
  return spec.activation_bytes * elements;
}

SavedBytes remat_saved_bytes_per_token(const TransformerSpec& spec, const RematPolicy& remat, int tensor) {
  // Output sizes do not depend on the chip or the batch; a sequence of one token gives the
  // attention kernel (its output is what `context` keeps).
  const auto kernels = layer_kernels(spec, tensor, 1, 1, ChipSpec{});
  return saved_bytes_per_token(kernels, remat, spec.activation_bytes * spec.d_model / tensor);
}

namespace {

// Kept activations a token and layer, in HBM and on the host. An MoE layer's as
// moe_layer_as_dense's.
SavedBytes saved_per_token_per_layer(const TransformerSpec& spec, Checkpointing policy, const RematPolicy* remat,
                                     int tensor) {
  auto per_layer = [&](const TransformerSpec& layer) {
    return remat ? remat_saved_bytes_per_token(layer, *remat, tensor)
                 : SavedBytes{activation_bytes_per_token_per_layer(layer, policy, tensor), 0};
  };
  SavedBytes bytes = per_layer(spec);
  if (!spec.moe) return bytes;
  const TransformerSpec moe_layer = moe_layer_as_dense(spec);
  const double moe_share = static_cast<double>(moe_layer_count(spec)) / spec.layers;
  const SavedBytes moe = per_layer(moe_layer);
  return {(1 - moe_share) * bytes.device + moe_share * moe.device, (1 - moe_share) * bytes.host + moe_share * moe.host};
}

}  // namespace

MemoryBreakdown training_memory_per_chip(const TransformerSpec& spec,
                                         const ShardingDegrees& degrees,
                                         double tokens_per_chip_per_microbatch,
                                         Checkpointing policy, double microbatches_in_flight,
                                         const RematPolicy* remat) {
  validate_transformer_spec(spec);
  require_degree("data", degrees.data);
  require_degree("fsdp", degrees.fsdp);
  require_degree("tensor", degrees.tensor);
  require_degree("pipeline", degrees.pipeline);
  if (!(tokens_per_chip_per_microbatch >= 0)) {
    throw std::invalid_argument("training_memory_per_chip: tokens_per_chip_per_microbatch must be "
                                ">= 0, got " + std::to_string(tokens_per_chip_per_microbatch));
  }
  if (microbatches_in_flight < 1) {
    throw std::invalid_argument("training_memory_per_chip: microbatches_in_flight must be >= 1, "
                                "got " + std::to_string(microbatches_in_flight));
  }

  const double p = param_count(spec);
  // Pure DP replicates everything (training.md:L198-L200); FSDP/ZeRO-3 shards params, grads and
  // optimizer state over its shards; TP and PP each hold only their slice of the weights.
  const double weight_shards =
      static_cast<double>(degrees.fsdp) * degrees.tensor * degrees.pipeline;

  require_degree("expert", degrees.expert);
  // Routed experts live on their expert-parallel chips: sharded expert x tensor x pipeline ways,
  // or FSDP's shards when those are more (expert axes are data axes, so FSDP covers them).
  const double routed = spec.moe ? moe_layer_count(spec) * static_cast<double>(spec.moe->experts) * expert_params(spec) : 0.0;
  const double expert_shards = static_cast<double>(std::max(degrees.fsdp, degrees.expert)) * degrees.tensor * degrees.pipeline;
  double dense_local = (p - routed) / weight_shards, routed_local = routed / expert_shards;
  if (degrees.stage_dense_params >= 0) {   // one stage of a pipeline whose stages differ
    dense_local = degrees.stage_dense_params / (static_cast<double>(degrees.fsdp) * degrees.tensor);
    routed_local = degrees.stage_routed_params / (static_cast<double>(std::max(degrees.fsdp, degrees.expert)) * degrees.tensor);
  }
  const double local = dense_local + routed_local;

  if (degrees.zero_stage < 0 || degrees.zero_stage > 2) {
    throw std::invalid_argument("training_memory_per_chip: zero_stage must be 0, 1 or 2 (stage 3 is fsdp), got " +
                                std::to_string(degrees.zero_stage));
  }
  MemoryBreakdown m;
  // The weights as stored: bf16, or fp32 under MaxText's weight_dtype float32 (its only copy:
  // each layer casts its gathered weights to bf16 in flight).
  m.params_bytes = local * stored_weight_bytes(spec);
  // Gradients in the stored weights' dtype unless accumulated otherwise; ZeRO-2 keeps the
  // shard this replica reduces.
  const double grad_bytes = gradient_bytes(spec);
  const int zero_shards = degrees.zero_shards > 0 ? degrees.zero_shards : degrees.data;
  // ZeRO shards what the data replicas share: the dense weights' state over every replica, the
  // routed experts' over the replicas holding the same experts (the data axes that are not
  // expert axes: zero_shards / expert).
  const double expert_zero_shards = std::max(1, zero_shards / degrees.expert);
  auto zero_sharded = [&](double bytes_per_param, int from_stage) {
    if (degrees.zero_stage < from_stage) return local * bytes_per_param;
    return dense_local * bytes_per_param / zero_shards + routed_local * bytes_per_param / expert_zero_shards;
  };
  m.grads_bytes = zero_sharded(grad_bytes, 2);
  // training.md:L678-L682: "(2 + 4 + 4) * 13e9": bf16 params plus two fp32 Adam moments (and an
  // fp32 master copy where kept), sharded over the data replicas from ZeRO-1 on.
  m.optimizer_bytes = zero_sharded(spec.optimizer_bytes_per_param + spec.master_weight_bytes_per_param, 1);

  // Activations of the layers on the fullest pipeline stage (ceil(L / pipeline)), for every
  // token on this chip and every microbatch in flight. training.md:L678-L682 keeps only the
  // per-layer checkpoints ("all other activations more or less negligible"), so embeddings and
  // logits are not counted.
  const double layers_on_chip = std::ceil(static_cast<double>(spec.layers) / degrees.pipeline);
  const SavedBytes per_token_per_layer = saved_per_token_per_layer(spec, policy, remat, degrees.tensor);
  const double held = layers_on_chip * tokens_per_chip_per_microbatch * microbatches_in_flight;
  m.activations_bytes = per_token_per_layer.device * held;
  m.offloaded_activations_bytes = per_token_per_layer.host * held;

  m.total_bytes = m.params_bytes + m.grads_bytes + m.optimizer_bytes + m.activations_bytes;
  return m;
}

double max_params_pure_dp(double hbm_bytes, double bytes_per_param) {
  if (!(bytes_per_param > 0)) {
    throw std::invalid_argument("max_params_pure_dp: bytes_per_param must be positive, got " +
                                std::to_string(bytes_per_param));
  }
  // training.md:L198-L200: "the largest model ... has HBM per device / 10 params" (grads and
  // activations ignored, as in the book).
  return hbm_bytes / bytes_per_param;
}

}  // namespace podsim
