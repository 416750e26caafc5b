#pragma once
// One weight block's pass as program ops, shared by the single-program step and the pipeline:
// its matmuls and, under tensor parallelism, the activations gathered before and the partial
// sums scattered after (Megatron with sequence parallelism: between blocks the activations
// are split over the tensor axes). Blocking by default; with tensor_overlap a collective
// matmul (sharding.md, "collective matmuls"): the gather streams in while the first matmul
// runs, the scatter streams out while the second runs. Under context parallelism an
// attention block's scores run as ring attention (block_ops.cpp).
#include <string>
#include <vector>

#include "workloads/program_builder.hpp"
#include "workloads/ring_attention.hpp"
#include "workloads/training.hpp"

namespace podsim {

// How far ahead FSDP gathers a block's weights: a layer's two blocks (attention, MLP), so a
// block's gather may start once the block kPrefetchBlocks + 1 back has computed, and that many
// gathered blocks are in flight (the single-program step, the pipeline passes, the memory bucket).
constexpr int kPrefetchBlocks = 2;

struct BlockOps {
  std::vector<int> entry;    // the ops that took `inputs` (where a pass's first block waits)
  int last_compute = -1;
  std::vector<int> end;      // what the next block waits for
  // A backward's weight-gradient matmuls, running beside the scatter of its input gradients
  // (TensorSplit::beside_scatter): the next block's compute waits for them, its gather does not
  // (-1: none; then last_compute is in `end`).
  int beside = -1;
};

// One pass of a block: its name, layer, role and roofline cost.
struct BlockPass {
  std::string name;
  int layer = -1;
  OpRole role = OpRole::Unassigned;
  double seconds = 0;
  double flops = 0;
};

// How a block is split over the tensor (model) axes, Megatron-style; no axes: not split.
struct TensorSplit {
  std::vector<int> axes;
  std::vector<AxisSlice> slices;     // empty, or per axis: the part of it used
  bool overlap = false;              // collective matmuls
  double activation_bytes = 0;       // V of the gather before and the scatter after
  // Blocking only: the share of the pass's compute that the scatter's sum does not wait for (a
  // backward's weight gradients X^T dY, which need dY gathered but not dX scattered), emitted as
  // its own op after the rest, beside the scatter. XLA's latency-hiding scheduler runs TPU
  // collectives asynchronously beside independent compute (docs/modelling.md, "What XLA
  // overlaps"). 0: one op, the scatter after it.
  double beside_scatter = 0;
};

// Inference with more model shards than KV heads (the cache also sharded over batch): attention
// moves Q to batch sharding over these axes and its output back, two AllToAlls of
// `bytes` around the scores (inference.md, "KV[2, B_Z, S, K_Y, H]"). No axes: none.
struct KvBatchSplit {
  std::vector<int> axes;
  double bytes = 0;
};

// The block pass every path emits (training step, pipeline passes, prefill, decode, serving's
// steps): its compute after `inputs`, gathered and scattered over the tensor axes, its scores
// ring-attended, Q moved to batch sharding where the split says so. `compute_after`: ops the
// block's first compute waits for and its gather does not (the previous block's `beside`).
BlockOps emit_block(ProgramBuilder& b, const BlockPass& pass, const TensorSplit& tensor, const RingSplit& ring,
                    const KvBatchSplit& kv, std::vector<int> inputs, const std::vector<int>& compute_after = {});

// A collective matmul's two ends, for blocks with ops of their own between them (an MoE layer's
// routed experts, moe_training.cpp and inference_step.cpp); emit_block's collective matmul is
// these two with its Q moves and ring between. `pass` names the block and carries the half's
// seconds and FLOPs; the compute op is named pass.name + `suffix`, the collectives as
// emit_block's.
struct GatherBeside {
  int gather = -1;   // the activations' AllGather over the tensor axes, after `inputs`
  int compute = -1;  // the first matmul, after `inputs`, beside the gather
};
GatherBeside emit_gather_beside(ProgramBuilder& b, const BlockPass& pass, const TensorSplit& tensor, const char* suffix,
                                std::vector<int> inputs);
// The last matmul after `compute_after`, and beside it the ReduceScatter of the partial sums
// after `scatter_after` (what else the sum it scatters waits for). Returns {compute, scatter}.
std::vector<int> emit_scatter_beside(ProgramBuilder& b, const BlockPass& pass, const TensorSplit& tensor,
                                     const char* suffix, std::vector<int> compute_after,
                                     std::vector<int> scatter_after);

// A training block's pass: its splits from the plan and the block. `ring`: how many forward
// scores' worth of ring attention the pass runs under context parallelism (1 forward or
// recompute, 2 backward, which also sends the K/V gradients back; 0: none, e.g. ZB-H1's weight
// gradients). Under context parallelism the ring is RingSplit's (ring_attention.hpp).
// `weight_gradients`: a backward's share of weight-gradient matmuls, beside its blocking scatter
// (TensorSplit::beside_scatter; ignored under collective matmuls, context parallelism, or
// without tensor parallelism). `compute_after` as the emit_block above.
BlockOps emit_block(ProgramBuilder& b, const TrainingPlan& plan, bool tensor, const std::string& name,
                    const TrainingBlock& blk, double seconds, double flops, std::vector<int> inputs, OpRole role,
                    double ring = 0, double weight_gradients = 0, const std::vector<int>& compute_after = {});

// A block's gradient reduction over the data axes, once its last backward (`after`) is done;
// nothing waits on it but the optimizer. FSDP and ZeRO-1/2 reduce-scatter it (each replica
// then updates its shard) and, across slices, all-reduce each chip's shard over DCN after
// (training.md, "scaling beyond a pod"); plain data parallelism all-reduces it, across slices
// hierarchically (ICI ReduceScatter, DCN AllReduce, ICI AllGather). Returns the ops; none
// without data parallelism.
// `dcn` false: the sharded gradients' DCN all-reduce is left to the caller
// (TrainingPlan::dcn_sync), which emits it with emit_dcn_gradient_allreduce.
std::vector<int> emit_gradient_reduction(ProgramBuilder& b, const TrainingPlan& plan, const TrainingLayout& layout,
                                         const std::string& name, const TrainingBlock& blk, int after,
                                         bool dcn = true);
// The all-reduce over DCN of a block's reduce-scattered gradient shard (each chip's 1/ici share).
int emit_dcn_gradient_allreduce(ProgramBuilder& b, const TrainingLayout& layout, const std::string& name,
                                const TrainingBlock& blk, std::vector<int> after);

// ZeRO-1/2: a block's updated shards gathered back into every replica's weights after `after`
// (the optimizer, or the block gathered before it), before the next step can use them.
int emit_zero_allgather(ProgramBuilder& b, const TrainingPlan& plan, const std::string& name, const TrainingBlock& blk,
                        int after);

}  // namespace podsim
