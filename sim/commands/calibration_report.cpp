#include "sim/commands/calibration_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "sim/scenario/calibration_files.hpp"
#include "sim/scenario/units.hpp"

namespace podsim {

std::string measured_text(const std::string& field, double v) {
  if (is_time_field(field)) return human_time(v);
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.4g", v);   // a rate or count, to a time's 4 figures
  return buffer;
}

std::string percent_text(double e) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%+.1f%%", 100 * e);
  return buffer;
}

namespace {

std::string magnitude(double e) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f%%", 100 * e);
  return buffer;
}

// "rms default 41.4%, fitted 5.7%; mean |error| 3.0%, max 10.1%; leave-one-out mean 4.2%, max 14.2%"
std::string errors_line(const ErrorSummary& e) {
  std::string out = "rms default " + magnitude(e.rms_default) + ", fitted " + magnitude(e.rms_fitted) +
                    "; mean |error| " + magnitude(e.mean_abs_fitted) + ", max " + magnitude(e.max_abs_fitted);
  if (e.max_abs_leave_one_out)
    return out + "; leave-one-out mean " + magnitude(*e.mean_abs_leave_one_out) + ", max " + magnitude(*e.max_abs_leave_one_out);
  return out + "; no leave-one-out (--no-leave-one-out, or no row whose absence leaves more rows than fitted values)";
}

void parameter_line(std::string& out, const CalibrationParameter& p, const std::string& owner) {
  char line[512];
  std::snprintf(line, sizeof line, "  %-20s %-16s %-14s %-13s [%s, %s]%s\n", p.name.c_str(), owner.c_str(),
                p.row.human_text(p.value).c_str(),
                !p.fitted ? "-" : std::isfinite(p.sd) ? p.row.human_text(p.sd).c_str() : "n/a",
                p.row.human_text(p.low).c_str(), p.row.human_text(p.high).c_str(),
                !p.fitted ? "  (not fitted)" : p.at_bound() ? "  at bound" : "");
  out += line;
}

std::string parameters_block(const CalibrationResult& r) {
  std::string out = "parameter              profile          value          sd            bounds\n";
  for (const auto& profile : r.profiles)
    for (const auto& p : profile.parameters)
      if (!p.shared) parameter_line(out, p, profile.name);
  for (const auto& p : r.profiles.front().parameters)
    if (p.shared) parameter_line(out, p, "(shared)");
  return out;
}

void row_line(std::string& out, const CalibratedMeasurement& row) {
  const std::string loo = row.leave_one_out_predicted ? measured_text(row.field, *row.leave_one_out_predicted) : "-";
  const std::string loo_error =
      row.leave_one_out_predicted ? percent_text(CalibratedMeasurement::error(*row.leave_one_out_predicted, row.measured)) : "-";
  char line[768];
  std::snprintf(line, sizeof line, "  %-20s %-13s %-11s %-7s %-11s %-7s %-14s %-7s %s\n", row.name.c_str(),
                measured_text(row.field, row.measured).c_str(), measured_text(row.field, row.default_predicted).c_str(),
                percent_text(CalibratedMeasurement::error(row.default_predicted, row.measured)).c_str(),
                measured_text(row.field, row.fitted_predicted).c_str(),
                percent_text(CalibratedMeasurement::error(row.fitted_predicted, row.measured)).c_str(), loo.c_str(),
                loo_error.c_str(), row.published.c_str());
  out += line;
}

}  // namespace

std::string calibration_table(const MeasurementFile& file, const CalibrationResult& r) {
  char line[512];
  std::snprintf(line, sizeof line, "%s: %zu measurements, %zu profile%s, %d simulations; hop model %s\n", file.name.c_str(),
                r.rows.size(), r.profiles.size(), r.profiles.size() == 1 ? "" : "s", r.simulations,
                std::string(to_string(r.hop_model)).c_str());
  std::string out = line + parameters_block(r);
  for (const auto& profile : r.profiles) {
    out += "profile " + profile.name + " (" + profile.chip + "): " + std::to_string(profile.rows.size()) + " measurements\n";
    out += "  measurement          measured      default     error   fitted      error   leave-one-out  error   "
           "as published\n";
    for (size_t i : profile.rows) row_line(out, r.rows[i]);
    out += "  " + profile.name + ": " + errors_line(profile.errors) + "\n";
  }
  return out + "overall: " + errors_line(r.errors) + "\n";
}

namespace {

std::string parameters_yaml(const CalibratedProfile& profile) {
  std::string out = "parameters:\n";
  for (const auto& p : profile.parameters) {
    if (p.fixed) out += "  " + p.name + ": " + p.row.yaml_text(p.value) + "   # fixed (calibrate --fix): measured elsewhere, not fitted\n";
    if (!p.fitted) continue;
    out += "  " + p.name + ": " + p.row.yaml_text(p.value) +
           (std::isfinite(p.sd) ? "   # sd " + p.row.human_text(p.sd)
                                : std::string("   # sd not estimated: no more measurements than fitted parameters")) +
           (p.shared ? "; shared by every profile of the fit" : "") + (p.at_bound() ? "; at bound" : "") + "\n";
  }
  return out;
}

// Each fitted parameter's sd and the rows that inform it: their share of its information
// (fit_evidence.hpp), rows under 1% left out. What validate marks sole evidence reads this.
std::string evidence_yaml(const CalibratedProfile& profile) {
  std::string out;
  for (const auto& p : profile.parameters) {
    if (!p.fitted) continue;
    std::string rows;
    for (const auto& [row, share] : p.evidence) {
      if (!(share >= 0.01)) continue;
      char text[32];
      std::snprintf(text, sizeof text, "%.3g", share);
      rows += (rows.empty() ? "" : ", ") + row + ": " + text;
    }
    out += "    " + p.name + ": {sd: " + (std::isfinite(p.sd) ? number_text(p.sd) : std::string("null")) + ", rows: {" + rows + "}}\n";
  }
  if (out.empty()) return "";
  return "  evidence:   # each fitted parameter: its sd, and each row's share of its information (1 - var / var "
         "without the row; 1: nothing else identifies it; docs/calibration.md)\n" + out;
}

std::string fit_yaml(const MeasurementFile& file, const CalibrationResult& r, const CalibratedProfile& profile) {
  const ErrorSummary& e = profile.errors;
  std::string at_bound;
  for (const auto& p : profile.parameters)
    if (p.at_bound()) at_bound += (at_bound.empty() ? "" : ", ") + p.name;
  std::string out = "fit:\n  measurements: " + file.path + "\n  rms_error_default: " + number_text(e.rms_default) +
                    "\n  rms_error_fitted: " + number_text(e.rms_fitted) + "\n  mean_abs_error_fitted: " +
                    number_text(e.mean_abs_fitted) + "\n  max_abs_error_fitted: " + number_text(e.max_abs_fitted) +
                    "\n  max_leave_one_out_error: " +
                    (e.max_abs_leave_one_out ? number_text(*e.max_abs_leave_one_out)
                                             : std::string("null   # no leave-one-out ran (--no-leave-one-out, or no more "
                                                           "measurements than fitted parameters + 1)")) +
                    "\n  at_bound: [" + at_bound + "]" +
                    (at_bound.empty() ? "" : "   # fitted within 1% of its range's width of a bound: a limit, not a measurement") +
                    "\n" + evidence_yaml(profile) + "  residuals:\n";
  for (size_t i : profile.rows) {
    const auto& row = r.rows[i];
    out += "    " + row.name + ": {measured: " + number_text(row.measured) + ", fitted: " + number_text(row.fitted_predicted) +
           (row.leave_one_out_predicted ? ", leave_one_out: " + number_text(*row.leave_one_out_predicted) : std::string()) +
           ", field: " + row.field + (row.moe ? ", moe: true" : "") + "}\n";
  }
  return out;
}

}  // namespace

std::string calibration_profile_yaml(const MeasurementFile& file, const CalibrationResult& r,
                                     const CalibratedProfile& profile, const std::string& profile_name) {
  std::string out = "# A podsim calibration profile (podsim calibrate; docs/calibration.md), fit on\n# " + file.path +
                    " (" + std::to_string(profile.rows.size()) + " of its " + std::to_string(r.rows.size()) +
                    " measurements). Apply it with\n#   hardware: {preset: " + profile.chip + ", profile: THIS_FILE}\n";
  out += "version: 1\nname: " + profile_name + "\nchip: " + profile.chip + "\nhop_model: " +
         std::string(to_string(r.hop_model)) + "\n";
  // The machine the rows ran, so the profile predicts with the model it was fit under.
  if (profile.mxu_padding) out += "mxu_padding: true\n";
  if (profile.antipodal_split) out += "antipodal_split: true\n";
  if (profile.reductions_on_tensor_core) out += "reductions_on_tensor_core: true\n";
  if (profile.compute_model != ComputeModel::Book)
    out += "compute_model: " + std::string(to_string(profile.compute_model)) + "\n";
  return out + parameters_yaml(profile) + fit_yaml(file, r, profile);
}

}  // namespace podsim
