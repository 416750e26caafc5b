#include "workloads/block_kernels.hpp"

#include "workloads/layer_kernels.hpp"

namespace podsim {

RematPolicy checkpointing_policy(Checkpointing checkpointing) {
  switch (checkpointing) {
    case Checkpointing::None: return remat_policy("none");
    case Checkpointing::Block: return remat_policy("block");
    case Checkpointing::Book: break;
  }
  return remat_policy("book");
}

namespace {

struct BlockSums {
  double forward_s = 0, backward_s = 0, flops = 0;
};

// One layer's two blocks (attention 0, MLP 1): their kernels' sums, and each block's recompute.
void time_layer(TrainingBlock* attn, TrainingBlock* mlp, const std::vector<Kernel>& kernels,
                const std::vector<int>& plan, const std::vector<KernelTimes>& times, bool per_kernel,
                bool recompute) {
  BlockSums sums[2];
  for (size_t i = 0; i < kernels.size(); ++i) {
    BlockSums& s = sums[kernels[i].mlp ? 1 : 0];
    s.forward_s += times[i].forward_s;
    s.backward_s += times[i].backward_s;
    s.flops += times[i].flops;
  }
  TrainingBlock* block[2] = {attn, mlp};
  if (per_kernel) {
    for (int b = 0; b < 2; ++b) {
      if (!block[b]) continue;
      block[b]->forward_s = sums[b].forward_s;
      block[b]->backward_s = sums[b].backward_s;
    }
  }
  for (int b = 0; b < 2 && recompute; ++b) {
    if (!block[b]) continue;
    TrainingBlock& blk = *block[b];
    blk.recompute_s = blk.recompute_flops_per_chip = 0;
    blk.recompute_collectives = blk.recompute_attention = false;
    for (size_t i = 0; i < kernels.size(); ++i) {
      const int owner = kernels[i].mlp ? 1 : 0;
      if (!block[owner]) continue;   // an MoE layer's MLP: its experts are not rerun (moe_training.hpp)
      // Without an MLP block of its own (MoE), what the MLP's backward would recompute first
      // is the attention block's to recompute.
      const int when = plan[i] == 2 && !mlp ? 1 : plan[i];
      if (when != b + 1) continue;
      // The book's model: a kernel's share of its block's one roofline, by FLOPs.
      const double owner_s = block[owner]->forward_s;
      blk.recompute_s += per_kernel ? times[i].forward_s
                                    : (sums[owner].flops > 0 ? owner_s * times[i].flops / sums[owner].flops : 0.0);
      blk.recompute_flops_per_chip += times[i].flops;
      blk.recompute_collectives = blk.recompute_collectives || kernels[i].kind == KernelKind::Matmul;
      blk.recompute_attention = blk.recompute_attention || kernels[i].kind == KernelKind::Attention;
    }
  }
}

// What a layer's blocks offload to the host (remat `offload`), per token of the chip's
// microbatch: the layer input's and attention's tensors, the MLP's, and an MoE layer's MLP's by
// its dense equivalent. The same bytes the memory model takes out of HBM (memory.cpp).
struct OffloadPerToken {
  double attention = 0, mlp = 0, moe_mlp = 0;
};

OffloadPerToken offload_per_token(const TransformerSpec& model, const TrainingPlan& plan, const RematPolicy& policy,
                                  const std::vector<Kernel>& kernels, double tokens, double sequence, int y,
                                  const ChipSpec& chip) {
  const double layer_input = model.activation_bytes * model.d_model / y;
  const SavedBytes dense = saved_bytes_per_token(kernels, policy, layer_input);
  OffloadPerToken out{dense.host - dense.host_mlp, dense.host_mlp, 0.0};
  if (!model.moe) return out;
  // An MoE layer's MLP offloads what its dense equivalent would (moe_layer_as_dense).
  const auto moe = layer_kernels(moe_layer_as_dense(model), y, tokens, sequence, chip, plan.attention_run);
  out.moe_mlp = saved_bytes_per_token(moe, policy, layer_input).host_mlp;
  return out;
}

// Each block's share: attention's in the attention block (or the parallel block, which takes
// the MLP's too), the MLP's in the MLP block (an MoE layer's own).
void offload_layer(TrainingBlock* attn, TrainingBlock* mlp, TrainingBlock* moe_mlp, const OffloadPerToken& bytes,
                   double tokens) {
  TrainingBlock* mlp_block = moe_mlp ? moe_mlp : mlp;
  const double mlp_bytes = moe_mlp ? bytes.moe_mlp : bytes.mlp;
  if (attn) attn->offload_bytes_per_chip = (bytes.attention + (mlp_block ? 0.0 : mlp_bytes)) * tokens;
  if (mlp_block) mlp_block->offload_bytes_per_chip = mlp_bytes * tokens;
}

}  // namespace

void time_blocks_from_kernels(std::vector<TrainingBlock>& blocks, const TransformerSpec& model,
                              const TrainingPlan& plan, double tokens, int y, const ChipSpec& chip) {
  const bool per_kernel = chip.compute_model == ComputeModel::Kernels;
  const RematPolicy policy = plan.remat ? *plan.remat : checkpointing_policy(plan.checkpointing);
  const double sequence = plan.attention_flops ? plan.sequence_length : 0.0;
  const auto kernels = layer_kernels(model, y, tokens, sequence, chip, plan.attention_run);
  const auto plan_of = recompute_plan(kernels, policy);
  const OffloadPerToken offloaded =
      policy.offloads() ? offload_per_token(model, plan, policy, kernels, tokens, sequence, y, chip) : OffloadPerToken{};
  std::vector<KernelTimes> times;
  for (const auto& k : kernels) times.push_back(kernel_times(k, tokens, chip, plan.matmul_efficiency, plan.quantization));
  for (int l = 0; l < model.layers; ++l) {
    TrainingBlock* attn = nullptr;
    TrainingBlock* mlp = nullptr;
    TrainingBlock* moe_mlp = nullptr;
    for (auto& blk : blocks) {
      if (blk.layer != l) continue;
      const auto ends = [&](const char* s) {
        const std::string tail(s);
        return blk.name.size() > tail.size() && blk.name.compare(blk.name.size() - tail.size(), tail.size(), tail) == 0;
      };
      if (ends(".attn") || ends(".layer")) attn = &blk;   // a parallel block: the layer's one block
      else if (blk.moe_layer < 0) mlp = &blk;
      else moe_mlp = &blk;
    }
    if (policy.offloads()) offload_layer(attn, mlp, moe_mlp, offloaded, tokens);
    // Under the book's compute model MLA attention keeps the book's block, and under
    // `checkpointing` its recompute (rerun_by_checkpointing's, which counts a context-parallel
    // block's up-projections too); a remat policy's recompute is its kernels' share, as GQA's.
    // Under the kernels model its kernels (layer_kernels.hpp) time it as GQA's.
    if (model.attention == AttentionKind::Mla && !per_kernel && !plan.remat) continue;
    time_layer(attn, mlp, kernels, plan_of, times, per_kernel, true);
  }
  if (!per_kernel || blocks.empty() || blocks.back().layer != model.layers) return;
  TrainingBlock& unembed = blocks.back();
  unembed.forward_s = unembed.backward_s = 0;
  for (const auto& k : unembed_kernels(model, y, tokens, chip)) {
    const KernelTimes t = kernel_times(k, tokens, chip, plan.matmul_efficiency, plan.quantization);
    unembed.forward_s += t.forward_s;
    unembed.backward_s += t.backward_s;
  }
}

}  // namespace podsim
