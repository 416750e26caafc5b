#include "workloads/pipeline.hpp"

#include <algorithm>
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
  blk.gradient_bytes_per_group *= fraction;
  return blk;
}

// The program every chip of a pipeline runs: each chunk's passes (one chain of blocks, the
// union over stages, each block present on the stages holding it), the sends between stages,
// the order each stage runs its passes in (after_at_position), then the gradient reductions
// and the optimizer.
class PipelineEmitter {
 public:
  PipelineEmitter(const TransformerSpec& model, const TrainingPlan& plan, const TopologySpec& topology,
                  TrainingLayout& layout)
      : model_(model), plan_(plan), topology_(topology), layout_(layout), P_(stage_count(plan, topology)),
        v_(plan.virtual_stages), M_(plan.microbatches), axis_(plan.pipeline_axis),
        tensor_(layout.tensor_degree > 1), fsdp_(plan.fsdp && layout.ici_data_degree > 1),
        split_backward_(plan.schedule == PipelineSchedule::ZeroBubbleH1),
        // MoE layers (moe_training.hpp): router and shared experts, the AllToAlls over the expert
        // axes and the experts, per pass; every chunk's MoE layers take the routing drawn for the
        // first chunk's, per microbatch (the chain stands for each chunk).
        moe_(model, plan, topology, layout, b_, fsdp_), passes_(3 * v_ * M_), send_forward_(v_ * M_, -1),
        send_backward_(v_ * M_, -1) {
    layout.pipeline_stages = P_;
    build_chain();
  }

  Program emit() {
    emit_passes();
    hold_activations();
    Program program = b_.take();
    wire_neighbours(program);
    order_stages(program);
    return emit_tail(std::move(program));
  }

 private:
  int index(PipelinePass::Kind kind, int j, int m) const { return (static_cast<int>(kind) * v_ + j) * M_ + m; }
  std::string prefix(int j, int m) const {
    return "mb" + std::to_string(m) + "." + (v_ > 1 ? "v" + std::to_string(j) + "." : "");
  }

  int chunk_layers(int c) const { return pipeline_chunk_layers(model_.layers, P_ * v_, c); }

  // The chain every chunk's passes run: per layer slot s < ceil(L/(Pv)) the blocks of model
  // layer s (attention, MLP), every layer of a kind alike, so the first chunk's blocks stand
  // for each; where some chunk's layer at slot s is of the other kind (an MoE model's dense
  // first layers: slot s is dense on the first chunk, MoE on the others), an MLP block of that
  // kind beside it. A block runs on the stages whose chunk has it (holds, mask_block_ops). The
  // output projection is spread evenly over the chunks (a real model puts it on the last
  // stage, which frameworks rebalance by hand; here stages stay equal), without tensor-
  // parallel collectives of its own.
  void build_chain() {
    const int slots = chunk_layers(0);
    for (const auto& blk : layout_.blocks) {
      if (blk.layer < 0 || blk.layer >= slots) continue;
      chain_.push_back(blk);
      slot_.push_back(blk.layer);
      const bool mlp =
          blk.moe_layer >= 0 || (blk.name.size() > 4 && blk.name.compare(blk.name.size() - 4, 4, ".mlp") == 0);
      kind_.push_back(!mlp ? BlockKind::Layer : blk.moe_layer >= 0 ? BlockKind::MoeMlp : BlockKind::DenseMlp);
      if (mlp && blk.moe_layer < 0 && moe_slot_needed(blk.layer)) add_moe_mlp(blk.layer);
    }
    const int chunks = P_ * v_;
    TrainingBlock unembed = share_of(layout_.blocks.back(), 1.0 / chunks);
    unembed.name = "unembed_share";
    chain_.push_back(unembed);
    slot_.push_back(-1);
    kind_.push_back(BlockKind::Unembed);
    last_block_ = static_cast<int>(chain_.size()) - 1;   // the unembedding share: no tensor-parallel collectives
    // Between stages the activations are split over the tensor axes (block_ops.hpp), so each
    // chip sends its 1/Y part.
    activation_bytes_ = layout_.tokens_per_microbatch * model_.d_model * model_.activation_bytes / layout_.tensor_degree;
  }

  int dense_layers() const { return !model_.moe ? model_.layers : model_.moe->dense_layers; }

  // Whether a chunk's layer at `slot` is an MoE layer while the first chunk's is dense.
  bool moe_slot_needed(int slot) const {
    if (!model_.moe) return false;
    for (int c = 1; c < P_ * v_; ++c) {
      if (slot < chunk_layers(c) && pipeline_chunk_first_layer(model_.layers, P_ * v_, c) + slot >= dense_layers()) {
        return true;
      }
    }
    return false;
  }

  // An MoE layer's MLP block at `slot` (the MoE layers are alike: the routing drawn is MoE
  // layer `slot`'s, as the first chunk's would be).
  void add_moe_mlp(int slot) {
    const int moe_layer = slot % moe_layer_count(model_);
    for (const auto& blk : layout_.blocks) {
      if (blk.moe_layer != moe_layer) continue;
      TrainingBlock moe = blk;
      moe.layer = slot;
      moe.name = "L" + std::to_string(slot) + ".moe_mlp";
      chain_.push_back(moe);
      slot_.push_back(slot);
      kind_.push_back(BlockKind::MoeMlp);
      return;
    }
  }

  // Whether model chunk c runs chain block i: the layer at its slot exists there, and is of
  // the block's kind.
  bool holds(int i, int c) const {
    if (kind_[i] == BlockKind::Unembed) return true;
    if (slot_[i] >= chunk_layers(c)) return false;
    const bool dense = pipeline_chunk_first_layer(model_.layers, P_ * v_, c) + slot_[i] < dense_layers();
    return kind_[i] == BlockKind::Layer || (kind_[i] == BlockKind::DenseMlp) == dense;
  }

  // The ops emitted since `first` for block i of chunk j run on the stages whose chunk holds
  // the block (ProgramOp::present_at_position); a block every stage holds stays unmasked, so
  // an even split of alike layers is the program it was.
  void mask_block_ops(int first, int i, int j) {
    std::vector<char> present(P_);
    for (int p = 0; p < P_; ++p) present[p] = holds(i, j * P_ + p) ? 1 : 0;
    if (std::all_of(present.begin(), present.end(), [](char x) { return x != 0; })) return;
    for (int op = first; op < b_.size(); ++op) {
      b_.op(op).position_axis = axis_;
      b_.op(op).present_at_position = present;
    }
  }

  void reduce_gradients(const TrainingBlock& blk, int after, const std::string& name) {
    for (int op : emit_gradient_reduction(b_, plan_, layout_, name, blk, after)) grad_ops_.push_back(op);
  }
  // An MoE layer's: its router and shared experts' after `dense_after`, its experts' after
  // `experts_after` (the B pass, or under ZB-H1 the W pass).
  void reduce_moe_gradients(const TrainingBlock& blk, const std::string& name, int dense_after, int experts_after) {
    TrainingBlock named = blk;
    named.name = name;
    reduce_gradients(blk, dense_after, name);
    moe_.gradients(named, experts_after, grad_ops_);
  }

  // One pass of F or B over the chunk's blocks (B in reverse, training_pass.hpp); each block's
  // gradients reduced behind its B on the last microbatch (under ZB-H1, behind W).
  void emit_pass(PipelinePass::Kind kind, int j, int m) {
    PassRequest request;
    // Host offload: one queue each way within the pass; stages run the passes in different
    // orders, so no order across passes holds on every stage (docs/modelling.md, "Host offload").
    host_.last_offload = host_.last_prefetch = -1;
    request.host = &host_;
    request.forward = kind == PipelinePass::Forward;
    request.prefix = prefix(j, m);
    request.microbatch = m;
    request.split_backward = split_backward_;
    request.untensored_block = last_block_;
    // A collective matmul's first block starts two ops on the input (its gather and first
    // matmul), but a send is received by one op on a chip: a zero-length op receives it.
    if (tensor_ && plan_.tensor_overlap) {
      request.start = {b_.compute(request.prefix + (request.forward ? "fwd" : "bwd") + ".receive", 0.0, 0.0, {}, -1,
                                  OpRole::PipelineReceive)};
    }
    const bool reduce = !request.forward && !split_backward_ && m == M_ - 1;
    int block_first = b_.size();
    PassEmitted emitted = emit_training_pass(
        b_, plan_, layout_, moe_, fsdp_, tensor_, chain_, request, [&](int i, const BlockOps& ops, int experts) {
          if (reduce && experts >= 0) {
            reduce_moe_gradients(chain_[i], prefix(j, m) + chain_[i].name, ops.last_compute, experts);
          } else if (reduce) {
            reduce_gradients(chain_[i], ops.last_compute, prefix(j, m) + chain_[i].name);
          }
          mask_block_ops(block_first, i, j);
          block_first = b_.size();
        });
    if (!request.start.empty()) emitted.entry = request.start;   // the receive op waits for the stage's order
    passes_[index(kind, j, m)] = std::move(emitted);
  }

  // ZB-H1's W: the weight-gradient matmuls, compute only (no weights needed, no tensor-
  // parallel traffic: the gathered activations and output gradients are the B pass's).
  void emit_weight_pass(int j, int m) {
    PassEmitted& pass = passes_[index(PipelinePass::WeightGradient, j, m)];
    const int n = static_cast<int>(chain_.size());
    std::vector<int> previous;
    for (int i = n - 1; i >= 0; --i) {
      const TrainingBlock& blk = chain_[i];
      const double w = weight_gradient_fraction(blk, layout_.tokens_per_microbatch, layout_.tensor_degree);
      const std::string name = prefix(j, m) + blk.name;
      const int first = b_.size();
      if (blk.moe_layer >= 0) {
        const auto wo = moe_.weight_gradients(name + ".wgrad", blk, m, previous, w);
        if (i == n - 1) pass.entry = {wo.experts};
        previous = {wo.router_shared};
        if (m == M_ - 1) reduce_moe_gradients(blk, name, wo.router_shared, wo.experts);
        mask_block_ops(first, i, j);
        continue;
      }
      const int op = b_.compute(name + ".wgrad", blk.backward_s * w, 2 * blk.forward_flops_per_chip * w, previous,
                                blk.layer, OpRole::Backward);
      if (i == n - 1) pass.entry = {op};
      previous = {op};
      if (m == M_ - 1) reduce_gradients(blk, op, name);
      mask_block_ops(first, i, j);
    }
    pass.end = previous;
  }

  void emit_passes() {
    for (int j = 0; j < v_; ++j) {
      for (int m = 0; m < M_; ++m) {
        emit_pass(PipelinePass::Forward, j, m);
        // The last chunk's output stays for the loss; the others go to the next stage (round the
        // end: from the last device to the first, for its next chunk).
        send_forward_[j * M_ + m] = b_.send(prefix(j, m) + "send_activations", axis_, +1, activation_bytes_,
                                            passes_[index(PipelinePass::Forward, j, m)].end, OpRole::PipelineSend,
                                            j < v_ - 1);
      }
    }
    for (int j = v_ - 1; j >= 0; --j) {
      for (int m = 0; m < M_; ++m) {
        emit_pass(PipelinePass::Backward, j, m);
        send_backward_[j * M_ + m] = b_.send(prefix(j, m) + "send_gradients", axis_, -1, activation_bytes_,
                                             passes_[index(PipelinePass::Backward, j, m)].end, OpRole::PipelineSend,
                                             j > 0);
        if (split_backward_) emit_weight_pass(j, m);
      }
    }
  }

  // What a forward pass leaves live (the report's timeline peak): its chunk's checkpoints and
  // share of the logits, until the pass that frees them (B, or ZB-H1's W) ends.
  void hold_activations() {
    const double in_flight = peak_passes_in_flight(plan_.schedule, P_, M_, v_);
    const double pass_bytes = (layout_.memory.activations_bytes + layout_.memory.logits_bytes) / in_flight / v_;
    const auto frees = split_backward_ ? PipelinePass::WeightGradient : PipelinePass::Backward;
    for (int j = 0; j < v_; ++j) {
      for (int m = 0; m < M_; ++m) {
        ProgramOp& first = b_.op(passes_[index(PipelinePass::Forward, j, m)].entry.front());
        first.holds_bytes = pass_bytes;
        first.released_by = {passes_[index(frees, j, m)].end.back()};
      }
    }
  }

  // Where each pass's input comes from: the previous stage's send (for the first stage's
  // chunk j > 0, the last stage's send of chunk j-1, round the end), and the next stage's
  // gradient; the last chunk's backward on the last stage starts from its own forward.
  void wire_neighbours(Program& program) const {
    for (int j = 0; j < v_; ++j) {
      for (int m = 0; m < M_; ++m) {
        for (int op : passes_[index(PipelinePass::Forward, j, m)].entry) {
          program[op].after_neighbour.push_back({send_forward_[j * M_ + m], axis_, +1});
          if (j > 0) program[op].after_neighbour.push_back({send_forward_[(j - 1) * M_ + m], axis_, +1, true});
        }
        for (int op : passes_[index(PipelinePass::Backward, j, m)].entry) {
          program[op].after_neighbour.push_back({send_backward_[j * M_ + m], axis_, -1});
          if (j < v_ - 1) program[op].after_neighbour.push_back({send_backward_[(j + 1) * M_ + m], axis_, -1, true});
          const auto& fwd = passes_[index(PipelinePass::Forward, j, m)].end;
          program[op].after.insert(program[op].after.end(), fwd.begin(), fwd.end());
        }
        if (!split_backward_) continue;
        for (int op : passes_[index(PipelinePass::WeightGradient, j, m)].entry) {
          const auto& bwd = passes_[index(PipelinePass::Backward, j, m)].end;
          program[op].after.insert(program[op].after.end(), bwd.begin(), bwd.end());
        }
      }
    }
  }

  // Each stage's order: a pass starts when the stage's previous pass has ended; its lead
  // weight gathers when the stage's previous gathers have.
  void order_stages(Program& program) const {
    auto at_position = [&](int op, int stage, const std::vector<int>& extra) {
      auto& after = program[op].after_at_position;
      if (after.empty()) {
        after.assign(P_, program[op].after);
        program[op].position_axis = axis_;
      }
      after[stage].insert(after[stage].end(), extra.begin(), extra.end());
    };
    for (int stage = 0; stage < P_; ++stage) {
      std::vector<int> previous_tail;
      int previous_gather = -1;
      for (const auto& p : stage_order(plan_.schedule, stage, P_, M_, v_)) {
        const PassEmitted& pass = passes_[index(p.kind, p.chunk, p.microbatch)];
        for (int op : pass.entry) at_position(op, stage, previous_tail);
        for (int op : pass.lead_gathers) {
          at_position(op, stage, previous_gather >= 0 ? std::vector<int>{previous_gather} : std::vector<int>{});
        }
        previous_tail = pass.end;
        if (pass.last_gather >= 0) previous_gather = pass.last_gather;
      }
    }
  }

  // The optimizer after every gradient reduction and every chunk's last pass; it updates this
  // chip's share: the stage's layers (its routed experts over the expert axes, as the single-
  // program step counts them). Then ZeRO's gathers, and the step's FLOPs.
  Program emit_tail(Program program) {
    for (int j = 0; j < v_; ++j) {
      const auto kind = split_backward_ ? PipelinePass::WeightGradient : PipelinePass::Backward;
      const auto& tail = passes_[index(kind, j, M_ - 1)].end;
      grad_ops_.insert(grad_ops_.end(), tail.begin(), tail.end());
    }
    b_ = ProgramBuilder(std::move(program));
    const int optimizer = emit_optimizers();
    if (layout_.data_degree > 1 && plan_.zero_stage > 0) {
      // Each chunk's updated shards gathered back before the next step's first pass uses them.
      // One after another, as the single-program step gathers them (training.cpp).
      int previous = optimizer;
      for (int j = 0; j < v_; ++j) {
        for (size_t i = 0; i < chain_.size(); ++i) {
          const TrainingBlock& blk = chain_[i];
          const int first = b_.size();
          previous = emit_zero_allgather(b_, plan_, prefix(j, M_ - 1) + blk.name, blk, previous);
          if (blk.moe_layer >= 0) previous = moe_.zero_allgather(b_, prefix(j, M_ - 1) + blk.name, blk, previous);
          mask_block_ops(first, static_cast<int>(i), j);
        }
      }
    }
    // Per chip, a chunk's FLOPs: each block's, weighted by the share of the chunks that hold
    // it (1 for every block of an even split).
    double chunk_flops = 0, chunk_recompute = 0;
    for (size_t i = 0; i < chain_.size(); ++i) {
      const TrainingBlock& blk = chain_[i];
      const double share = chunk_share(static_cast<int>(i));
      chunk_flops += blk.forward_flops_per_chip * share;
      if (blk.moe_layer >= 0) chunk_flops += moe_.expert_forward_flops_per_chip() * share;
      chunk_recompute += (blk.moe_layer >= 0 ? moe_.recompute_flops_per_chip(blk) : blk.recompute_flops_per_chip) * share;
    }
    moe_.finish();
    ProgramBuilder& rest = b_;
    layout_.total_flops = 3 * chunk_flops * v_ * M_ * layout_.chips;
    layout_.recompute_flops = chunk_recompute * v_ * M_ * layout_.chips;
    return rest.take();
  }

  // The fraction of the chunks holding chain block i (1 for every block of an even split of
  // alike layers).
  double chunk_share(int i) const {
    const int chunks = P_ * v_;
    int holding = 0;
    for (int c = 0; c < chunks; ++c) holding += holds(i, c) ? 1 : 0;
    return static_cast<double>(holding) / chunks;
  }

  // The optimizer after every gradient reduction and every chunk's last pass, updating the
  // weights the stage holds: one op when stages hold alike layers; otherwise one per distinct
  // stage (pipeline_stage_weights: dense and routed parameters), present on the stages that
  // hold those weights and named after the first of them. Returns what the ZeRO gathers
  // follow (on stages where an op is absent it ends at once).
  int emit_optimizers() {
    if (pipeline_stages_alike(model_, P_ * v_)) {
      layout_.optimizer_s = optimizer_time_s(model_, plan_, topology_, layout_, P_);
      return b_.compute("optimizer", layout_.optimizer_s, 0.0, grad_ops_, -1, OpRole::Optimizer);
    }
    const auto weights = pipeline_stage_weights(model_, P_, v_);
    std::vector<int> optimizers;
    std::vector<bool> done(P_, false);
    layout_.optimizer_s = 0;
    for (int p = 0; p < P_; ++p) {
      if (done[p]) continue;
      const double seconds =
          optimizer_time_s(model_, plan_, topology_, layout_, weights[p].dense_params, weights[p].routed_params);
      layout_.optimizer_s = std::max(layout_.optimizer_s, seconds);   // the slowest stage's
      const int op = b_.compute("optimizer.stage" + std::to_string(p), seconds, 0.0, grad_ops_, -1, OpRole::Optimizer);
      b_.op(op).position_axis = axis_;
      b_.op(op).present_at_position.assign(P_, 0);
      for (int q = p; q < P_; ++q) {
        if (weights[q].dense_params != weights[p].dense_params || weights[q].routed_params != weights[p].routed_params) continue;
        b_.op(op).present_at_position[q] = 1;
        done[q] = true;
      }
      optimizers.push_back(op);
    }
    return b_.compute("optimizer.done", 0.0, 0.0, optimizers, -1, OpRole::Optimizer);
  }

  const TransformerSpec& model_;
  const TrainingPlan& plan_;
  const TopologySpec& topology_;
  TrainingLayout& layout_;
  const int P_, v_, M_, axis_;
  const bool tensor_, fsdp_, split_backward_;
  ProgramBuilder b_;
  MoeTrainingBlocks moe_;
  enum class BlockKind { Layer, DenseMlp, MoeMlp, Unembed };
  std::vector<TrainingBlock> chain_;
  std::vector<int> slot_;          // per chain block: its layer slot in the chunk (-1: the unembedding share)
  std::vector<BlockKind> kind_;    // per chain block
  int last_block_ = -1;
  double activation_bytes_ = 0;
  std::vector<PassEmitted> passes_;   // by index(kind, chunk, microbatch)
  HostStreams host_;                  // host offload: each block's offload by pass, the queues of the pass
  std::vector<int> send_forward_, send_backward_;
  std::vector<int> grad_ops_;
};

}  // namespace

int stage_count(const TrainingPlan& plan, const TopologySpec& topology) {
  return plan.pipeline_axis == Topology::kSliceAxis ? topology.slices : topology.axes.at(plan.pipeline_axis).size;
}

int pipeline_chunk_layers(int layers, int chunks, int c) { return layers / chunks + (c < layers % chunks ? 1 : 0); }

int pipeline_chunk_first_layer(int layers, int chunks, int c) {
  return c * (layers / chunks) + std::min(c, layers % chunks);
}

bool pipeline_stages_alike(const TransformerSpec& model, int chunks) {
  return model.layers % chunks == 0 && !(model.moe && model.moe->dense_layers > 0);
}

std::vector<StageWeights> pipeline_stage_weights(const TransformerSpec& model, int stages, int virtual_stages) {
  const int chunks = stages * virtual_stages;
  const int dense_layers = model.moe ? model.moe->dense_layers : model.layers;
  const double attention = attention_params_per_layer(model);
  const double moe_dense_part =
      model.moe ? router_params_per_layer(model) + model.moe->shared_experts * expert_params(model) : 0.0;
  const double routed = model.moe ? model.moe->experts * expert_params(model) : 0.0;
  const double spread = (embedding_params(model) + norm_params(model)) / stages;
  std::vector<StageWeights> out(stages);
  for (int c = 0; c < chunks; ++c) {
    StageWeights& w = out[c % stages];
    const int first = pipeline_chunk_first_layer(model.layers, chunks, c);
    for (int l = first; l < first + pipeline_chunk_layers(model.layers, chunks, c); ++l) {
      w.layers += 1;
      w.dense_params += attention + (l < dense_layers ? mlp_params_per_layer(model) : moe_dense_part);
      if (l >= dense_layers) w.routed_params += routed;
    }
  }
  for (auto& w : out) w.dense_params += spread;
  return out;
}

void check_pipeline(const TransformerSpec& model, const TrainingPlan& plan, const TopologySpec& topology) {
  const int stages = stage_count(plan, topology);
  const int chunks = stages * plan.virtual_stages;
  if (const auto why = check_pipeline_schedule(plan.schedule, stages, plan.microbatches, plan.virtual_stages);
      !why.empty()) {
    throw std::invalid_argument(why);
  }
  if (model.moe && model.moe->interleave_moe_layer_step > 1) {
    // The pipeline's chains hold each slot's layer kind from the first MoE layer on
    // (dense_layers); interleaved MoE layers would make every chunk's slots alternate.
    throw std::invalid_argument(model.name + " interleaves MoE and dense layers (interleave_moe_layer_step " +
                                std::to_string(model.moe->interleave_moe_layer_step) +
                                "): a pipeline holds MoE models whose MoE layers follow the dense ones only");
  }
  if (chunks > model.layers) {
    throw std::invalid_argument(std::to_string(stages) + " pipeline stages" +
                                (plan.virtual_stages > 1 ? " x " + std::to_string(plan.virtual_stages) + " virtual" : "") +
                                " for " + std::to_string(model.layers) + " layers: more stages than layers");
  }
}

Program pipeline_program(const TransformerSpec& model, const TrainingPlan& plan, const TopologySpec& topology,
                         TrainingLayout& layout) {
  return PipelineEmitter(model, plan, topology, layout).emit();
}

}  // namespace podsim
