#include "workloads/block_ops.hpp"

namespace podsim {
namespace {

// The block's compute, as one op, or under context parallelism as ring attention: the
// projections on the local tokens, then one score step per K/V block of the ring. Each block
// leaves for the next chip as soon as it is here (the local one once projected, the others
// once received: double buffering), so a step waits only for its block; the sends go round
// the end of the line (one wraparound hop on a torus, the closing route on a line).
struct Compute {
  std::vector<int> entry;
  int last = -1;
};
Compute emit_compute(ProgramBuilder& b, const TrainingPlan& plan, const std::string& name, const TrainingBlock& blk,
                     double seconds, double flops, double ring, std::vector<int> inputs, const char* category) {
  const int steps = blk.context_steps;
  if (ring <= 0 || steps <= 1) {
    const int op = b.compute(name, seconds, flops, std::move(inputs), blk.layer, category);
    return {{op}, op};
  }
  const double score_s = blk.score_forward_s * ring;
  const double score_flops = blk.score_flops_per_chip * ring;
  const double bytes = blk.context_kv_bytes * ring;
  const int axis = plan.context_axis;
  const int projections = b.compute(name + ".projections", seconds - score_s, flops - score_flops, std::move(inputs),
                                    blk.layer, category);
  int step = b.compute(name + ".ring0", score_s / steps, score_flops / steps, {projections}, blk.layer, category);
  int have = projections;   // the op after which this chip holds the block it sends next
  for (int i = 1; i < steps; ++i) {
    const int send = b.send(name + ".ring_send" + std::to_string(i), axis, +1, bytes, {have}, "cp_ring", true);
    // A send is received by one op on a chip: a zero-length op, which the step and the next
    // send wait for.
    const int receive = b.compute(name + ".ring_receive" + std::to_string(i), 0.0, 0.0, {}, blk.layer, "cp_ring_receive");
    b.op(receive).after_neighbour = {{send, axis, +1, false}, {send, axis, +1, true}};
    step = b.compute(name + ".ring" + std::to_string(i), score_s / steps, score_flops / steps, {step, receive},
                     blk.layer, category);
    have = receive;
  }
  return {{projections}, step};
}

}  // namespace

BlockOps emit_block(ProgramBuilder& b, const TrainingPlan& plan, bool tensor, const std::string& name,
                    const TrainingBlock& blk, double seconds, double flops, std::vector<int> inputs,
                    const char* category, double ring) {
  BlockOps ops;
  if (!tensor) {
    const auto c = emit_compute(b, plan, name, blk, seconds, flops, ring, inputs, category);
    ops.entry = c.entry;
    ops.last_compute = c.last;
    ops.end = {c.last};
    return ops;
  }
  const double bytes = blk.activation_bytes_per_group;
  const int gather = b.collective(name + ".allgather_activations", CollectiveKind::AllGather, plan.tensor_axes,
                                  plan.tensor_slices, bytes, inputs, blk.layer, "tp_allgather");
  ops.entry = {gather};
  if (!plan.tensor_overlap) {
    inputs.push_back(gather);
    ops.last_compute = emit_compute(b, plan, name, blk, seconds, flops, ring, inputs, category).last;
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

std::vector<int> emit_gradient_reduction(ProgramBuilder& b, const TrainingPlan& plan, const TrainingLayout& layout,
                                         const std::string& name, const TrainingBlock& blk, int after) {
  if (layout.data_degree <= 1) return {};
  const bool sharded = (plan.fsdp || plan.zero_stage > 0) && layout.ici_data_degree > 1;
  if (!sharded) {
    return {b.collective(name + ".allreduce_grads", CollectiveKind::AllReduce, plan.data_axes, plan.data_slices,
                         blk.weight_bytes_per_group, {after}, blk.layer, "dp_allreduce", plan.dcn_data_parallel)};
  }
  const char* category = plan.fsdp ? "fsdp_reducescatter" : "zero_reducescatter";
  const int scatter = b.collective(name + ".reducescatter_grads", CollectiveKind::ReduceScatter, plan.data_axes,
                                   plan.data_slices, blk.weight_bytes_per_group, {after}, blk.layer, category);
  if (!plan.dcn_data_parallel) return {scatter};
  return {scatter, b.collective(name + ".dcn_allreduce_grads", CollectiveKind::AllReduce, {}, {},
                                blk.weight_bytes_per_group / layout.ici_data_degree, {scatter}, blk.layer,
                                "dcn_allreduce", true)};
}

int emit_zero_allgather(ProgramBuilder& b, const TrainingPlan& plan, const std::string& name, const TrainingBlock& blk,
                        int optimizer) {
  return b.collective(name + ".allgather_weights", CollectiveKind::AllGather, plan.data_axes, plan.data_slices,
                      blk.weight_bytes_per_group, {optimizer}, blk.layer, "zero_allgather");
}

}  // namespace podsim
