#pragma once
// podsim.Scenario: a scenario loaded and checked (from a file or a dict), with the overrides
// applied, ready to run; it remembers where it came from so that sweep and compare, which run
// every point as `podsim run FILE --set ...`, can hand the same document to the CLI.
#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "sim/scenario/scenario.hpp"

namespace podsim::python {

struct LoadedScenario {
  std::string path;        // the file; for a dict, base_dir/<dict> (labels messages, resolves relative paths)
  bool from_dict = false;
  std::string base_dir;    // a dict's; for a file, its directory
  // base_dir made absolute when loaded: points of a later sweep or compare resolve the scenario's
  // relative paths there even if the process has changed directory since.
  std::string absolute_dir;
  std::string text;        // the document before overrides (a dict's as YAML)
  std::vector<ScenarioOverride> overrides;
  Scenario scenario;       // loaded, validated, overrides applied
};

// Python override values as `--set` texts: a str is YAML text as after `--set key=` ("8" is
// the number 8, "45 GB/s" a string); other values are written as YAML (True -> true, lists
// and dicts in flow style, None -> null, which removes the key). Values nested more than 100
// levels deep, containing themselves, or of more than a million values raise ValueError naming
// the key path (`key` starts it), as load_dict does.
std::vector<ScenarioOverride> to_overrides(const pybind11::object& overrides);
std::string override_text(const pybind11::handle& value, const std::string& key);

// A str (or the bytes os.fspath may give) as UTF-8; ValueError naming `key` for a str UTF-8
// cannot hold (a lone surrogate), where pybind11's cast would raise a bare RuntimeError.
std::string utf8_text(pybind11::handle value, const std::string& key);

LoadedScenario load_file(const std::string& path, std::vector<ScenarioOverride> overrides);
LoadedScenario load_dict(const pybind11::dict& document, const std::string& base_dir,
                         std::vector<ScenarioOverride> overrides);
// Where the scenario was loaded from: `path`, or, once the process has changed directory so that
// `path` no longer names it, the same place made absolute (for a dict, the label that resolves
// its relative paths).
std::string where_loaded(const LoadedScenario& scenario);

// The same document with more overrides (applied after the ones it has).
LoadedScenario with_overrides(const LoadedScenario& scenario, const std::vector<ScenarioOverride>& more);

// A Scenario, or a path (str or os.PathLike) loaded as a file; extra overrides reload it.
LoadedScenario as_scenario(const pybind11::object& scenario_or_path, const pybind11::object& overrides);

// The document as a file `podsim run` can read, for sweep and compare: a file-based scenario is
// its own file; a dict's is written to `directory`/scenario.yaml (each relative path a
// file_references() key gives made absolute against base_dir, since the file no longer sits there). Overrides are not applied.
std::string scenario_file(const LoadedScenario& scenario, const std::string& directory);

// An override's text as a point run on scenario_file() must get it: for a dict, a relative path
// it gives to a file_references() key (e.g. {'hardware.profile': 'profiles/b.yaml'}) is made
// absolute against base_dir, where load_dict took it from.
std::string point_override(const LoadedScenario& scenario, const std::string& key, const std::string& value);

void bind_scenario(pybind11::module_& m);

}  // namespace podsim::python
