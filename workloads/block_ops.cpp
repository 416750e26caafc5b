#include "workloads/block_ops.hpp"

namespace podsim {

BlockOps emit_block(ProgramBuilder& b, const TrainingPlan& plan, bool tensor, const std::string& name,
                    const TrainingBlock& blk, double seconds, double flops, std::vector<int> inputs,
                    const char* category) {
  BlockOps ops;
  if (!tensor) {
    ops.last_compute = b.compute(name, seconds, flops, inputs, blk.layer, category);
    ops.entry = {ops.last_compute};
    ops.end = {ops.last_compute};
    return ops;
  }
  const double bytes = blk.activation_bytes_per_group;
  const int gather = b.collective(name + ".allgather_activations", CollectiveKind::AllGather, plan.tensor_axes,
                                  plan.tensor_slices, bytes, inputs, blk.layer, "tp_allgather");
  ops.entry = {gather};
  if (!plan.tensor_overlap) {
    inputs.push_back(gather);
    ops.last_compute = b.compute(name, seconds, flops, inputs, blk.layer, category);
    ops.end = {b.collective(name + ".reducescatter_activations", CollectiveKind::ReduceScatter, plan.tensor_axes,
                            plan.tensor_slices, bytes, {ops.last_compute}, blk.layer, "tp_reducescatter")};
    return ops;
  }
  const int first = b.compute(name + ".matmul1", seconds / 2, flops / 2, inputs, blk.layer, category);
  ops.entry.push_back(first);
  const int second = b.compute(name + ".matmul2", seconds / 2, flops / 2, {first, gather}, blk.layer, category);
  const int scatter = b.collective(name + ".reducescatter_activations", CollectiveKind::ReduceScatter,
                                   plan.tensor_axes, plan.tensor_slices, bytes, {first, gather}, blk.layer,
                                   "tp_reducescatter");
  ops.last_compute = second;
  ops.end = {second, scatter};
  return ops;
}

}  // namespace podsim
