#include "sim/report/training_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace podsim {
namespace {

// What an op waited for last: the dependency that finished last, on the chip where it ran
// (a neighbouring stage's send ends on that neighbour's side).
struct Blocker {
  int op = -1;   // -1: nothing
  ChipId chip = 0;
};

Blocker blocking_dependency(const Program& program, const RunResult& run, const ProgramOp& op, ChipId chip) {
  Blocker latest;
  double latest_end = -1;
  auto consider = [&](int dep, ChipId on) {
    const auto& span = run.span(dep, program[dep].repeat - 1, on);
    if (span.end_s > latest_end) {
      latest_end = span.end_s;
      latest = {dep, on};
    }
  };
  const auto* after = &op.after;
  const Topology& topo = run.topology;
  if (op.position_axis >= 0 && !op.after_at_position.empty()) {
    after = &op.after_at_position.at(topo.position_along(chip, op.position_axis));
  }
  for (int dep : *after) consider(dep, chip);
  for (const auto& n : op.after_neighbour) {
    const auto from = n.round_the_end ? topo.round_the_end(chip, n.axis, -n.direction)
                                      : topo.step_along(chip, n.axis, -n.direction);
    if (from) consider(n.op, *from);
  }
  return latest;
}

// What the end of the step waited for once chip 0's compute was done: the op that ends last
// (on the first chip where it does); a compute on another chip stands for whatever held it up.
Blocker step_end_blocker(const Program& program, const RunResult& run) {
  int last = -1;
  for (size_t i = 0; i < program.size(); ++i) {
    if (last < 0 || run.operations[i].end_s > run.operations[last].end_s) last = static_cast<int>(i);
  }
  if (last < 0) return {};
  const int rep = program[last].repeat - 1;
  ChipId on = 0;
  for (ChipId c = 0; c < run.topology.chip_count(); ++c) {
    if (run.span(last, rep, c).end_s == run.operations[last].end_s) {
      on = c;
      break;
    }
  }
  if (program[last].is(ProgramOpKind::Compute)) return blocking_dependency(program, run, program[last], on);
  return {last, on};
}

}  // namespace

// Chip 0's live bytes over the step: each op's holds_bytes from its start to its last releaser's end;
// at equal times releases go first (a buffer freed as another is filled). Returns (peak, when).
static std::pair<double, double> timeline_peak(const Program& program, const RunResult& run) {
  std::vector<std::pair<double, double>> events;   // (time, +/- bytes)
  for (size_t i = 0; i < program.size(); ++i) {
    const auto& op = program[i];
    if (op.holds_bytes <= 0 || !run.present(static_cast<int>(i), 0)) continue;
    events.push_back({run.span(static_cast<int>(i), 0, 0).start_s, op.holds_bytes});
    double end = op.released_by.empty() ? run.total_time_s : 0.0;
    for (int by : op.released_by) end = std::max(end, run.span(by, program[by].repeat - 1, 0).end_s);
    events.push_back({end, -op.holds_bytes});
  }
  std::sort(events.begin(), events.end());
  double live = 0, peak = 0, at = 0;
  for (const auto& [t, delta] : events) {
    live += delta;
    if (live > peak) {
      peak = live;
      at = t;
    }
  }
  return {peak, at};
}

namespace {

// The step's headline figures: time, memory peak, MFU and HFU, throughput, time to train.
void headline_figures(TrainingReport& report, const TrainingWorkload& workload, const TrainingLayout& layout,
                      const Program& program, const RunResult& run) {
  const auto [live_peak, peak_at] = timeline_peak(program, run);
  report.memory_peak_bytes = layout.memory.params_bytes + layout.memory.grads_bytes + layout.memory.optimizer_bytes + live_peak;
  report.memory_peak_at_s = peak_at;
  report.strategy = layout.strategy;
  report.step_time_s = run.total_time_s;
  report.memory = layout.memory;
  report.fits_hbm = layout.fits_hbm;
  report.total_flops = layout.total_flops;
  report.recompute_flops = layout.recompute_flops;
  const ChipSpec& chip = run.topology.spec().chip;
  if (report.step_time_s > 0) {
    report.mfu = layout.total_flops / (layout.chips * chip.bf16_flops_per_s * report.step_time_s);
    report.hfu = (layout.total_flops + layout.recompute_flops) / (layout.chips * chip.bf16_flops_per_s * report.step_time_s);
    report.tokens_per_s_per_chip = workload.plan.global_batch_tokens / report.step_time_s / layout.chips;
    report.tflops_per_s_per_chip = layout.total_flops / layout.chips / report.step_time_s / 1e12;
  }
  report.parameters = param_count(workload.model);
  if (workload.token_budget > 0) {
    report.steps_to_train = std::ceil(workload.token_budget / workload.plan.global_batch_tokens);
    report.time_to_train_s = report.steps_to_train * report.step_time_s;
    report.training_cost_usd = layout.chips * report.time_to_train_s / 3600 * chip.chip_hour_price_usd;
  }
}

// Walk chip 0's compute ops in time order; every gap before one, and the wait after the
// last one until the step ends, is exposed communication, charged to the axes of the
// communication it waited for; waiting on compute elsewhere (a pipeline stage still
// working, another chip's compute) goes to "pipeline_bubble" or "other". So the axes sum
// to exposed_comm_s, step time minus chip 0's busy time.
class ExposedTime {
 public:
  ExposedTime(TrainingReport& report, const Program& program, const RunResult& run, bool pipeline)
      : report_(report), program_(program), run_(run), elsewhere_(pipeline ? "pipeline_bubble" : "other") {}

  // Charges every wait of chip 0; returns its compute ops in time order.
  std::vector<int> walk() {
    std::vector<int> computes;
    for (size_t i = 0; i < program_.size(); ++i) {
      // Ops absent on chip 0 (another stage's layers) are not its compute.
      if (program_[i].is(ProgramOpKind::Compute) && run_.present(static_cast<int>(i), kChip0)) {
        computes.push_back(static_cast<int>(i));
      }
    }
    std::sort(computes.begin(), computes.end(), [&](int a, int b) {
      return run_.span(a, 0, kChip0).start_s < run_.span(b, 0, kChip0).start_s;
    });
    double busy_until = 0;
    for (int i : computes) {
      const auto& span = run_.span(i, 0, kChip0);
      // Busy time: compute ops that overlap on the chip count once.
      report_.compute_time_s += std::max(0.0, span.end_s - std::max(span.start_s, busy_until));
      if (span.start_s > busy_until) {
        pipeline_waits.push_back(
            {busy_until, charge(busy_until, span.start_s, blocking_dependency(program_, run_, program_[i], kChip0))});
      }
      busy_until = std::max(busy_until, span.end_s);
    }
    if (report_.step_time_s > busy_until) charge(busy_until, report_.step_time_s, step_end_blocker(program_, run_));
    report_.exposed_comm_s = std::max(0.0, report_.step_time_s - report_.compute_time_s);
    return computes;
  }

  std::vector<std::pair<double, double>> pipeline_waits;   // (when, the wait's pipeline share) between computes

 private:
  static constexpr ChipId kChip0 = 0;

  void add(const std::vector<std::string>& axes, const std::string& category, double seconds) {
    if (seconds <= 0) return;
    for (const auto& a : axes) report_.exposed_comm_by_axis_s[a] += seconds / axes.size();
    report_.exposed_comm_by_category_s[category] += seconds;
  }

  // A wait [from, to] is charged along the chain of what it waited for: a collective for the
  // part it ran (its span within the wait), the part before it began to what the collective
  // itself waited for, and so on back; a send for its own flight, the rest (the neighbour's
  // compute) to `elsewhere`; a compute, to `elsewhere`. So a TP gather that starts late
  // because its input came from another stage is charged its own time, and the wait for the
  // stage goes to the bubble. Returns the pipeline's share of the wait (elsewhere and the
  // stage-to-stage sends), for pipeline_bubble_fraction.
  double charge(double from, double to, Blocker blocker) {
    double in_bubble = 0;
    // The program is acyclic, so the walk back ends: each step goes to an earlier op.
    while (to > from) {
      const int d = blocker.op;
      if (d < 0 || program_[d].is(ProgramOpKind::Compute)) break;
      const auto& span = run_.span(d, program_[d].repeat - 1, blocker.chip);
      std::vector<std::string> axes = run_.operations[d].traffic()->axes;
      if (program_[d].is(ProgramOpKind::Collective) && program_[d].collective().over_dcn) axes.push_back("DCN");
      const double began = std::clamp(span.start_s, from, to);
      add(axes, std::string(role_name(program_[d].role)), to - began);
      if (program_[d].is(ProgramOpKind::Send)) {
        in_bubble += to - began;
        to = began;
        break;
      }
      to = began;
      blocker = blocking_dependency(program_, run_, program_[d], blocker.chip);
    }
    if (to > from) {
      add({elsewhere_}, elsewhere_, to - from);
      in_bubble += to - from;
    }
    return in_bubble;
  }

  TrainingReport& report_;
  const Program& program_;
  const RunResult& run_;
  const std::string elsewhere_;
};

// The MoE AllToAlls: their exposed share and chip 0's time in them.
void all_to_all_figures(TrainingReport& report, const Program& program, const RunResult& run) {
  for (const OpRole role : {OpRole::MoeDispatch, OpRole::MoeCombine}) {
    const auto it = report.exposed_comm_by_category_s.find(std::string(role_name(role)));
    if (it != report.exposed_comm_by_category_s.end()) report.exposed_all_to_all_s += it->second;
  }
  for (size_t i = 0; i < program.size(); ++i) {
    if (!is_moe_all_to_all(program[i].role)) continue;
    for (int rep = 0; rep < program[i].repeat; ++rep) {
      const auto& span = run.span(static_cast<int>(i), rep, 0);
      report.all_to_all_time_s += span.end_s - span.start_s;
    }
  }
}

// The first stage's time waiting on other stages (their compute and the sends between them)
// within its span of passes, Megatron's bubble: its own TP and FSDP waits inside the passes
// count as pass time, as the formula's t_f and t_b include them.
double bubble_fraction(const Program& program, const RunResult& run, const std::vector<int>& computes,
                       const std::vector<std::pair<double, double>>& pipeline_waits) {
  double first = 1e300, last = 0;
  for (int i : computes) {
    if (!is_training_pass(program[i].role)) continue;
    const auto& span = run.span(i, 0, 0);
    first = std::min(first, span.start_s);
    last = std::max(last, span.end_s);
  }
  double bubble = 0;
  for (const auto& [when, waited] : pipeline_waits) {
    if (when >= first && when < last) bubble += waited;
  }
  return last > first ? bubble / (last - first) : 0.0;
}

// A layer in the middle of the model, block by block, beside the book's closed forms.
std::vector<LayerCost> middle_layer_costs(const TrainingWorkload& workload, const Program& program,
                                          const RunResult& run) {
  std::vector<LayerCost> out;
  const int layer = workload.model.layers / 2;
  const double peak = run.topology.spec().chip.bf16_flops_per_s * workload.plan.matmul_efficiency;
  for (const char* block : {"attn", "mlp"}) {
    LayerCost cost;
    cost.block = block;
    const std::string prefix = "L" + std::to_string(layer) + "." + block + ".";
    for (size_t i = 0; i < program.size(); ++i) {
      const auto& op = program[i];
      const auto& name = op.name;
      const bool match = name.rfind(prefix, 0) == 0 || name.find("." + prefix) != std::string::npos;
      if (!match) continue;
      const auto& result = run.operations[i];
      const bool forward = name.find(".fwd") != std::string::npos;
      if (op.is(ProgramOpKind::Compute)) {
        cost.t_math_s += result.time_s;
        if (op.role != OpRole::Recompute) cost.book_t_math_s += op.flops() / peak;   // the book counts no remat
        if (forward) cost.t_math_forward_s += result.time_s;
      } else {
        cost.t_comms_s += result.time_s;
        if (const FormulaResult* analytic = result.analytic()) cost.book_t_comms_s += analytic->time_s;
        if (forward) cost.t_comms_forward_s += result.time_s;
      }
    }
    out.push_back(cost);
  }
  return out;
}

}  // namespace

TrainingReport training_report(const TrainingWorkload& workload, const TrainingLayout& layout, const Program& program,
                               const RunResult& run) {
  TrainingReport report;
  headline_figures(report, workload, layout, program, run);
  ExposedTime exposed(report, program, run, layout.pipeline_stages > 1);
  const std::vector<int> computes = exposed.walk();
  report.moe = workload.model.moe.has_value();
  report.moe_stats = layout.moe;
  all_to_all_figures(report, program, run);
  if (layout.pipeline_stages > 1) {
    report.pipeline_bubble_fraction = bubble_fraction(program, run, computes, exposed.pipeline_waits);
  }
  report.per_layer = middle_layer_costs(workload, program, run);
  return report;
}

std::string time_to_train_text(const TrainingReport& report, double chip_hour_price_usd, const std::string& origin) {
  char line[256];
  std::snprintf(line, sizeof line, "%.0f steps, %.1f days", report.steps_to_train, report.time_to_train_s / 86400);
  std::string out = line;
  if (report.training_cost_usd > 0) {
    std::snprintf(line, sizeof line, ", $%.4g at $%.4g per chip-hour", report.training_cost_usd, chip_hour_price_usd);
    out += line;
    if (!origin.empty()) out += " (" + origin + ")";
  }
  return out;
}

}  // namespace podsim
