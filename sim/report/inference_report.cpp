#include "sim/report/inference_report.hpp"

#include <algorithm>

#include "sim/report/chip_breakdown.hpp"

namespace podsim {

InferenceReport inference_report(const InferencePlan& plan, const InferenceLayout& layout, const Program& program,
                                 const RunResult& run) {
  InferenceReport r;
  r.decode = plan.phase == InferencePhase::Decode;
  r.layout = layout;
  r.step_time_s = run.total_time_s;
  for (size_t i = 0; i < program.size(); ++i) {
    if (program[i].is(ProgramOpKind::Compute)) r.compute_time_s += run.span(static_cast<int>(i), 0, 0).end_s -
                                                                       run.span(static_cast<int>(i), 0, 0).start_s;
  }
  r.wait_for_peers_s = chip_breakdown(program, run, 0, false, "chip 0").wait_for_peers_s;
  r.exposed_comm_s = std::max(0.0, r.step_time_s - r.compute_time_s - r.wait_for_peers_s);
  int dispatches = 0;
  for (size_t i = 0; i < program.size(); ++i) {
    const auto& op = program[i];
    if (op.role == OpRole::Experts) {
      r.moe = true;
      const ComputeWork& work = op.compute();
      r.expert_compute_mean_s += work.compute_s;
      r.expert_compute_busiest_s += work.compute_s_by_position.empty()
                                        ? work.compute_s
                                        : *std::max_element(work.compute_s_by_position.begin(), work.compute_s_by_position.end());
    }
    if (is_moe_all_to_all(op.role)) {
      const auto& span = run.span(static_cast<int>(i), 0, 0);
      r.all_to_all_time_s += span.end_s - span.start_s;
    }
    if (op.role == OpRole::MoeDispatch) {
      // Chip 0's row of the pair sizes without itself (uniform: V / G^2 to each of G - 1 others).
      const int g = layout.expert_degree;
      double sent = 0;
      const CollectiveSpec& dispatch = op.collective();
      for (int j = 1; j < g; ++j)
        sent += dispatch.pair_bytes.empty() ? dispatch.bytes / (double(g) * g) : dispatch.pair_bytes[j];
      r.dispatch_bytes_per_chip += sent;
      ++dispatches;
    }
  }
  if (dispatches > 0) r.dispatch_bytes_per_chip /= dispatches;
  if (r.step_time_s > 0) {
    r.tokens_per_s = layout.tokens / r.step_time_s;
    r.tokens_per_s_per_chip = r.tokens_per_s / run.topology.spec().chip.chips_of_devices(layout.chips);
  }
  return r;
}

}  // namespace podsim
