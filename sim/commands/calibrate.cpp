#include "sim/commands/calibrate.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "sim/commands/joint_fit.hpp"
#include "sim/commands/run_command.hpp"
#include "sim/report/summary_fields.hpp"
#include "sim/scenario/builtin_profiles.hpp"
#include "sim/scenario/published_figures.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/scenario/yaml_fields.hpp"
#include "sim/scenario/units.hpp"

namespace podsim {

std::vector<CalibrationParameter> calibration_parameters() {
  // The rows with a fit range (sim/scenario/hardware_parameters.cpp says why each is narrower
  // than what a scenario accepts), starting from the ideal machine's value.
  std::vector<CalibrationParameter> out;
  for (const HardwareParameter& row : hardware_parameters())
    if (row.fit) out.push_back({row.key, row.default_value.value_or(0), row.fit->low, row.fit->high, 0, false, false, false, row});
  return out;
}

namespace {

// NAME=VALUE and PROFILE:NAME=VALUE entries, comma-separated, each value in its parameter's unit.
std::vector<CalibrationOptions::Fixed> parse_parameter_values(const std::string& text, const std::string& option) {
  const SourceLocation where{"command line", 0, 0};
  std::vector<CalibrationOptions::Fixed> out;
  size_t start = 0;
  while (start <= text.size() && !text.empty()) {
    const size_t comma = text.find(',', start);
    const std::string entry = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? text.size() + 1 : comma + 1;
    const size_t eq = entry.find('=');
    if (eq == std::string::npos)
      throw InputError(where, option, entry, "expected NAME=VALUE or PROFILE:NAME=VALUE, e.g. hbm_efficiency=0.83");
    CalibrationOptions::Fixed f;
    f.name = entry.substr(0, eq);
    if (const size_t colon = f.name.find(':'); colon != std::string::npos) {
      f.profile = f.name.substr(0, colon);
      f.name = f.name.substr(colon + 1);
    }
    const auto known = calibration_parameters();
    const auto row = std::find_if(known.begin(), known.end(), [&](const auto& p) { return p.name == f.name; });
    if (row == known.end()) {
      std::string names;
      for (const auto& p : known) names += (names.empty() ? "" : ", ") + p.name;
      throw InputError(where, option, entry, "unknown parameter '" + f.name + "'; expected one of " + names);
    }
    YAML::Node value;
    try {
      value = YAML::Load(entry.substr(eq + 1));
    } catch (const YAML::Exception&) {
      value = YAML::Node(entry.substr(eq + 1));
    }
    f.value = row->row.read(yaml_fields::Field{value, option + " " + f.name, where});
    out.push_back(f);
  }
  return out;
}

}  // namespace

void parse_fixed_parameters(const std::string& text, CalibrationOptions& options) {
  const auto fixed = parse_parameter_values(text, "--fix");
  options.fixed.insert(options.fixed.end(), fixed.begin(), fixed.end());
}

void parse_start_values(const std::string& text, CalibrationOptions& options) {
  const auto start = parse_parameter_values(text, "--start");
  options.start.insert(options.start.end(), start.begin(), start.end());
}

bool CalibrationParameter::at_bound() const {
  const double margin = 0.01 * (high - low);
  return fitted && (value - low <= margin || high - value <= margin);
}

const CalibratedProfile& CalibrationResult::profile(const std::string& name) const {
  for (const auto& p : profiles)
    if (p.name == name) return p;
  throw std::out_of_range("no profile " + name + " in the calibration");
}

Scenario with_parameters(Scenario scenario, HopModel model, const std::vector<CalibrationParameter>& parameters) {
  scenario.hop_model = model;
  for (const auto& p : parameters) {
    if (!p.fitted && !p.fixed) continue;
    // The fit's own values: were one not finite, the run would fail on a value the user never gave.
    if (!std::isfinite(p.value))
      throw std::runtime_error("calibrate: the fit diverged (" + p.name + " = " + number_text(p.value) +
                               "); the measurements cannot be matched within the parameters' bounds");
    p.row.set(scenario, p.value);
  }
  return scenario;
}

namespace {

double field_of(const Measurement& m, const std::string& summary_text) {
  const auto summary = nlohmann::json::parse(summary_text);
  try {
    return summary_field_value(summary, m.field);
  } catch (const std::out_of_range& e) {
    throw InputError(m.where, "field", m.field, std::string(e.what()) + "; expected a number the run's summary.json has");
  }
}

// A measured run ran, so it fitted: its timing is what is compared, whatever podsim's memory
// estimate says (--allow-oom).
RunCommandOptions measuring_options() {
  RunCommandOptions options;
  options.reproducible = true;
  options.allow_oom = true;
  return options;
}

}  // namespace

double measure(const Measurement& m, const Scenario& scenario) {
  const RunCommandOptions options = measuring_options();
  return field_of(m, simulate_summary_json(scenario, options));
}

std::vector<double> measure_all(const std::vector<const Measurement*>& rows, std::vector<Scenario> scenarios, int jobs) {
  const auto summaries = simulate_summaries_json(std::move(scenarios), measuring_options(), jobs);
  std::vector<double> values;
  for (size_t i = 0; i < rows.size(); ++i) values.push_back(field_of(*rows[i], summaries[i]));
  return values;
}

Scenario load_measurement_scenario(Measurement& m, const std::vector<ScenarioOverride>& extra) {
  std::vector<ScenarioOverride> overrides = m.overrides;
  overrides.insert(overrides.end(), extra.begin(), extra.end());
  Scenario scenario = load_scenario(m.scenario_path, overrides);
  // A row runs on the book's machine unless its scenario names a profile: calibrate fits from it
  // (every parameter it does not fit keeps the ideal value) and validate compares against it.
  if (scenario.profile_source == ProfileSource::Default && scenario.profile != kIdealProfile) {
    overrides.insert(overrides.begin(), ScenarioOverride{"hardware.profile", kIdealProfile});
    scenario = load_scenario(m.scenario_path, overrides);
  }
  resolve_published_figure(m, scenario);
  return scenario;
}

double predict(const Measurement& m, HopModel model, const std::vector<CalibrationParameter>& parameters) {
  Measurement row = m;
  return measure(row, with_parameters(load_measurement_scenario(row), model, parameters));
}

void check_one_chip_per_profile(const MeasurementFile& file, const std::vector<Scenario>& scenarios) {
  for (size_t i = 0; i < file.measurements.size(); ++i) {
    const Measurement& m = file.measurements[i];
    for (size_t j = 0; j < i; ++j) {
      const Measurement& first = file.measurements[j];
      if (first.profile != m.profile) continue;
      const std::string& chip = scenarios[i].topology.chip.name;
      const std::string& earlier = scenarios[j].topology.chip.name;
      if (chip != earlier)
        throw InputError(m.where, "scenario", m.scenario_path,
                         "row '" + m.name + "' of profile " + m.profile + " runs on " + chip + ", but row '" + first.name +
                             "' (line " + std::to_string(first.where.line) + ") of the same profile runs on " + earlier +
                             "; expected one chip preset per profile (give the rows of each chip their own profile:)");
      // The profile records the machine its rows ran (calibration_report.cpp): one for all of them.
      const ChipSpec& a = scenarios[i].topology.chip;
      const ChipSpec& b = scenarios[j].topology.chip;
      if (a.compute_model != b.compute_model || a.mxu_padding != b.mxu_padding)
        throw InputError(m.where, "scenario", m.scenario_path,
                         "row '" + m.name + "' of profile " + m.profile + " runs compute_model " +
                             std::string(to_string(a.compute_model)) + (a.mxu_padding ? " with" : " without") +
                             " mxu_padding, but row '" + first.name + "' (line " + std::to_string(first.where.line) +
                             ") runs " + std::string(to_string(b.compute_model)) + (b.mxu_padding ? " with" : " without") +
                             "; expected one compute model and padding per profile");
      auto same_flag = [&](const char* key, bool x, bool y, const char* what) {
        if (x != y)
          throw InputError(m.where, "scenario", m.scenario_path,
                           "row '" + m.name + "' of profile " + m.profile + " runs " + key + " " +
                               (x ? "true" : "false") + ", but row '" + first.name + "' (line " +
                               std::to_string(first.where.line) + ") runs " + (y ? "true" : "false") +
                               "; expected one " + what + " per profile");
      };
      same_flag("antipodal_split", a.antipodal_split, b.antipodal_split, "ring schedule");
      same_flag("reductions_on_tensor_core", a.reductions_on_tensor_core, b.reductions_on_tensor_core,
                "place for reductions");
      break;
    }
  }
}

ErrorSummary summarise_errors(const std::vector<const CalibratedMeasurement*>& rows) {
  ErrorSummary s;
  s.rows = rows.size();
  double sd = 0, sf = 0, loo_sum = 0, loo_max = 0;
  size_t loo_rows = 0;
  for (const auto* r : rows) {
    sd += std::pow(CalibratedMeasurement::error(r->default_predicted, r->measured), 2);
    const double e = std::abs(CalibratedMeasurement::error(r->fitted_predicted, r->measured));
    sf += e * e;
    s.mean_abs_fitted += e;
    s.max_abs_fitted = std::max(s.max_abs_fitted, e);
    if (!r->leave_one_out_predicted) continue;
    const double l = std::abs(CalibratedMeasurement::error(*r->leave_one_out_predicted, r->measured));
    loo_sum += l;
    loo_max = std::max(loo_max, l);
    ++loo_rows;
  }
  if (rows.empty()) return s;
  s.rms_default = std::sqrt(sd / rows.size());
  s.rms_fitted = std::sqrt(sf / rows.size());
  s.mean_abs_fitted /= rows.size();
  if (loo_rows > 0) {
    s.mean_abs_leave_one_out = loo_sum / loo_rows;
    s.max_abs_leave_one_out = loo_max;
  }
  return s;
}

namespace {

// "a, b or c": the parameters --fit and --shared take.
std::string fit_names() {
  const auto parameters = calibration_parameters();
  std::string text;
  for (size_t i = 0; i < parameters.size(); ++i)
    text += (i == 0 ? "" : i + 1 == parameters.size() ? " or " : ", ") + parameters[i].name;
  return text;
}

bool named(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

void check_parameter_names(const CalibrationOptions& options) {
  const auto known = calibration_parameters();
  auto check = [&](const std::vector<std::string>& names, const char* option) {
    for (const auto& name : names)
      if (std::none_of(known.begin(), known.end(), [&](const auto& p) { return p.name == name; }))
        throw InputError({"command line", 0, 0}, option, name, "unknown parameter; expected " + fit_names());
  };
  check(options.fit, "--fit");
  check(options.shared, "--shared");
  // A --fit parameter may be fixed for one profile (PROFILE:NAME=VALUE): a generation no row of
  // which measures it keeps a value from elsewhere while the others are fitted.
  for (const auto& f : options.fixed)
    if ((named(options.fit, f.name) && f.profile.empty()) || named(options.shared, f.name))
      throw InputError({"command line", 0, 0}, "--fix", f.name,
                       "both fixed and fitted (--fit or --shared); expected it in one of them (a --fit parameter "
                       "may be fixed for one profile: PROFILE:NAME=VALUE)");
  for (const auto& f : options.start)
    if (!named(options.fit, f.name) && !named(options.shared, f.name))
      throw InputError({"command line", 0, 0}, "--start", f.name,
                       "a starting value for a parameter not fitted; expected one of --fit or --shared");
  for (const auto& name : options.shared)
    if (named(options.fit, name))
      throw InputError({"command line", 0, 0}, "--shared", name,
                       "both in --fit (one value per profile) and --shared (one for all); expected it in one of them");
}

// Every row's scenario loaded once (published figures resolved), each row's profile index, and
// each profile's starting parameters: the ideal machine's, or its first row's chip's.
JointFitProblem load_problem(const MeasurementFile& file, const CalibrationOptions& options,
                             std::vector<std::string>& profile_names) {
  JointFitProblem problem;
  profile_names = file.profile_names();
  for (const auto* list : {&options.fixed, &options.start})
    for (const auto& f : *list)
      if (!f.profile.empty() && std::find(profile_names.begin(), profile_names.end(), f.profile) == profile_names.end())
        throw InputError({"command line", 0, 0}, list == &options.fixed ? "--fix" : "--start", f.profile + ":" + f.name,
                         "no profile '" + f.profile + "' in " + file.path + "; expected one its rows name");
  for (const auto& m : file.measurements) {
    problem.rows.push_back(m);
    problem.scenarios.push_back(load_measurement_scenario(problem.rows.back()));
    problem.profile_of_row.push_back(static_cast<int>(
        std::find(profile_names.begin(), profile_names.end(), m.profile) - profile_names.begin()));
  }
  check_one_chip_per_profile(file, problem.scenarios);
  for (size_t p = 0; p < profile_names.size(); ++p) {
    const size_t first = std::find(problem.profile_of_row.begin(), problem.profile_of_row.end(), p) - problem.profile_of_row.begin();
    auto parameters = calibration_parameters();
    for (auto& q : parameters) {
      q.shared = named(options.shared, q.name);
      q.fitted = q.shared || named(options.fit, q.name);
      // A parameter without an ideal value (hop_latency) starts from the profile's chip; a shared
      // one from the first profile's.
      if (!q.row.default_value) q.value = q.row.get(problem.scenarios[q.shared ? 0 : first]);
      for (const auto& f : options.fixed)
        if (f.name == q.name && (f.profile.empty() || f.profile == profile_names[p])) {
          q.value = f.value;
          q.fixed = true;
          q.fitted = false;   // a --fit parameter fixed for this profile: no coordinate here
        }
      // --start: where the fit starts instead (a shared parameter's from any profile's entry).
      for (const auto& f : options.start)
        if (!q.fixed && f.name == q.name && (f.profile.empty() || f.profile == profile_names[p] || q.shared))
          q.value = f.value;
    }
    problem.profiles.push_back(parameters);
  }
  return problem;
}

// More fitted parameters than rows cannot be identified: per profile (its own --fit), and overall.
void check_identifiable(const JointFitProblem& problem, const std::vector<std::string>& names,
                        const CalibrationOptions& options) {
  const bool several = names.size() > 1;
  const size_t coordinates = options.fit.size() * names.size() + options.shared.size();
  for (size_t p = 0; p < names.size(); ++p) {
    const size_t rows = std::count(problem.profile_of_row.begin(), problem.profile_of_row.end(), static_cast<int>(p));
    const size_t fitted = options.fit.size() + (several ? 0 : options.shared.size());
    if (fitted > rows)
      throw InputError({"command line", 0, 0}, "--fit", std::to_string(fitted) + " parameters",
                       "more parameters than the " + std::to_string(rows) + " measurements" +
                           (several ? " of profile " + names[p] : std::string()) +
                           " can identify; expected at most that many (fewer leave room for leave-one-out)");
  }
  if (coordinates > problem.rows.size())
    throw InputError({"command line", 0, 0}, "--shared", std::to_string(coordinates) + " coordinates",
                     "more fitted values (--fit per profile, --shared once) than the " +
                         std::to_string(problem.rows.size()) + " measurements can identify");
}

// The rows as published and as the ideal machine predicts them.
std::vector<CalibratedMeasurement> default_rows(const JointFitProblem& problem, const std::vector<std::string>& names,
                                                int& simulations) {
  std::vector<const Measurement*> measured;
  for (const Measurement& m : problem.rows) measured.push_back(&m);
  const std::vector<double> ideal = measure_all(measured, problem.scenarios, problem.jobs);
  std::vector<CalibratedMeasurement> rows;
  for (size_t i = 0; i < problem.rows.size(); ++i) {
    const Measurement& m = problem.rows[i];
    CalibratedMeasurement row;
    row.name = m.name;
    row.profile = names[problem.profile_of_row[i]];
    row.field = m.field;
    row.moe = routes_experts(problem.scenarios[i]);
    row.source = m.source;
    row.published = m.published ? published_text(*m.published) : "";
    row.measured = m.measured;
    row.default_predicted = ideal[i];
    ++simulations;
    rows.push_back(row);
  }
  return rows;
}

// Each row predicted by the joint fit redone without it, where what is left still identifies
// every coordinate: more rows than coordinates overall, and at least as many of its profile's
// rows as that profile's own free coordinates (its --fit less what --fix PROFILE:NAME fixed:
// v5p's one matmul efficiency is told by three rows however many parameters v4 fits).
void leave_one_out(JointFitter& fitter, const JointFit& best, const JointFitProblem& problem,
                   CalibrationResult& result, const CalibrationOptions& options) {
  const size_t n = problem.rows.size();
  for (size_t i = 0; i < n; ++i) {
    const int p = problem.profile_of_row[i];
    const size_t left = std::count(problem.profile_of_row.begin(), problem.profile_of_row.end(), p) - 1;
    if (!(n - 1 > fitter.coordinates() && left >= std::max<size_t>(fitter.coordinates_of(p), 1))) continue;
    if (options.progress)
      options.progress("leave-one-out " + std::to_string(i + 1) + " of " + std::to_string(n) + ": without " + problem.rows[i].name);
    std::vector<int> others;
    for (size_t j = 0; j < n; ++j)
      if (j != i) others.push_back(static_cast<int>(j));
    const JointFit fit = fitter.fit(best.u, others);
    result.rows[i].leave_one_out_predicted =
        problem.rows[i].measured * (1 + fitter.residuals(fit.u, {static_cast<int>(i)}).front());
  }
}

// The profiles' parameters and per-profile errors, and the overall errors.
void assemble(CalibrationResult& result, const JointFitProblem& problem, const std::vector<std::string>& names,
              const std::vector<std::vector<CalibrationParameter>>& parameters) {
  std::vector<const CalibratedMeasurement*> all;
  for (const auto& row : result.rows) all.push_back(&row);
  result.errors = summarise_errors(all);
  for (size_t p = 0; p < names.size(); ++p) {
    CalibratedProfile profile;
    profile.name = names[p];
    profile.parameters = parameters[p];
    std::vector<const CalibratedMeasurement*> rows;
    for (size_t i = 0; i < result.rows.size(); ++i) {
      if (problem.profile_of_row[i] != static_cast<int>(p)) continue;
      if (profile.chip.empty()) {
        profile.chip = problem.scenarios[i].topology.chip.name;
        profile.compute_model = problem.scenarios[i].topology.chip.compute_model;
        profile.mxu_padding = problem.scenarios[i].topology.chip.mxu_padding;
        profile.antipodal_split = problem.scenarios[i].topology.chip.antipodal_split;
        profile.reductions_on_tensor_core = problem.scenarios[i].topology.chip.reductions_on_tensor_core;
      }
      profile.rows.push_back(i);
      rows.push_back(&result.rows[i]);
    }
    profile.errors = summarise_errors(rows);
    result.profiles.push_back(profile);
  }
}

}  // namespace

CalibrationResult calibrate(const MeasurementFile& file, const CalibrationOptions& options) {
  check_parameter_names(options);
  CalibrationResult result;
  std::vector<std::string> names;
  JointFitProblem problem = load_problem(file, options, names);
  problem.jobs = options.jobs;
  check_identifiable(problem, names, options);
  result.rows = default_rows(problem, names, result.simulations);
  std::vector<int> all(problem.rows.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  const std::vector<HopModel> models = options.hop_model ? std::vector<HopModel>{*options.hop_model}
                                                         : std::vector<HopModel>{HopModel::Floor, HopModel::Additive};
  std::optional<JointFit> best;
  PredictionMemo memo;   // every prediction simulated, for the refits from the same candidates
  for (HopModel model : models) {
    if (options.progress) options.progress(std::string("fitting under the ") + std::string(to_string(model)) + " hop model");
    problem.hop_model = model;
    JointFitter fitter(problem, result.simulations, &memo);
    JointFit fit = fitter.fit(fitter.start(), all);
    if (!best || fit.cost < best->cost) {
      best = fit;
      result.hop_model = model;
    }
  }
  problem.hop_model = result.hop_model;
  JointFitter fitter(problem, result.simulations, &memo);
  auto parameters = fitter.at(best->u);
  fitter.standard_deviations(*best, all.size(), parameters);
  std::vector<std::string> row_names;
  for (const auto& m : problem.rows) row_names.push_back(m.name);
  fitter.evidence(*best, row_names, parameters);
  for (size_t i = 0; i < all.size(); ++i) result.rows[i].fitted_predicted = result.rows[i].measured * (1 + best->residuals[i]);
  if (options.leave_one_out) leave_one_out(fitter, *best, problem, result, options);
  assemble(result, problem, names, parameters);
  return result;
}

}  // namespace podsim
