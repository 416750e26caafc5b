#pragma once
// Bad user input: one message naming file, line, key, value and what was expected.
// main() turns it into that message on stderr and exit status 2 (design.md, habit 3).
#include <stdexcept>
#include <string>

namespace podsim {

struct SourceLocation {
  std::string file;   // path as the user gave it
  int line = 0;       // 1-based; 0 when unknown (e.g. the file could not be read)
  int column = 0;     // 1-based; 0 when unknown
};

// `text` as a terminal may show it: control characters (ESC, CR, NUL...) escaped as \xNN, so a
// name read from a file cannot move the cursor or recolour the screen; line breaks stay when
// `keep_newlines` (a table is many lines). Every message and table podsim prints passes here.
std::string terminal_safe(const std::string& text, bool keep_newlines = false);

class InputError : public std::runtime_error {
 public:
  // Message: "<file>:<line>:<col>: key '<key>': value '<value>': <expected>", with control
  // characters escaped (\xNN) and long parts cut ("... [N bytes in all]"): key and value at
  // 150 bytes, the path at 300, the expectation at 1500.
  InputError(SourceLocation where, std::string key, std::string value, std::string expected);
  const SourceLocation& where() const { return where_; }
  const std::string& key() const { return key_; }
  const std::string& value() const { return value_; }
  const std::string& expected() const { return expected_; }

 private:
  SourceLocation where_;
  std::string key_, value_, expected_;
};

}  // namespace podsim
