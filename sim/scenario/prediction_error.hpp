#pragma once
// The error a calibration profile states for its predictions, and the interval it puts around
// one (issue 43; docs/calibration.md, "Prediction intervals"). The spread is the profile's own
// out-of-sample error: each row of its fit predicted by the fit redone without it (the
// `leave_one_out` of `fit.residuals`), as ln(measured / left-out prediction). A row that is the
// sole evidence for a parameter says nothing about that spread (without it the parameter is
// not identified, so its left-out prediction is arbitrary): such rows are named and left out.
// With n rows of errors d_i ~ N(0, s^2), a new row's error over their RMS is Student's t with n
// degrees of freedom, so the interval of coverage c is
//     predicted x exp(-+ t_{n,(1+c)/2} sqrt(mean d_i^2)).
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace podsim {

struct CalibrationProfile;   // calibration_files.hpp

// A row of a profile's fit (its `fit.residuals` entry): what was measured, what the fitted
// profile predicts, and what the fit without the row predicts.
struct ProfileResidual {
  double measured = 0, fitted = 0;
  std::optional<double> leave_one_out;
  std::string field;   // the summary field measured (calibrate writes it); empty in older profiles
  bool moe = false;    // the row's model routes tokens to experts (calibrate writes `moe: true`)
};

// A row of no fit the profile predicts (its `fit.checks` entry, written by
// scripts/fit_real_profiles.py from validate --measured): an out-of-sample error as it stands,
// ln(measured / predicted), of a run unlike the fit's rows.
struct ProfileCheck {
  double measured = 0, predicted = 0;
  std::string field;
  bool moe = false;      // an MoE run's (`moe: true`)
  std::string profile;   // the profile that predicted it, where another generation's (`profile:`)
};

// The kind of figure a summary field is, for which rows' errors its interval takes: "step" (a
// training, decode or prefill step: its time, MFU, tokens/s), "collective" (a collective's or a
// collectives scenario's time), "ttft", "tpot", "throughput" (serving's output tokens/s); empty
// for a field of none of these. Reads measurement fields ("ttft_s.mean") and the interval's
// quantity names ("ttft_s_mean") alike.
std::string quantity_kind(const std::string& field);
// The kind a run's figure takes its errors from: a step of a model that routes tokens to experts
// is "moe_step" (its MoE layers' dispatch, grouped matmuls and reruns are physics no dense row
// checks); every other figure its quantity_kind.
std::string figure_kind(const std::string& quantity_kind, bool moe);
// The kinds an interval is stated for, in the order reports list them.
extern const char* const kQuantityKinds[6];
// A kind's interval takes its own rows' errors when it has at least this many.
constexpr size_t kMinRowsOfKind = 2;

// The fit's record of what informs a fitted parameter (`fit.evidence`, written by calibrate):
// its standard deviation and, per row, the share of the parameter's information that row
// carries (1 - var / var without the row: 1 when nothing else identifies it).
struct ParameterEvidence {
  std::optional<double> sd;
  std::map<std::string, double> shares;   // by row name
};

// A row is the sole evidence for a parameter when it carries at least this share of the
// parameter's information: without it the parameter's variance grows more than tenfold (its sd
// more than threefold). The leverage h of a row (its share of what the fit knows in its own
// direction) reads the same: h >= 0.9.
constexpr double kSoleEvidenceShare = 0.9;

// The coverages an interval is stated at: 80% (one run in five outside) and 95%.
constexpr double kIntervalCoverages[] = {0.8, 0.95};

// A row's leverage from its residuals: in least squares a row's left-out residual is its fitted
// one over (1 - h), so h = 1 - (measured - fitted) / (measured - left out). None without a
// left-out prediction, or where it equals the measurement (within 1e-9 of it).
std::optional<double> residual_leverage(const ProfileResidual& r);

struct SoleEvidence {
  std::string row;
  std::string parameter;   // empty: found by the row's leverage (a profile without fit.evidence)
};
// The rows of `residuals` that are the sole evidence for a parameter: by `evidence` where the fit
// recorded it (a share >= kSoleEvidenceShare), else by each row's leverage (>= the same).
std::vector<SoleEvidence> sole_evidence_rows(const std::map<std::string, ProfileResidual>& residuals,
                                             const std::map<std::string, ParameterEvidence>& evidence);

struct PredictionError {
  std::string profile;
  // The kind of figure it is for (quantity_kind); empty: every kind's rows pooled.
  std::string kind;
  bool pooled = true;                       // false: over rows of `kind` only
  std::vector<std::string> rows;            // the rows whose left-out errors it is over
  std::vector<std::string> checks;          // of `rows`: checks (fit.checks), their errors as they stand
  std::vector<SoleEvidence> sole_evidence;  // rows left out of it, and why
  double rms_log = 0;                       // sqrt(mean ln(measured / left out)^2)
  // t_{n,(1+c)/2} rms_log: the half width of the interval of coverage c, in ln.
  double half_width_log(double coverage) const;
};

// From a profile's fit: the left-out errors of its fit's rows (sole evidence apart) and the errors
// of its checks; none when there are none. With a kind: over the rows and checks of that kind
// where there are at least kMinRowsOfKind of them and their RMS is not below the pool's, else
// every row pooled (`pooled`). A dense run's (`moe` false, and a kind not "moe_step") leaves MoE
// rows and checks out of the pool too: an MoE step's miss says nothing of a dense step's.
// `without`: a row left out (validate states a check row's interval without the row's own error).
std::optional<PredictionError> profile_prediction_error(const CalibrationProfile& profile, const std::string& kind = "",
                                                        const std::string& without = "", bool moe = false);

// Student's t quantile: the value below which a fraction p of the distribution with `dof`
// degrees of freedom lies (dof >= 1, 0 < p < 1).
double student_t_quantile(double p, int dof);

struct PredictionInterval {
  double low = 0, high = 0;
};
// The interval of coverage c around `predicted`: predicted x exp(-+ half width). A quantity
// inverse to a time (MFU, a throughput) takes the time's interval inverted: the same ratios.
PredictionInterval prediction_interval(double predicted, const PredictionError& error, double coverage);

}  // namespace podsim
