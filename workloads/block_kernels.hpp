#pragma once
// A training step's blocks timed from their kernels (layer_kernels.hpp), and what a remat policy
// makes each block's backward recompute first. Under the book's compute model a block keeps its
// one roofline and a recomputed kernel costs its share of its block's FLOPs (vector work is free,
// as in the book); under the kernels model every kernel is its own roofline.
#include <vector>

#include "workloads/training.hpp"

namespace podsim {

// podsim's checkpointing choices as remat policies (none, block, book: remat_policy.hpp).
RematPolicy checkpointing_policy(Checkpointing checkpointing);

// Rewrites the times, and the recompute, of the dense layers' blocks and the output projection
// of `blocks` (model_blocks' list, forward order) for the chip's compute model and the plan's
// policy. MoE layers' MLP blocks (router, shared and routed experts: moe_training.hpp) keep the
// book's roofline, and MLA attention does under the book's compute model (its recompute
// the kernels' share under a remat policy, checkpointing's without one). `tokens`: the chip's tokens per microbatch.
void time_blocks_from_kernels(std::vector<TrainingBlock>& blocks, const TransformerSpec& model,
                              const TrainingPlan& plan, double tokens, int tensor_degree, const ChipSpec& chip);

}  // namespace podsim
