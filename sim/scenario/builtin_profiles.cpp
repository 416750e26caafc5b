#include "sim/scenario/builtin_profiles.hpp"

#include <algorithm>
#include <map>

#include "sim/scenario/calibration_files.hpp"

namespace podsim {

// CMake writes this from scenarios/profiles/real/*.yaml (sim/scenario/builtin_profiles_data.cpp.in).
const std::map<std::string, std::string>& builtin_profile_table();

bool names_builtin_profile(const std::string& value) {
  auto ends_with = [&](const std::string& suffix) {
    return value.size() >= suffix.size() && value.compare(value.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return value.find('/') == std::string::npos && !ends_with(".yaml") && !ends_with(".yml");
}

std::optional<std::string> builtin_profile_text(const std::string& name) {
  const auto& table = builtin_profile_table();
  const auto it = table.find(name);
  if (it == table.end()) return std::nullopt;
  return it->second;
}

const CalibrationProfile* builtin_profile(const std::string& name) {
  static const std::map<std::string, CalibrationProfile> parsed = [] {
    std::map<std::string, CalibrationProfile> out;
    for (const auto& [profile, text] : builtin_profile_table())
      out.emplace(profile, load_profile_text(text, "built-in profile " + profile));
    return out;
  }();
  const auto it = parsed.find(name);
  return it == parsed.end() ? nullptr : &it->second;
}

std::optional<std::string> builtin_profile_for_chip(const std::string& chip) {
  // Each profile records its chip (tests/test_scenario_loader.cpp checks one per chip).
  for (const auto& [name, text] : builtin_profile_table())
    if (builtin_profile(name)->chip == chip) return name;
  return std::nullopt;
}

std::vector<std::string> builtin_profile_names() {
  std::vector<std::string> names;
  for (const auto& [name, text] : builtin_profile_table()) names.push_back(name);
  return names;
}

}  // namespace podsim
