#include "workloads/training.hpp"

#include "workloads/block_kernels.hpp"
#include "workloads/collective_reduction.hpp"

#include "workloads/block_ops.hpp"
#include "workloads/moe_training.hpp"
#include "workloads/pipeline.hpp"
#include "workloads/training_pass.hpp"
#include "workloads/program_builder.hpp"
#include "workloads/matmul_shapes.hpp"
#include "workloads/roofline.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

namespace podsim {
namespace {

// A pipeline whose stages differ: the memory of the stage whose weights, gradients and
// optimizer state weigh most (pipeline_stage_weights); its activations are the fullest
// stage's, ceil(L/P) layers, as for alike stages.
MemoryBreakdown fullest_stage_memory(const TransformerSpec& model, const TrainingPlan& plan, ShardingDegrees degrees,
                                     double tokens_per_microbatch, double in_flight) {
  MemoryBreakdown fullest;
  double most = -1;
  for (const auto& stage : pipeline_stage_weights(model, degrees.pipeline, plan.virtual_stages)) {
    degrees.stage_dense_params = stage.dense_params;
    degrees.stage_routed_params = stage.routed_params;
    const auto m = training_memory_per_chip(model, degrees, tokens_per_microbatch, plan.checkpointing, in_flight,
                                             plan.remat ? &*plan.remat : nullptr);
    if (m.params_bytes + m.grads_bytes + m.optimizer_bytes > most) {
      most = m.params_bytes + m.grads_bytes + m.optimizer_bytes;
      fullest = m;
    }
  }
  return fullest;
}


int product_of(const TopologySpec& topology, const std::vector<int>& axes,
               const std::vector<AxisSlice>& slices = {}) {
  int n = 1;
  for (size_t i = 0; i < axes.size(); ++i) {
    n *= !slices.empty() && slices[i].size != 0 ? slices[i].size : topology.axes.at(axes[i]).size;
  }
  return n;
}

// How one kind of parallelism uses an axis: whole, or one slice of it.
struct AxisUse {
  std::string kind;
  AxisSlice slice;   // size 0: the whole axis
};

// An axis carries one kind of parallelism, or two over complementary slices of it: an inner
// block of k neighbours and the outer ring of n/k blocks (stride k).
void check_axis_uses(const TopologySpec& topology, int axis, const std::vector<AxisUse>& uses) {
  const std::string& name = topology.axes[axis].name;
  if (uses.size() == 1) {
    const auto& s = uses[0].slice;
    if (s.size != 0 && (s.stride < 1 || s.size < 1 || s.stride * s.size > topology.axes[axis].size ||
                        topology.axes[axis].size % (s.stride * s.size) != 0)) {
      throw std::invalid_argument("a slice of axis " + name + " that does not tile it");
    }
    return;
  }
  if (uses.size() == 2) {
    const auto& a = uses[0].slice;
    const auto& b = uses[1].slice;
    const auto& inner = a.stride == 1 ? a : b;
    const auto& outer = a.stride == 1 ? b : a;
    if (inner.size != 0 && outer.size != 0 && inner.stride == 1 && outer.stride == inner.size &&
        inner.size * outer.size == topology.axes[axis].size) {
      return;
    }
  }
  throw std::invalid_argument("axis " + name + " carries two kinds of parallelism");
}

// FSDP over DCN (MaxText's dcn_fsdp_parallelism): what it combines with.
void check_dcn_fsdp(const TransformerSpec& model, const TrainingPlan& plan, const TopologySpec& topology) {
  if (!plan.dcn_fsdp) return;
  if (topology.slices < 2) throw std::invalid_argument("FSDP over DCN needs at least two slices");
  if (!plan.fsdp) throw std::invalid_argument("FSDP over DCN shards the weights across slices; it needs fsdp");
  if (plan.dcn_data_parallel)
    throw std::invalid_argument("the slices form one DCN axis: data parallelism or FSDP over it, not both");
  if (plan.pipeline_axis >= 0) throw std::invalid_argument("FSDP over DCN with a pipeline is not supported");
  if (plan.dcn_sync != DcnSync::PerBlock)
    throw std::invalid_argument("FSDP over DCN reduce-scatters gradients across slices; there is no DCN all-reduce "
                                "to move (dcn_sync)");
  if (model.moe)
    throw std::invalid_argument(model.name + " has routed experts, whose weights podsim shards within a slice only: "
                                "FSDP over DCN is for dense models");
}

// MaxText's check (types.py:4001 at e591f30): the tiles split a data shard's microbatch tokens evenly.
void check_vocab_tiling(const TrainingPlan& plan, double microbatch_tokens) {
  if (plan.num_vocab_tiling < 1) throw std::invalid_argument("num_vocab_tiling must be at least 1");
  if (plan.num_vocab_tiling > 1 && std::fmod(microbatch_tokens, plan.num_vocab_tiling) != 0) {
    throw std::invalid_argument("num_vocab_tiling " + std::to_string(plan.num_vocab_tiling) +
                                " does not divide a microbatch's tokens on one data shard");
  }
}

void check_plan(const TransformerSpec& model, const TrainingPlan& plan, const TopologySpec& topology) {
  std::map<int, std::vector<AxisUse>> uses;
  auto note = [&](const std::vector<int>& axes, const std::vector<AxisSlice>& slices, const std::string& kind) {
    if (!slices.empty() && slices.size() != axes.size()) throw std::invalid_argument(kind + " slices do not match its axes");
    for (size_t i = 0; i < axes.size(); ++i) {
      const int a = axes[i];
      if (a < 0 || a >= static_cast<int>(topology.axes.size())) {
        throw std::invalid_argument("axis index " + std::to_string(a) + " is not in the mesh");
      }
      uses[a].push_back({kind, slices.empty() ? AxisSlice{1, 0} : slices[i]});
    }
  };
  note(plan.data_axes, plan.data_slices, "data");
  note(plan.tensor_axes, plan.tensor_slices, "tensor");
  if (plan.pipeline_axis >= 0 && plan.pipeline_axis != Topology::kSliceAxis) note({plan.pipeline_axis}, {}, "pipeline");
  if (plan.pipeline_axis == Topology::kSliceAxis && topology.slices < 2) {
    throw std::invalid_argument("a pipeline over slices needs at least two slices");
  }
  for (const auto& [axis, list] : uses) check_axis_uses(topology, axis, list);
  if (plan.global_batch_tokens <= 0) throw std::invalid_argument("the global batch must be positive");
  if (plan.sequence_length <= 0 || plan.sequence_length > model.max_sequence_length) {
    throw std::invalid_argument("sequence length " + std::to_string(plan.sequence_length) + " is outside 1.." +
                                std::to_string(model.max_sequence_length) + " for " + model.name);
  }
  if (plan.microbatches < 1) throw std::invalid_argument("microbatches must be at least 1");
  int context = 1;
  if (plan.context_axis >= 0) {
    const auto it = std::find(plan.data_axes.begin(), plan.data_axes.end(), plan.context_axis);
    const size_t k = static_cast<size_t>(it - plan.data_axes.begin());
    if (it == plan.data_axes.end() || (!plan.data_slices.empty() && plan.data_slices[k].size != 0)) {
      throw std::invalid_argument("the context axis must be a whole data axis");
    }
    context = topology.axes[plan.context_axis].size;
    if (model.attention == AttentionKind::None) {
      throw std::invalid_argument("context parallelism rings keys and values between a sequence's chips; " + model.name +
                                  " has no attention, so splitting its sequences is splitting its batch (data parallelism)");
    }
    // Zig-zag load balancing (Megatron-LM's context parallelism): each chip holds two of the
    // 2CP chunks of a sequence, one early and one late, so causal work is even.
    if (plan.sequence_length % (2 * context) != 0) {
      throw std::invalid_argument("sequence length " + std::to_string(plan.sequence_length) +
                                  " does not split into 2 x " + std::to_string(context) +
                                  " equal chunks (context parallelism's zig-zag)");
    }
  }
  const double sequences = plan.global_batch_tokens / plan.sequence_length;
  if (plan.dcn_data_parallel && topology.slices < 2) {
    throw std::invalid_argument("data parallelism over DCN needs at least two slices");
  }
  check_dcn_fsdp(model, plan, topology);
  if (plan.zero_stage < 0 || plan.zero_stage > 2) {
    throw std::invalid_argument("ZeRO stage " + std::to_string(plan.zero_stage) + ": expected 1 or 2 (stage 3 is FSDP)");
  }
  if (plan.zero_stage > 0 && plan.fsdp) throw std::invalid_argument("ZeRO-1/2 and FSDP (ZeRO-3) exclude each other");
  if (plan.zero_stage > 0 && product_of(topology, plan.data_axes, plan.data_slices) < 2) {
    throw std::invalid_argument("ZeRO-1/2 shards over the data axes within a slice; expected data axes");
  }
  if (plan.dcn_data_parallel && plan.pipeline_axis == Topology::kSliceAxis) {
    throw std::invalid_argument("a pipeline over slices leaves no slices for data parallelism over DCN");
  }
  const double shards = static_cast<double>(product_of(topology, plan.data_axes, plan.data_slices)) / context *
                        (slices_split_batch(plan) ? topology.slices : 1) * plan.microbatches;
  if (sequences != std::floor(sequences) || std::fmod(sequences, shards) != 0) {
    throw std::invalid_argument("a batch of " + std::to_string(static_cast<long long>(sequences)) +
                                " sequences does not divide into " + std::to_string(static_cast<long long>(shards)) +
                                " (data shards x microbatches)");
  }
  if (plan.matmul_efficiency <= 0 || plan.matmul_efficiency > 1) {
    throw std::invalid_argument("matmul efficiency must be in (0, 1]");
  }
  check_vocab_tiling(plan, plan.global_batch_tokens / shards);
  if (model.heads % product_of(topology, plan.tensor_axes, plan.tensor_slices) != 0 &&
      model.d_ff % product_of(topology, plan.tensor_axes, plan.tensor_slices) != 0) {
    throw std::invalid_argument("tensor parallelism does not divide the heads or d_ff");
  }
}


// Rematerialisation (transformers.md "Gradient checkpointing"): what the policy did not keep
// is recomputed, by rerunning the block's forward before its backward. Block keeps each
// layer's input only, so every layer block reruns; the book's policy keeps the MLP's big
// matmul outputs (BF, BF, BD: training.md:L678-L682) but nothing of attention, so attention
// reruns (projections and scores; the MLP's elementwise ops it also reruns are left out).
// A remat policy by name rewrites this per kernel (block_kernels.hpp).
void rerun_by_checkpointing(TrainingBlock& blk, Checkpointing checkpointing, bool attention) {
  const bool rerun = checkpointing == Checkpointing::Block || (checkpointing == Checkpointing::Book && attention);
  if (!rerun) return;
  blk.recompute_s = blk.forward_s;
  blk.recompute_flops_per_chip = blk.forward_flops_per_chip;
}

// Vocabulary tiling (MaxText's num_vocab_tiling; vocabulary_tiling.py at e591f30): the tiled
// loss's backward scan recomputes each tile's logits before its gradients (_bwd_scan_body,
// lines 220-252): the output projection's forward again. Its weights are gathered once over
// FSDP as stored (all_gather_over_fsdp on the params, line 134: fp32 under weight_dtype
// float32) and kept as a residual for the backward (lines 187-197), not gathered again.
void tile_vocabulary(TrainingBlock& unembed, const TransformerSpec& model, int y) {
  unembed.recompute_s = unembed.forward_s;
  unembed.recompute_flops_per_chip = unembed.forward_flops_per_chip;
  unembed.recompute_attention = false;
  unembed.weight_bytes_per_group = unembed.params * stored_weight_bytes(model) / y;
  unembed.gather_kept_for_backward = true;
}

// A parallel block's weights: attention's and the MLP's.
std::vector<WeightShape> layer_weight_shapes(const TransformerSpec& model, int y) {
  auto shapes = attention_weight_shapes(model, y);
  const auto mlp = mlp_weight_shapes(model, model.d_ff, y);
  shapes.insert(shapes.end(), mlp.begin(), mlp.end());
  return shapes;
}

std::vector<TrainingBlock> model_blocks(const TransformerSpec& model, const TrainingPlan& plan,
                                        const TrainingLayout& layout, const ChipSpec& chip) {
  const double tokens = layout.tokens_per_microbatch;   // per chip group of one data shard
  const double y = layout.tensor_degree;
  const double act = model.activation_bytes;
  auto make = [&](std::string name, int layer, double params, double extra_flops_per_token,
                  const std::vector<WeightShape>& shapes, double unpack_flops_per_token = 0.0) {
    TrainingBlock b;
    b.name = std::move(name);
    b.layer = layer;
    b.params = params;
    // A matmul with W[in, out] costs 2 x tokens x |W| FLOPs forward (the book's 2BDF);
    // tensor parallelism splits W over Y chips. The MXU does the padded work of its shapes
    // (matmul_shapes.hpp; the same as the FLOPs on the ideal machine).
    b.forward_flops_per_chip = (2 * tokens * params + tokens * (extra_flops_per_token + unpack_flops_per_token)) / y;
    b.score_flops_per_chip = tokens * extra_flops_per_token / y;
    b.ring_unpack_flops_per_chip = tokens * unpack_flops_per_token / y;
    const double mxu_flops = (2 * tokens * params * mxu_padding_factor(tokens, shapes, chip) +
                              tokens * (extra_flops_per_token + unpack_flops_per_token)) /
                             y;
    b.forward_bytes_per_chip = params * model.param_bytes / y + 2 * tokens * model.d_model * act;
    b.forward_s = roofline_s(mxu_flops, b.forward_bytes_per_chip, chip, plan.matmul_efficiency);
    // Backward: gradients with respect to inputs and to weights, twice the forward FLOPs.
    b.backward_s = roofline_s(2 * mxu_flops, b.forward_bytes_per_chip + 2 * tokens * model.d_model * act,
                              chip, plan.matmul_efficiency);
    // FSDP gathers each weight in the matmuls' dtype: MaxText casts the stored (e.g. fp32)
    // weight shard before the gather (linears.py:297, then the gather's sharding constraint at
    // :307, maxtext@e591f30). Gradients reduce in their own dtype (the stored weights').
    b.weight_bytes_per_group = params * model.param_bytes / y;
    b.gradient_bytes_per_group = params * gradient_bytes(model) / y;
    b.activation_bytes_per_group = tokens * model.d_model * act;
    return b;
  };
  auto recompute = [&](TrainingBlock& blk, bool attention) { rerun_by_checkpointing(blk, plan.checkpointing, attention); };
  // QK^T and AV: 4 T N H FLOPs per token forward (transformers.md), no weights.
  // (MLA: QK^T over d_h + d_h^R and AV over v_head_dim: attention_flops_per_token_forward.)
  const double score_flops =
      plan.attention_flops ? attention_flops_per_token_forward(model, plan.sequence_length) / model.layers : 0.0;
  // MLA under context parallelism: each of the CP - 1 received latent blocks (as many tokens
  // as the chip's own) up-projected to this chip's K and V heads, per local token.
  const double unpack_flops = score_flops > 0 && layout.context_degree > 1
                                  ? (layout.context_degree - 1) * mla_up_projection_flops_per_layer(model)
                                  : 0.0;
  std::vector<TrainingBlock> blocks;
  for (int l = 0; l < model.layers; ++l) {
    if (model.parallel_block) {   // one block a layer: attention and MLP beside each other
      blocks.push_back(make("L" + std::to_string(l) + ".layer", l,
                            attention_params_per_layer(model) + mlp_params_per_layer(model), score_flops,
                            layer_weight_shapes(model, static_cast<int>(y))));
      recompute(blocks.back(), true);
      continue;
    }
    if (model.attention != AttentionKind::None) {
      blocks.push_back(make("L" + std::to_string(l) + ".attn", l, attention_params_per_layer(model), score_flops,
                            attention_weight_shapes(model, static_cast<int>(y)), unpack_flops));
      recompute(blocks.back(), true);
    }
    if (is_moe_layer(model, l)) {
      // An MoE layer's MLP block: here its router and shared experts, the dense part every
      // token passes through; the routed experts are MoeTrainingBlocks'.
      blocks.push_back(make("L" + std::to_string(l) + ".mlp", l,
                            router_params_per_layer(model) + model.moe->shared_experts * expert_params(model), 0.0,
                            router_shared_weight_shapes(model, static_cast<int>(y))));
      blocks.back().moe_layer = moe_layer_index(model, l);
      continue;
    }
    blocks.push_back(make("L" + std::to_string(l) + ".mlp", l, mlp_params_per_layer(model), 0.0,
                          mlp_weight_shapes(model, model.d_ff, static_cast<int>(y))));
    recompute(blocks.back(), false);
  }
  blocks.push_back(make("unembed", model.layers, static_cast<double>(model.vocab) * model.d_model, 0.0,
                        unembed_weight_shapes(model, static_cast<int>(y))));
  if (chip.compute_model == ComputeModel::Kernels || plan.remat) {
    time_blocks_from_kernels(blocks, model, plan, tokens, static_cast<int>(y), chip);
  }
  if (plan.num_vocab_tiling > 1) tile_vocabulary(blocks.back(), model, static_cast<int>(y));
  return blocks;
}

void add_gathered_experts(const TransformerSpec& model, const TrainingPlan& plan, const TopologySpec& topology,
                          const ShardingDegrees& degrees, TrainingLayout& layout);

// The step's sharding as the memory model sees it, the strategy's name with ZeRO or the
// pipeline, and the per-chip HBM: the framework's buckets, the loss's logits, FSDP's gathered
// weights in flight and ring attention's blocks.
void layout_sharding_and_memory(const TransformerSpec& model, const TrainingPlan& plan, const TopologySpec& topology,
                                TrainingLayout& layout) {
  const bool data = layout.data_degree > 1;
  const bool tensor = layout.tensor_degree > 1;
  const bool fsdp = plan.fsdp && layout.ici_data_degree > 1;
  ShardingDegrees degrees;
  degrees.data = fsdp ? layout.data_degree / layout.fsdp_degree : layout.data_degree;
  degrees.zero_stage = data ? plan.zero_stage : 0;
  degrees.zero_shards = layout.ici_data_degree;
  if (degrees.zero_stage > 0) layout.strategy = "ZeRO-" + std::to_string(degrees.zero_stage) + (tensor ? "+TP" : "");
  degrees.fsdp = fsdp ? layout.fsdp_degree : 1;
  degrees.tensor = layout.tensor_degree;
  if (model.moe) {
    degrees.expert = 1;
    for (int a : plan.expert_axes) degrees.expert *= topology.axes.at(a).size;
  }
  if (plan.pipeline_axis >= 0) {
    check_pipeline(model, plan, topology);
    degrees.pipeline = stage_count(plan, topology);
    layout.strategy = std::string("PP(") + schedule_name(plan.schedule) +
                      (plan.virtual_stages > 1 ? " v=" + std::to_string(plan.virtual_stages) : "") + ")" +
                      (fsdp ? "+FSDP" : degrees.zero_stage > 0 ? "+ZeRO-" + std::to_string(degrees.zero_stage)
                       : data ? "+DP" : "") +
                      (tensor ? "+TP" : "") + (plan.dcn_data_parallel ? " + DP over DCN" : "");
    // Activations a stage holds at once: the schedule's peak of passes begun and not yet freed.
    const double in_flight =
        peak_passes_in_flight(plan.schedule, degrees.pipeline, plan.microbatches, plan.virtual_stages);
    layout.memory = training_memory_per_chip(model, degrees, layout.tokens_per_microbatch, plan.checkpointing, in_flight,
                                             plan.remat ? &*plan.remat : nullptr);
    if (!pipeline_stages_alike(model, degrees.pipeline * plan.virtual_stages)) {
      layout.memory = fullest_stage_memory(model, plan, degrees, layout.tokens_per_microbatch, in_flight);
    }
  } else {
    layout.memory = training_memory_per_chip(model, degrees, layout.tokens_per_microbatch, plan.checkpointing, 1,
                                             plan.remat ? &*plan.remat : nullptr);
  }
  // What the per-layer checkpoints leave out: the loss's fp32 logits of one microbatch, split
  // over the tensor axes (vocabulary-parallel; a pipeline spreads the output projection, and
  // them, over its stages: a stage's share for each microbatch it holds), and FSDP's gathered
  // weights in flight (training_program gathers a
  // block once the block kPrefetchBlocks + 1 back has computed: that many blocks' full weights,
  // split over the tensor axes, the largest block's).
  // Vocabulary tiling holds one tile's logits at a time (vocabulary_tiling.py's scans).
  layout.memory.logits_bytes =
      layout.tokens_per_microbatch / plan.num_vocab_tiling * model.vocab * 4.0 / layout.tensor_degree;
  if (plan.pipeline_axis >= 0) {
    layout.memory.logits_bytes *= peak_passes_in_flight(plan.schedule, degrees.pipeline, plan.microbatches,
                                                        plan.virtual_stages) / degrees.pipeline;
  }
  if (fsdp) {
    double largest = 0;
    for (const auto& blk : layout.blocks) largest = std::max(largest, blk.weight_bytes_per_group);
    layout.memory.gathered_weights_bytes = (kPrefetchBlocks + 1) * largest;
  }
  for (const auto& blk : layout.blocks) {
    if (blk.context_steps > 1) layout.memory.ring_blocks_bytes = std::max(layout.memory.ring_blocks_bytes, 2 * 2 * blk.context_kv_bytes);
  }
  layout.memory.total_bytes +=
      layout.memory.logits_bytes + layout.memory.gathered_weights_bytes + layout.memory.ring_blocks_bytes;
  if (fsdp) add_gathered_experts(model, plan, topology, degrees, layout);
}

// Gathered experts. Where FSDP shards the routed experts over data axes beside the expert axes
// (MaxText's fsdp_shard_on_exp: DeepSeek-V3 on 256 devices holds one expert a device and gathers
// all 256, 22.5 GB, before each grouped matmul), a chip holds, besides the dense blocks' window:
//   - prefetching a layer ahead (the default): two MoE layers' gathered experts (the one
//     computing, the next arriving) and one layer's unreduced expert gradients (the backward's
//     bf16 [E, D, F] before its ReduceScatter ends);
//   - one at a time: one layer's gathered experts and one's unreduced gradients.
// The loss's logits live only round the output projection, when at most the first backward
// MoE layer's experts are arriving: the peak is the larger of logits + one layer's experts and
// the layers' buffers above (MemoryBreakdown::unreduced_gradients_bytes).
// XLA's latency-hiding scheduler keeps to the memory limit, so where the prefetch does not fit
// and one at a time does, each expert gather waits for the previous MoE layer's experts to
// compute (and free theirs): serial_expert_gathers, on the timeline as the ops' holds.
void add_gathered_experts(const TransformerSpec& model, const TrainingPlan& plan, const TopologySpec& topology,
                          const ShardingDegrees& degrees, TrainingLayout& layout) {
  if (!model.moe || expert_fsdp_degree(plan, topology) <= 1) return;
  const double bytes = expert_params_per_chip(model, degrees.expert, layout.tensor_degree) * model.param_bytes;
  layout.moe.expert_gather_bytes = bytes;
  MemoryBreakdown& m = layout.memory;
  const double base = m.total_bytes - m.logits_bytes;
  const auto peak = [&](double gathered_layers) {
    return base + std::max(m.logits_bytes + bytes, (gathered_layers + 1) * bytes);
  };
  const double usable = topology.chip.usable_hbm_bytes();
  // (Not under a pipeline, whose stages interleave passes: there the estimate says whether the
  // prefetch fits, and nothing is reordered.)
  layout.moe.serial_expert_gathers = plan.pipeline_axis < 0 && peak(2) > usable && peak(1) <= usable;
  const double layers = layout.moe.serial_expert_gathers ? 1 : 2;
  m.gathered_weights_bytes += layers * bytes;
  m.unreduced_gradients_bytes = bytes;
  m.total_bytes = peak(layers);
}

}  // namespace

TrainingLayout training_layout(const TransformerSpec& model, const TrainingPlan& plan, const TopologySpec& topology) {
  TrainingLayout layout;
  check_plan(model, plan, topology);
  const ChipSpec& chip = topology.chip;
  layout.ici_data_degree = product_of(topology, plan.data_axes, plan.data_slices);
  layout.data_degree = layout.ici_data_degree * (slices_split_batch(plan) ? topology.slices : 1);
  layout.tensor_degree = product_of(topology, plan.tensor_axes, plan.tensor_slices);
  layout.chips = product_of(topology, [&] {
    std::vector<int> all(topology.axes.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
    return all;
  }()) * topology.slices;
  layout.tokens_per_data_shard = plan.global_batch_tokens / layout.data_degree;
  layout.tokens_per_microbatch = layout.tokens_per_data_shard / plan.microbatches;
  const bool data = layout.data_degree > 1;
  const bool tensor = layout.tensor_degree > 1;
  const bool fsdp = plan.fsdp && layout.ici_data_degree > 1;   // FSDP shards within a slice
  layout.strategy = fsdp ? (tensor ? "FSDP+TP" : "FSDP") : (data ? (tensor ? "DP+TP" : "DP") : (tensor ? "TP" : "single"));
  if (plan.dcn_data_parallel) layout.strategy += " + DP over DCN";
  if (fsdp) layout.fsdp_degree = layout.ici_data_degree * (plan.dcn_fsdp ? topology.slices : 1);
  if (fsdp && plan.dcn_fsdp) layout.strategy += " over DCN";
  if (plan.context_axis >= 0) layout.context_degree = topology.axes[plan.context_axis].size;
  layout.blocks = model_blocks(model, plan, layout, chip);
  if (plan.context_axis >= 0) {
    // Ring attention: each step scores the local queries against one chip's K/V block of
    // tokens_per_microbatch tokens (GQA: K and V, kv_heads x head_dim each, split over the
    // tensor axes as far as the KV heads go; MLA: the latent and rotary key, whole on every
    // tensor shard, model_spec.hpp).
    const double kv_split = std::min<double>(layout.tensor_degree, model.kv_heads);
    for (auto& blk : layout.blocks) {
      if (blk.score_flops_per_chip <= 0) continue;
      blk.context_steps = layout.context_degree;
      blk.context_kv_bytes =
          model.attention == AttentionKind::Mla
              ? layout.tokens_per_microbatch * mla_ring_elements_per_layer(model) * model.activation_bytes
              : layout.tokens_per_microbatch * 2.0 * model.kv_heads * model.head_dim * model.activation_bytes / kv_split;
      blk.score_forward_s = blk.forward_s * blk.score_flops_per_chip / blk.forward_flops_per_chip;
      blk.ring_unpack_s = blk.forward_s * blk.ring_unpack_flops_per_chip / blk.forward_flops_per_chip;
    }
    layout.strategy += "+CP";
  }

  layout_sharding_and_memory(model, plan, topology, layout);
  layout.fits_hbm = layout.memory.fits(chip.usable_hbm_bytes());   // HBM less its headroom (chip_spec.hpp)
  return layout;
}

double optimizer_bytes_per_param(const TransformerSpec& model) {
  const double master = model.master_weight_bytes_per_param;
  const double updated = master > 0 ? master : stored_weight_bytes(model);
  return gradient_bytes(model) + 2 * model.optimizer_bytes_per_param + 2 * updated + (master > 0 ? model.param_bytes : 0.0);
}

double optimizer_time_s(const TransformerSpec& model, const TrainingPlan& plan, const TopologySpec& topology,
                        const TrainingLayout& layout, int stages) {
  const bool fsdp = plan.fsdp && layout.ici_data_degree > 1;
  const bool zero = layout.data_degree > 1 && plan.zero_stage > 0;
  const double routed = model.moe ? moe_layer_count(model) * static_cast<double>(model.moe->experts) * expert_params(model) : 0.0;
  const int shards = fsdp ? layout.fsdp_degree : zero ? layout.ici_data_degree : 1;
  const double local_params =
      ((param_count(model) - routed) / (layout.tensor_degree * shards) +
       routed / (layout.tensor_degree * (fsdp || zero ? shards : layout.moe.expert_degree))) /
      stages;
  const double bytes_touched = local_params * optimizer_bytes_per_param(model);
  return bytes_touched / topology.chip.achieved_hbm_Bps() + topology.chip.compute_overhead_s;
}

double optimizer_time_s(const TransformerSpec& model, const TrainingPlan& plan, const TopologySpec& topology,
                        const TrainingLayout& layout, double dense_params, double routed_params) {
  const bool fsdp = plan.fsdp && layout.ici_data_degree > 1;
  const bool zero = layout.data_degree > 1 && plan.zero_stage > 0;
  const int shards = fsdp ? layout.fsdp_degree : zero ? layout.ici_data_degree : 1;
  const double local_params =
      dense_params / (layout.tensor_degree * shards) +
      routed_params / (layout.tensor_degree * (fsdp || zero ? shards : layout.moe.expert_degree));
  const double bytes_touched = local_params * optimizer_bytes_per_param(model);
  return bytes_touched / topology.chip.achieved_hbm_Bps() + topology.chip.compute_overhead_s;
}

namespace {

// What stays live (the report's timeline peak): the layer's checkpoints from its first
// block's forward to that block's backward (the layer's last), the logits from the output
// projection's forward to its backward.
void hold_checkpoints(ProgramBuilder& b, const TransformerSpec& model, const TrainingLayout& layout,
                      const PassEmitted& fwd, const PassEmitted& bwd) {
  const auto& blocks = layout.blocks;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const bool first_of_layer = i == 0 || blocks[i - 1].layer != blocks[i].layer;
    const double saved = blocks[i].layer >= model.layers ? layout.memory.logits_bytes
                         : first_of_layer               ? layout.memory.activations_bytes / model.layers
                                                        : 0.0;
    if (saved > 0) {
      b.op(fwd.compute[i]).holds_bytes = saved;
      b.op(fwd.compute[i]).released_by = {bwd.compute[i]};
    }
  }
}

// The step's useful FLOPs over the pod (3x each forward: forward, and backward's two matmuls)
// and the rematerialised ones.
void count_step_flops(TrainingLayout& layout, const TrainingPlan& plan, const MoeTrainingBlocks& moe) {
  layout.total_flops = 0;
  layout.recompute_flops = 0;
  for (const auto& blk : layout.blocks) {
    layout.total_flops += 3 * blk.forward_flops_per_chip;
    if (blk.moe_layer >= 0) layout.total_flops += 3 * moe.expert_forward_flops_per_chip();
    layout.recompute_flops += blk.moe_layer >= 0 ? moe.recompute_flops_per_chip(blk) : blk.recompute_flops_per_chip;
  }
  layout.total_flops *= static_cast<double>(layout.chips) * plan.microbatches;
  layout.recompute_flops *= static_cast<double>(layout.chips) * plan.microbatches;
}

// DcnSync::Pipelined (XLA's collective pipeliner on the scanned backward loop): the
// iteration of layer l runs the all-reduces of layer l + 1 beside its backward and ends when
// both are done, so layer l - 1's backward (its first block, in backward order) waits for them.
// One DCN collective at a time, in program order.
class PipelinedDcn {
 public:
  PipelinedDcn(const std::vector<TrainingBlock>& blocks, int layers) : blocks_(blocks), layers_(layers) {}

  // What block i's backward waits for: at a scanned layer's first block, the all-reduces of the
  // layer two iterations back.
  std::vector<int> waits_for(int i) const {
    const bool first_of_layer = i + 1 == static_cast<int>(blocks_.size()) || blocks_[i + 1].layer != blocks_[i].layer;
    if (!scanned(i) || !first_of_layer) return {};
    const auto it = layer_dcn_.find(blocks_[i].layer + 2);
    return it == layer_dcn_.end() ? std::vector<int>{} : it->second;
  }

  // Block i's backward is emitted (`last_compute`) and its gradient scattered (`scatter`).
  // Once its layer's last block (in backward order) is, the layer's all-reduces start in the
  // next iteration, after the layer's scatters and the DCN's previous collective. A block
  // outside the scanned stack (the output head) is not pipelined: its all-reduce follows its
  // own scatter. The all-reduces go to `grad_ops`.
  void block_done(ProgramBuilder& b, const TrainingLayout& layout, int i, int scatter, int last_compute,
                  std::vector<int>& grad_ops) {
    scatters_.push_back({i, scatter});
    const bool last_of_layer = i == 0 || blocks_[i - 1].layer != blocks_[i].layer;
    if (!last_of_layer && scanned(i)) return;
    for (const auto& [block, block_scatter] : scatters_) {
      std::vector<int> after = {block_scatter, last_compute};
      if (previous_dcn_ >= 0) after.push_back(previous_dcn_);
      previous_dcn_ = emit_dcn_gradient_allreduce(b, layout, blocks_[block].name, blocks_[block], after);
      grad_ops.push_back(previous_dcn_);
      if (scanned(block)) layer_dcn_[blocks_[block].layer].push_back(previous_dcn_);
    }
    scatters_.clear();
  }

 private:
  bool scanned(int i) const { return blocks_[i].layer >= 0 && blocks_[i].layer < layers_; }

  const std::vector<TrainingBlock>& blocks_;
  int layers_;
  std::map<int, std::vector<int>> layer_dcn_;      // scanned layer -> its DCN all-reduces
  std::vector<std::pair<int, int>> scatters_;      // (block, its ReduceScatter) of the layer in flight
  int previous_dcn_ = -1;
};

}  // namespace

Program training_program(const TransformerSpec& model, const TrainingPlan& plan, const TopologySpec& topology,
                         TrainingLayout& layout) {
  layout = training_layout(model, plan, topology);
  if (plan.pipeline_axis >= 0) return with_collective_reductions(pipeline_program(model, plan, topology, layout), topology);
  const bool data = layout.data_degree > 1;
  const bool tensor = layout.tensor_degree > 1;
  const bool fsdp = plan.fsdp && layout.ici_data_degree > 1;

  ProgramBuilder b;
  MoeTrainingBlocks moe(model, plan, topology, layout, b, fsdp);
  if (model.moe && layout.moe.expert_degree > 1) layout.strategy += "+EP";
  const auto& blocks = layout.blocks;
  const int n = static_cast<int>(blocks.size());
  std::vector<int> grad_ops;
  std::vector<std::pair<int, int>> hoisted;   // (block, its gradient ReduceScatter) under DcnSync::AfterBackward
  std::vector<int> previous_end;   // the ops whose end lets the next block start (data dependency)
  int last_compute_all = -1;
  HostStreams host;   // remat offload's queues, over the microbatches
  for (int m = 0; m < plan.microbatches; ++m) {
    const bool last_microbatch = m + 1 == plan.microbatches;
    PassRequest request;
    request.host = &host;
    request.prefix = plan.microbatches > 1 ? "mb" + std::to_string(m) + "." : "";
    request.microbatch = m;
    request.start = request.window_start = previous_end;
    const PassEmitted fwd = emit_training_pass(b, plan, layout, moe, fsdp, tensor, blocks, request);
    // Backward, last block first; its first gather follows the forward's last. Each block's
    // gradients are reduced right behind its backward, on the last microbatch.
    request.forward = false;
    request.start = request.window_start = fwd.end;
    request.first_gather_after = fsdp ? fwd.gather[n - 1] : -1;
    PipelinedDcn pipelined(blocks, model.layers);
    if (plan.dcn_sync == DcnSync::Pipelined && last_microbatch)
      request.waits_for = [&](int i) { return pipelined.waits_for(i); };
    const PassEmitted bwd = emit_training_pass(
        b, plan, layout, moe, fsdp, tensor, blocks, request, [&](int i, const BlockOps& ops, int experts) {
          last_compute_all = ops.last_compute;
          if (!last_microbatch) return;
          if (experts >= 0) moe.gradients(blocks[i], experts, grad_ops);
          if (!data) return;
          const auto reduced = emit_gradient_reduction(b, plan, layout, blocks[i].name, blocks[i], ops.last_compute,
                                                       plan.dcn_sync == DcnSync::PerBlock);
          grad_ops.insert(grad_ops.end(), reduced.begin(), reduced.end());
          if (plan.dcn_sync == DcnSync::AfterBackward) hoisted.push_back({i, reduced.back()});
          if (plan.dcn_sync == DcnSync::Pipelined)
            pipelined.block_done(b, layout, i, reduced.back(), ops.last_compute, grad_ops);
        });
    previous_end = bwd.end;
    // Hoisted out of the backward loop: every shard's DCN all-reduce once the backward is done,
    // one DCN collective at a time in program order, each paying its ring's per-transfer cost in
    // turn: M3 and M5 (32, 64 layers) slow from 8 to 32 slices by one cost per layer and step.
    int previous_dcn = -1;
    for (const auto& [i, scatter] : hoisted) {
      std::vector<int> after = {scatter, last_compute_all};
      if (previous_dcn >= 0) after.push_back(previous_dcn);
      previous_dcn = emit_dcn_gradient_allreduce(b, layout, blocks[i].name, blocks[i], after);
      grad_ops.push_back(previous_dcn);
    }
    hold_checkpoints(b, model, layout, fwd, bwd);
  }
  layout.optimizer_s = optimizer_time_s(model, plan, topology, layout, 1);
  grad_ops.insert(grad_ops.end(), previous_end.begin(), previous_end.end());
  grad_ops.push_back(last_compute_all);
  const int optimizer = b.compute("optimizer", layout.optimizer_s, 0.0, grad_ops, -1, OpRole::Optimizer);
  if (data && plan.zero_stage > 0) {   // ZeRO-1/2
    // One after another, as a framework issues them on its one collective stream (Megatron's
    // distributed optimizer gathers bucket by bucket; NCCL runs a communicator's collectives
    // in order): the same bytes over the same links as all at once, and only one gather's
    // messages in flight (all at once, LLaMA-3 70B's 161 on v5p-2048 took 20x longer to simulate).
    int previous = optimizer;
    for (const auto& blk : blocks) {
      previous = emit_zero_allgather(b, plan, blk.name, blk, previous);
      if (blk.moe_layer >= 0) previous = moe.zero_allgather(b, blk.name, blk, previous);
    }
  }

  count_step_flops(layout, plan, moe);
  moe.finish();
  return with_collective_reductions(b.take(), topology);
}

}  // namespace podsim
