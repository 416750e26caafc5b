#include "sim/report/inference_report.hpp"

#include <algorithm>

namespace podsim {

InferenceReport inference_report(const InferencePlan& plan, const InferenceLayout& layout, const Program& program,
                                 const RunResult& run) {
  InferenceReport r;
  r.decode = plan.phase == InferencePhase::Decode;
  r.layout = layout;
  r.step_time_s = run.total_time_s;
  for (size_t i = 0; i < program.size(); ++i) {
    if (program[i].kind == ProgramOpKind::Compute) r.compute_time_s += run.span(static_cast<int>(i), 0, 0).end_s -
                                                                       run.span(static_cast<int>(i), 0, 0).start_s;
  }
  r.exposed_comm_s = std::max(0.0, r.step_time_s - r.compute_time_s);
  if (r.step_time_s > 0) {
    r.tokens_per_s = layout.tokens / r.step_time_s;
    r.tokens_per_s_per_chip = r.tokens_per_s / layout.chips;
  }
  return r;
}

}  // namespace podsim
