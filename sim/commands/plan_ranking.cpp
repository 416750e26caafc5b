#include "sim/commands/plan_ranking.hpp"

#include <algorithm>
#include <cmath>

namespace podsim {

void rank(std::vector<PlanCandidate>& candidates) {
  std::stable_sort(candidates.begin(), candidates.end(), [](const PlanCandidate& a, const PlanCandidate& b) {
    if (a.feasible != b.feasible) return a.feasible;
    if (a.report.fits_hbm != b.report.fits_hbm) return a.report.fits_hbm;
    if (a.simulated != b.simulated) return a.simulated;
    if (!a.simulated) return a.lower_bound_s < b.lower_bound_s;   // bounded plans by their bound
    return a.report.step_time_s < b.report.step_time_s;
  });
}

BookFsdpDegree book_fsdp_degree(const Scenario& scenario) {
  const TrainingWorkload& w = scenario.training();
  const auto& t = scenario.topology;
  double chips = t.slices;
  for (const auto& a : t.axes) chips *= a.size;
  const double m_x = t.axes.size() >= 3 ? 2 : 1, m_y = 1;
  BookFsdpDegree out;
  out.x_opt = std::sqrt(w.plan.global_batch_tokens / w.model.d_ff * m_x / m_y * chips);
  out.note = "sqrt(B/F * M_X/M_Y * N) with B = " + std::to_string(static_cast<long long>(w.plan.global_batch_tokens)) +
             ", F = " + std::to_string(w.model.d_ff) + ", M_X/M_Y = " + std::to_string(static_cast<int>(m_x / m_y)) +
             ", N = " + std::to_string(static_cast<long long>(chips));
  return out;
}

}  // namespace podsim
