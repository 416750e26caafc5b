// Serving step costs priced by whole steps, for models the layer shortcut cannot price
// (serving_costs.hpp): mixture-of-experts models and models without attention.
//
// A prefill shape is replayed as it is: inference_step_program of the shape, its tokens split
// evenly over the expert-parallel groups (each group attends for its share of the chunk's rows,
// as kind: inference does).
//
// A decode step of B sequences runs ceil(B / EP) rows in every expert-parallel group (static
// shapes; the padding rows route and compute like real ones). Its cost depends on the batch and
// on the summed context, which only attention reads: every chip's attention op of every layer
// lasts the same (chip_step_compute), and in the chained step program (no collective matmuls)
// each is one link that every later op waits for. Replayed once per padded batch with every
// sequence at the reference context, a step of another context is
//   decode(B, context) = replay(B, B x reference) + L x (attention(context) - attention(reference)).
// Proof by induction over the layers: if, in layer l, every chip's attention ends after all
// traffic before it has ended (attention >= stagger_l = the last end of any earlier collective
// on any chip - the first start of this attention on any chip), then traffic after it meets
// only traffic after it, which is the reference's shifted by the change in attention; so the
// next layer's stagger is the reference's too. Where that fails for the step's attention (or
// the reference's), the step is replayed at its own context instead, and counted.
// test_serving_whole_steps.cpp compares both with whole-step replays at the real shape.
#include <algorithm>
#include <map>

#include "sim/engine/serving_costs.hpp"

namespace podsim {

namespace {

Program step_program(const TransformerSpec& model, const ServerRole& role, const StepShape& shape,
                     long long& collectives) {
  Program program = inference_step_program(model, role.plan, role.topology, shape);
  for (const auto& op : program) collectives += op.kind == ProgramOpKind::Collective;
  return program;
}

// stagger_l over the layers (above), from a replay's spans (every simulated chip; a reduced
// replay's chips stand for the real ones with their times).
double attention_stagger_s(const Program& program, const RunResult& run) {
  // For each op, the first attention compute at or after it.
  std::vector<int> next_attention(program.size(), -1);
  for (int i = static_cast<int>(program.size()) - 1, next = -1; i >= 0; --i) {
    if (program[i].kind == ProgramOpKind::Compute && program[i].role == OpRole::Attention) next = i;
    next_attention[i] = next;
  }
  std::map<int, double> traffic_end, attention_start;   // by attention op
  for (const SpanRecord& span : run.replay.spans) {
    const ProgramOp& op = program[span.op];
    if (op.kind == ProgramOpKind::Collective && next_attention[span.op] >= 0) {
      double& end = traffic_end.try_emplace(next_attention[span.op], 0.0).first->second;
      end = std::max(end, span.end_s);
    } else if (next_attention[span.op] == span.op) {
      auto [it, fresh] = attention_start.try_emplace(span.op, span.start_s);
      if (!fresh) it->second = std::min(it->second, span.start_s);
    }
  }
  double stagger = 0, traffic = 0;
  for (const auto& [op, start] : attention_start) {
    if (auto it = traffic_end.find(op); it != traffic_end.end()) traffic = std::max(traffic, it->second);
    stagger = std::max(stagger, traffic - start);
  }
  return stagger;
}

}  // namespace

double ServingCostModel::whole_prefill_s(int batch, int chunk, int offset) {
  const Program program = step_program(model_, prefill_role_, prefill_shape(batch, chunk, offset), collectives_replayed_);
  return run_program(prefill_role_.topology, settings_, program, {}).total_time_s;
}

void ServingCostModel::replay_whole_decode(int rows) {
  if (decode_steps_.count(rows)) return;
  const ServerRole& role = generate_role_;
  const StepShape shape = decode_shape(rows * generate_groups_, reference_context_);
  const Program program = step_program(model_, role, shape, collectives_replayed_);
  const RunResult run = run_program(role.topology, settings_, program, {});
  decode_steps_[rows] = {run.total_time_s, chip_step_compute(model_, role.plan, role.topology, shape).attention_s,
                         attention_stagger_s(program, run)};
}

double ServingCostModel::whole_decode_s(int batch, double context_tokens) {
  const int m = padded_groups(batch);
  replay_whole_decode(m);
  const WholeDecode& step = decode_steps_.at(m);
  if (model_.attention == AttentionKind::None) return step.reference_s;
  const ServerRole& role = generate_role_;
  const int padded = m * generate_groups_;
  StepShape actual = decode_shape(padded, 0);
  actual.attended_tokens = actual.kv_tokens = context_tokens;
  const double attention = chip_step_compute(model_, role.plan, role.topology, actual).attention_s;
  if (std::min(attention, step.attention_s) >= step.stagger_s)
    return step.reference_s + model_.layers * (attention - step.attention_s);
  ++decode_exact_replays_;
  const Program program = step_program(model_, role, actual, collectives_replayed_);
  return run_program(role.topology, settings_, program, {}).total_time_s;
}

}  // namespace podsim
