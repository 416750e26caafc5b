#pragma once
// What podsim calibrate prints and writes (docs/calibration.md): the table of parameters and of
// rows grouped by profile with per-profile and overall errors, and each profile's YAML.
#include <string>

#include "sim/commands/calibrate.hpp"

namespace podsim {

std::string calibration_table(const MeasurementFile& file, const CalibrationResult& result);
// One profile's file: its parameters (a shared one says so), then a `fit:` block of its rows'
// residuals, errors and the parameters fitted at a bound (not read back by load_profile).
std::string calibration_profile_yaml(const MeasurementFile& file, const CalibrationResult& result,
                                     const CalibratedProfile& profile, const std::string& profile_name);

// Shared with validate --measured: a value of `field` for people, and an error as "+3.1%".
std::string measured_text(const std::string& field, double value);
std::string percent_text(double error);

}  // namespace podsim
