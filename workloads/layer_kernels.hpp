#pragma once
// A dense Transformer layer as the kernels a TPU runs for it, per chip: the weight matmuls (with
// the MXU's padding of their shapes), causal flash attention, and the memory-bound vector work a
// real step pays beside them (norms, rotary, residual sums, the activation function, the loss's
// logits), each with its own FLOPs and HBM bytes, forward and backward. Under the `kernels`
// compute model (ChipSpec::compute_model) a block's time is the sum of its kernels' rooflines,
// each paying the fixed cost per op; under the book's model it is one roofline over the block's
// matmul FLOPs and weight and activation bytes (training.cpp). The kernels also say which
// tensors the backward reads, so a remat policy (remat_policy.hpp) decides what is recomputed.
//
// Shapes per chip of a tensor group of y chips (Megatron with sequence parallelism: heads and
// F split y ways; the D-sized vector work runs on 1/y of the tokens, MaxText's activations
// being sharded over the tensor axis between blocks).
#include <string>
#include <vector>

#include "topology/chip_spec.hpp"
#include "workloads/model_spec.hpp"
#include "workloads/remat_policy.hpp"

namespace podsim {

enum class KernelKind { Matmul, Attention, Vector };

struct Kernel {
  std::string name;                          // the tensor it produces (MaxText's checkpoint name where it has one)
  KernelKind kind = KernelKind::Vector;
  bool mlp = false;                          // in the layer's MLP block (else its attention block)
  std::vector<std::string> inputs;           // tensors it reads ("layer_input": the kept carry)
  std::vector<std::string> backward_needs;   // tensors its backward reads
  // Per token of the chip's microbatch, forward.
  double flops_per_token = 0;                // what the matrix unit does (padded shapes, causal blocks)
  double bytes_per_token = 0;                // activations read and written
  double backward_flops_factor = 2;          // backward FLOPs / forward: 2 (dX, dW), 2.5 for flash
  double backward_bytes_per_token = 0;
  double weight_bytes = 0;                   // the chip's weights it reads (forward); the backward
                                             // reads them and writes their gradient
  double output_bytes_per_token = 0;         // what keeping its output holds
  // A weight matmul [T, K] @ [K, N] (per chip, unpadded) with `element_bytes` activations; only
  // the projections and the MLP can run in int8 (MaxText quantizes neither attention nor logits).
  bool quantizable = false;
  double k_dim = 0, n_dim = 0, element_bytes = 0;
};

// MaxText's `quantization: int8` (AQT) for training: each weight matmul's forward (X W) and its
// input gradient (dY W^T, "dlhs") multiply int8 operands on the MXU at the chip's int8 rate; the
// weight gradient (X^T dY, "drhs") too unless `weight_gradients` is false (MaxText before
// 2024-02's local AQT, or `quantization_local_shard_count: 0`), `local_shards` > 1 splitting its
// contraction in that many parts summed after (local AQT over slices). Every int8 operand is
// quantized from bf16 per call, weights included (AQT's training mode keeps no int8 copy): an
// abs-max pass reading it, a pass reading it again and writing int8, each its own memory-bound
// op (docs/modelling.md, "int8 training").
struct MatmulQuantization {
  bool int8 = false;
  // MaxText's quantization: fp8_full (qwix; docs/modelling.md, "fp8 training"): every weight
  // matmul at the fp8 rate forward and backward, X and W cast to e4m3 at a fixed scale (the
  // recipes' 'fixed,-224,224': no abs-max), dY to e5m2 at an abs-max scale per token (dX) and
  // per channel (dW). Excludes int8.
  bool fp8 = false;
  // fp8: X's and W's forward scales fixed (MaxText's act_ / weight_quantization_calibration_method
  // "fixed,LO,HI": a cast pass) or, MaxText's default "absmax", read from each tensor (an abs-max
  // pass and a quantize pass, as dY's in the backward always are).
  bool fixed_act_scale = false;
  bool fixed_weight_scale = false;
  bool weight_gradients = true;
  int local_shards = 1;
};

// Flash attention's block of queries and of keys (MaxText's splash attention default,
// sa_block_q = sa_block_kv = 512): causal attention computes the blocks on and below the diagonal.
constexpr double kFlashBlockTokens = 512;

// How attention runs: flash attention in blocks of `block` queries and keys (causal: the blocks
// above the diagonal skipped), or XLA's dot product (MaxText's `dot_product`: the [T, S] scores
// written to HBM in fp32, the softmax over them, then AV; causal masking saves nothing).
struct AttentionRun {
  bool flash = true;
  bool causal = true;
  double block = kFlashBlockTokens;
};

// One GQA layer's kernels, attention block then MLP block, in forward order. `tokens`: the chip's
// tokens per microbatch before the tensor split (M of its matmuls); `sequence`: tokens per
// sequence (what each query attends over, causally).
// A parallel-block model (TransformerSpec::parallel_block) has one norm, both branches reading it,
// and one residual sum of three; its kernels are all in the attention block (one block a layer).
std::vector<Kernel> layer_kernels(const TransformerSpec& model, int tensor_degree, double tokens, double sequence,
                                  const ChipSpec& chip, const AttentionRun& run = {});
// The output projection's kernels: the final norm, the logits matmul, the loss over the logits.
std::vector<Kernel> unembed_kernels(const TransformerSpec& model, int tensor_degree, double tokens,
                                    const ChipSpec& chip);

// Under `policy`, which kernels the backward reruns first, and for which block: a tensor the
// backward needs and the policy did not keep is recomputed by its producer, whose inputs are then
// needed too. The backward runs the MLP block before the attention block, so a kernel both need
// is recomputed once, for the MLP (under `full` the MLP's recompute is the whole layer's forward
// up to its activation, as JAX reruns a layer from its input). Per kernel: 0 none, 1 before the
// attention block's backward, 2 before the MLP block's.
std::vector<int> recompute_plan(const std::vector<Kernel>& kernels, const RematPolicy& policy);

struct KernelTimes {
  double forward_s = 0, backward_s = 0;
  double flops = 0;          // forward, MXU work
};
// One kernel's roofline on the chip for `tokens` tokens (roofline.hpp: achieved rates, overlap,
// the fixed cost per op), scaled by the workload's efficiency; an int8 matmul's quantize passes
// are included.
KernelTimes kernel_times(const Kernel& k, double tokens, const ChipSpec& chip, double efficiency,
                         const MatmulQuantization& quantization = {});

// Saved activation bytes per token per layer under the policy: in HBM and offloaded to the host.
struct SavedBytes {
  double device = 0, host = 0;
  double host_mlp = 0;   // of `host`, the MLP block's tensors (the rest, the layer input's and attention's)
};
SavedBytes saved_bytes_per_token(const std::vector<Kernel>& kernels, const RematPolicy& policy, double layer_input);

}  // namespace podsim
