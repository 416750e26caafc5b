#include "sim/scenario/input_error.hpp"

#include <cstdio>

namespace podsim {

std::string terminal_safe(const std::string& text, bool keep_newlines) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if ((c < 0x20 || c == 0x7f) && !(keep_newlines && c == '\n')) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
      out += escaped;
    } else {
      out += ch;
    }
  }
  return out;
}

namespace {

// A value as the message shows it: control characters escaped (a message goes to a terminal),
// and a long one cut, with how long it was (a 1 MB value must not make a 1 MB message).
std::string shown(const std::string& text, size_t limit) {
  const size_t keep = text.size() > limit ? limit * 3 / 4 : text.size();
  size_t end = keep;
  while (end < text.size() && end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;  // whole UTF-8
  std::string out = terminal_safe(text.substr(0, end));
  if (end < text.size()) out += "... [" + std::to_string(text.size()) + " bytes in all]";
  return out;
}

std::string format(const SourceLocation& where, const std::string& key, const std::string& value,
                   const std::string& expected) {
  std::string text = where.file.empty() ? std::string("<input>") : shown(where.file, 400);
  if (where.line > 0) {
    text += ":" + std::to_string(where.line);
    if (where.column > 0) text += ":" + std::to_string(where.column);
  }
  text += ": ";
  if (!key.empty()) text += "key '" + shown(key, 200) + "': ";
  if (!value.empty()) text += "value '" + shown(value, 200) + "': ";
  text += shown(expected, 2000);
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
