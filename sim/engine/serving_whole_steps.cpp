// Serving step costs priced by whole steps, for models the layer shortcut cannot price
// (serving_costs.hpp): mixture-of-experts models and models without attention, and for servers
// under 2D weight-stationary sharding (their batches padded to a multiple of the D axes' chips;
// their attention ops checked one by one, below).
//
// A prefill shape is replayed as it is: inference_step_program of the shape, its tokens split
// evenly over the expert-parallel groups (each group attends for its share of the chunk's rows,
// as kind: inference does).
//
// A decode step of B sequences runs ceil(B / EP) rows in every expert-parallel group (static
// shapes; the padding rows route and compute like real ones). Its cost depends on the batch and
// on the summed context, which only attention reads: every chip's attention op of every layer
// lasts the same (chip_step_compute), and the attention ops are one chain that every later op
// waits for (blocking: one op a layer; under collective matmuls its two halves, block_ops).
// Replayed once per padded batch with every sequence at the reference context, a step of
// another context is
//   decode(B, context) = replay(B, B x reference) + L x (attention(context) - attention(reference)).
// Proof by induction over the attention ops: if every chip's attention op ends after all
// traffic that does not wait for it has ended (its duration >= stagger = the last end of any
// such collective on any chip - the first start of this op on any chip; the traffic before it
// and, for a collective matmul's second half, the scatter beside it), then traffic after it
// meets only traffic after it, which is the reference's shifted by the change in the ops so
// far; so the next op's stagger is the reference's too. Where that fails for the step's
// attention (or the reference's), the step is replayed at its own context instead, and counted.
// test_serving_whole_steps.cpp compares both with whole-step replays at the real shape.
#include <algorithm>
#include <cmath>
#include <map>

#include <spdlog/spdlog.h>

#include "sim/engine/serving_costs.hpp"

namespace podsim {

namespace {

Program step_program(const TransformerSpec& model, const ServerRole& role, const StepShape& shape,
                     long long& collectives) {
  Program program = inference_step_program(model, role.plan, role.topology, shape);
  for (const auto& op : program) collectives += op.is(ProgramOpKind::Collective);
  return program;
}

bool is_attention(const ProgramOp& op) { return op.is(ProgramOpKind::Compute) && op.role == OpRole::Attention; }

// What each attention op must last for the shift to hold (stagger_l above, per op), from a
// replay's spans (every simulated chip; a reduced replay's chips stand for the real ones with
// their times): the last end of the traffic it must outlast on any chip minus its first start
// on any chip. That traffic is every collective that does not wait for it: blocking, the
// collectives before it; under collective matmuls also the scatter beside its second half.
// The attention ops form one chain, so an op waits for every attention op up to the latest it
// waits for, and its traffic counts toward the next one. Returns (op, need) in program order.
std::vector<std::pair<int, double>> attention_needs_s(const Program& program, const RunResult& run) {
  std::vector<int> attention_ops;
  std::vector<int> next_attention(program.size(), -1);   // of a collective: the first it does not wait for
  {
    std::vector<int> latest(program.size(), -1);
    for (size_t i = 0; i < program.size(); ++i) {
      for (int d : program[i].after) latest[i] = std::max(latest[i], latest[d]);
      if (is_attention(program[i])) {
        latest[i] = static_cast<int>(i);
        attention_ops.push_back(static_cast<int>(i));
      }
    }
    for (size_t i = 0; i < program.size(); ++i) {
      const auto it = std::upper_bound(attention_ops.begin(), attention_ops.end(), latest[i]);
      if (it != attention_ops.end()) next_attention[i] = *it;
    }
  }
  std::map<int, double> traffic_end, attention_start;   // by attention op
  for (const SpanRecord& span : run.replay.spans) {
    const ProgramOp& op = program[span.op];
    if (op.is(ProgramOpKind::Collective) && next_attention[span.op] >= 0) {
      double& end = traffic_end.try_emplace(next_attention[span.op], 0.0).first->second;
      end = std::max(end, span.end_s);
    } else if (is_attention(op)) {
      auto [it, fresh] = attention_start.try_emplace(span.op, span.start_s);
      if (!fresh) it->second = std::min(it->second, span.start_s);
    }
  }
  std::vector<std::pair<int, double>> needs;
  double traffic = 0;
  for (const auto& [op, start] : attention_start) {
    if (auto it = traffic_end.find(op); it != traffic_end.end()) traffic = std::max(traffic, it->second);
    needs.emplace_back(op, traffic - start);
  }
  return needs;
}

// The needs above as the layer's attention time they ask for: an op of a share of the layer's
// attention (a collective matmul's half) must outlast its need on its own, so it asks for
// need / share of the layer's.
double attention_stagger_s(const Program& program, const std::vector<std::pair<int, double>>& needs,
                           double layer_attention_s) {
  double stagger = 0;
  for (const auto& [op, need] : needs) {
    const double op_s = program[op].compute().compute_s;
    if (op_s == layer_attention_s || need <= 0) stagger = std::max(stagger, need);
    else stagger = std::max(stagger, op_s > 0 ? need * (layer_attention_s / op_s) : HUGE_VAL);
  }
  return stagger;
}

// Whether every attention op of `program` lasts at least its need (the programs of one
// padded batch at two contexts have the same ops in the same order).
bool attention_ops_outlast(const Program& program, const std::vector<std::pair<int, double>>& needs) {
  for (const auto& [op, need] : needs)
    if (need > 0 && !(program[op].compute().compute_s >= need)) return false;
  return true;
}

}  // namespace

double ServingCostModel::whole_prefill_s(int batch, int chunk, int offset) {
  // 2D attention splits the prompts over the D axes: padded up to a multiple of their chips.
  const int padded = (batch + prefill_multiple_ - 1) / prefill_multiple_ * prefill_multiple_;
  const Program program = step_program(model_, prefill_role_, prefill_shape(padded, chunk, offset), collectives_replayed_);
  return run_program(prefill_role_.topology, settings_, program, {}).total_time_s;
}

ServingCostModel::WholeDecode ServingCostModel::replay_reference(const StepShape& shape) {
  const ServerRole& role = generate_role_;
  const Program program = step_program(model_, role, shape, collectives_replayed_);
  const RunResult run = run_program(role.topology, settings_, program, {});
  const StepCompute compute = chip_step_compute(model_, role.plan, role.topology, shape);
  const auto needs = attention_needs_s(program, run);
  WholeDecode step;
  step.reference_s = run.total_time_s;
  step.attention_s = compute.attention_s;
  step.unembed_s = compute.unembed_s;
  step.stagger_s = attention_stagger_s(program, needs, compute.attention_s);
  if (!role.plan.d_axes.empty()) {
    // 2D attention's ops (projections, scores, output) change by different shares of the
    // layer's change: each is checked against its own need (whole_decode_s).
    step.reference_outlasts = attention_ops_outlast(program, needs);
    step.op_need_s.resize(program.size(), 0.0);
    for (const auto& [op, need] : needs) step.op_need_s[op] = need;
  }
  return step;
}

// The shift from a reference (the proof above), where every attention op outlasts its stagger
// in the reference and in the step; else the step replayed at its own shape, and counted.
double ServingCostModel::shift_or_replay(const WholeDecode& step, const StepShape& actual) {
  const ServerRole& role = generate_role_;
  const StepCompute compute = chip_step_compute(model_, role.plan, role.topology, actual);
  const double shifted = step.reference_s + model_.layers * (compute.attention_s - step.attention_s) +
                         (compute.unembed_s - step.unembed_s);
  if (model_.attention == AttentionKind::None || std::min(compute.attention_s, step.attention_s) >= step.stagger_s)
    return shifted;
  note_exact_replay();
  const Program program = step_program(model_, role, actual, collectives_replayed_);
  return run_program(role.topology, settings_, program, {}).total_time_s;
}

void ServingCostModel::replay_whole_decode(int rows) {
  if (decode_steps_.count(rows)) return;
  decode_steps_[rows] = replay_reference(decode_shape(rows * decode_multiple_, reference_context_));
}

const char* ServingCostModel::replays_counted_in() const {
  if (draft_) return "step_costs.draft_model_steps_replayed_at_own_shape";
  return mixed_ ? "step_costs.mixed_steps_replayed_at_own_shape" : "step_costs.decode_steps_replayed_at_own_context";
}

// Collective matmuls at serving's decode batches: the attention halves rarely outlast the
// gather beside them, so most steps are replayed (serving_qwen3_235b_v5e_4x8.yaml with
// collective_matmul: true, measured: about 3 hours against 8 s). Exact, but say so once, naming
// the steps as the run has them and the summary field that counts them.
void ServingCostModel::note_exact_replay() {
  if (decode_exact_replays_++ > 0) return;
  const char* steps = draft_ ? "of the draft model's passes" : mixed_ ? "mixed steps" : "decode steps";
  const char* from = draft_ || mixed_ ? "the step of the same token count with every sequence at the longest context"
                                      : "the step of the same batch with every sequence at the longest context";
  const char* own = draft_ || mixed_ ? "shape" : "context";
  spdlog::warn("serving {}: some {} attend for less time than the collectives before their attention are staggered "
               "across chips, so they cannot be priced by shifting {}; each such step is replayed at its own {}, up "
               "to about a second each on pod-sized servers (summary.json counts them: {})",
               model_.name, steps, from, own, replays_counted_in());
}

double ServingCostModel::whole_decode_s(int batch, double context_tokens) {
  const int m = padded_groups(batch);
  replay_whole_decode(m);
  const WholeDecode& step = decode_steps_.at(m);
  if (model_.attention == AttentionKind::None) return step.reference_s;
  const ServerRole& role = generate_role_;
  const int padded = m * decode_multiple_;
  StepShape actual = decode_shape(padded, 0);
  actual.attended_tokens = actual.kv_tokens = context_tokens;
  // A decode step's unembedding is its padded batch's, the reference's: the shift is L x the
  // change in attention.
  if (role.plan.d_axes.empty()) return shift_or_replay(step, actual);
  // 2D: the step's own ops against their needs (building the program runs no simulation). Its
  // attention parts sum to the layer's attention, so the shift is the same L x change.
  const double attention = chip_step_compute(model_, role.plan, role.topology, actual).attention_s;
  const double shifted = step.reference_s + model_.layers * (attention - step.attention_s);
  const Program program = inference_step_program(model_, role.plan, role.topology, actual);
  std::vector<std::pair<int, double>> needs;
  for (size_t op = 0; op < step.op_need_s.size(); ++op)
    if (is_attention(program[op])) needs.emplace_back(static_cast<int>(op), step.op_need_s[op]);
  if (step.reference_outlasts && attention_ops_outlast(program, needs)) return shifted;
  note_exact_replay();
  for (const auto& op : program) collectives_replayed_ += op.is(ProgramOpKind::Collective);
  return run_program(role.topology, settings_, program, {}).total_time_s;
}

// A mixed step of T tokens (policy mixed) runs the program of a prefill-like shape: every token
// through the weights, attention over what each row attends to, logits for one row a
// sequence. Its collectives and weight traffic depend on T alone; its attention on the rows'
// contexts and its unembedding on the sequences, and both enter as the decode shift above
// does: each layer's attention op is one chain the later ops wait for, and the unembedding is
// every chip's last op, after which nothing runs. So, replayed once per T with every row at
// the reference context and one logit row a token,
//   mixed(shape) = replay(T) + L x (attention(shape) - attention(T)) + unembed(shape) - unembed(T),
// under the same condition (every attention op outlasts its stagger, in the reference and in
// the step), else replayed at its own shape and counted. test_serving_mixed.cpp compares both
// with whole-step replays on generated shapes.
double ServingCostModel::whole_mixed_s(const StepShape& shape) {
  const long long tokens = static_cast<long long>(shape.tokens);
  auto it = mixed_steps_.find(tokens);
  if (it == mixed_steps_.end()) {
    StepShape reference;
    reference.tokens = reference.sequences = shape.tokens;   // one row a sequence, as logit_rows
    reference.attended_tokens = reference.kv_tokens = shape.tokens * reference_context_;
    it = mixed_steps_.emplace(tokens, replay_reference(reference)).first;
  }
  return shift_or_replay(it->second, shape);
}

}  // namespace podsim
