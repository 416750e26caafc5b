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
      // The fit's own record: the parameter the row is the sole evidence for. Where it is for
      // several (a parameter coupled to the row's own one loses its identification with it), the
      // one it carries the most of; at shares within 0.005 (as the profile prints them), the one
      // the other rows inform least (the smallest sum of their shares); then the first by name.
      std::string best;
      double best_share = 0, least = 0;
      for (const auto& [parameter, e] : evidence) {
        const auto it = e.shares.find(row);
        if (it == e.shares.end() || it->second < kSoleEvidenceShare) continue;
        double others = 0;
        for (const auto& [other, share] : e.shares) others += other == row ? 0.0 : share;
        const bool tie = std::abs(it->second - best_share) <= 0.005;
        if (best.empty() || (!tie && it->second > best_share) || (tie && others < least))
          best = parameter, best_share = it->second, least = others;
      }
      if (!best.empty()) out.push_back({row, best});
      continue;
    }
    if (const auto h = residual_leverage(r); h && *h >= kSoleEvidenceShare) out.push_back({row, ""});
  }
  return out;
}

double PredictionError::half_width_log(double coverage) const {
  return student_t_quantile((1 + coverage) / 2, static_cast<int>(rows.size())) * rms_log;
}

const char* const kQuantityKinds[6] = {"step", "moe_step", "collective", "ttft", "tpot", "throughput"};

std::string figure_kind(const std::string& quantity_kind, bool moe) {
  return moe && quantity_kind == "step" ? "moe_step" : quantity_kind;
}

std::string quantity_kind(const std::string& field) {
  auto starts = [&](const char* prefix) { return field.rfind(prefix, 0) == 0; };
  if (starts("ttft_s")) return "ttft";
  if (starts("tpot_s")) return "tpot";
  if (starts("output_token_throughput")) return "throughput";
  if (field == "total_time_s" || (starts("operations.") && field.size() > 7 && field.substr(field.size() - 7) == ".time_s"))
    return "collective";
  for (const char* step : {"step_time_s", "mfu", "tokens_per_s_per_chip", "decode_step_time_s", "prefill_time_s",
                           "tokens_per_s"})
    if (field == step) return "step";
  return "";
}

namespace {

struct LogError {
  std::string row;
  std::string kind;
  double d = 0;
  bool check = false;
  bool moe = false;
};

// Every out-of-sample error the profile records: its fit rows' left-out ones (sole evidence
// apart) and its checks'.
std::vector<LogError> recorded_errors(const CalibrationProfile& profile, const std::vector<SoleEvidence>& sole) {
  std::vector<LogError> out;
  for (const auto& [name, r] : profile.residuals) {
    if (!r.leave_one_out || !(*r.leave_one_out > 0)) continue;
    // A named copy: clang (as the sanitizer job builds) cannot capture a structured binding.
    const std::string& row = name;
    if (std::any_of(sole.begin(), sole.end(), [&](const SoleEvidence& s) { return s.row == row; })) continue;
    out.push_back({row, figure_kind(quantity_kind(r.field), r.moe), std::log(r.measured / *r.leave_one_out), false, r.moe});
  }
  for (const auto& [name, c] : profile.checks)
    if (c.measured > 0 && c.predicted > 0)
      out.push_back({name, figure_kind(quantity_kind(c.field), c.moe), std::log(c.measured / c.predicted), true, c.moe});
  return out;
}

}  // namespace

std::optional<PredictionError> profile_prediction_error(const CalibrationProfile& profile, const std::string& kind,
                                                        const std::string& without, bool moe) {
  PredictionError e;
  e.profile = profile.name;
  e.sole_evidence = sole_evidence_rows(profile.residuals, profile.evidence);
  std::vector<LogError> errors = recorded_errors(profile, e.sole_evidence);
  moe = moe || kind == "moe_step";
  errors.erase(std::remove_if(errors.begin(), errors.end(),
                              [&](const LogError& x) { return x.row == without || (x.moe && !moe); }),
               errors.end());
  const auto of_kind = !kind.empty() ? static_cast<size_t>(std::count_if(
                                           errors.begin(), errors.end(), [&](const LogError& x) { return x.kind == kind; }))
                                     : 0;
  auto over = [&](bool pooled) {
    PredictionError out = e;
    out.pooled = pooled;
    out.kind = pooled ? "" : kind;
    double sum = 0;
    for (const LogError& x : errors) {
      if (!pooled && x.kind != kind) continue;
      sum += x.d * x.d;
      out.rows.push_back(x.row);
      if (x.check) out.checks.push_back(x.row);
    }
    if (!out.rows.empty()) out.rms_log = std::sqrt(sum / static_cast<double>(out.rows.size()));
    return out;
  };
  const PredictionError pooled = over(true);
  if (pooled.rows.empty()) return std::nullopt;
  if (of_kind < kMinRowsOfKind) return pooled;
  // A kind's rows widen its interval, never narrow it below the profile's pooled spread: a few
  // rows of one kind that agree (two concurrencies of one serving run) are not independent
  // enough to claim more precision than every row of the profile shows.
  const PredictionError own = over(false);
  return own.rms_log >= pooled.rms_log ? own : pooled;
}

double student_t_quantile(double p, int dof) {
  return boost::math::quantile(boost::math::students_t_distribution<double>(dof), p);
}

PredictionInterval prediction_interval(double predicted, const PredictionError& error, double coverage) {
  const double w = error.half_width_log(coverage);
  return {predicted * std::exp(-w), predicted * std::exp(w)};
}

}  // namespace podsim
