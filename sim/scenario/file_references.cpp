#include "sim/scenario/file_references.hpp"

#include <algorithm>
#include <filesystem>

#include "sim/scenario/builtin_profiles.hpp"
#include "sim/scenario/input_file.hpp"

namespace fs = std::filesystem;

namespace podsim {

const std::vector<FileReference>& file_references() {
  static const std::vector<FileReference> references = {
      {"hardware.profile", "calibration profile",         // scenario_loader.cpp apply_profile
       [](const std::string& value) { return !names_builtin_profile(value); }},
      {"workload.requests.trace", "request trace"},       // serving_loader.cpp
      {"workload.requests.sharegpt.path", "length table"},   // serving_loader.cpp
      {"workload.routing.loads", "expert-load file"},     // routing_loader.cpp
  };
  return references;
}

namespace {

std::vector<std::string> split_key(const std::string& key) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t dot; (dot = key.find('.', start)) != std::string::npos; start = dot + 1)
    parts.push_back(key.substr(start, dot - start));
  parts.push_back(key.substr(start));
  return parts;
}

// The scalar at `parts` below `node`, or an undefined node. Through a const view: yaml-cpp's
// non-const operator[] adds the keys it does not find, and a missing key gives a node that
// throws on anything but IsDefined.
YAML::Node find_scalar(const YAML::Node& node, const std::vector<std::string>& parts, size_t from) {
  YAML::Node at = node;
  for (size_t i = from; i < parts.size(); ++i) {
    if (!at.IsDefined() || !at.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
    const YAML::Node& view = at;
    const YAML::Node next = view[parts[i]];
    if (!next.IsDefined()) return YAML::Node(YAML::NodeType::Undefined);
    at.reset(next);
  }
  return at.IsDefined() && at.IsScalar() ? at : YAML::Node(YAML::NodeType::Undefined);
}

}  // namespace

std::vector<NamedFile> named_files(const YAML::Node& document, const std::string& scenario_path) {
  std::vector<NamedFile> out;
  for (const auto& reference : file_references()) {
    const YAML::Node file = find_scalar(document, split_key(reference.key), 0);
    if (file.IsDefined() && reference.is_file(file.Scalar())) out.push_back({reference.key, resolve_input_path(file.Scalar(), scenario_path)});
  }
  return out;
}

bool make_file_references_absolute(YAML::Node& node, const std::string& node_key, const std::string& base_dir) {
  const std::vector<std::string> below = node_key.empty() ? std::vector<std::string>{} : split_key(node_key);
  bool changed = false;
  for (const auto& reference : file_references()) {
    const std::vector<std::string> parts = split_key(reference.key);
    if (parts.size() < below.size() || !std::equal(below.begin(), below.end(), parts.begin())) continue;
    YAML::Node file = find_scalar(node, parts, below.size());
    if (!file.IsDefined() || file.Scalar().empty() || fs::path(file.Scalar()).is_absolute() ||
        !reference.is_file(file.Scalar()))
      continue;
    // The node shares its data with `node`'s tree: setting it rewrites the value in place.
    file = fs::absolute(fs::path(base_dir) / file.Scalar()).lexically_normal().string();
    changed = true;
  }
  return changed;
}

}  // namespace podsim
