#include "sim/scenario/input_file.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/scenario/input_error.hpp"

namespace podsim {

namespace fs = std::filesystem;

std::string read_input_file(const std::string& path, const std::string& what, uintmax_t max_bytes) {
  const SourceLocation where{path, 0, 0};
  std::error_code error;
  const fs::file_status status = fs::status(path, error);   // follows symbolic links
  if (error || !fs::exists(status))
    throw InputError(where, "", path, "cannot open " + what + ": " + (error ? error.message() : std::string("no such file")));
  if (fs::is_directory(status))
    throw InputError(where, "", path, "cannot open " + what + ": it is a directory; expected a regular file");
  if (!fs::is_regular_file(status))
    throw InputError(where, "", path,
                     "cannot open " + what + ": not a regular file (a device, FIFO or socket); expected a regular file");
  const uintmax_t size = fs::file_size(path, error);
  if (!error && size > max_bytes)
    throw InputError(where, "", path, what + " is larger than " + std::to_string(max_bytes >> 20) + " MiB");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(where, "", path, "cannot open " + what + " for reading");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw InputError(where, "", path, "cannot read " + what);
  return text.str();
}

std::string resolve_input_path(const std::string& named, const std::string& scenario_path) {
  fs::path path = named;
  if (path.is_relative()) path = fs::path(scenario_path).parent_path() / path;
  return path.string();
}

namespace {

// Length of the UTF-8 sequence at text[i], or 0 if it is not one (overlong forms, surrogates
// and code points past U+10FFFF included, as RFC 3629 says).
size_t utf8_length(const std::string& text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  size_t n;
  unsigned min_second = 0x80, max_second = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) min_second = 0xA0;
    if (c == 0xED) max_second = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) min_second = 0x90;
    if (c == 0xF4) max_second = 0x8F;
  } else {
    return 0;
  }
  if (i + n > text.size()) return 0;
  if (byte(i + 1) < min_second || byte(i + 1) > max_second) return 0;
  for (size_t k = 2; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  }
  return n;
}

}  // namespace

void require_utf8(const std::string& text, const std::string& path) {
  int line = 1, column = 1;
  for (size_t i = 0; i < text.size();) {
    const size_t n = utf8_length(text, i);
    if (n == 0) {
      char byte[8];
      std::snprintf(byte, sizeof byte, "0x%02x", static_cast<unsigned char>(text[i]));
      throw InputError({path, line, column}, "", "",
                       std::string("byte ") + byte + " is not UTF-8; expected UTF-8 text (YAML and the JSON outputs need it)");
    }
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
    i += n;
  }
}

}  // namespace podsim
