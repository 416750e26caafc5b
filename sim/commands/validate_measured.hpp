#pragma once
// `podsim validate --measured` (docs/calibration.md): each measurement predicted by the ideal
// machine and, given profiles, by its own profile: one file for every row (--profile FILE), or
// DIR/PROFILE.yaml for each row's profile name (--profiles DIR, what calibrate -o DIR writes).
#include <optional>
#include <string>
#include <vector>

#include "sim/scenario/calibration_files.hpp"

namespace podsim {

struct ProfileChoice {
  std::string file;        // --profile: every row
  std::string directory;   // --profiles: DIR/PROFILE.yaml by the row's profile name
  bool any() const { return !file.empty() || !directory.empty(); }
  // The profile file for rows of `profile` (empty: none given).
  std::string path_for(const std::string& profile) const;
};

// Refuses, before any run: a --profile FILE for a file of several profiles; a profile name
// without DIR/NAME.yaml (located at its first row); a profile that does not load.
void check_profile_choice(const MeasurementFile& file, const ProfileChoice& profiles);

struct MeasuredComparison {
  std::string name, profile, field, source;
  std::string published;   // the figure as published, or empty
  double measured = 0;
  double default_predicted = 0;
  std::optional<double> profile_predicted;
};
std::vector<MeasuredComparison> compare_measurements(const MeasurementFile& file, const ProfileChoice& profiles);
// Rows grouped by profile, each group with its RMS, then the overall RMS.
std::string measured_table(const MeasurementFile& file, const ProfileChoice& profiles,
                           const std::vector<MeasuredComparison>& rows);
// name, profile, field, measured, default_predicted, default_error, profile_predicted, profile_error, published
std::string measured_csv(const std::vector<MeasuredComparison>& rows);

}  // namespace podsim
