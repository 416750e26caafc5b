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
Compute emit_compute(ProgramBuilder& b, const BlockPass& pass, const RingSplit& ring, std::vector<int> inputs) {
  if (ring.steps <= 1) {
    const int op = b.compute(pass.name, pass.seconds, pass.flops, std::move(inputs), pass.layer, pass.role);
    return {{op}, op};
  }
  const auto ops = emit_ring_block(b, pass.name, pass.seconds, pass.flops, ring, std::move(inputs), pass.layer, pass.role);
  return {{ops.projections}, ops.last};
}

// Q to batch sharding and the output back (KvBatchSplit), or nothing.
int emit_kv_all_to_all(ProgramBuilder& b, const BlockPass& pass, const KvBatchSplit& kv, const char* suffix,
                       std::vector<int> after) {
  return b.collective(pass.name + suffix, CollectiveKind::AllToAll, kv.axes, {}, kv.bytes, std::move(after),
                      pass.layer, OpRole::KvAllToAll);
}

}  // namespace

BlockOps emit_block(ProgramBuilder& b, const BlockPass& pass, const TensorSplit& tensor, const RingSplit& ring,
                    const KvBatchSplit& kv, std::vector<int> inputs, const std::vector<int>& compute_after) {
  BlockOps ops;
  auto with_compute_after = [&](std::vector<int> after) {
    after.insert(after.end(), compute_after.begin(), compute_after.end());
    return after;
  };
  if (tensor.axes.empty()) {
    const auto c = emit_compute(b, pass, ring, with_compute_after(inputs));
    ops.entry = c.entry;
    ops.last_compute = c.last;
    ops.end = {c.last};
    return ops;
  }
  const bool to_batch = !kv.axes.empty();
  const double bytes = tensor.activation_bytes;
  if (!tensor.overlap) {
    const int gather = b.collective(pass.name + ".allgather_activations", CollectiveKind::AllGather, tensor.axes,
                                    tensor.slices, bytes, inputs, pass.layer, OpRole::TensorAllGather);
    ops.entry = {gather};
    if (to_batch) inputs = {emit_kv_all_to_all(b, pass, kv, ".alltoall_q", {gather})};
    else inputs.push_back(gather);
    inputs = with_compute_after(inputs);
    const double w = tensor.beside_scatter;
    if (w > 0 && ring.steps <= 1 && !to_batch) {
      // The input gradients dX = dY W^T first, their ReduceScatter after them; the weight
      // gradients X^T dY, which the scatter does not feed, beside it.
      const int input_grads = b.compute(pass.name, pass.seconds * (1 - w), pass.flops * (1 - w), inputs, pass.layer,
                                        pass.role);
      ops.end = {b.collective(pass.name + ".reducescatter_activations", CollectiveKind::ReduceScatter, tensor.axes,
                              tensor.slices, bytes, {input_grads}, pass.layer, OpRole::TensorReduceScatter)};
      ops.beside = b.compute(pass.name + ".weight_grads", pass.seconds * w, pass.flops * w, {input_grads}, pass.layer,
                             pass.role);
      ops.last_compute = ops.beside;
      return ops;
    }
    ops.last_compute = emit_compute(b, pass, ring, inputs).last;
    const int done = to_batch ? emit_kv_all_to_all(b, pass, kv, ".alltoall_out", {ops.last_compute}) : ops.last_compute;
    ops.end = {b.collective(pass.name + ".reducescatter_activations", CollectiveKind::ReduceScatter, tensor.axes,
                            tensor.slices, bytes, {done}, pass.layer, OpRole::TensorReduceScatter)};
    return ops;
  }
  // A collective matmul (sharding.md, "collective matmuls"): the gather streams in beside the
  // first half of the matmuls, the scatter streams out beside the second. Between the halves,
  // Q's move to batch sharding and back, and under context parallelism the scores as ring
  // attention: the first half is the projections (Q, K, V), the second the output projection.
  const bool with_ring = ring.steps > 1;
  const double ring_s = with_ring ? ring.score_s + ring.unpack_s : 0.0;
  const double ring_flops = with_ring ? ring.score_flops + ring.unpack_flops : 0.0;
  const double half_s = (pass.seconds - ring_s) / 2, half_flops = (pass.flops - ring_flops) / 2;
  const BlockPass half{pass.name, pass.layer, pass.role, half_s, half_flops};
  auto head = emit_gather_beside(b, half, tensor, ".matmul1", inputs);
  for (int op : compute_after) {
    if (op >= 0) b.op(head.compute).after.push_back(op);
  }
  ops.entry = {head.gather, head.compute};
  std::vector<int> ready = {head.compute, head.gather};
  if (to_batch) {
    const int q = emit_kv_all_to_all(b, pass, kv, ".alltoall_q", ready);
    ready = {emit_kv_all_to_all(b, pass, kv, ".alltoall_out", {q})};
  }
  if (with_ring) {
    ready = {emit_ring_attention(b, pass.name, ring, ready, pass.layer, pass.role)};
  }
  ops.end = emit_scatter_beside(b, half, tensor, ".matmul2", ready, ready);
  ops.last_compute = ops.end[0];
  return ops;
}

GatherBeside emit_gather_beside(ProgramBuilder& b, const BlockPass& pass, const TensorSplit& tensor, const char* suffix,
                                std::vector<int> inputs) {
  GatherBeside ops;
  ops.gather = b.collective(pass.name + ".allgather_activations", CollectiveKind::AllGather, tensor.axes,
                            tensor.slices, tensor.activation_bytes, inputs, pass.layer, OpRole::TensorAllGather);
  ops.compute = b.compute(pass.name + suffix, pass.seconds, pass.flops, std::move(inputs), pass.layer, pass.role);
  return ops;
}

std::vector<int> emit_scatter_beside(ProgramBuilder& b, const BlockPass& pass, const TensorSplit& tensor,
                                     const char* suffix, std::vector<int> compute_after,
                                     std::vector<int> scatter_after) {
  const int compute =
      b.compute(pass.name + suffix, pass.seconds, pass.flops, std::move(compute_after), pass.layer, pass.role);
  const int scatter =
      b.collective(pass.name + ".reducescatter_activations", CollectiveKind::ReduceScatter, tensor.axes, tensor.slices,
                   tensor.activation_bytes, std::move(scatter_after), pass.layer, OpRole::TensorReduceScatter);
  return {compute, scatter};
}

BlockOps emit_block(ProgramBuilder& b, const TrainingPlan& plan, bool tensor, const std::string& name,
                    const TrainingBlock& blk, double seconds, double flops, std::vector<int> inputs, OpRole role,
                    double ring, double weight_gradients, const std::vector<int>& compute_after) {
  TensorSplit split;
  if (tensor) {
    split = {plan.tensor_axes, plan.tensor_slices, plan.tensor_overlap, blk.activation_bytes_per_group,
             plan.tensor_overlap ? 0.0 : weight_gradients};
  }
  RingSplit ring_split;
  if (ring > 0 && blk.context_steps > 1) {
    // The backward (2) sends the block again with its gradient and takes the up-projection's
    // gradients (MLA: with respect to the latent and to W^UK, W^UV) where the block passes.
    ring_split = {plan.context_axis,           blk.context_steps,           blk.score_forward_s * ring,
                  blk.score_flops_per_chip * ring, blk.context_kv_bytes * ring, blk.ring_unpack_s * ring,
                  blk.ring_unpack_flops_per_chip * ring};
  }
  return emit_block(b, {name, blk.layer, role, seconds, flops}, split, ring_split, {}, std::move(inputs),
                    compute_after);
}

std::vector<int> emit_gradient_reduction(ProgramBuilder& b, const TrainingPlan& plan, const TrainingLayout& layout,
                                         const std::string& name, const TrainingBlock& blk, int after, bool dcn) {
  if (layout.data_degree <= 1) return {};
  const bool sharded = (plan.fsdp || plan.zero_stage > 0) && layout.ici_data_degree > 1;
  if (!sharded) {
    return {b.collective(name + ".allreduce_grads", CollectiveKind::AllReduce, plan.data_axes, plan.data_slices,
                         blk.gradient_bytes_per_group, {after}, blk.layer, OpRole::DataAllReduce, plan.dcn_data_parallel)};
  }
  OpRole role = plan.fsdp ? OpRole::FsdpReduceScatter : OpRole::ZeroReduceScatter;
  // Under FSDP over DCN the scatter spans the slices too: ICI first, then DCN (ring_parts'
  // order), each chip ending with its 1/(ici x slices) shard; nothing is all-reduced after.
  const int scatter = b.collective(name + ".reducescatter_grads", CollectiveKind::ReduceScatter, plan.data_axes,
                                   plan.data_slices, blk.gradient_bytes_per_group, {after}, blk.layer, role,
                                   plan.fsdp && plan.dcn_fsdp);
  if (!plan.dcn_data_parallel || !dcn) return {scatter};
  return {scatter, emit_dcn_gradient_allreduce(b, layout, name, blk, {scatter})};
}

int emit_dcn_gradient_allreduce(ProgramBuilder& b, const TrainingLayout& layout, const std::string& name,
                                const TrainingBlock& blk, std::vector<int> after) {
  return b.collective(name + ".dcn_allreduce_grads", CollectiveKind::AllReduce, {}, {},
                      blk.gradient_bytes_per_group / layout.ici_data_degree, std::move(after), blk.layer,
                      OpRole::DcnAllReduce, true);
}

int emit_zero_allgather(ProgramBuilder& b, const TrainingPlan& plan, const std::string& name, const TrainingBlock& blk,
                        int after) {
  return b.collective(name + ".allgather_weights", CollectiveKind::AllGather, plan.data_axes, plan.data_slices,
                      blk.weight_bytes_per_group, {after}, blk.layer, OpRole::ZeroAllGather);
}

}  // namespace podsim
