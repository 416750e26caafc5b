#include "workloads/training.hpp"

#include "workloads/moe_training.hpp"
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

// Blocks per layer (attention, MLP): how far ahead FSDP gathers weights.
constexpr int kPrefetchBlocks = 2;

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
  const double sequences = plan.global_batch_tokens / plan.sequence_length;
  if (plan.dcn_data_parallel && topology.slices < 2) {
    throw std::invalid_argument("data parallelism over DCN needs at least two slices");
  }
  if (plan.dcn_data_parallel && plan.pipeline_axis >= 0) {
    throw std::invalid_argument("pipelines with data parallelism over DCN are not supported yet");
  }
  const double shards = static_cast<double>(product_of(topology, plan.data_axes, plan.data_slices)) *
                        (plan.dcn_data_parallel ? topology.slices : 1) * plan.microbatches;
  if (sequences != std::floor(sequences) || std::fmod(sequences, shards) != 0) {
    throw std::invalid_argument("a batch of " + std::to_string(static_cast<long long>(sequences)) +
                                " sequences does not divide into " + std::to_string(static_cast<long long>(shards)) +
                                " (data shards x microbatches)");
  }
  if (plan.matmul_efficiency <= 0 || plan.matmul_efficiency > 1) {
    throw std::invalid_argument("matmul efficiency must be in (0, 1]");
  }
  if (model.heads % product_of(topology, plan.tensor_axes, plan.tensor_slices) != 0 &&
      model.d_ff % product_of(topology, plan.tensor_axes, plan.tensor_slices) != 0) {
    throw std::invalid_argument("tensor parallelism does not divide the heads or d_ff");
  }
}


std::vector<TrainingBlock> model_blocks(const TransformerSpec& model, const TrainingPlan& plan,
                                        const TrainingLayout& layout, const ChipSpec& chip) {
  const double tokens = layout.tokens_per_microbatch;   // per chip group of one data shard
  const double y = layout.tensor_degree;
  const double act = model.activation_bytes;
  auto make = [&](std::string name, int layer, double params, double extra_flops_per_token,
                  const std::vector<WeightShape>& shapes) {
    TrainingBlock b;
    b.name = std::move(name);
    b.layer = layer;
    b.params = params;
    // A matmul with W[in, out] costs 2 x tokens x |W| FLOPs forward (the book's 2BDF);
    // tensor parallelism splits W over Y chips. The MXU does the padded work of its shapes
    // (matmul_shapes.hpp; the same as the FLOPs on the ideal machine).
    b.forward_flops_per_chip = (2 * tokens * params + tokens * extra_flops_per_token) / y;
    const double mxu_flops =
        (2 * tokens * params * mxu_padding_factor(tokens, shapes, chip) + tokens * extra_flops_per_token) / y;
    b.forward_bytes_per_chip = params * model.param_bytes / y + 2 * tokens * model.d_model * act;
    b.forward_s = roofline_s(mxu_flops, b.forward_bytes_per_chip, chip, plan.matmul_efficiency);
    // Backward: gradients with respect to inputs and to weights, twice the forward FLOPs.
    b.backward_s = roofline_s(2 * mxu_flops, b.forward_bytes_per_chip + 2 * tokens * model.d_model * act,
                              chip, plan.matmul_efficiency);
    b.weight_bytes_per_group = params * model.param_bytes / y;
    b.activation_bytes_per_group = tokens * model.d_model * act;
    return b;
  };
  // Rematerialisation (transformers.md "Gradient checkpointing"): what the policy did not keep
  // is recomputed, by rerunning the block's forward before its backward. Block keeps each
  // layer's input only, so every layer block reruns; the book's policy keeps the MLP's big
  // matmul outputs (BF, BF, BD: training.md:L678-L682) but nothing of attention, so attention
  // reruns (projections and scores; the MLP's elementwise ops it also reruns are left out).
  auto recompute = [&](TrainingBlock& blk, bool attention) {
    const bool rerun = plan.checkpointing == Checkpointing::Block ||
                       (plan.checkpointing == Checkpointing::Book && attention);
    if (!rerun) return;
    blk.recompute_s = blk.forward_s;
    blk.recompute_flops_per_chip = blk.forward_flops_per_chip;
  };
  // QK^T and AV: 4 T N H FLOPs per token forward (transformers.md), no weights.
  // (MLA: QK^T over d_h + d_h^R and AV over v_head_dim: attention_flops_per_token_forward.)
  const double score_flops =
      plan.attention_flops ? attention_flops_per_token_forward(model, plan.sequence_length) / model.layers : 0.0;
  std::vector<TrainingBlock> blocks;
  for (int l = 0; l < model.layers; ++l) {
    if (model.attention != AttentionKind::None) {
      blocks.push_back(make("L" + std::to_string(l) + ".attn", l, attention_params_per_layer(model), score_flops,
                            attention_weight_shapes(model, static_cast<int>(y))));
      recompute(blocks.back(), true);
    }
    if (model.moe && l >= model.moe->dense_layers) {
      // An MoE layer's MLP block: here its router and shared experts, the dense part every
      // token passes through; the routed experts are MoeTrainingBlocks'.
      blocks.push_back(make("L" + std::to_string(l) + ".mlp", l,
                            router_params_per_layer(model) + model.moe->shared_experts * expert_params(model), 0.0,
                            router_shared_weight_shapes(model, static_cast<int>(y))));
      blocks.back().moe_layer = l - model.moe->dense_layers;
      continue;
    }
    blocks.push_back(make("L" + std::to_string(l) + ".mlp", l, mlp_params_per_layer(model), 0.0,
                          mlp_weight_shapes(model, model.d_ff, static_cast<int>(y))));
    recompute(blocks.back(), false);
  }
  blocks.push_back(make("unembed", model.layers, static_cast<double>(model.vocab) * model.d_model, 0.0,
                        unembed_weight_shapes(model, static_cast<int>(y))));
  return blocks;
}

// Pipeline stages: along a mesh axis, or one per slice (sends then cross the DCN).
int stage_count(const TrainingPlan& plan, const TopologySpec& topology) {
  return plan.pipeline_axis == Topology::kSliceAxis ? topology.slices : topology.axes.at(plan.pipeline_axis).size;
}

// The order a pipeline stage runs its microbatches' forward (F) and backward (B) passes.
// GPipe: F0..F(M-1), then B0..B(M-1). 1F1B: P-1-s warm-up forwards, then one forward and one
// backward at a time, then the remaining backwards (Narayanan et al., PipeDream-Flush).
std::vector<std::pair<bool, int>> stage_order(PipelineSchedule schedule, int stage, int stages, int microbatches) {
  std::vector<std::pair<bool, int>> order;   // (is_forward, microbatch)
  if (schedule == PipelineSchedule::GPipe) {
    for (int m = 0; m < microbatches; ++m) order.push_back({true, m});
    for (int m = 0; m < microbatches; ++m) order.push_back({false, m});
    return order;
  }
  const int warmup = std::min(stages - 1 - stage, microbatches);
  int next_forward = 0, next_backward = 0;
  for (; next_forward < warmup; ++next_forward) order.push_back({true, next_forward});
  while (next_backward < microbatches) {
    if (next_forward < microbatches) order.push_back({true, next_forward++});
    order.push_back({false, next_backward++});
  }
  return order;
}

// What a pipeline plan must satisfy (training_layout checks it before anything is built).
void check_pipeline(const TransformerSpec& model, const TrainingPlan& plan, const TopologySpec& topology) {
  if (plan.fsdp || !plan.tensor_axes.empty()) {
    throw std::invalid_argument("pipeline parallelism combines with data parallelism only (no FSDP or TP yet)");
  }
  if (model.moe) throw std::invalid_argument("pipeline parallelism with a mixture-of-experts model is not supported yet");
  const int stages = stage_count(plan, topology);
  if (stages > model.layers) {
    throw std::invalid_argument(std::to_string(stages) + " pipeline stages for " + std::to_string(model.layers) +
                                " layers: more stages than layers");
  }
  if (model.layers % stages != 0) {
    throw std::invalid_argument(std::to_string(model.layers) + " layers do not split evenly over " +
                                std::to_string(stages) + " pipeline stages");
  }
}

Program pipeline_program(const TransformerSpec& model, const TrainingPlan& plan, const TopologySpec& topology,
                         TrainingLayout& layout) {
  const int stages = stage_count(plan, topology);
  layout.pipeline_stages = stages;
  const int M = plan.microbatches;
  // One stage's share of the model: its layers (the output projection rides on the last
  // stage in a real model; here it is spread with the layers so stages stay equal).
  double stage_forward_s = 0, stage_backward_s = 0, stage_flops = 0, stage_params = 0, stage_recompute_flops = 0;
  for (const auto& blk : layout.blocks) {
    stage_forward_s += blk.forward_s / stages;
    stage_backward_s += (blk.recompute_s + blk.backward_s) / stages;   // a microbatch's backward reruns its forward first
    stage_flops += blk.forward_flops_per_chip / stages;
    stage_recompute_flops += blk.recompute_flops_per_chip / stages;
    stage_params += blk.params / stages;
  }
  const double activation_bytes = layout.tokens_per_microbatch * model.d_model * model.activation_bytes;
  ProgramBuilder b;
  std::vector<int> forward(M), backward(M), send_forward(M), send_backward(M);
  // Ops first, same-chip order per stage afterwards (it depends on the stage).
  for (int m = 0; m < M; ++m) {
    forward[m] = b.compute("mb" + std::to_string(m) + ".fwd", stage_forward_s, stage_flops, {}, -1, "forward");
    send_forward[m] = b.send("mb" + std::to_string(m) + ".send_activations", plan.pipeline_axis, +1,
                             activation_bytes, {forward[m]}, "pp_send");
  }
  for (int m = 0; m < M; ++m) {
    backward[m] = b.compute("mb" + std::to_string(m) + ".bwd", stage_backward_s, 2 * stage_flops + stage_recompute_flops,
                            {}, -1, "backward");
    send_backward[m] = b.send("mb" + std::to_string(m) + ".send_gradients", plan.pipeline_axis, -1,
                              activation_bytes, {backward[m]}, "pp_send");
  }
  Program program = b.take();
  for (int m = 0; m < M; ++m) {
    program[forward[m]].after_neighbour.push_back({send_forward[m], plan.pipeline_axis, +1});
    // The last stage starts a microbatch's backward from its own forward; the others from
    // the gradient the next stage sends back.
    program[backward[m]].after_neighbour.push_back({send_backward[m], plan.pipeline_axis, -1});
  }
  for (int op : forward) program[op].position_axis = plan.pipeline_axis;
  for (int op : backward) program[op].position_axis = plan.pipeline_axis;
  for (int stage = 0; stage < stages; ++stage) {
    int previous = -1;
    for (const auto& [is_forward, m] : stage_order(plan.schedule, stage, stages, M)) {
      const int op = is_forward ? forward[m] : backward[m];
      auto& after = program[op].after_at_position;
      after.resize(stages);
      if (previous >= 0) after[stage].push_back(previous);
      if (!is_forward) after[stage].push_back(forward[m]);
      previous = op;
    }
  }
  ProgramBuilder tail(std::move(program));
  std::vector<int> done(backward.begin(), backward.end());
  if (layout.data_degree > 1) {
    const int reduce = tail.collective("allreduce_grads", CollectiveKind::AllReduce, plan.data_axes, plan.data_slices,
                                       stage_params * model.param_bytes, backward, -1, "dp_allreduce");
    done.push_back(reduce);
  }
  const double local_params = param_count(model) / stages;
  layout.optimizer_s = local_params * (3 * model.param_bytes + 2 * model.optimizer_bytes_per_param) /
                       topology.chip.achieved_hbm_Bps();
  tail.compute("optimizer", layout.optimizer_s, 0.0, done, -1, "optimizer");
  layout.total_flops = 3 * stage_flops * M * layout.chips;
  layout.recompute_flops = stage_recompute_flops * M * layout.chips;
  return tail.take();
}

}  // namespace

TrainingLayout training_layout(const TransformerSpec& model, const TrainingPlan& plan, const TopologySpec& topology) {
  TrainingLayout layout;
  check_plan(model, plan, topology);
  const ChipSpec& chip = topology.chip;
  layout.ici_data_degree = product_of(topology, plan.data_axes, plan.data_slices);
  layout.data_degree = layout.ici_data_degree * (plan.dcn_data_parallel ? topology.slices : 1);
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
  layout.blocks = model_blocks(model, plan, layout, chip);

  ShardingDegrees degrees;
  degrees.data = fsdp ? layout.data_degree / layout.ici_data_degree : layout.data_degree;
  degrees.fsdp = fsdp ? layout.ici_data_degree : 1;
  degrees.tensor = layout.tensor_degree;
  if (model.moe) {
    degrees.expert = 1;
    for (int a : plan.expert_axes) degrees.expert *= topology.axes.at(a).size;
  }
  if (plan.pipeline_axis >= 0) {
    check_pipeline(model, plan, topology);
    degrees.pipeline = stage_count(plan, topology);
    layout.strategy = std::string(plan.schedule == PipelineSchedule::GPipe ? "PP(GPipe)" : "PP(1F1B)") +
                      (data ? "+DP" : "");
    // Microbatches whose activations a stage holds at once: all under GPipe, at most P under 1F1B.
    const int in_flight = plan.schedule == PipelineSchedule::GPipe ? plan.microbatches
                                                                   : std::min(plan.microbatches, degrees.pipeline);
    layout.memory = training_memory_per_chip(model, degrees, layout.tokens_per_microbatch, plan.checkpointing, in_flight);
  } else {
    layout.memory = training_memory_per_chip(model, degrees, layout.tokens_per_microbatch, plan.checkpointing, 1);
  }
  layout.fits_hbm = layout.memory.fits(chip.hbm_bytes);
  return layout;
}

Program training_program(const TransformerSpec& model, const TrainingPlan& plan, const TopologySpec& topology,
                         TrainingLayout& layout) {
  layout = training_layout(model, plan, topology);
  if (plan.pipeline_axis >= 0) return pipeline_program(model, plan, topology, layout);
  const ChipSpec& chip = topology.chip;
  const bool data = layout.data_degree > 1;
  const bool tensor = layout.tensor_degree > 1;
  const bool fsdp = plan.fsdp && layout.ici_data_degree > 1;

  ProgramBuilder b;
  MoeTrainingBlocks moe(model, plan, topology, layout, b, fsdp);
  if (model.moe && layout.moe.expert_degree > 1) layout.strategy += "+EP";
  const auto& blocks = layout.blocks;
  const int n = static_cast<int>(blocks.size());
  std::vector<int> expert_compute(n, -1);   // the routed experts' last backward, per block
  std::vector<int> grad_ops;
  std::vector<int> previous_end;   // the ops whose end lets the next block start (data dependency)
  int last_compute_all = -1;

  // One block's pass: its matmuls, and under tensor parallelism the activations gathered
  // before and the partial sums scattered after. Blocking by default; with tensor_overlap a
  // collective matmul (sharding.md, "collective matmuls"): the gather streams in while the
  // first matmul runs, the scatter streams out while the second runs.
  struct BlockOps {
    int last_compute = -1;
    std::vector<int> end;
  };
  auto emit_block = [&](const std::string& name, const TrainingBlock& blk, double seconds, double flops,
                        std::vector<int> inputs, const char* category) {
    BlockOps ops;
    if (!tensor) {
      ops.last_compute = b.compute(name, seconds, flops, inputs, blk.layer, category);
      ops.end = {ops.last_compute};
      return ops;
    }
    const double bytes = blk.activation_bytes_per_group;
    if (!plan.tensor_overlap) {
      const int gather = b.collective(name + ".allgather_activations", CollectiveKind::AllGather, plan.tensor_axes,
                                      plan.tensor_slices, bytes, inputs, blk.layer, "tp_allgather");
      inputs.push_back(gather);
      ops.last_compute = b.compute(name, seconds, flops, inputs, blk.layer, category);
      ops.end = {b.collective(name + ".reducescatter_activations", CollectiveKind::ReduceScatter, plan.tensor_axes,
                              plan.tensor_slices, bytes, {ops.last_compute}, blk.layer, "tp_reducescatter")};
      return ops;
    }
    const int gather = b.collective(name + ".allgather_activations", CollectiveKind::AllGather, plan.tensor_axes,
                                    plan.tensor_slices, bytes, inputs, blk.layer, "tp_allgather");
    const int first = b.compute(name + ".matmul1", seconds / 2, flops / 2, inputs, blk.layer, category);
    const int second = b.compute(name + ".matmul2", seconds / 2, flops / 2, {first, gather}, blk.layer, category);
    const int scatter = b.collective(name + ".reducescatter_activations", CollectiveKind::ReduceScatter,
                                     plan.tensor_axes, plan.tensor_slices, bytes, {first, gather}, blk.layer,
                                     "tp_reducescatter");
    ops.last_compute = second;
    ops.end = {second, scatter};
    return ops;
  };

  for (int m = 0; m < plan.microbatches; ++m) {
    const std::string mb = plan.microbatches > 1 ? "mb" + std::to_string(m) + "." : "";
    // Forward.
    std::vector<int> fwd_compute(n, -1), fwd_gather(n, -1);
    const std::vector<int> forward_start = previous_end;
    for (int i = 0; i < n; ++i) {
      const auto& blk = blocks[i];
      std::vector<int> inputs = previous_end;
      if (fsdp) {
        // Prefetch a layer ahead: block i's weights may arrive while the layer before it computes,
        // so at most two layers' gathered weights are in HBM (the block a layer back is done).
        std::vector<int> after = i > kPrefetchBlocks ? std::vector<int>{fwd_compute[i - kPrefetchBlocks - 1]} : forward_start;
        if (i > 0) after.push_back(fwd_gather[i - 1]);
        fwd_gather[i] = b.collective(mb + blk.name + ".fwd.allgather_weights", CollectiveKind::AllGather,
                                     plan.data_axes, plan.data_slices, blk.weight_bytes_per_group, after, blk.layer,
                                     "fsdp_allgather");
        inputs.push_back(fwd_gather[i]);
      }
      if (blk.moe_layer >= 0) {
        const std::vector<int> gather_after = fsdp ? std::vector<int>{fwd_gather[i]} : std::vector<int>{};
        const auto ops = moe.forward(mb + blk.name + ".fwd", blk, m, inputs, gather_after);
        fwd_compute[i] = ops.last_compute;
        previous_end = ops.end;
        continue;
      }
      const auto ops = emit_block(mb + blk.name + ".fwd", blk, blk.forward_s, blk.forward_flops_per_chip, inputs, "forward");
      fwd_compute[i] = ops.last_compute;
      previous_end = ops.end;
    }
    // Backward, last block first.
    std::vector<int> bwd_compute(n, -1), bwd_gather(n, -1);
    const bool last_microbatch = m + 1 == plan.microbatches;
    const std::vector<int> backward_start = previous_end;
    for (int i = n - 1; i >= 0; --i) {
      const auto& blk = blocks[i];
      std::vector<int> inputs = previous_end;
      if (fsdp) {
        std::vector<int> after =
            i + kPrefetchBlocks + 1 < n ? std::vector<int>{bwd_compute[i + kPrefetchBlocks + 1]} : backward_start;
        after.push_back(i + 1 < n ? bwd_gather[i + 1] : fwd_gather[n - 1]);
        bwd_gather[i] = b.collective(mb + blk.name + ".bwd.allgather_weights", CollectiveKind::AllGather,
                                     plan.data_axes, plan.data_slices, blk.weight_bytes_per_group, after, blk.layer,
                                     "fsdp_allgather");
        inputs.push_back(bwd_gather[i]);
      }
      BlockOps ops;
      if (blk.moe_layer >= 0) {
        const std::vector<int> gather_after = fsdp ? std::vector<int>{bwd_gather[i]} : std::vector<int>{};
        const auto moe_ops = moe.backward(mb + blk.name + ".bwd", blk, m, inputs, gather_after);
        ops = {moe_ops.last_compute, moe_ops.end};
        expert_compute[i] = moe_ops.expert_compute;
      } else {
        if (blk.recompute_s > 0) {
          // The forward rerun first, with its tensor-parallel gather and scatter again.
          inputs = emit_block(mb + blk.name + ".recompute", blk, blk.recompute_s, blk.recompute_flops_per_chip, inputs,
                              "recompute").end;
        }
        ops = emit_block(mb + blk.name + ".bwd", blk, blk.backward_s, 2 * blk.forward_flops_per_chip, inputs, "backward");
      }
      bwd_compute[i] = ops.last_compute;
      last_compute_all = ops.last_compute;
      previous_end = ops.end;
      if (blk.moe_layer >= 0 && last_microbatch) moe.gradients(blk, expert_compute[i], grad_ops);
      if (data && last_microbatch) {
        // Gradients leave as soon as the block's backward is done; nothing waits on them but
        // the optimizer. Across slices (training.md, "scaling beyond a pod"): FSDP reduces
        // each chip's shard over DCN after the ICI ReduceScatter; plain data parallelism
        // uses the hierarchical AllReduce (ICI ReduceScatter, DCN AllReduce, ICI AllGather).
        if (fsdp) {
          const int scatter = b.collective(blk.name + ".reducescatter_grads", CollectiveKind::ReduceScatter,
                                           plan.data_axes, plan.data_slices, blk.weight_bytes_per_group, {bwd_compute[i]}, blk.layer,
                                           "fsdp_reducescatter");
          grad_ops.push_back(scatter);
          if (plan.dcn_data_parallel) {
            grad_ops.push_back(b.collective(blk.name + ".dcn_allreduce_grads", CollectiveKind::AllReduce, {}, {},
                                            blk.weight_bytes_per_group / layout.ici_data_degree, {scatter},
                                            blk.layer, "dcn_allreduce", true));
          }
        } else {
          grad_ops.push_back(b.collective(blk.name + ".allreduce_grads", CollectiveKind::AllReduce, plan.data_axes,
                                          plan.data_slices, blk.weight_bytes_per_group, {bwd_compute[i]}, blk.layer,
                                          "dp_allreduce", plan.dcn_data_parallel));
        }
      }
    }
  }
  // The optimizer reads gradients, parameters and moments and writes parameters and moments.
  // Routed experts are split over the expert axes as well when FSDP does not shard them already.
  const double routed = model.moe ? moe_layer_count(model) * static_cast<double>(model.moe->experts) * expert_params(model) : 0.0;
  const double local_params =
      (param_count(model) - routed) / (layout.tensor_degree * (fsdp ? layout.ici_data_degree : 1)) +
      routed / (layout.tensor_degree * (fsdp ? layout.ici_data_degree : layout.moe.expert_degree));
  const double bytes_touched = local_params * (3 * model.param_bytes + 2 * model.optimizer_bytes_per_param);
  layout.optimizer_s = bytes_touched / chip.achieved_hbm_Bps() + chip.compute_overhead_s;
  grad_ops.insert(grad_ops.end(), previous_end.begin(), previous_end.end());
  grad_ops.push_back(last_compute_all);
  b.compute("optimizer", layout.optimizer_s, 0.0, grad_ops, -1, "optimizer");

  layout.total_flops = 0;
  layout.recompute_flops = 0;
  for (const auto& blk : blocks) {
    layout.total_flops += 3 * blk.forward_flops_per_chip;
    if (blk.moe_layer >= 0) layout.total_flops += 3 * moe.expert_forward_flops_per_chip();
    layout.recompute_flops += blk.recompute_flops_per_chip;
  }
  layout.total_flops *= static_cast<double>(layout.chips) * plan.microbatches;
  layout.recompute_flops *= static_cast<double>(layout.chips) * plan.microbatches;
  moe.finish();
  return b.take();
}

}  // namespace podsim
