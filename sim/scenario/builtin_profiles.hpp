#pragma once
// The calibration profiles podsim ships (issue 26): scenarios/profiles/real/NAME.yaml, compiled
// into the binary so that `hardware.profile: v5e` names one from any folder, and `ideal` names
// the book's machine (no profile). A `hardware.profile` value ending in .yaml or .yml, or with a
// '/', is a file; any other is a built-in name.
#include <optional>
#include <string>
#include <vector>

namespace podsim {

struct CalibrationProfile;

// The name that selects the preset's ideal machine: every efficiency 1, nothing fixed per op.
inline constexpr const char* kIdealProfile = "ideal";

// Whether `value` names a built-in profile (or ideal) rather than a file.
bool names_builtin_profile(const std::string& value);

// A built-in profile's YAML text, by name; none for an unknown name.
std::optional<std::string> builtin_profile_text(const std::string& name);

// A built-in profile, parsed once for the process (tests/test_scenario_loader.cpp loads every
// one); null for an unknown name.
const CalibrationProfile* builtin_profile(const std::string& name);

// The built-in profile fit for `chip` (a preset's name), which a scenario of that preset uses
// when it names no profile; none when podsim ships no profile for the chip.
std::optional<std::string> builtin_profile_for_chip(const std::string& chip);

// The built-in profiles' names, sorted (for messages and docs).
std::vector<std::string> builtin_profile_names();

}  // namespace podsim
