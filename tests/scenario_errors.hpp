#pragma once
// Checking the scenario loader's located errors (design.md, habits 3 and 9): load a text, take
// its InputError, and require it to name the file, the line, the dotted key and the value.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "sim/scenario/scenario.hpp"

namespace podsim_test {

// The file name errors from error_from() and require_error() carry.
inline const std::string kScenarioFile = "bad.yaml";

// `base` with the first occurrence of `from` replaced by `to`.
inline std::string replaced_in(const std::string& base, const std::string& from, const std::string& to) {
  const size_t at = base.find(from);
  REQUIRE(at != std::string::npos);
  return base.substr(0, at) + to + base.substr(at + from.size());
}

// 1-based line of the first occurrence of `needle`.
inline int line_of(const std::string& text, const std::string& needle) {
  const size_t at = text.find(needle);
  REQUIRE(at != std::string::npos);
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

inline podsim::InputError error_from(const std::string& text) {
  try {
    podsim::load_scenario_text(text, kScenarioFile);
  } catch (const podsim::InputError& error) {
    return error;
  }
  FAIL("expected an InputError");
  return podsim::InputError({}, "", "", "");   // not reached: FAIL throws
}

// The error names file, line (that of `line_needle` in the text), key and value.
inline void require_error(const std::string& text, const std::string& key, const std::string& value,
                          const std::string& line_needle) {
  const podsim::InputError error = error_from(text);
  const std::string message = error.what();
  const int line = line_of(text, line_needle);
  INFO(message);
  CHECK(error.where().file == kScenarioFile);
  CHECK(error.where().line == line);
  CHECK(contains(message, kScenarioFile + ":" + std::to_string(line) + ":"));
  CHECK(error.key() == key);
  if (!key.empty()) CHECK(contains(message, "key '" + key + "'"));
  CHECK(error.value() == value);
  if (!value.empty()) CHECK(contains(message, "value '" + value + "'"));
}

}  // namespace podsim_test
