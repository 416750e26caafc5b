#pragma once
// The MoE block of a training step (issue 11): per MoE layer and microbatch, the router and
// shared experts (dense, as an MLP block), then the routed experts under expert parallelism:
//   forward:  dispatch AllToAll over the expert axes -> each chip's experts compute the rows
//             routed to them -> combine AllToAll back (pair sizes transposed);
//   backward: the combine's mirror (output gradients to the experts) -> the experts' backward
//             (2x the FLOPs) -> the dispatch's mirror (input gradients home), and the router and
//             shared experts' backward after the experts' (one chip computes one thing at a time);
//   gradients: expert weights are sharded over the expert axes and, under FSDP, over the other
//             data axes, where their gradients are ReduceScattered (AllReduced without FSDP).
// Tensor parallelism splits every expert's d_ff as it splits a dense MLP's (the activations
// gathered before the block and scattered after: blocking, or with tensor_overlap a collective
// matmul round the router and shared experts, forward_collective_matmul). Routing (workloads/moe_layer.hpp) is
// drawn per MoE layer and microbatch; uneven rows make the expert compute differ by chip
// (ProgramOp::vary_axes) and the AllToAlls uneven (CollectiveSpec::pair_bytes), so the chips
// holding hot experts finish late and everyone else waits in the combine: the timeline shows it.
#include <string>
#include <vector>

#include "workloads/block_ops.hpp"
#include "workloads/moe_layer.hpp"
#include "workloads/program_builder.hpp"
#include "workloads/training.hpp"

namespace podsim {

// Chips FSDP shards each routed expert over beside the expert axes: the product of the data
// axes that are not expert axes (a sliced axis its slice's size). 1: the experts are whole
// on their expert-parallel chips.
int expert_fsdp_degree(const TrainingPlan& plan, const TopologySpec& topology);

// Routed-expert weights one chip holds before FSDP's sharding over the other data axes (and
// gathers whole under it): its E / expert_degree experts, split tensor ways.
double expert_params_per_chip(const TransformerSpec& model, int expert_degree, int tensor_degree);

class MoeTrainingBlocks {
 public:
  // Throws std::invalid_argument for expert axes that are not whole data axes, or experts that
  // do not divide over them. Fills layout.moe's degrees.
  MoeTrainingBlocks(const TransformerSpec& model, const TrainingPlan& plan, const TopologySpec& topology,
                    TrainingLayout& layout, ProgramBuilder& builder, bool fsdp);

  struct Ops {
    int last_compute = -1;      // the block's last compute (what later prefetches wait for)
    int expert_compute = -1;    // the routed experts' compute (what their gradients wait for)
    std::vector<int> end;       // what the next block waits for
    int expert_gather = -1;     // the experts' FSDP weight gather, where one ran
  };
  // `gather_after`: when the experts' FSDP weight gather may start (the block's own prefetch).
  // `role`: Forward, or Recompute for the rerun before the backward (reruns()). `gathered`: an
  // experts' weight gather already emitted for this block (the rerun's, reused by the backward).
  Ops forward(const std::string& name, const TrainingBlock& block, int microbatch, std::vector<int> inputs,
              const std::vector<int>& gather_after, OpRole role = OpRole::Forward, int gathered = -1);
  // Whether the backward reruns the MoE block's forward first: the remat policy (or the
  // checkpointing) does not keep the experts' up-projection outputs, which their backward needs;
  // the router's combine weights and the experts' outputs are then recomputed with them.
  bool reruns() const { return reruns_; }
  // The FLOPs one microbatch reruns of MoE block `block` per chip: all of its forward (router,
  // shared and routed experts) when reruns(), else none (an MoE block reruns whole or not at all).
  double recompute_flops_per_chip(const TrainingBlock& block) const {
    return reruns_ ? block.forward_flops_per_chip + expert_forward_flops_per_chip() : 0.0;
  }
  // `weight_fraction` > 0 (ZB-H1): the pass computes input gradients only, the router and
  // shared experts' backward less that fraction, the experts' one matmul pass of two;
  // weight_gradients runs the rest later.
  Ops backward(const std::string& name, const TrainingBlock& block, int microbatch, std::vector<int> inputs,
               const std::vector<int>& gather_after, double weight_fraction = 0, int gathered = -1);
  // ZB-H1's W for an MoE layer: the experts' weight gradients (X^T dY over the rows each chip
  // received, differing by position as the forward does) and the router and shared experts'
  // `weight_fraction` of their backward; compute only, after `after`.
  struct WeightOps {
    int experts = -1;
    int router_shared = -1;
  };
  WeightOps weight_gradients(const std::string& name, const TrainingBlock& block, int microbatch,
                             std::vector<int> after, double weight_fraction);
  // The experts' gradient reduction after their last backward; appends to grad_ops.
  void gradients(const TrainingBlock& block, int expert_compute, std::vector<int>& grad_ops);
  // ZeRO-1/2: the chip's experts' updated shards gathered back over the replicas that hold the
  // same experts, after `after` (into `b`: a pipeline emits its tail into a builder of its
  // own). Returns the gather, or `after` where nothing shares the experts.
  int zero_allgather(ProgramBuilder& b, const std::string& name, const TrainingBlock& block, int after);

  // Routed-expert weights one chip holds (before FSDP's sharding over the other data axes).
  double expert_params_per_chip() const { return expert_params_per_chip_; }
  // Useful FLOPs of the routed experts in one microbatch's forward, per chip (k experts per token).
  double expert_forward_flops_per_chip() const;
  // Averages the routing statistics into layout.moe; call once after the passes.
  void finish();

 private:
  const MoeLayerWork& work(int moe_layer, int microbatch);
  // Which of the experts' products a pass runs: the forward, the whole backward (input and
  // weight gradients), or ZB-H1's B (input gradients) and W (weight gradients) apart.
  enum class ExpertPass { Forward, Backward, InputGradients, WeightGradients };
  int expert_op(const std::string& name, const TrainingBlock& block, const MoeLayerWork& w, ExpertPass pass, OpRole role,
                std::vector<int> after);
  // Under the kernels compute model with grouped dispatch: what rank `rank`'s experts cost in
  // `pass` as MaxText's sparse_matmul runs them (grouped_matmul.hpp: each projection's tiles,
  // the activation, the permutation gathers and the weighted sum).
  double grouped_expert_s(const MoeLayerWork& w, int rank, ExpertPass pass) const;
  int all_to_all(const std::string& name, const TrainingBlock& block, const MoeLayerWork& w, bool transposed,
                 std::vector<int> after, OpRole role);
  int tensor_collective(const std::string& name, const TrainingBlock& block, CollectiveKind kind, std::vector<int> after);
  // The passes under collective matmuls (tensor_overlap; moe_training.cpp says what overlaps what).
  Ops forward_collective_matmul(const std::string& name, const TrainingBlock& block, const MoeLayerWork& w,
                                std::vector<int> inputs, const std::vector<int>& gather_after, OpRole role,
                                int gathered);
  Ops backward_collective_matmul(const std::string& name, const TrainingBlock& block, const MoeLayerWork& w,
                                 std::vector<int> inputs, const std::vector<int>& gather_after, double weight_fraction,
                                 int gathered);
  TensorSplit tensor_split(const TrainingBlock& block) const;
  // Appends the experts' FSDP weight gather to `ready` (`gathered` where given, else a new one,
  // recorded in *gather).
  std::vector<int> expert_inputs(const std::string& name, const TrainingBlock& block, std::vector<int> ready,
                                 const std::vector<int>& gather_after, int gathered, int* gather);
  // MoeDispatch::Einsum's dispatch or combine einsum over the chip's tokens (`passes` matmul
  // passes), after `after`; -1 under grouped dispatch.
  int einsum_op(const std::string& name, const TrainingBlock& block, double passes, OpRole role,
                std::vector<int> after);
  int expert_weight_gather(ProgramBuilder& b, const std::string& name, const TrainingBlock& block,
                           const std::vector<int>& after, OpRole role) const;

  const TransformerSpec& model_;
  const TrainingPlan& plan_;
  const TopologySpec& topology_;
  TrainingLayout& layout_;
  ProgramBuilder& b_;
  bool fsdp_ = false;
  bool reruns_ = false;
  bool zero_ = false;                        // ZeRO-1/2: expert gradients scattered, weights gathered back
  std::vector<int> expert_axes_;             // ascending: the pair and position order
  std::vector<int> expert_fsdp_axes_;        // data axes that are not expert axes
  std::vector<AxisSlice> expert_fsdp_slices_;
  int expert_fsdp_degree_ = 1;
  double expert_params_per_chip_ = 0;
  int pending_gather_ = -1;                  // the gather the next experts' compute multiplies by
  int last_expert_compute_ = -1;             // the latest experts' compute emitted (serial gathers wait for it)
  std::vector<std::vector<MoeLayerWork>> works_;   // [microbatch][moe layer], drawn on first use
  std::vector<std::vector<bool>> drawn_;
};

}  // namespace podsim
