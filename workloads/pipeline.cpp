#include "workloads/pipeline.hpp"

#include <stdexcept>

#include "workloads/block_ops.hpp"
#include "workloads/moe_training.hpp"
#include "workloads/pipeline_schedule.hpp"
#include "workloads/program_builder.hpp"
#include "workloads/training_pass.hpp"

namespace podsim {
namespace {


// A block scaled to a share of itself: the output projection spread over the chunks.
TrainingBlock share_of(TrainingBlock blk, double fraction) {
  blk.params *= fraction;
  blk.forward_flops_per_chip *= fraction;
  blk.forward_bytes_per_chip *= fraction;
  blk.forward_s *= fraction;
  blk.backward_s *= fraction;
  blk.recompute_s *= fraction;
  blk.recompute_flops_per_chip *= fraction;
  blk.weight_bytes_per_group *= fraction;
  return blk;
}

struct PassOps {
  std::vector<int> entry;          // ops that wait for the previous pass on the stage
  std::vector<int> tail;           // ops that end the pass
  std::vector<int> lead_gathers;   // FSDP gathers that wait for the stage's previous gathers
  int last_gather = -1;
};

}  // namespace

int stage_count(const TrainingPlan& plan, const TopologySpec& topology) {
  return plan.pipeline_axis == Topology::kSliceAxis ? topology.slices : topology.axes.at(plan.pipeline_axis).size;
}

void check_pipeline(const TransformerSpec& model, const TrainingPlan& plan, const TopologySpec& topology) {
  const int stages = stage_count(plan, topology);
  const int chunks = stages * plan.virtual_stages;
  // The program's chunks are alike (the first stands for each): an MoE model's must all be MoE.
  if (model.moe && model.moe->dense_layers > 0) {
    throw std::invalid_argument("pipeline stages of " + model.name + " would differ: its first " +
                                std::to_string(model.moe->dense_layers) +
                                " layers are dense, the rest mixture-of-experts (pipelines need every chunk alike)");
  }
  if (const auto why = check_pipeline_schedule(plan.schedule, stages, plan.microbatches, plan.virtual_stages);
      !why.empty()) {
    throw std::invalid_argument(why);
  }
  if (chunks > model.layers) {
    throw std::invalid_argument(std::to_string(stages) + " pipeline stages" +
                                (plan.virtual_stages > 1 ? " x " + std::to_string(plan.virtual_stages) + " virtual" : "") +
                                " for " + std::to_string(model.layers) + " layers: more stages than layers");
  }
  if (model.layers % chunks != 0) {
    throw std::invalid_argument(std::to_string(model.layers) + " layers do not split evenly over " +
                                std::to_string(chunks) + " pipeline " +
                                (plan.virtual_stages > 1 ? "chunks (stages x virtual stages)" : "stages"));
  }
}

Program pipeline_program(const TransformerSpec& model, const TrainingPlan& plan, const TopologySpec& topology,
                         TrainingLayout& layout) {
  const int P = stage_count(plan, topology);
  const int v = plan.virtual_stages;
  const int M = plan.microbatches;
  const int axis = plan.pipeline_axis;
  const int chunks = P * v;
  layout.pipeline_stages = P;
  const bool tensor = layout.tensor_degree > 1;
  const bool fsdp = plan.fsdp && layout.ici_data_degree > 1;
  const bool data = layout.data_degree > 1;
  const bool split_backward = plan.schedule == PipelineSchedule::ZeroBubbleH1;

  // A chunk: L/(Pv) layers, every dense layer alike, so the first chunk's blocks stand for
  // each; the output projection is spread evenly over the chunks (a real model puts it on the
  // last stage, which frameworks rebalance by hand; here stages stay equal), without tensor-
  // parallel collectives of its own.
  const int layers_per_chunk = model.layers / chunks;
  std::vector<TrainingBlock> chain;
  for (const auto& blk : layout.blocks) {
    if (blk.layer >= 0 && blk.layer < layers_per_chunk) chain.push_back(blk);
  }
  TrainingBlock unembed = share_of(layout.blocks.back(), 1.0 / chunks);
  unembed.name = "unembed_share";
  chain.push_back(unembed);
  const int n = static_cast<int>(chain.size());
  const int last_block = n - 1;   // the unembedding share: no tensor-parallel collectives
  // Between stages the activations are split over the tensor axes (block_ops.hpp), so each
  // chip sends its 1/Y part.
  const double activation_bytes =
      layout.tokens_per_microbatch * model.d_model * model.activation_bytes / layout.tensor_degree;

  ProgramBuilder b;
  // MoE layers (moe_training.hpp): router and shared experts, the AllToAlls over the expert axes
  // and the experts, per pass; every chunk's MoE layers take the routing drawn for the first
  // chunk's, per microbatch (the chain stands for each chunk).
  MoeTrainingBlocks moe(model, plan, topology, layout, b, fsdp);
  auto index = [&](PipelinePass::Kind kind, int j, int m) { return (static_cast<int>(kind) * v + j) * M + m; };
  std::vector<PassOps> passes(3 * v * M);
  std::vector<int> send_forward(v * M, -1), send_backward(v * M, -1);
  std::vector<int> grad_ops, final_tails;
  auto prefix = [&](int j, int m) {
    return "mb" + std::to_string(m) + "." + (v > 1 ? "v" + std::to_string(j) + "." : "");
  };
  auto reduce_gradients = [&](const TrainingBlock& blk, int after, const std::string& name) {
    for (int op : emit_gradient_reduction(b, plan, layout, name, blk, after)) grad_ops.push_back(op);
  };
  // An MoE layer's: its router and shared experts' after `dense_after`, its experts' after
  // `experts_after` (the B pass, or under ZB-H1 the W pass).
  auto reduce_moe_gradients = [&](const TrainingBlock& blk, const std::string& name, int dense_after,
                                  int experts_after) {
    TrainingBlock named = blk;
    named.name = name;
    reduce_gradients(blk, dense_after, name);
    moe.gradients(named, experts_after, grad_ops);
  };

  // One pass of F or B over the chunk's blocks (B in reverse, training_pass.hpp); each block's
  // gradients reduced behind its B on the last microbatch (under ZB-H1, behind W).
  auto emit_pass = [&](PipelinePass::Kind kind, int j, int m) {
    PassOps& pass = passes[index(kind, j, m)];
    PassRequest request;
    request.forward = kind == PipelinePass::Forward;
    request.prefix = prefix(j, m);
    request.microbatch = m;
    request.split_backward = split_backward;
    request.untensored_block = last_block;
    // A collective matmul's first block starts two ops on the input (its gather and first
    // matmul), but a send is received by one op on a chip: a zero-length op receives it.
    if (tensor && plan.tensor_overlap) {
      request.start = {b.compute(request.prefix + (request.forward ? "fwd" : "bwd") + ".receive", 0.0, 0.0, {}, -1,
                                 OpRole::PipelineReceive)};
    }
    const bool reduce = !request.forward && !split_backward && m == M - 1;
    const PassEmitted emitted = emit_training_pass(
        b, plan, layout, moe, fsdp, tensor, chain, request, [&](int i, const BlockOps& ops, int experts) {
          if (!reduce) return;
          if (experts >= 0) reduce_moe_gradients(chain[i], prefix(j, m) + chain[i].name, ops.last_compute, experts);
          else reduce_gradients(chain[i], ops.last_compute, prefix(j, m) + chain[i].name);
        });
    pass.entry = request.start.empty() ? emitted.entry : request.start;
    pass.tail = emitted.end;
    pass.lead_gathers = emitted.lead_gathers;
    pass.last_gather = emitted.last_gather;
  };
  // ZB-H1's W: the weight-gradient matmuls, compute only (no weights needed, no tensor-
  // parallel traffic: the gathered activations and output gradients are the B pass's).
  auto emit_weight_pass = [&](int j, int m) {
    PassOps& pass = passes[index(PipelinePass::WeightGradient, j, m)];
    std::vector<int> previous;
    for (int i = n - 1; i >= 0; --i) {
      const TrainingBlock& blk = chain[i];
      const double w = weight_gradient_fraction(blk, layout.tokens_per_microbatch, layout.tensor_degree);
      const std::string name = prefix(j, m) + blk.name;
      if (blk.moe_layer >= 0) {
        const auto wo = moe.weight_gradients(name + ".wgrad", blk, m, previous, w);
        if (i == n - 1) pass.entry = {wo.experts};
        previous = {wo.router_shared};
        if (m == M - 1) reduce_moe_gradients(blk, name, wo.router_shared, wo.experts);
        continue;
      }
      const int op = b.compute(name + ".wgrad", blk.backward_s * w, 2 * blk.forward_flops_per_chip * w, previous,
                               blk.layer, OpRole::Backward);
      if (i == n - 1) pass.entry = {op};
      previous = {op};
      if (m == M - 1) reduce_gradients(blk, op, name);
    }
    pass.tail = previous;
  };

  for (int j = 0; j < v; ++j) {
    for (int m = 0; m < M; ++m) {
      emit_pass(PipelinePass::Forward, j, m);
      // The last chunk's output stays for the loss; the others go to the next stage (round the
      // end: from the last device to the first, for its next chunk).
      send_forward[j * M + m] = b.send(prefix(j, m) + "send_activations", axis, +1, activation_bytes,
                                       passes[index(PipelinePass::Forward, j, m)].tail, OpRole::PipelineSend, j < v - 1);
    }
  }
  for (int j = v - 1; j >= 0; --j) {
    for (int m = 0; m < M; ++m) {
      emit_pass(PipelinePass::Backward, j, m);
      send_backward[j * M + m] = b.send(prefix(j, m) + "send_gradients", axis, -1, activation_bytes,
                                        passes[index(PipelinePass::Backward, j, m)].tail, OpRole::PipelineSend, j > 0);
      if (split_backward) emit_weight_pass(j, m);
    }
  }
  // What a forward pass leaves live (the report's timeline peak): its chunk's checkpoints and
  // share of the logits, until the pass that frees them (B, or ZB-H1's W) ends.
  const double in_flight = peak_passes_in_flight(plan.schedule, P, M, v);
  const double pass_bytes = (layout.memory.activations_bytes + layout.memory.logits_bytes) / in_flight / v;
  for (int j = 0; j < v; ++j) {
    for (int m = 0; m < M; ++m) {
      const auto frees = split_backward ? PipelinePass::WeightGradient : PipelinePass::Backward;
      ProgramOp& first = b.op(passes[index(PipelinePass::Forward, j, m)].entry.front());
      first.holds_bytes = pass_bytes;
      first.released_by = {passes[index(frees, j, m)].tail.back()};
    }
  }
  Program program = b.take();

  // Where each pass's input comes from: the previous stage's send (for the first stage's
  // chunk j > 0, the last stage's send of chunk j-1, round the end), and the next stage's
  // gradient; the last chunk's backward on the last stage starts from its own forward.
  for (int j = 0; j < v; ++j) {
    for (int m = 0; m < M; ++m) {
      for (int op : passes[index(PipelinePass::Forward, j, m)].entry) {
        program[op].after_neighbour.push_back({send_forward[j * M + m], axis, +1});
        if (j > 0) program[op].after_neighbour.push_back({send_forward[(j - 1) * M + m], axis, +1, true});
      }
      for (int op : passes[index(PipelinePass::Backward, j, m)].entry) {
        program[op].after_neighbour.push_back({send_backward[j * M + m], axis, -1});
        if (j < v - 1) program[op].after_neighbour.push_back({send_backward[(j + 1) * M + m], axis, -1, true});
        const auto& fwd = passes[index(PipelinePass::Forward, j, m)].tail;
        program[op].after.insert(program[op].after.end(), fwd.begin(), fwd.end());
      }
      if (split_backward) {
        for (int op : passes[index(PipelinePass::WeightGradient, j, m)].entry) {
          const auto& bwd = passes[index(PipelinePass::Backward, j, m)].tail;
          program[op].after.insert(program[op].after.end(), bwd.begin(), bwd.end());
        }
      }
    }
  }
  // Each stage's order: a pass starts when the stage's previous pass has ended; its lead
  // weight gathers when the stage's previous gathers have.
  auto at_position = [&](int op, int stage, const std::vector<int>& extra) {
    auto& after = program[op].after_at_position;
    if (after.empty()) {
      after.assign(P, program[op].after);
      program[op].position_axis = axis;
    }
    after[stage].insert(after[stage].end(), extra.begin(), extra.end());
  };
  for (int stage = 0; stage < P; ++stage) {
    std::vector<int> previous_tail;
    int previous_gather = -1;
    for (const auto& p : stage_order(plan.schedule, stage, P, M, v)) {
      const PassOps& pass = passes[index(p.kind, p.chunk, p.microbatch)];
      for (int op : pass.entry) at_position(op, stage, previous_tail);
      for (int op : pass.lead_gathers) {
        at_position(op, stage, previous_gather >= 0 ? std::vector<int>{previous_gather} : std::vector<int>{});
      }
      previous_tail = pass.tail;
      if (pass.last_gather >= 0) previous_gather = pass.last_gather;
    }
  }
  for (int j = 0; j < v; ++j) {
    const auto kind = split_backward ? PipelinePass::WeightGradient : PipelinePass::Backward;
    const auto& tail = passes[index(kind, j, M - 1)].tail;
    final_tails.insert(final_tails.end(), tail.begin(), tail.end());
  }

  ProgramBuilder rest(std::move(program));
  grad_ops.insert(grad_ops.end(), final_tails.begin(), final_tails.end());
  // The optimizer updates this chip's share: the stage's layers (its routed experts over the
  // expert axes, as the single-program step counts them).
  const bool zero = data && plan.zero_stage > 0;
  layout.optimizer_s = optimizer_time_s(model, plan, topology, layout, P);
  const int optimizer = rest.compute("optimizer", layout.optimizer_s, 0.0, grad_ops, -1, OpRole::Optimizer);
  if (zero) {
    // Each chunk's updated shards gathered back before the next step's first pass uses them.
    // One after another, as the single-program step gathers them (training.cpp).
    int previous = optimizer;
    for (int j = 0; j < v; ++j) {
      for (const auto& blk : chain) {
        previous = emit_zero_allgather(rest, plan, prefix(j, M - 1) + blk.name, blk, previous);
        if (blk.moe_layer >= 0) previous = moe.zero_allgather(rest, prefix(j, M - 1) + blk.name, blk, previous);
      }
    }
  }
  double chunk_flops = 0, chunk_recompute = 0;
  for (const auto& blk : chain) {
    chunk_flops += blk.forward_flops_per_chip;
    if (blk.moe_layer >= 0) chunk_flops += moe.expert_forward_flops_per_chip();
    chunk_recompute += blk.recompute_flops_per_chip;
  }
  moe.finish();
  layout.total_flops = 3 * chunk_flops * v * M * layout.chips;
  layout.recompute_flops = chunk_recompute * v * M * layout.chips;
  return rest.take();
}

}  // namespace podsim
