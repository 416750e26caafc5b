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

std::optional<std::string> builtin_profile_for_chip(const std::string& chip) {
  // Each profile records its chip; read once (tests/test_scenario_loader.cpp checks one per chip).
  static const std::map<std::string, std::string> by_chip = [] {
    std::map<std::string, std::string> out;
    for (const auto& [name, text] : builtin_profile_table())
      out.emplace(load_profile_text(text, "built-in profile " + name).chip, name);
    return out;
  }();
  const auto it = by_chip.find(chip);
  if (it == by_chip.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> builtin_profile_names() {
  std::vector<std::string> names;
  for (const auto& [name, text] : builtin_profile_table()) names.push_back(name);
  return names;
}

}  // namespace podsim
