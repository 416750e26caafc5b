#pragma once
// Internal to the scenario loader (scenario_loader.cpp, training_loader.cpp): YAML values that
// remember where they came from, and readers that turn them into C++ values or throw an
// InputError naming file, line, dotted key, the value as written and what was expected.
// Nothing here is specific to one part of the schema (docs/scenario-schema.md).
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/scenario/input_error.hpp"
#include "sim/scenario/schema_keys.hpp"
#include "topology/topology.hpp"

namespace podsim::yaml_fields {

// Limits shared by several parts of the schema.
constexpr int64_t kMaxAxisSize = 4096;
constexpr int64_t kMaxChips = 1'000'000;     // beyond this a run would not finish anyway

// ---- locations and errors ----

// A YAML value with where it came from, so any error about it can name file, line and key.
struct Field {
  YAML::Node node;
  std::string key;         // dotted path, e.g. "workload.operations[1].axes"
  SourceLocation where;
};

// The 1-based location of a yaml-cpp mark in `file` (line 0 when the mark is unknown).
SourceLocation locate(const std::string& file, const YAML::Mark& mark);

// A short, bounded rendering: aliases can make a node contain itself.
std::string render(const YAML::Node& node, int depth);

// Throws an InputError about `field`: its location, key and value, and what was expected.
[[noreturn]] void fail(const Field& field, const std::string& expected);

// "<file>:<line>: <text>": a warning about `field`, located as its errors are.
std::string located(const Field& field, const std::string& text);

// The items separated by `separator`.
std::string join(const std::vector<std::string>& items, std::string_view separator = ", ");

// The dotted key of `name` under `parent` ("" for the document root).
std::string child_key(const std::string& parent, std::string_view name);

// ---- mappings and sequences ----

// A YAML mapping whose keys are checked against the ones the schema allows.
class MapReader {
 public:
  struct Entry {
    std::string name;
    Field key;     // the key node itself, for errors about the key
    Field value;
  };

  // A mapping of the schema: its keys are key_table(map)'s, plus `axis_keys` (the mesh's axis
  // names) for the tables that take them. There is no constructor from a list of keys: a
  // mapping the loader reads is in the registry, which the schema test compares with
  // docs/scenario.schema.json (sim/scenario/schema_keys.hpp).
  MapReader(const Field& self, SchemaMap map, const std::vector<std::string>& axis_keys = {});

  // A mapping whose keys are data rather than schema (mesh axes in topology.mesh, wraparound
  // and split), or one only looked into; reject_unknown() on it is a programming error.
  static MapReader open(const Field& self);

  // Unknown keys are errors (design.md, habit 3); a typo must not be silently ignored.
  void reject_unknown() const;

  std::optional<Field> optional(std::string_view name) const;

  Field required(std::string_view name) const;

  // For errors about a key itself (unknown, repeated): locate the key, show its value.
  [[noreturn]] static void fail_key(const Entry& entry, const std::string& expected);

  const std::vector<Entry>& entries() const { return entries_; }
  const Field& self() const { return self_; }

 private:
  MapReader(const Field& self, std::vector<std::string> allowed, bool closed);
  void add_entry(const YAML::Node& key, const YAML::Node& value);

  Field self_;
  std::vector<std::string> allowed_;
  bool closed_ = true;
  std::vector<Entry> entries_;
  // Entry by key: a mapping of 100,000 keys took 100 s to check for repeats one by one.
  std::unordered_map<std::string, size_t> index_;
};

// The items of a sequence, each keyed "<key>[<index>]".
std::vector<Field> read_list(const Field& field);

// ---- scalars ----

// A non-empty scalar.
std::string read_string(const Field& field);

// A name of letters, digits, '_' and '-'; `what` says what it names, for the error.
std::string read_name(const Field& field, std::string_view what);

// A whole number in [min, max].
int64_t read_integer(const Field& field, int64_t min, int64_t max);

// A whole number in [min, max], capped at INT_MAX.
int read_int(const Field& field, int64_t min, int64_t max);

// Only true/false: YAML 1.1's yes/no/on/off surprise people (the "Norway problem").
bool read_bool(const Field& field);

// A finite number.
double read_real(const Field& field);

// A quantity with units through one of the sim/scenario/units.hpp parsers, whose message says what
// was expected.
template <typename Parse>
auto read_quantity(const Field& field, Parse parse) -> decltype(parse(std::string_view{})) {
  if (!field.node.IsScalar()) fail(field, "expected a quantity with units, as a string");
  try {
    return parse(field.node.Scalar());
  } catch (const std::invalid_argument& error) {
    fail(field, error.what());
  }
}

// One of the named choices.
template <typename Enum>
Enum read_choice(const Field& field, const std::vector<std::pair<std::string, Enum>>& choices) {
  const std::string text = field.node.IsScalar() ? field.node.Scalar() : "";
  std::vector<std::string> names;
  for (const auto& [name, value] : choices) {
    if (name == text) return value;
    names.push_back(name);
  }
  fail(field, "expected one of: " + join(names));
}

// ---- mesh axes (topology, collectives and training all name them) ----

// The index of the mesh axis called `name`, or -1.
int axis_index(const std::vector<MeshAxis>& axes, const std::string& name);

// The mesh's axis names, comma-separated, for error messages.
std::string axis_names(const std::vector<MeshAxis>& axes);

}  // namespace podsim::yaml_fields
