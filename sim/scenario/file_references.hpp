#pragma once
// The scenario keys that name another file (a calibration profile, a request trace, an
// expert-load CSV), in one list. Whatever must know the files a scenario reads takes them from
// here: a sweep keys its points by their contents (sim/commands/sweep.cpp), and the Python
// module, which writes a dict's scenario away from its base_dir, makes them absolute
// (sim/python/scenario_object.cpp). A loader that reads a new file key adds it here.
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

namespace podsim {

struct FileReference {
  const char* key;    // dotted, from the document's root: "hardware.profile"
  const char* what;   // "calibration profile"
  // Whether a value names a file; null: every value does (a built-in profile's name does not).
  bool (*names_file)(const std::string& value) = nullptr;
  bool is_file(const std::string& value) const { return !names_file || names_file(value); }
};

// Every key whose value is a path, resolved as resolve_input_path does: relative to the
// scenario file's directory.
const std::vector<FileReference>& file_references();

struct NamedFile {
  std::string key;    // the file_references() key that names it
  std::string path;   // resolved against the scenario's directory
};

// The files a document (overrides applied) names, in file_references() order; a key that is
// absent or not a scalar names none (the loader reports it).
std::vector<NamedFile> named_files(const YAML::Node& document, const std::string& scenario_path);

// Rewrites each relative path under `node` to an absolute one, taken from base_dir; `node_key`
// is where `node` sits in the document ("" for the whole document, "hardware" for the value of
// a `--set hardware=...`). True when something changed.
bool make_file_references_absolute(YAML::Node& node, const std::string& node_key, const std::string& base_dir);

}  // namespace podsim
