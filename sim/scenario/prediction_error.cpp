#include "sim/scenario/prediction_error.hpp"

#include <algorithm>
#include <cmath>

#include <boost/math/distributions/students_t.hpp>

#include "sim/scenario/calibration_files.hpp"

namespace podsim {

std::optional<double> residual_leverage(const ProfileResidual& r) {
  if (!r.leave_one_out) return std::nullopt;
  const double left_out = r.measured - *r.leave_one_out;
  if (std::abs(left_out) <= 1e-9 * std::abs(r.measured)) return std::nullopt;
  return 1 - (r.measured - r.fitted) / left_out;
}

std::vector<SoleEvidence> sole_evidence_rows(const std::map<std::string, ProfileResidual>& residuals,
                                             const std::map<std::string, ParameterEvidence>& evidence) {
  std::vector<SoleEvidence> out;
  for (const auto& [row, r] : residuals) {
    if (!evidence.empty()) {
      // The fit's own record: the first parameter (by name) the row is the sole evidence for.
      for (const auto& [parameter, e] : evidence)
        if (const auto it = e.shares.find(row); it != e.shares.end() && it->second >= kSoleEvidenceShare) {
          out.push_back({row, parameter});
          break;
        }
      continue;
    }
    if (const auto h = residual_leverage(r); h && *h >= kSoleEvidenceShare) out.push_back({row, ""});
  }
  return out;
}

double PredictionError::half_width_log(double coverage) const {
  return student_t_quantile((1 + coverage) / 2, static_cast<int>(rows.size())) * rms_log;
}

std::optional<PredictionError> profile_prediction_error(const CalibrationProfile& profile) {
  PredictionError e;
  e.profile = profile.name;
  e.sole_evidence = sole_evidence_rows(profile.residuals, profile.evidence);
  double sum = 0;
  for (const auto& [name, r] : profile.residuals) {
    if (!r.leave_one_out || !(*r.leave_one_out > 0)) continue;
    // A named copy: clang (as the sanitizer job builds) cannot capture a structured binding.
    const std::string& row = name;
    if (std::any_of(e.sole_evidence.begin(), e.sole_evidence.end(), [&](const SoleEvidence& s) { return s.row == row; }))
      continue;
    const double d = std::log(r.measured / *r.leave_one_out);
    sum += d * d;
    e.rows.push_back(row);
  }
  if (e.rows.empty()) return std::nullopt;
  e.rms_log = std::sqrt(sum / static_cast<double>(e.rows.size()));
  return e;
}

double student_t_quantile(double p, int dof) {
  return boost::math::quantile(boost::math::students_t_distribution<double>(dof), p);
}

PredictionInterval prediction_interval(double predicted, const PredictionError& error, double coverage) {
  const double w = error.half_width_log(coverage);
  return {predicted * std::exp(-w), predicted * std::exp(w)};
}

}  // namespace podsim
