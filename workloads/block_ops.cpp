#include "workloads/block_ops.hpp"

#include "workloads/ring_attention.hpp"

namespace podsim {
namespace {

// The block's compute, as one op, or under context parallelism as ring attention
// (ring_attention.hpp): the projections on the local tokens, then one score step per K/V block.
struct Compute {
  std::vector<int> entry;
  int last = -1;
};
Compute emit_compute(ProgramBuilder& b, const TrainingPlan& plan, const std::string& name, const TrainingBlock& blk,
                     double seconds, double flops, double ring, std::vector<int> inputs, OpRole role) {
  const int steps = blk.context_steps;
  if (ring <= 0 || steps <= 1) {
    const int op = b.compute(name, seconds, flops, std::move(inputs), blk.layer, role);
    return {{op}, op};
  }
  const auto ops = emit_ring_block(b, name, plan.context_axis, steps, seconds, flops, blk.score_forward_s * ring,
                                   blk.score_flops_per_chip * ring, blk.context_kv_bytes * ring, std::move(inputs),
                                   blk.layer, role);
  return {{ops.projections}, ops.last};
}

}  // namespace

BlockOps emit_block(ProgramBuilder& b, const TrainingPlan& plan, bool tensor, const std::string& name,
                    const TrainingBlock& blk, double seconds, double flops, std::vector<int> inputs,
                    OpRole role, double ring) {
  BlockOps ops;
  if (!tensor) {
    const auto c = emit_compute(b, plan, name, blk, seconds, flops, ring, inputs, role);
    ops.entry = c.entry;
    ops.last_compute = c.last;
    ops.end = {c.last};
    return ops;
  }
  const double bytes = blk.activation_bytes_per_group;
  const int gather = b.collective(name + ".allgather_activations", CollectiveKind::AllGather, plan.tensor_axes,
                                  plan.tensor_slices, bytes, inputs, blk.layer, OpRole::TensorAllGather);
  ops.entry = {gather};
  if (!plan.tensor_overlap) {
    inputs.push_back(gather);
    ops.last_compute = emit_compute(b, plan, name, blk, seconds, flops, ring, inputs, role).last;
    ops.end = {b.collective(name + ".reducescatter_activations", CollectiveKind::ReduceScatter, plan.tensor_axes,
                            plan.tensor_slices, bytes, {ops.last_compute}, blk.layer, OpRole::TensorReduceScatter)};
    return ops;
  }
  // Under context parallelism the scores run as ring attention between the two halves: the
  // gather streams in beside the first half of the projections (Q, K, V), the ring starts once
  // both are done, and the scatter streams out beside the second half (the output projection).
  const bool with_ring = ring > 0 && blk.context_steps > 1;
  const double score_s = with_ring ? blk.score_forward_s * ring : 0.0;
  const double score_flops = with_ring ? blk.score_flops_per_chip * ring : 0.0;
  const double half_s = (seconds - score_s) / 2, half_flops = (flops - score_flops) / 2;
  const int first = b.compute(name + ".matmul1", half_s, half_flops, inputs, blk.layer, role);
  ops.entry.push_back(first);
  std::vector<int> ready = {first, gather};
  if (with_ring) {
    const int steps = blk.context_steps;
    ready = {emit_ring_attention(b, name, plan.context_axis, steps, score_s / steps, score_flops / steps,
                                 blk.context_kv_bytes * ring, ready, blk.layer, role)};
  }
  const int second = b.compute(name + ".matmul2", half_s, half_flops, ready, blk.layer, role);
  const int scatter = b.collective(name + ".reducescatter_activations", CollectiveKind::ReduceScatter,
                                   plan.tensor_axes, plan.tensor_slices, bytes, ready, blk.layer, OpRole::TensorReduceScatter);
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
                         blk.weight_bytes_per_group, {after}, blk.layer, OpRole::DataAllReduce, plan.dcn_data_parallel)};
  }
  OpRole role = plan.fsdp ? OpRole::FsdpReduceScatter : OpRole::ZeroReduceScatter;
  const int scatter = b.collective(name + ".reducescatter_grads", CollectiveKind::ReduceScatter, plan.data_axes,
                                   plan.data_slices, blk.weight_bytes_per_group, {after}, blk.layer, role);
  if (!plan.dcn_data_parallel) return {scatter};
  return {scatter, b.collective(name + ".dcn_allreduce_grads", CollectiveKind::AllReduce, {}, {},
                                blk.weight_bytes_per_group / layout.ici_data_degree, {scatter}, blk.layer,
                                OpRole::DcnAllReduce, true)};
}

int emit_zero_allgather(ProgramBuilder& b, const TrainingPlan& plan, const std::string& name, const TrainingBlock& blk,
                        int after) {
  return b.collective(name + ".allgather_weights", CollectiveKind::AllGather, plan.data_axes, plan.data_slices,
                      blk.weight_bytes_per_group, {after}, blk.layer, OpRole::ZeroAllGather);
}

}  // namespace podsim
