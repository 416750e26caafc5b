// The generic "YAML with locations" layer of the scenario loader; see yaml_fields.hpp.
#include "sim/scenario/yaml_fields.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>
#include <system_error>

namespace podsim::yaml_fields {

// ---- locations and errors ----

SourceLocation locate(const std::string& file, const YAML::Mark& mark) {
  if (mark.is_null() || mark.line < 0) return SourceLocation{file, 0, 0};
  return SourceLocation{file, mark.line + 1, mark.column + 1};
}

// A short, bounded rendering: aliases can make a node contain itself.
std::string render(const YAML::Node& node, int depth) {
  if (!node.IsDefined() || node.IsNull()) return "";
  if (node.IsScalar()) return node.Scalar();
  if (depth > 2) return "...";
  const bool is_map = node.IsMap();
  std::string text = is_map ? "{" : "[";
  int count = 0;
  for (auto it = node.begin(); it != node.end(); ++it) {
    if (count++ > 0) text += ", ";
    if (count > 6 || text.size() > 80) {
      text += "...";
      break;
    }
    text += is_map ? render(it->first, depth + 1) + ": " + render(it->second, depth + 1)
                   : render(*it, depth + 1);
  }
  return text + (is_map ? "}" : "]");
}

[[noreturn]] void fail(const Field& field, const std::string& expected) {
  throw InputError(field.where, field.key, render(field.node, 0), expected);
}

std::string located(const Field& field, const std::string& text) {
  return field.where.file + (field.where.line > 0 ? ":" + std::to_string(field.where.line) : std::string()) + ": " +
         text;
}

std::string join(const std::vector<std::string>& items, std::string_view separator) {
  std::string text;
  for (const auto& item : items) text += (text.empty() ? "" : std::string(separator)) + item;
  return text;
}

std::string child_key(const std::string& parent, std::string_view name) {
  return parent.empty() ? std::string(name) : parent + "." + std::string(name);
}

// ---- mappings and sequences ----

MapReader::MapReader(const Field& self, std::vector<std::string> allowed, bool closed)
    : self_(self), allowed_(std::move(allowed)), closed_(closed) {
  if (!self.node.IsMap()) fail(self, "expected a mapping (key: value lines)");
  for (auto it = self.node.begin(); it != self.node.end(); ++it) add_entry(it->first, it->second);
}

namespace {

std::vector<std::string> table_keys(SchemaMap map, const std::vector<std::string>& axis_keys) {
  const KeyTable& table = key_table(map);
  if (!axis_keys.empty() && !table.axis_keys)
    throw std::logic_error("MapReader: table " + table.id + " takes no axis names");
  std::vector<std::string> keys = table.keys;
  keys.insert(keys.end(), axis_keys.begin(), axis_keys.end());
  return keys;
}

}  // namespace

MapReader::MapReader(const Field& self, SchemaMap map, const std::vector<std::string>& axis_keys)
    : MapReader(self, table_keys(map, axis_keys), true) {}

MapReader MapReader::open(const Field& self) { return MapReader(self, {}, false); }

void MapReader::reject_unknown() const {
  if (!closed_) throw std::logic_error("MapReader: an open mapping (keys are data) has no unknown keys to reject");
  for (const Entry& entry : entries_)
    if (std::find(allowed_.begin(), allowed_.end(), entry.name) == allowed_.end())
      fail_key(entry, "unknown key; expected one of: " + join(allowed_));
}

std::optional<Field> MapReader::optional(std::string_view name) const {
  const auto it = index_.find(std::string(name));
  if (it == index_.end()) return std::nullopt;
  return entries_[it->second].value;
}

Field MapReader::required(std::string_view name) const {
  if (auto field = optional(name)) return *field;
  throw InputError(self_.where, child_key(self_.key, name), "", "missing required key");
}

void MapReader::fail_key(const Entry& entry, const std::string& expected) {
  throw InputError(entry.key.where, entry.key.key, render(entry.value.node, 0), expected);
}

void MapReader::add_entry(const YAML::Node& key, const YAML::Node& value) {
  Field key_field{key, self_.key, locate(self_.where.file, key.Mark())};
  if (!key.IsScalar()) fail(key_field, "expected a plain key name");
  const std::string name = key.Scalar();
  key_field.key = child_key(self_.key, name);
  // A null value ("key:" and nothing else) carries the mark of the next line; use the key's.
  const SourceLocation where = (value.IsNull() || value.Mark().is_null())
                                   ? key_field.where
                                   : locate(self_.where.file, value.Mark());
  const Entry added{name, key_field, Field{value, key_field.key, where}};
  const auto [it, is_new] = index_.emplace(name, entries_.size());
  if (!is_new)
    fail_key(added, "key given twice (first at line " + std::to_string(entries_[it->second].key.where.line) + ")");
  entries_.push_back(added);
}

std::vector<Field> read_list(const Field& field) {
  if (!field.node.IsSequence()) fail(field, "expected a list, e.g. [a, b]");
  std::vector<Field> items;
  int index = 0;
  for (const YAML::Node& item : field.node) {
    SourceLocation where = locate(field.where.file, item.Mark());
    if (where.line == 0 || item.IsNull()) where = field.where;
    items.push_back(Field{item, field.key + "[" + std::to_string(index++) + "]", where});
  }
  return items;
}

// ---- scalars ----

std::string read_string(const Field& field) {
  if (!field.node.IsScalar() || field.node.Scalar().empty()) fail(field, "expected a non-empty string");
  return field.node.Scalar();
}

std::string read_name(const Field& field, std::string_view what) {
  const std::string name = read_string(field);
  const bool ok = std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
  if (!ok) fail(field, "expected " + std::string(what) + " made of letters, digits, '_' and '-'");
  return name;
}

int64_t read_integer(const Field& field, int64_t min, int64_t max) {
  const std::string range = "expected a whole number from " + std::to_string(min) + " to " +
                            std::to_string(max);
  if (!field.node.IsScalar()) fail(field, range);
  const std::string& text = field.node.Scalar();
  int64_t value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || value < min || value > max)
    fail(field, range);
  return value;
}

int read_int(const Field& field, int64_t min, int64_t max) {
  return static_cast<int>(read_integer(field, min, std::min<int64_t>(max, std::numeric_limits<int>::max())));
}

// Only true/false: YAML 1.1's yes/no/on/off surprise people (the "Norway problem").
bool read_bool(const Field& field) {
  const std::string text = field.node.IsScalar() ? field.node.Scalar() : "";
  if (text == "true" || text == "True" || text == "TRUE") return true;
  if (text == "false" || text == "False" || text == "FALSE") return false;
  fail(field, "expected true or false");
}

double read_real(const Field& field) {
  if (!field.node.IsScalar()) fail(field, "expected a number");
  const std::string& text = field.node.Scalar();
  const char* begin = text.data() + (text.starts_with('+') ? 1 : 0);
  double value = 0;
  const auto [ptr, ec] = std::from_chars(begin, text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(value))
    fail(field, "expected a finite number");
  return value;
}

// ---- mesh axes ----

int axis_index(const std::vector<MeshAxis>& axes, const std::string& name) {
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i].name == name) return static_cast<int>(i);
  return -1;
}

std::string axis_names(const std::vector<MeshAxis>& axes) {
  std::vector<std::string> names;
  for (const MeshAxis& axis : axes) names.push_back(axis.name);
  return join(names);
}

}  // namespace podsim::yaml_fields
