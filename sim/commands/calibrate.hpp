#pragma once
// `podsim calibrate`: fit a profile's physical parameters to measurements (issue 12;
// docs/calibration.md). Every prediction is a simulation: the measurement's scenario with its
// overrides and the candidate parameters, run as `podsim run` would run it. The fit minimises
// the sum of squared relative errors (Levenberg-Marquardt, numerical Jacobian) with each
// parameter kept inside physical bounds by a logistic map; each fitted parameter gets a
// standard deviation from the Jacobian at the optimum, and each measurement a leave-one-out
// prediction (the fit redone without it).
#include <functional>
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
  HardwareParameter row;   // its unit, and the member a candidate value sets
};

// The parameters podsim calibrate knows: the rows of hardware_parameters() with a fit range.
std::vector<CalibrationParameter> calibration_parameters();

struct CalibrationOptions {
  std::vector<std::string> fit{"hop_latency", "link_efficiency", "collective_overhead"};
  std::optional<HopModel> hop_model;   // none: fit under both and keep the better
  bool leave_one_out = true;
  std::function<void(const std::string&)> progress;   // a line per stage
};

struct CalibratedMeasurement {
  std::string name, field, source;
  double measured = 0;
  double default_predicted = 0;   // the preset's ideal machine
  double fitted_predicted = 0;
  std::optional<double> leave_one_out_predicted;
  static double error(double predicted, double measured) { return (predicted - measured) / measured; }
};

struct CalibrationResult {
  std::string chip;
  HopModel hop_model = HopModel::Floor;
  std::vector<CalibrationParameter> parameters;
  std::vector<CalibratedMeasurement> rows;
  int simulations = 0;
  double rms_default = 0, rms_fitted = 0, max_abs_fitted = 0, max_abs_leave_one_out = 0;
};

// Throws InputError for measurements that do not load or run, or that name different chips.
CalibrationResult calibrate(const MeasurementFile& file, const CalibrationOptions& options);

// What one measurement's scenario predicts under a profile's parameters (validate --measured).
double predict(const Measurement& m, HopModel model, const std::vector<CalibrationParameter>& parameters);

// `podsim validate --measured`: each measurement predicted by the ideal machine and, given a
// profile, by it (its file's parameters applied through hardware.profile).
struct MeasuredComparison {
  std::string name, field, source;
  double measured = 0;
  double default_predicted = 0;
  std::optional<double> profile_predicted;
};
std::vector<MeasuredComparison> compare_measurements(const MeasurementFile& file, const std::string& profile_path);
std::string measured_table(const MeasurementFile& file, const std::string& profile_path,
                           const std::vector<MeasuredComparison>& rows);
std::string measured_csv(const std::vector<MeasuredComparison>& rows);

std::string calibration_table(const MeasurementFile& file, const CalibrationResult& result);
std::string calibration_profile_yaml(const MeasurementFile& file, const CalibrationResult& result,
                                     const std::string& profile_name);

}  // namespace podsim
