#include "sim/scenario/input_file.hpp"

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

}  // namespace podsim
