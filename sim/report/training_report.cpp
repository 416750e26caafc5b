#include "sim/report/training_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace podsim {

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
    const double chips = chip.chips_of_devices(layout.chips);   // tpu7x: two devices a chip
    report.tokens_per_s_per_chip = workload.plan.global_batch_tokens / report.step_time_s / chips;
    report.tflops_per_s_per_chip = layout.total_flops / chips / report.step_time_s / 1e12;
  }
  report.parameters = param_count(workload.model);
  if (workload.token_budget > 0) {
    report.steps_to_train = std::ceil(workload.token_budget / workload.plan.global_batch_tokens);
    report.time_to_train_s = report.steps_to_train * report.step_time_s;
    report.training_cost_usd = chip.chips_of_devices(layout.chips) * report.time_to_train_s / 3600 * chip.chip_hour_price_usd;
  }
}

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
  const bool pipeline = layout.pipeline_stages > 1;
  // A chip already shown (the slowest is often the critical one, and both are chip 0 where
  // the chips run alike) is walked once.
  auto add_view = [&](ChipId chip, const std::string& view) {
    const auto same = std::find_if(report.views.begin(), report.views.end(),
                                   [&](const ChipBreakdown& v) { return v.chip == chip; });
    ChipBreakdown breakdown = same != report.views.end() ? *same : chip_breakdown(program, run, chip, pipeline, view);
    breakdown.view = view;
    report.views.push_back(std::move(breakdown));
  };
  add_view(0, "chip 0");
  add_view(slowest_chip(program, run), "slowest");
  add_view(critical_chip(program, run), "critical");
  const ChipBreakdown& chip0 = report.views.front();
  // The headline is the critical chip's: its compute, exposed communication and waits add up
  // to the step the others waited for (chip 0 where the chips run alike).
  const ChipBreakdown& headline = report.views.back();
  report.breakdown_chip = headline.chip;
  report.compute_time_s = headline.compute_time_s;
  report.exposed_comm_s = headline.exposed_comm_s;
  report.exposed_comm_by_axis_s = headline.exposed_comm_by_axis_s;
  report.exposed_comm_by_category_s = headline.exposed_comm_by_category_s;
  report.wait_for_peers_s = headline.wait_for_peers_s;
  report.wait_for_peers_by_axis_s = headline.wait_for_peers_by_axis_s;
  report.wait_for_peers_by_category_s = headline.wait_for_peers_by_category_s;
  report.moe = workload.model.moe.has_value();
  report.moe_stats = layout.moe;
  all_to_all_figures(report, program, run);
  if (layout.pipeline_stages > 1) {
    report.pipeline_bubble_fraction = bubble_fraction(program, run, chip0.computes, chip0.pipeline_waits);
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
