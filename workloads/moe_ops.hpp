#pragma once
// The ops of an MoE layer's routed experts, emitted once for every path that has them
// (training's blocks in moe_training.cpp, inference's and serving's steps in
// inference_step.cpp): the dispatch and combine AllToAll over the expert axes, and the experts'
// compute as one op whose time differs by the rank's position where the ranks' loads differ.
// What a rank's rows cost is the path's roofline (training's passes, inference's weight
// formats); the rows and pair sizes come from one routing sample (moe_layer.hpp).
#include <string>
#include <vector>

#include "workloads/model_spec.hpp"
#include "workloads/moe_layer.hpp"
#include "workloads/program_builder.hpp"

namespace podsim {

// An AllToAll of the layer's rows (`row_bytes` each) over `expert_axes` (ascending: the pair
// order of moe_pair_bytes), the dispatch's pairs or, `transposed`, the combine's. Pair sizes
// are attached only where the ranks differ (the symmetric AllToAll otherwise). -1 (no op)
// with one rank.
int emit_moe_all_to_all(ProgramBuilder& b, const std::string& name, const MoeLayerWork& w,
                        const std::vector<int>& expert_axes, double row_bytes, bool transposed,
                        std::vector<int> after, int layer, OpRole role);

// The experts' compute: seconds_by_rank[r] on the chips of expert rank r (r read in mixed
// radix over `expert_axes`, the first fastest), `flops` per chip. One time for all when the
// ranks' times are equal; otherwise their mean as the op's time and the per-rank times by
// position, which keeps the chips along the expert axes whole under the symmetry reduction.
int emit_expert_compute(ProgramBuilder& b, const std::string& name, std::vector<double> seconds_by_rank, double flops,
                        const std::vector<int>& expert_axes, std::vector<int> after, int layer, OpRole role);

// The share of the router and shared experts' FLOPs (they are as many parameters a token) that
// reads the layer's input: the router [D, E] and the shared experts' in-projections (gate and
// up, or up alone: 2 or 1 of their 3 or 2 matrices). The rest is the shared experts'
// out-projection, whose partial sums join the routed experts' before the tensor-parallel
// ReduceScatter. Under collective matmuls the forward runs the first share beside the gather
// and the rest beside the scatter; the backward mirrors it (1 - share first). 1 without shared experts.
double router_shared_input_share(const TransformerSpec& model);

}  // namespace podsim
