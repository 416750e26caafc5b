#pragma once
// One forward or backward pass of a training microbatch over a chain of blocks, emitted once
// for the single-program step (training.cpp) and the pipeline's passes (pipeline.cpp): each
// block's weights gathered first under FSDP, kPrefetchBlocks ahead of their use (block_ops.hpp);
// an MoE layer through MoeTrainingBlocks; a rematerialised block's forward rerun before its
// backward; under ZB-H1, B without the weight-gradient matmuls (left to emit_weight_pass's W);
// a block's offloaded activations to the host behind its forward and back ahead of its
// backward (docs/modelling.md, "Host offload").
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "workloads/block_ops.hpp"
#include "workloads/moe_training.hpp"

namespace podsim {

// The chip's host-offload DMA streams (remat `offload`), one each way: each block's offload
// after the last, each prefetch after the last; and each block's offload by its pass prefix and
// name, for the backward's prefetch. One for the step, so a microbatch's queue behind the one
// before (a pipeline clears the queues between passes: its stages run the passes in different
// orders, pipeline.cpp).
struct HostStreams {
  int last_offload = -1;
  int last_prefetch = -1;
  std::map<std::string, int> offload_of;
};

struct PassRequest {
  bool forward = true;
  std::string prefix;                // op names: prefix + block + ".fwd" ("mb3.", "mb3.v1.")
  int microbatch = 0;
  std::vector<int> start;            // what the first block waits for
  // What the first kPrefetchBlocks + 1 gathers wait for (no block of this pass has computed yet
  // to open the window): the single step's previous pass; a pipeline stage adds its own order.
  std::vector<int> window_start;
  int first_gather_after = -1;       // a gather the pass's first gather follows (-1: none)
  bool split_backward = false;       // ZB-H1: B leaves the weight-gradient matmuls to W
  int untensored_block = -1;         // a block without tensor-parallel collectives (the pipeline's unembedding share)
  // What block i waits for besides the block before it (none if unset): under
  // DcnSync::Pipelined a scanned layer's backward iteration starts once the DCN all-reduces that
  // ran beside the iteration before it are done.
  std::function<std::vector<int>(int block)> waits_for;
  // Where blocks offload activations (TrainingBlock::offload_bytes_per_chip): the step's streams.
  HostStreams* host = nullptr;
};

struct PassEmitted {
  std::vector<int> compute;          // per block: its last compute
  std::vector<int> gather;           // per block: its FSDP weight gather (-1: none)
  std::vector<int> entry;            // the first block's ops that wait for what the pass starts from
  std::vector<int> end;              // what ends the pass
  std::vector<int> lead_gathers;     // the gathers the window_start opens
  int last_gather = -1;              // the pass's last gather (-1: none)
};

// Called after each block's ops, in emission order (a backward's gradient reduction goes
// there, right behind the block): the block's index in the chain, its ops, and its routed
// experts' compute (-1 for a dense block).
using BlockEmitted = std::function<void(int block, const BlockOps& ops, int expert_compute)>;

PassEmitted emit_training_pass(ProgramBuilder& b, const TrainingPlan& plan, const TrainingLayout& layout,
                               MoeTrainingBlocks& moe, bool fsdp, bool tensor, const std::vector<TrainingBlock>& chain,
                               const PassRequest& request, const BlockEmitted& emitted = {});

// The part of a block's backward that computes weight gradients (ZB-H1's W): the matmuls
// X^T dY, as many FLOPs as the forward's weight matmuls (2 x tokens x params / Y); the rest
// (input gradients, and attention scores, which have no weights) is B.
double weight_gradient_fraction(const TrainingBlock& blk, double tokens, int tensor_degree);

}  // namespace podsim
