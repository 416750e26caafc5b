#include "sim/scenario/input_error.hpp"

namespace podsim {
namespace {
std::string format(const SourceLocation& where, const std::string& key, const std::string& value,
                   const std::string& expected) {
  std::string text = where.file.empty() ? std::string("<input>") : where.file;
  if (where.line > 0) {
    text += ":" + std::to_string(where.line);
    if (where.column > 0) text += ":" + std::to_string(where.column);
  }
  text += ": ";
  if (!key.empty()) text += "key '" + key + "': ";
  if (!value.empty()) text += "value '" + value + "': ";
  text += expected;
  return text;
}
}  // namespace

InputError::InputError(SourceLocation where, std::string key, std::string value, std::string expected)
    : std::runtime_error(format(where, key, value, expected)),
      where_(std::move(where)),
      key_(std::move(key)),
      value_(std::move(value)),
      expected_(std::move(expected)) {}

}  // namespace podsim
