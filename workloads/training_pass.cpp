#include "workloads/training_pass.hpp"

#include <stdexcept>

namespace podsim {

double weight_gradient_fraction(const TrainingBlock& blk, double tokens, int tensor_degree) {
  if (blk.forward_flops_per_chip <= 0) return 0.0;
  return (2 * tokens * blk.params / tensor_degree) / (2 * blk.forward_flops_per_chip);
}

namespace {

// Block i's FSDP gather: after the previous block's gather (one gather stream), and once the
// block kPrefetchBlocks + 1 back has computed (at most that many blocks' weights in flight).
int emit_weight_gather(ProgramBuilder& b, const TrainingPlan& plan, const std::string& name, const TrainingBlock& blk,
                       int k, int previous_gather, int window_compute, const PassRequest& request,
                       PassEmitted& out) {
  std::vector<int> after = k > kPrefetchBlocks ? std::vector<int>{window_compute} : request.window_start;
  if (k > 0) after.push_back(previous_gather);
  else if (request.first_gather_after >= 0) after.push_back(request.first_gather_after);
  // Under FSDP over DCN the gather spans the slices: DCN first (each slice's 1/(ici x slices)
  // shard), then ICI (ring_parts' order).
  const int gather = b.collective(name + ".allgather_weights", CollectiveKind::AllGather, plan.data_axes,
                                  plan.data_slices, blk.weight_bytes_per_group, after, blk.layer, OpRole::FsdpAllGather,
                                  plan.dcn_fsdp);
  if (k <= kPrefetchBlocks) out.lead_gathers.push_back(gather);
  return gather;
}

// A dense block's pass (its forward rerun first in a rematerialised backward). `beside`: the
// previous block's weight gradients still running (-1: none). `entry` (the pass's first block
// only): gets the ops that wait for what the pass starts from.
BlockOps emit_dense_block(ProgramBuilder& b, const TrainingPlan& plan, const TrainingLayout& layout, bool tp,
                          const TrainingBlock& blk, const std::string& name, double w, int beside,
                          std::vector<int> inputs, const PassRequest& request, std::vector<int>* entry) {
  // The weight gradients beside the blocking scatter (TensorSplit::beside_scatter): the
  // backward's share of X^T dY; none where ZB-H1's W pass takes them.
  const bool backward = !request.forward;
  const double beside_share =
      backward && tp && w == 0 ? weight_gradient_fraction(blk, layout.tokens_per_microbatch, layout.tensor_degree) : 0.0;
  std::vector<int> compute_after;
  if (beside >= 0) compute_after = {beside};
  if (backward && blk.recompute_s > 0) {
    // The forward rerun first, with its tensor-parallel gather and scatter again where it
    // reruns a weight matmul, and its ring where it reruns the attention. It reruns from the
    // layer's checkpoint, not from dY: under blocking TP the backward's gather of dY waits
    // for the previous block only and runs beside the rerun; the backward's matmuls wait
    // for both.
    const auto redo = emit_block(b, plan, tp && blk.recompute_collectives, request.prefix + blk.name + ".recompute",
                                 blk, blk.recompute_s, blk.recompute_flops_per_chip, inputs, OpRole::Recompute,
                                 blk.recompute_attention ? 1 : 0, 0, compute_after);
    if (entry) *entry = redo.entry;
    if (tp && plan.tensor_overlap) {
      // A collective matmul streams dY in beside its own first matmul, after the rerun.
      inputs = redo.end;
      compute_after.clear();
    } else {
      compute_after = redo.end;   // the rerun's compute came after the previous block's
      // One async AllGather at a time (XLA's all_gather_overlap_limit, 1): the gather of
      // dY after the rerun's own, beside the rerun's matmuls.
      if (tp && blk.recompute_collectives) inputs.insert(inputs.end(), redo.entry.begin(), redo.entry.end());
    }
  }
  const BlockOps ops =
      backward ? emit_block(b, plan, tp, name, blk, blk.backward_s * (1 - w), 2 * blk.forward_flops_per_chip * (1 - w),
                            inputs, OpRole::Backward, 2, beside_share, compute_after)
               : emit_block(b, plan, tp, name, blk, blk.forward_s, blk.forward_flops_per_chip, inputs, OpRole::Forward,
                            1, 0, compute_after);
  // The pass's first block: its rerun's entry and its own (the gather of dY, which the rerun
  // no longer precedes), both waiting for what the pass starts from.
  if (entry) entry->insert(entry->end(), ops.entry.begin(), ops.entry.end());
  return ops;
}

// Remat `offload` (XLA's host offload: async copies to pinned host memory and back). Block i's
// offload runs on the device-to-host stream behind its forward, and the forward's block
// kPrefetchBlocks + 1 later waits for it (the copies a scanned layer starts are done within the
// next layer: HBM holds that many blocks' activations on their way out). Its prefetch runs on
// the host-to-device stream once the offload is done and the backward's block kPrefetchBlocks +
// 1 back has computed (that many blocks' activations on their way in, as FSDP's gathers), and
// the block's backward (its rerun first) waits for it.
int emit_offload(ProgramBuilder& b, HostStreams& host, const std::string& name, const std::string& key,
                 const TrainingBlock& blk, int produced) {
  const int op = b.host_transfer(name + ".offload", blk.offload_bytes_per_chip, true, {produced, host.last_offload},
                                 blk.layer, OpRole::HostOffload);
  // In HBM until copied out (the timeline's peak; the memory model's bucket leaves them out).
  b.op(op).holds_bytes = blk.offload_bytes_per_chip;
  b.op(op).released_by = {op};
  host.last_offload = op;
  host.offload_of[key] = op;
  return op;
}

int emit_prefetch(ProgramBuilder& b, HostStreams& host, const std::string& name, const std::string& key,
                  const TrainingBlock& blk, std::vector<int> window) {
  const auto it = host.offload_of.find(key);
  if (it == host.offload_of.end()) throw std::logic_error("block " + key + " prefetches what no forward offloaded");
  window.push_back(it->second);
  window.push_back(host.last_prefetch);
  const int op = b.host_transfer(name + ".prefetch", blk.offload_bytes_per_chip, false, window, blk.layer,
                                 OpRole::HostPrefetch);
  host.last_prefetch = op;
  return op;
}

// What block i (the pass's k-th) waits for on the host streams: in the forward, the offload
// kPrefetchBlocks + 1 blocks back; in the backward, its own prefetch, emitted here (returned;
// -1: none).
int wait_for_host(ProgramBuilder& b, const PassRequest& request, const TrainingBlock& blk, const std::string& name,
                  int i, int k, const std::vector<int>& offload, const PassEmitted& out, std::vector<int>& inputs) {
  const bool offloads = blk.offload_bytes_per_chip > 0;
  if (offloads && !request.host) throw std::logic_error("block " + blk.name + " offloads, and the pass has no host streams");
  if (request.forward && k > kPrefetchBlocks) {
    const int before = offload[i - kPrefetchBlocks - 1];
    if (before >= 0) inputs.push_back(before);
  }
  if (!offloads || request.forward) return -1;
  const int back = i + kPrefetchBlocks + 1;
  inputs.push_back(emit_prefetch(b, *request.host, name, request.prefix + blk.name, blk,
                                 k > kPrefetchBlocks ? std::vector<int>{out.compute[back]} : request.window_start));
  return inputs.back();
}

}  // namespace

PassEmitted emit_training_pass(ProgramBuilder& b, const TrainingPlan& plan, const TrainingLayout& layout,
                               MoeTrainingBlocks& moe, bool fsdp, bool tensor, const std::vector<TrainingBlock>& chain,
                               const PassRequest& request, const BlockEmitted& emitted) {
  const int n = static_cast<int>(chain.size());
  const bool forward = request.forward;
  PassEmitted out;
  out.compute.assign(n, -1);
  out.gather.assign(n, -1);
  std::vector<int> offload(n, -1);   // the forward's offload of each block (-1: none)
  std::vector<int> previous_end = request.start;
  int beside = -1;   // the previous block's weight gradients, still beside its scatter (BlockOps::beside)
  for (int k = 0; k < n; ++k) {
    const int i = forward ? k : n - 1 - k;
    const TrainingBlock& blk = chain[i];
    const std::string name = request.prefix + blk.name + (forward ? ".fwd" : ".bwd");
    std::vector<int> inputs = previous_end;
    const bool offloads = blk.offload_bytes_per_chip > 0;
    const int prefetch = wait_for_host(b, request, blk, name, i, k, offload, out, inputs);
    if (request.waits_for) {
      const auto extra = request.waits_for(i);
      inputs.insert(inputs.end(), extra.begin(), extra.end());
    }
    if (fsdp && !forward && k == 0 && blk.gather_kept_for_backward && request.first_gather_after >= 0) {
      // The forward's gather, kept (the output head under vocabulary tiling): the backward
      // starts from it, and the hold below lasts until this backward ends.
      out.gather[i] = request.first_gather_after;
      inputs.push_back(out.gather[i]);
      out.last_gather = out.gather[i];
    } else if (fsdp) {
      const int back = forward ? i - kPrefetchBlocks - 1 : i + kPrefetchBlocks + 1;
      out.gather[i] = emit_weight_gather(b, plan, name, blk, k, k > 0 ? out.gather[forward ? i - 1 : i + 1] : -1,
                                         k > kPrefetchBlocks ? out.compute[back] : -1, request, out);
      inputs.push_back(out.gather[i]);
      out.last_gather = out.gather[i];
    }
    const double w = request.split_backward && !forward
                         ? weight_gradient_fraction(blk, layout.tokens_per_microbatch, layout.tensor_degree)
                         : 0.0;
    BlockOps ops;
    int expert_compute = -1;
    if (blk.moe_layer >= 0) {
      const std::vector<int> gather_after = fsdp ? std::vector<int>{out.gather[i]} : std::vector<int>{};
      if (beside >= 0) inputs.push_back(beside);   // compute one op at a time: after the weight gradients
      int gathered = -1;
      if (!forward && moe.reruns()) {
        // The block's forward rerun first (router, dispatch, experts, combine), its experts'
        // gathered weights kept for the backward.
        const auto redo = moe.forward(request.prefix + blk.name + ".recompute", blk, request.microbatch, inputs,
                                      gather_after, OpRole::Recompute);
        inputs = redo.end;
        gathered = redo.expert_gather;
      }
      const auto mo = forward ? moe.forward(name, blk, request.microbatch, inputs, gather_after)
                              : moe.backward(name, blk, request.microbatch, inputs, gather_after, w, gathered);
      ops.last_compute = mo.last_compute;
      ops.end = mo.end;
      expert_compute = mo.expert_compute;
    } else {
      ops = emit_dense_block(b, plan, layout, tensor && i != request.untensored_block, blk, name, w, beside, inputs,
                             request, k == 0 ? &out.entry : nullptr);
    }
    out.compute[i] = ops.last_compute;
    if (offloads && forward) offload[i] = emit_offload(b, *request.host, name, request.prefix + blk.name, blk, ops.last_compute);
    if (prefetch >= 0) {   // back in HBM until the block's backward is done with them
      b.op(prefetch).holds_bytes = blk.offload_bytes_per_chip;
      b.op(prefetch).released_by = {ops.last_compute};
    }
    if (fsdp) {   // the gathered weights live until the compute that uses them ends
      b.op(out.gather[i]).holds_bytes = blk.weight_bytes_per_group;
      b.op(out.gather[i]).released_by = {ops.last_compute};
    }
    previous_end = ops.end;
    beside = ops.beside;
    if (emitted) emitted(i, ops, expert_compute);
  }
  out.end = previous_end;
  if (beside >= 0) out.end.push_back(beside);   // the pass ends when its last compute does too
  return out;
}

}  // namespace podsim
