#pragma once
// Reading a file a user names (a scenario, a request trace): only a regular file is read, so
// /dev/zero, a FIFO or a terminal is refused with a located message instead of read until
// memory runs out or forever.
#include <cstdint>
#include <string>

namespace podsim {

// The whole file; throws InputError naming the path and `what` ("scenario file", "request
// trace") when it is missing, not a regular file, larger than max_bytes, or unreadable.
std::string read_input_file(const std::string& path, const std::string& what, uintmax_t max_bytes);

// A file a scenario names (a request trace, an expert-load CSV): relative to the scenario's
// directory, so a scenario and its inputs move together.
std::string resolve_input_path(const std::string& named, const std::string& scenario_path);

// Throws InputError at the line and column of the first byte that is not UTF-8 (outputs are
// JSON, which must be UTF-8: a bad name would fail only after the whole simulation).
void require_utf8(const std::string& text, const std::string& path);

}  // namespace podsim
