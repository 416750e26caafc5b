#pragma once
// An enum's names as scenarios spell them: one list that the loader reads choices from
// (yaml_fields read_choice) and the reports write values with (name_of), so a name is written
// once for both directions.
#include <string>
#include <utility>
#include <vector>

namespace podsim {

template <typename Enum>
using NamedValues = std::vector<std::pair<std::string, Enum>>;

// The name of `value` in `names` ("?" for a value the list lacks).
template <typename Enum>
const char* name_of(const NamedValues<Enum>& names, Enum value) {
  for (const auto& [name, v] : names)
    if (v == value) return name.c_str();
  return "?";
}

}  // namespace podsim
