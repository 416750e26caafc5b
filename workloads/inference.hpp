#pragma once
// Inference steps as per-chip programs (inference.md, applied-inference.md): a prefill of a
// batch of prompts, or one decode (generate) step of a batch of sequences, layer by layer on a
// slice with model (Megatron) parallelism. Each block is a roofline
//   max(FLOPs / C, bytes / W_hbm) / efficiency
// with bytes = its weights at their dtype + the KV cache it reads or writes + activations; the
// model-parallel collectives move the small [B, D] activations (latency-bound at decode sizes).
// Serving (arrivals, batching policies, disaggregation) builds on these steps; not yet here.
#include <vector>

#include "topology/topology.hpp"
#include "workloads/model_spec.hpp"
#include "workloads/moe_routing.hpp"
#include "workloads/program.hpp"

namespace podsim {

enum class InferencePhase { Decode, Prefill };

struct InferencePlan {
  InferencePhase phase = InferencePhase::Decode;
  std::vector<int> model_axes;       // mesh axes the weights are split over (Megatron)
  // 2D weight-stationary (Pope et al. 2022, "Efficiently Scaling Transformer Inference", sec.
  // 3.2.2; inference.md Question 7): weights split over D along these axes (X) and over F (or
  // heads) along model_axes (YZ). Each block gathers its [T, D/X] input over YZ, reduces the
  // [T, F/YZ] hidden over X between its two matmuls, and scatters its [T, D/X] output over YZ.
  // Empty: 1D model parallelism.
  std::vector<int> d_axes;
  // Data-parallel replicas inside the slice: the batch is split over these axes, each part
  // served by its own copy of the model on the other axes (no collective crosses them).
  std::vector<int> replica_axes;
  // Prefill only: context parallelism, each prompt's tokens split over this axis (a whole axis
  // apart from the others; -1: none). Every chip projects and runs the MLPs for its 1/CP of the
  // tokens with the weights its model axes give it; attention runs as ring attention
  // (ring_attention.hpp), the K/V blocks passed round the axis beside the score steps.
  int context_axis = -1;
  // MoE models: mesh axes the experts are split over (expert parallelism). The batch is split
  // over them outside the MoE blocks (data-parallel attention, each group its sequences' KV
  // caches) and an AllToAll over them takes each token to its experts' chips and back.
  std::vector<int> expert_axes;
  MoeRouting routing;
  int batch = 1;                     // sequences decoded together, or prompts prefilled together
  int context_length = 2048;         // decode: tokens already in each sequence's KV cache
  int prompt_length = 2048;          // prefill: tokens per prompt
  double weight_bytes = 2;           // per parameter: 2 bf16, 1 int8, 0.5 int4
  double kv_bytes = 2;               // per cached K or V element: 2 bf16, 1 int8
  bool int8_compute = false;         // int8 x int8 matmuls (else bf16 FLOPs)
  bool fp8_compute = false;          // fp8 x fp8 matmuls at the chip's fp8 rate (one it must have)
  bool attention_flops = true;       // count QK^T and AV
  double efficiency = 1.0;           // fraction of the roofline achieved
  // Overlap each block's activation gather and scatter with its matmuls (collective matmuls);
  // false: each collective runs before or after its block.
  bool collective_matmul = false;
};

struct InferenceLayout {
  int model_degree = 1;
  int expert_degree = 1;                 // expert-parallel groups (the batch split over them)
  int replicas = 1;                      // data-parallel model replicas in the slice
  int chips = 1;
  double kv_cache_bytes_per_token = 0;   // whole model: 2 L K H x kv_bytes (inference.md)
  double param_bytes = 0;                // whole model at its weight dtype
  double memory_per_chip_bytes = 0;      // weights + the batch's KV caches, per chip
  bool fits_hbm = true;
  int max_batch = 0;                     // sequences whose KV caches fit beside the weights
  double flops = 0;                      // useful FLOPs of the step, whole slice
  double tokens = 0;                     // tokens the step produces (decode) or reads (prefill)
  int smallest_slice_chips = 0;          // fewest chips (a power of two) holding the weights; 0: none up to 8192
  int smallest_slice_kv_caches = 0;      // sequences of this context that fit beside them
  // inference.md: step = B x KV / W + max(2 B P / C, P_bytes / W), over the model's chips
  // (C scaled by the efficiency; a prefill reads no cache).
  double rule_of_thumb_s = 0;
};

// Chips the weights are split over: the product of the model axes' sizes (and the D axes'
// under 2D weight-stationary sharding).
int model_parallel_degree(const InferencePlan& plan, const TopologySpec& topology);
// Chips a prompt's tokens are split over (parallelism.context): 1 without context parallelism.
int context_degree(const InferencePlan& plan, const TopologySpec& topology);
// Chips the experts are split over: the product of the expert axes' sizes (1 without).
int expert_parallel_degree(const InferencePlan& plan, const TopologySpec& topology);
// The ways a step's batch splits under 2D weight-stationary sharding: 2D attention gives each
// shard of the D axes its 1/X of the sequences (block_2d), so a step runs a multiple of X of
// them; 1 without model_d, or for a model without attention (its MLPs split no sequences).
int d_batch_degree(const TransformerSpec& model, const InferencePlan& plan, const TopologySpec& topology);

// What one step pushes through the model: the rows through the weights and the context they
// attend over. Decode of B sequences: B rows; a prefill chunk: B x chunk rows.
struct StepShape {
  double tokens = 0;            // rows through the weights
  double attended_tokens = 0;   // sum over those rows of the context each attends to
  double kv_tokens = 0;         // cached tokens the step reads or writes, all sequences
  bool decode = false;          // a decode step (reads each sequence's whole cache)
  // Rows the unembedding computes logits for; 0: every row (a prefill as kind: inference counts
  // it). A mixed serving step (serving.hpp) samples one token a sequence, as vLLM does.
  double logit_rows = 0;
  // Sequences the step's attention walks (a paged-attention kernel's grid steps, each paying
  // ChipSpec::attention_sequence_overhead_s a layer): a decode of B sequences and a prefill of
  // B prompts, B; a mixed serving step, every sequence it schedules.
  double sequences = 0;
};
StepShape decode_shape(int batch, double context);
// A chunk of `chunk` tokens of each of `batch` prompts whose first `offset` tokens are cached.
StepShape prefill_shape(int batch, int chunk, int offset);

// The [tokens, D] bf16 activations the Megatron collectives move around each block.
double activation_bytes(const TransformerSpec& model, double tokens);

// One layer's blocks and the unembedding of a step on one chip of a model-parallel group of
// `model_degree`: rooflines in seconds, FLOPs per chip, and the [tokens, D] bf16 activations
// the Megatron collectives move around each block.
struct StepCompute {
  double attention_s = 0, mlp_s = 0, unembed_s = 0;
  double attention_flops = 0, mlp_flops = 0, unembed_flops = 0;
  double activation_bytes = 0;
  double score_flops = 0;   // of attention_flops: QK^T and AV (what ring attention splits)
  double ring_unpack_flops = 0;   // of attention_flops: MLA's up-projection of the ring's received blocks
};
// `ring_unpack_flops`: the step's (all chips of the model group) up-projection of blocks
// received by ring attention, beside the scores in attention's roofline; 0 without a ring.
StepCompute step_compute(const TransformerSpec& model, const InferencePlan& plan, const ChipSpec& chip,
                         int model_degree, const StepShape& shape, double ring_unpack_flops = 0.0);

// The same on one chip of a slice: with expert parallelism each group of model-parallel chips
// serves 1/EP of the shape outside the experts (data-parallel attention, its sequences' caches);
// under context parallelism each context chip its 1/CP of every prompt, and with MLA the
// up-projection of the CP - 1 latent blocks it receives.
StepCompute chip_step_compute(const TransformerSpec& model, const InferencePlan& plan, const TopologySpec& topology,
                              const StepShape& shape);

// The model axes the KV cache is sharded over by batch: the KV heads take the leading model
// axes while they divide them, the rest shard the batch (inference.md: KV[2, B_Z, S, K_Y, H]).
// Empty when the heads cover every model axis. Decode only: a prefill replicates the small
// K and V projections over these axes instead (its cache is written once, not read per step).
std::vector<int> kv_batch_axes(const TransformerSpec& model, const InferencePlan& plan, const TopologySpec& topology);

// The rate matmuls achieve for the plan's compute type (the chip's calibration applied).
double matmul_rate(const InferencePlan& plan, const ChipSpec& chip);

// Converting `weights` quantised weights to bf16 before bf16 matmuls (weight-only int8/int4);
// int8 x int8 matmuls and bf16 weights need none.
double dequant_s(double weights, const InferencePlan& plan, const ChipSpec& chip);

// The per-chip program of one step of any shape (workloads/inference_step.cpp) (a chain: every op waits for the previous).
Program inference_step_program(const TransformerSpec& model, const InferencePlan& plan, const TopologySpec& topology,
                               const StepShape& shape);

// Builds one decode step or one prefill. Throws std::invalid_argument for impossible plans.
Program inference_program(const TransformerSpec& model, const InferencePlan& plan, const TopologySpec& topology,
                          InferenceLayout& layout);

// Serving prices a step of these models whole (sim/engine/serving_whole_steps.cpp): layers that
// are not identical attention and dense MLP blocks (experts) or lack attention.
bool serving_prices_whole_steps(const TransformerSpec& model);
// ... and the steps of a server under 2D weight-stationary sharding, whose blocks are not the
// Megatron blocks of the layer shortcut (block_2d: reductions over the D axes between parts).
bool serving_prices_whole_steps(const TransformerSpec& model, const InferencePlan& plan);

// Weight bytes a slice holds for one server: every expert once, and the rest (attention,
// router, shared experts, embeddings) once per expert-parallel group; param_count x weight_bytes
// without expert parallelism.
double server_weight_bytes(const TransformerSpec& model, const InferencePlan& plan, const TopologySpec& topology);

// KV cache bytes per token of context for the whole model: kv_cache_elements_per_token x kv_bytes
// (GQA: 2 x L x K x H x kv_bytes; MLA: L x (kv_lora_rank + qk_rope_head_dim) x kv_bytes).
double kv_cache_bytes_per_token(const TransformerSpec& model, double kv_bytes);

// The smallest slice of `shapes` (chip counts, ascending) whose HBM holds the weights, and how
// many sequences' KV caches of `context` tokens fit beside them (applied-inference.md:L165-L175).
struct SmallestSlice {
  int chips = 0;              // 0: none of the shapes holds the weights
  int kv_caches = 0;
  double free_bytes = 0;      // HBM left after the weights, whole slice
};
SmallestSlice smallest_slice(const TransformerSpec& model, double weight_bytes, double kv_bytes, int context,
                             double hbm_bytes_per_chip, const std::vector<int>& shapes);

}  // namespace podsim
