#pragma once
// `podsim calibrate`: fit profiles' physical parameters to measurements (issues 12 and 26;
// docs/calibration.md). Every prediction is a simulation: the measurement's scenario with its
// overrides and the candidate parameters, run as `podsim run` would run it. A measurement file
// may hold rows of several profiles (one per chip generation); they are fit at once
// (joint_fit.hpp): --fit parameters per profile, --shared ones as one value for all. Each fitted
// parameter gets a standard deviation from the joint Jacobian at the optimum, and each row a
// leave-one-out prediction (the joint fit redone without it).
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "collectives/collective.hpp"
#include "sim/scenario/calibration_files.hpp"
#include "sim/scenario/hardware_parameters.hpp"

namespace podsim {

struct CalibrationParameter {
  std::string name;        // the row's key: hop_latency, link_efficiency, ...
  double value = 0;        // fitted (or the default, when not fitted)
  double low = 0, high = 0;   // the row's fit range
  double sd = 0;           // one standard deviation (0 when not fitted or not estimable)
  bool fitted = false;
  bool shared = false;     // fitted as one value for every profile (--shared)
  bool fixed = false;      // not fitted: a value measured elsewhere (--fix), applied and written out
  HardwareParameter row;   // its unit, and the member a candidate value sets
  // Fitted: each row's share of the parameter's information (fit_evidence.hpp), by row name;
  // the rows with a share of at least 1% are written to the profile's fit.evidence.
  std::map<std::string, double> evidence;
  // Fitted within 1% of its range's width of a bound: the data pushed it to the edge of what is
  // physical, so the value is a limit, not a measurement.
  bool at_bound() const;
};

// The parameters podsim calibrate knows: the rows of hardware_parameters() with a fit range.
std::vector<CalibrationParameter> calibration_parameters();

struct CalibrationOptions;
// `--fix` entries, comma-separated: NAME=VALUE for every profile, PROFILE:NAME=VALUE for one;
// each value in its parameter's unit and scenario range ("0.83", "5 us"). InputError naming
// the entry otherwise.
void parse_fixed_parameters(const std::string& text, CalibrationOptions& options);
// `--start` entries, as --fix's: where the fit starts a fitted parameter (default: the ideal
// machine's value, or the chip's). A local fit started far from its optimum, on a flat stretch of
// a bounded parameter, takes many more simulations to get there.
void parse_start_values(const std::string& text, CalibrationOptions& options);

struct CalibrationOptions {
  std::vector<std::string> fit{"hop_latency", "link_efficiency", "collective_overhead"};
  std::vector<std::string> shared;     // fitted as one value shared by every profile
  // Values measured elsewhere (a microbenchmark): applied to the predictions and written into the
  // profiles, not fitted. An empty profile: every profile.
  struct Fixed {
    std::string profile, name;
    double value = 0;
  };
  std::vector<Fixed> fixed;
  std::vector<Fixed> start;            // --start: starting values of fitted parameters
  std::optional<HopModel> hop_model;   // none: fit under both and keep the better (one model for all profiles)
  bool leave_one_out = true;
  int jobs = 1;                        // simulations at once (each its own process); the fit is the same for any
  std::function<void(const std::string&)> progress;   // a line per stage
};

struct CalibratedMeasurement {
  std::string name, profile, field, source;
  std::string published;          // the figure as published ("328 TFLOP/s/chip (maxtext-76bd53b)"), or empty
  double measured = 0;            // the field's value (a published figure's step time)
  double default_predicted = 0;   // the preset's ideal machine
  double fitted_predicted = 0;
  std::optional<double> leave_one_out_predicted;
  bool moe = false;               // its model routes tokens to experts (routes_experts)
  static double error(double predicted, double measured) { return (predicted - measured) / measured; }
};

// Errors over a set of rows (one profile's, or all).
struct ErrorSummary {
  size_t rows = 0;
  double rms_default = 0, rms_fitted = 0, mean_abs_fitted = 0, max_abs_fitted = 0;
  std::optional<double> mean_abs_leave_one_out, max_abs_leave_one_out;   // over the rows that have one
};
ErrorSummary summarise_errors(const std::vector<const CalibratedMeasurement*>& rows);

struct CalibratedProfile {
  std::string name;
  std::string chip;                               // the preset its rows run on
  ComputeModel compute_model = ComputeModel::Book;   // and the machine they ran: recorded in the profile
  bool mxu_padding = false;
  bool antipodal_split = false;
  bool reductions_on_tensor_core = false;
  std::vector<CalibrationParameter> parameters;   // shared ones carry the joint value
  std::vector<size_t> rows;                       // indices into CalibrationResult::rows
  ErrorSummary errors;
};

struct CalibrationResult {
  HopModel hop_model = HopModel::Floor;
  std::vector<CalibratedProfile> profiles;    // in the order the file first names them
  std::vector<CalibratedMeasurement> rows;    // in the file's order
  int simulations = 0;
  ErrorSummary errors;                        // over every row
  const CalibratedProfile& profile(const std::string& name) const;   // std::out_of_range if none
};

// Throws InputError for measurements that do not load or run, a profile whose rows name
// different chips, unknown --fit/--shared names, a parameter both per profile and shared, and a
// profile (or the whole fit) with more fitted parameters than rows.
CalibrationResult calibrate(const MeasurementFile& file, const CalibrationOptions& options);

// The row's scenario with its overrides (and `extra`), its measured value resolved from a
// published figure; InputError at the row when a figure does not apply to the scenario.
Scenario load_measurement_scenario(Measurement& m, const std::vector<ScenarioOverride>& extra = {});
// The row's field in the summary of a run of `scenario`.
double measure(const Measurement& m, const Scenario& scenario);
// Each row's field in the summary of its scenario's run (rows[i] with scenarios[i]), up to `jobs`
// simulations at once; the same values as measure on each.
std::vector<double> measure_all(const std::vector<const Measurement*>& rows, std::vector<Scenario> scenarios, int jobs);
// The scenario with the hop model and the fitted parameters set on it, as their rows set them.
Scenario with_parameters(Scenario scenario, HopModel model, const std::vector<CalibrationParameter>& parameters);
// What one measurement's scenario predicts under a profile's parameters (tests; the fit's own).
double predict(const Measurement& m, HopModel model, const std::vector<CalibrationParameter>& parameters);

// Refuses (InputError at the later row, naming the earlier) a profile whose rows run on
// different chip presets: a profile is per chip. `scenarios` are the rows', in order.
void check_one_chip_per_profile(const MeasurementFile& file, const std::vector<Scenario>& scenarios);

}  // namespace podsim
