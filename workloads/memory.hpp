#pragma once
// Per-chip HBM needed to train a dense Transformer under a sharding plan: weights, gradients,
// optimizer state and saved activations (scaling book, training.md:L198-L200, L678-L702;
// transformers.md "Gradient checkpointing").
#include "workloads/model_spec.hpp"
#include "workloads/layer_kernels.hpp"

namespace podsim {

// How many ways each kind of parallelism splits the work. Chips = product of all four.
struct ShardingDegrees {
  int data = 1;      // pure data-parallel replicas: everything replicated, batch split
  int fsdp = 1;      // ZeRO-3: params, grads and optimizer state sharded, batch split
  int tensor = 1;    // Megatron: weights split; F- and head-sized activations split
  int pipeline = 1;  // layers split into stages
  int expert = 1;    // MoE: routed experts split over this many chips (within the data ones)
  // ZeRO (Rajbhandari et al. 2020) over the `data` replicas: 1 shards the optimizer state
  // (and master weights), 2 the gradients too. Stage 3 is `fsdp`.
  int zero_stage = 0;
  // The replicas ZeRO shards over: 0 all `data` ones; across slices, a slice's own (each slice
  // keeps a copy and all-reduces its shard over DCN, as FSDP does).
  int zero_shards = 0;
  // Pipelines whose stages differ (uneven layer counts, dense first layers): the parameters of
  // the stage counted, dense and routed (pipeline_stage_weights), in place of the model's
  // spread evenly over `pipeline`; unset (negative) when the stages are alike.
  double stage_dense_params = -1;
  double stage_routed_params = -1;
};

// Which activations the forward pass keeps for the backward pass.
enum class Checkpointing {
  None,   // keep every intermediate the backward needs (no rematerialisation)
  Block,  // keep layer inputs only (transformers.md "Block remat": 1 checkpoint per layer)
  Book,   // the book's 3 per layer after the big matmuls: BF, BF, BD (training.md:L678-L682)
};

struct MemoryBreakdown {
  double params_bytes = 0;
  double grads_bytes = 0;
  double optimizer_bytes = 0;    // optimizer moments plus any master weights
  double activations_bytes = 0;
  // Beside the per-layer checkpoints: the loss's fp32 logits [tokens, V/TP] of one microbatch,
  // and under FSDP the gathered weights of the blocks in flight (the one computing and those
  // prefetched). Filled by training_layout; 0 from training_memory_per_chip alone.
  double logits_bytes = 0;
  double gathered_weights_bytes = 0;
  // Under FSDP of the routed experts (MoE layers whose experts are sharded over data axes too):
  // the experts' bf16 weight gradients a layer's backward leaves before their ReduceScatter
  // ends (the whole gathered size; training.cpp, "Gathered experts"). Filled by training_layout.
  double unreduced_gradients_bytes = 0;
  // With those, the logits are not live while the experts' layers are (training.cpp), so
  // total_bytes counts the larger of the two phases, not their sum.
  // Under context parallelism, the received K/V blocks a chip holds at once: two of the
  // backward's ring (ring_attention.hpp: the block being scored and sent on, the next arriving;
  // K and V with their gradients). The local block is among the activations.
  double ring_blocks_bytes = 0;
  double total_bytes = 0;
  // Activations a remat policy offloads to host memory (not in total_bytes: they leave HBM).
  double offloaded_activations_bytes = 0;

  // True when total_bytes <= hbm_bytes.
  bool fits(double hbm_bytes) const { return total_bytes <= hbm_bytes; }
};

// Saved activation bytes per token per layer on one chip under the policy, with the head- and
// F-sized tensors split tensor ways (see memory.cpp for the per-policy list).
double activation_bytes_per_token_per_layer(const TransformerSpec& spec, Checkpointing policy,
                                            int tensor = 1);

// The same for a remat policy: kept tensors in HBM, offloaded ones on the host (layer_kernels.hpp).
SavedBytes remat_saved_bytes_per_token(const TransformerSpec& spec, const RematPolicy& remat, int tensor);

// Training memory on one chip.
//   tokens_per_chip_per_microbatch: tokens one chip processes in one microbatch (the global
//     batch / (data * fsdp), divided by the microbatch count when pipelining); TP chips of one
//     group see the same tokens, so tensor does not divide it.
//   microbatches_in_flight: microbatches whose activations a stage holds at once (1 without
//     pipelining; up to `pipeline` for 1F1B on the first stage, all of them for GPipe; a
//     fraction when interleaved chunks each hold 1/v of the stage).
// Throws std::invalid_argument on an invalid spec (validate_transformer_spec), a degree < 1,
// negative tokens or microbatches_in_flight < 1.
// `remat`: a remat policy by name (remat_policy.hpp) in place of `policy`: the layer's kept
// tensors (layer_kernels.hpp) in HBM, the offloaded ones in host memory.
MemoryBreakdown training_memory_per_chip(const TransformerSpec& spec,
                                         const ShardingDegrees& degrees,
                                         double tokens_per_chip_per_microbatch,
                                         Checkpointing policy, double microbatches_in_flight = 1,
                                         const RematPolicy* remat = nullptr);

// Largest parameter count whose weights and optimizer state fit in one chip's HBM with pure
// data parallelism: hbm_bytes / bytes_per_param (training.md:L198-L200: bf16 params + fp32 Adam
// = 10 B/param, "~9B params" on a 96 GB v5p). Like the book, it ignores gradients and
// activations, so it is an upper bound. Throws std::invalid_argument if bytes_per_param <= 0.
double max_params_pure_dp(double hbm_bytes, double bytes_per_param = 10);

}  // namespace podsim
