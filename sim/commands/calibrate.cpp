#include "sim/commands/calibrate.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>

#include "sim/commands/run_command.hpp"
#include "sim/report/summary_fields.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/scenario/units.hpp"

namespace podsim {

std::vector<CalibrationParameter> calibration_parameters() {
  // The rows with a fit range (sim/scenario/hardware_parameters.cpp says why each is narrower
  // than what a scenario accepts), starting from the ideal machine's value.
  std::vector<CalibrationParameter> out;
  for (const HardwareParameter& row : hardware_parameters())
    if (row.fit) out.push_back({row.key, row.default_value.value_or(0), row.fit->low, row.fit->high, 0, false, row});
  return out;
}

namespace {

// "a, b or c": the parameters --fit takes.
std::string fit_names() {
  const auto parameters = calibration_parameters();
  std::string text;
  for (size_t i = 0; i < parameters.size(); ++i)
    text += (i == 0 ? "" : i + 1 == parameters.size() ? " or " : ", ") + parameters[i].name;
  return text;
}

// The scenario with the hop model and the fitted parameters set on it, as its rows set them.
Scenario with_parameters(Scenario scenario, HopModel model, const std::vector<CalibrationParameter>& parameters) {
  scenario.hop_model = model;
  for (const auto& p : parameters) {
    if (!p.fitted) continue;
    // The fit's own values: were one not finite, the run would fail on a value the user never gave.
    if (!std::isfinite(p.value))
      throw std::runtime_error("calibrate: the fit diverged (" + p.name + " = " + number_text(p.value) +
                               "); the measurements cannot be matched within the parameters' bounds");
    p.row.set(scenario, p.value);
  }
  return scenario;
}

// The measurement's field in the summary of a run of `scenario`.
double measure(const Measurement& m, const Scenario& scenario) {
  RunCommandOptions options;
  options.reproducible = true;
  const auto summary = nlohmann::json::parse(simulate_summary_json(scenario, options));
  try {
    return summary_field_value(summary, m.field);
  } catch (const std::out_of_range& e) {
    throw InputError(m.where, "field", m.field, std::string(e.what()) + "; expected a number the run's summary.json has");
  }
}

double run_measurement(const Measurement& m, const std::vector<ScenarioOverride>& extra) {
  std::vector<ScenarioOverride> overrides = m.overrides;
  overrides.insert(overrides.end(), extra.begin(), extra.end());
  return measure(m, load_scenario(m.scenario_path, overrides));
}

double logistic(double u) { return 1 / (1 + std::exp(-u)); }

std::vector<std::vector<double>> inverse(std::vector<std::vector<double>> a) {
  const size_t n = a.size();
  std::vector<std::vector<double>> inv(n, std::vector<double>(n, 0.0));
  for (size_t i = 0; i < n; ++i) inv[i][i] = 1;
  for (size_t c = 0; c < n; ++c) {
    size_t pivot = c;
    for (size_t r = c + 1; r < n; ++r)
      if (std::abs(a[r][c]) > std::abs(a[pivot][c])) pivot = r;
    std::swap(a[c], a[pivot]);
    std::swap(inv[c], inv[pivot]);
    if (std::abs(a[c][c]) < 1e-300) return {};
    const double d = a[c][c];
    for (size_t k = 0; k < n; ++k) {
      a[c][k] /= d;
      inv[c][k] /= d;
    }
    for (size_t r = 0; r < n; ++r) {
      if (r == c) continue;
      const double f = a[r][c];
      for (size_t k = 0; k < n; ++k) {
        a[r][k] -= f * a[c][k];
        inv[r][k] -= f * inv[c][k];
      }
    }
  }
  return inv;
}

// The solution of a x = b, through the inverse (the matrices here are the fit's 1-7 parameters
// square); zeros when a is singular, which the damping of the steps keeps it from being.
std::vector<double> solve(const std::vector<std::vector<double>>& a, const std::vector<double>& b) {
  const auto inv = inverse(a);
  std::vector<double> x(b.size(), 0.0);
  if (inv.empty()) return x;
  for (size_t i = 0; i < b.size(); ++i)
    for (size_t k = 0; k < b.size(); ++k) x[i] += inv[i][k] * b[k];
  return x;
}

struct Fit {
  std::vector<double> u;           // unbounded coordinates of the fitted parameters
  std::vector<double> residuals;   // relative errors
  double cost = std::numeric_limits<double>::infinity();   // sum of squares
  std::vector<std::vector<double>> jtj;   // at the optimum
};

class Fitter {
 public:
  // `scenarios`: each measurement's, loaded once; a candidate sets its parameters on a copy.
  Fitter(const MeasurementFile& file, const std::vector<Scenario>& scenarios, HopModel model,
         std::vector<CalibrationParameter> parameters, int& simulations)
      : file_(file), scenarios_(scenarios), model_(model), parameters_(std::move(parameters)), simulations_(simulations) {
    for (size_t i = 0; i < parameters_.size(); ++i)
      if (parameters_[i].fitted) index_.push_back(i);
  }

  std::vector<CalibrationParameter> at(const std::vector<double>& u) const {
    auto p = parameters_;
    for (size_t k = 0; k < index_.size(); ++k) {
      auto& q = p[index_[k]];
      q.value = q.low + (q.high - q.low) * logistic(u[k]);
    }
    return p;
  }

  std::vector<double> start() const {
    std::vector<double> u;
    for (size_t i : index_) {
      const auto& q = parameters_[i];
      // The preset's value, nudged inside the bounds (the logistic never reaches them).
      const double f = std::clamp((q.value - q.low) / (q.high - q.low), 0.02, 0.98);
      u.push_back(std::log(f / (1 - f)));
    }
    return u;
  }

  std::vector<double> residuals(const std::vector<double>& u, const std::vector<int>& use) {
    const auto parameters = at(u);
    std::vector<double> r;
    for (int i : use) {
      const auto& m = file_.measurements[i];
      ++simulations_;
      r.push_back((measure(m, with_parameters(scenarios_[i], model_, parameters)) - m.measured) / m.measured);
    }
    return r;
  }

  // Levenberg-Marquardt on the measurements `use`, from u0.
  Fit fit(std::vector<double> u, const std::vector<int>& use) {
    const size_t n = index_.size();
    Fit best;
    best.u = u;
    best.residuals = residuals(u, use);
    best.cost = sum_squares(best.residuals);
    double lambda = 1e-2;
    for (int iteration = 0; iteration < 60 && n > 0; ++iteration) {
      // Forward-difference Jacobian in u.
      std::vector<std::vector<double>> j(best.residuals.size(), std::vector<double>(n));
      for (size_t k = 0; k < n; ++k) {
        auto v = best.u;
        const double h = 1e-4 * std::max(1.0, std::abs(v[k]));
        v[k] += h;
        const auto r = residuals(v, use);
        for (size_t i = 0; i < r.size(); ++i) j[i][k] = (r[i] - best.residuals[i]) / h;
      }
      std::vector<std::vector<double>> a(n, std::vector<double>(n, 0.0));
      std::vector<double> g(n, 0.0);
      for (size_t i = 0; i < j.size(); ++i)
        for (size_t p = 0; p < n; ++p) {
          g[p] += j[i][p] * best.residuals[i];
          for (size_t q = 0; q < n; ++q) a[p][q] += j[i][p] * j[i][q];
        }
      best.jtj = a;
      bool improved = false;
      for (int attempt = 0; attempt < 8 && !improved; ++attempt) {
        auto m = a;
        for (size_t p = 0; p < n; ++p) m[p][p] += lambda * std::max(a[p][p], 1e-12);
        std::vector<double> rhs(n);
        for (size_t p = 0; p < n; ++p) rhs[p] = -g[p];
        const auto step = solve(m, rhs);
        auto v = best.u;
        for (size_t p = 0; p < n; ++p) v[p] += step[p];
        const auto r = residuals(v, use);
        const double cost = sum_squares(r);
        if (cost < best.cost) {
          const double gain = best.cost - cost;
          best.u = v;
          best.residuals = r;
          best.cost = cost;
          lambda = std::max(lambda / 3, 1e-9);
          improved = true;
          if (gain < 1e-12 * std::max(1e-30, cost) || gain < 1e-16) return best;
        } else {
          lambda *= 4;
        }
      }
      if (!improved) break;
    }
    return best;
  }

  const std::vector<size_t>& index() const { return index_; }

  static double sum_squares(const std::vector<double>& r) {
    double s = 0;
    for (double x : r) s += x * x;
    return s;
  }

 private:
  const MeasurementFile& file_;
  const std::vector<Scenario>& scenarios_;
  HopModel model_;
  std::vector<CalibrationParameter> parameters_;
  std::vector<size_t> index_;
  int& simulations_;
};

}  // namespace

double predict(const Measurement& m, HopModel model, const std::vector<CalibrationParameter>& parameters) {
  return measure(m, with_parameters(load_scenario(m.scenario_path, m.overrides), model, parameters));
}

// Standard deviations of the fitted parameters (NaN where not estimated).
void standard_deviations(const Fitter& fitter, const Fit& best, size_t measurements,
                         std::vector<CalibrationParameter>& parameters) {
  // Standard deviations: cov(u) = s^2 (J^T J)^-1 with s^2 = cost / (N - P), mapped through the
  // logistic's slope.
  const size_t n = fitter.index().size();
  // Not estimated (no residual degrees of freedom, or J^T J singular) stays NaN: written as such, never as 0.
  for (size_t k = 0; k < n; ++k) parameters[fitter.index()[k]].sd = std::numeric_limits<double>::quiet_NaN();
  const double dof = static_cast<double>(measurements) - static_cast<double>(n);
  if (n > 0 && dof > 0 && !best.jtj.empty()) {
    const auto cov = inverse(best.jtj);
    if (!cov.empty()) {
      const double s2 = best.cost / dof;
      for (size_t k = 0; k < n; ++k) {
        auto& q = parameters[fitter.index()[k]];
        const double l = logistic(best.u[k]);
        const double slope = (q.high - q.low) * l * (1 - l);
        q.sd = slope * std::sqrt(std::max(0.0, s2 * cov[k][k]));
      }
    }
  }
}

// The RMS errors before and after the fit, and the largest fitted and left-out ones.
void summarise_errors(CalibrationResult& result) {
  double sd = 0, sf = 0;
  for (const auto& r : result.rows) {
    sd += std::pow(CalibratedMeasurement::error(r.default_predicted, r.measured), 2);
    const double e = CalibratedMeasurement::error(r.fitted_predicted, r.measured);
    sf += e * e;
    result.max_abs_fitted = std::max(result.max_abs_fitted, std::abs(e));
    if (r.leave_one_out_predicted)
      result.max_abs_leave_one_out =
          std::max(result.max_abs_leave_one_out, std::abs(CalibratedMeasurement::error(*r.leave_one_out_predicted, r.measured)));
  }
  result.rms_default = std::sqrt(sd / result.rows.size());
  result.rms_fitted = std::sqrt(sf / result.rows.size());
}

CalibrationResult calibrate(const MeasurementFile& file, const CalibrationOptions& options) {
  CalibrationResult result;
  auto say = [&](const std::string& line) {
    if (options.progress) options.progress(line);
  };
  // Every measurement runs on one chip preset: a profile is per chip.
  std::vector<Scenario> scenarios;
  for (const auto& m : file.measurements) {
    scenarios.push_back(load_scenario(m.scenario_path, m.overrides));
    const std::string& chip = scenarios.back().topology.chip.name;
    if (result.chip.empty()) result.chip = chip;
    if (chip != result.chip)
      throw InputError(m.where, "scenario", m.scenario_path,
                       "a " + chip + " scenario among " + result.chip +
                           " ones; expected measurements of one chip (a profile is fit per chip)");
  }
  auto parameters = calibration_parameters();
  for (auto& p : parameters) {
    // A parameter without an ideal value (hop_latency) starts from the first scenario's chip.
    if (!p.row.default_value) p.value = p.row.get(scenarios.front());
    p.fitted = std::find(options.fit.begin(), options.fit.end(), p.name) != options.fit.end();
  }
  for (const auto& name : options.fit) {
    if (std::none_of(parameters.begin(), parameters.end(), [&](const auto& p) { return p.name == name; }))
      throw InputError({"command line", 0, 0}, "--fit", name, "unknown parameter; expected " + fit_names());
  }
  const long fitted = std::count_if(parameters.begin(), parameters.end(), [](const auto& p) { return p.fitted; });
  if (fitted > static_cast<long>(file.measurements.size()))
    throw InputError({"command line", 0, 0}, "--fit", std::to_string(fitted) + " parameters",
                     "more parameters than the " + std::to_string(file.measurements.size()) +
                         " measurements can identify; expected at most that many (fewer leave room for leave-one-out)");
  for (size_t i = 0; i < file.measurements.size(); ++i) {
    const auto& m = file.measurements[i];
    CalibratedMeasurement row;
    row.name = m.name;
    row.field = m.field;
    row.source = m.source;
    row.measured = m.measured;
    row.default_predicted = measure(m, scenarios[i]);
    ++result.simulations;
    result.rows.push_back(row);
  }
  std::vector<int> all(file.measurements.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  std::vector<HopModel> models = options.hop_model ? std::vector<HopModel>{*options.hop_model}
                                                   : std::vector<HopModel>{HopModel::Floor, HopModel::Additive};
  Fit best;
  std::optional<Fitter> best_fitter;
  for (HopModel model : models) {
    say(std::string("fitting under the ") + std::string(to_string(model)) + " hop model");
    Fitter fitter(file, scenarios, model, parameters, result.simulations);
    Fit fit = fitter.fit(fitter.start(), all);
    if (fit.cost < best.cost) {
      best = fit;
      best_fitter.emplace(fitter);
      result.hop_model = model;
    }
  }
  Fitter& fitter = *best_fitter;
  result.parameters = fitter.at(best.u);
  standard_deviations(fitter, best, all.size(), result.parameters);
  const size_t n = fitter.index().size();   // the fitted parameters
  for (size_t i = 0; i < all.size(); ++i) {
    result.rows[i].fitted_predicted = result.rows[i].measured * (1 + best.residuals[i]);
  }
  if (options.leave_one_out && all.size() > n + 1) {
    for (size_t i = 0; i < all.size(); ++i) {
      say("leave-one-out " + std::to_string(i + 1) + " of " + std::to_string(all.size()) + ": without " +
          file.measurements[i].name);
      std::vector<int> others;
      for (int j : all)
        if (j != static_cast<int>(i)) others.push_back(j);
      const Fit fit = fitter.fit(best.u, others);
      result.rows[i].leave_one_out_predicted =
          file.measurements[i].measured * (1 + fitter.residuals(fit.u, {static_cast<int>(i)}).front());
    }
  }
  summarise_errors(result);
  return result;
}

namespace {

std::string measured_text(const std::string& field, double v) {
  const bool time = field.size() > 2 && field.compare(field.size() - 2, 2, "_s") == 0;
  return time ? human_time(v) : number_text(v);
}

std::string percent(double e) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%+.1f%%", 100 * e);
  return buffer;
}

}  // namespace

std::string calibration_table(const MeasurementFile& file, const CalibrationResult& r) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%s: %zu measurements of %s, %d simulations; hop model %s\n", file.name.c_str(),
                r.rows.size(), r.chip.c_str(), r.simulations, std::string(to_string(r.hop_model)).c_str());
  out += line;
  out += "parameter              value          sd            bounds\n";
  for (const auto& p : r.parameters) {
    std::snprintf(line, sizeof line, "  %-20s %-14s %-13s [%s, %s]%s\n", p.name.c_str(), p.row.human_text(p.value).c_str(),
                  !p.fitted ? "-" : std::isfinite(p.sd) ? p.row.human_text(p.sd).c_str() : "n/a", p.row.human_text(p.low).c_str(),
                  p.row.human_text(p.high).c_str(), p.fitted ? "" : "  (not fitted)");
    out += line;
  }
  out += "measurement            measured      default     error   fitted      error   leave-one-out  error\n";
  for (const auto& row : r.rows) {
    const std::string loo = row.leave_one_out_predicted ? measured_text(row.field, *row.leave_one_out_predicted) : "-";
    const std::string loo_error =
        row.leave_one_out_predicted ? percent(CalibratedMeasurement::error(*row.leave_one_out_predicted, row.measured)) : "-";
    std::snprintf(line, sizeof line, "  %-20s %-13s %-11s %-7s %-11s %-7s %-14s %s\n", row.name.c_str(),
                  measured_text(row.field, row.measured).c_str(), measured_text(row.field, row.default_predicted).c_str(),
                  percent(CalibratedMeasurement::error(row.default_predicted, row.measured)).c_str(),
                  measured_text(row.field, row.fitted_predicted).c_str(),
                  percent(CalibratedMeasurement::error(row.fitted_predicted, row.measured)).c_str(), loo.c_str(),
                  loo_error.c_str());
    out += line;
  }
  const bool loo = std::any_of(r.rows.begin(), r.rows.end(), [](const auto& row) { return row.leave_one_out_predicted.has_value(); });
  std::snprintf(line, sizeof line, "rms error: default %.1f%%, fitted %.1f%% (max %.1f%%)", 100 * r.rms_default,
                100 * r.rms_fitted, 100 * r.max_abs_fitted);
  out += line;
  if (loo) {
    std::snprintf(line, sizeof line, "; leave-one-out max %.1f%%", 100 * r.max_abs_leave_one_out);
    out += line;
  } else {
    out += "; no leave-one-out (it needs more measurements than fitted parameters + 1)";
  }
  out += "\n";
  return out;
}

std::vector<MeasuredComparison> compare_measurements(const MeasurementFile& file, const std::string& profile_path) {
  std::vector<MeasuredComparison> rows;
  const std::string absolute = profile_path.empty() ? "" : std::filesystem::absolute(profile_path).string();
  for (const auto& m : file.measurements) {
    MeasuredComparison row{m.name, m.field, m.source, m.measured, run_measurement(m, {}), std::nullopt};
    if (!absolute.empty()) row.profile_predicted = run_measurement(m, {{"hardware.profile", "\"" + absolute + "\""}});
    rows.push_back(row);
  }
  return rows;
}

std::string measured_table(const MeasurementFile& file, const std::string& profile_path,
                           const std::vector<MeasuredComparison>& rows) {
  std::string out = file.name + ": " + std::to_string(rows.size()) + " measurements, predicted by the ideal machine" +
                    (profile_path.empty() ? std::string() : " and by the profile " + profile_path) + "\n";
  char line[512];
  std::snprintf(line, sizeof line, "  %-20s %-13s %-12s %-8s %-12s %-8s\n", "measurement", "measured", "default", "error",
                "profile", "error");
  out += line;
  double sd = 0, sp = 0, worst = 0;
  for (const auto& r : rows) {
    const double ed = CalibratedMeasurement::error(r.default_predicted, r.measured);
    sd += ed * ed;
    std::string profile = "-", profile_error = "-";
    if (r.profile_predicted) {
      const double ep = CalibratedMeasurement::error(*r.profile_predicted, r.measured);
      sp += ep * ep;
      worst = std::max(worst, std::abs(ep));
      profile = measured_text(r.field, *r.profile_predicted);
      profile_error = percent(ep);
    }
    std::snprintf(line, sizeof line, "  %-20s %-13s %-12s %-8s %-12s %-8s\n", r.name.c_str(),
                  measured_text(r.field, r.measured).c_str(), measured_text(r.field, r.default_predicted).c_str(),
                  percent(ed).c_str(), profile.c_str(), profile_error.c_str());
    out += line;
  }
  std::snprintf(line, sizeof line, "rms error: default %.1f%%", 100 * std::sqrt(sd / rows.size()));
  out += line;
  if (!profile_path.empty()) {
    std::snprintf(line, sizeof line, ", profile %.1f%% (max %.1f%%)", 100 * std::sqrt(sp / rows.size()), 100 * worst);
    out += line;
  }
  return out + "\n";
}

std::string measured_csv(const std::vector<MeasuredComparison>& rows) {
  std::string out = "name,field,measured,default_predicted,default_error,profile_predicted,profile_error\n";
  for (const auto& r : rows) {
    out += r.name + "," + r.field + "," + number_text(r.measured) + "," + number_text(r.default_predicted) + "," +
           number_text(CalibratedMeasurement::error(r.default_predicted, r.measured)) + "," +
           (r.profile_predicted ? number_text(*r.profile_predicted) + "," +
                                      number_text(CalibratedMeasurement::error(*r.profile_predicted, r.measured))
                                : std::string(",")) +
           "\n";
  }
  return out;
}

std::string calibration_profile_yaml(const MeasurementFile& file, const CalibrationResult& r,
                                     const std::string& profile_name) {
  std::string out = "# A podsim calibration profile (podsim calibrate; docs/calibration.md), fit on\n# " + file.path +
                    " (" + std::to_string(r.rows.size()) + " measurements). Apply it with\n#   hardware: {preset: " +
                    r.chip + ", profile: THIS_FILE}\n";
  out += "version: 1\nname: " + profile_name + "\nchip: " + r.chip + "\nhop_model: " + std::string(to_string(r.hop_model)) +
         "\nparameters:\n";
  for (const auto& p : r.parameters) {
    if (!p.fitted) continue;
    out += "  " + p.name + ": " + p.row.yaml_text(p.value) +
           (std::isfinite(p.sd) ? "   # sd " + p.row.human_text(p.sd)
                                : std::string("   # sd not estimated: no more measurements than fitted parameters")) +
           "\n";
  }
  const bool loo = std::any_of(r.rows.begin(), r.rows.end(), [](const auto& row) { return row.leave_one_out_predicted.has_value(); });
  out += "fit:\n  measurements: " + file.path + "\n  rms_error_default: " + number_text(r.rms_default) +
         "\n  rms_error_fitted: " + number_text(r.rms_fitted) + "\n  max_leave_one_out_error: " +
         (loo ? number_text(r.max_abs_leave_one_out)
              : std::string("null   # no leave-one-out ran (--no-leave-one-out, or no more measurements than fitted "
                            "parameters + 1)")) +
         "\n  residuals:\n";
  for (const auto& row : r.rows) {
    out += "    " + row.name + ": {measured: " + number_text(row.measured) +
           ", fitted: " + number_text(row.fitted_predicted) +
           (row.leave_one_out_predicted ? ", leave_one_out: " + number_text(*row.leave_one_out_predicted) : std::string()) +
           "}\n";
  }
  return out;
}

}  // namespace podsim
