#pragma once
// The CSV dialect of the files a scenario names (request traces, expert loads): comma-separated
// cells, spaces, tabs and a carriage return around a cell dropped, no quoting; blank lines and
// lines whose first non-blank character is '#' carry nothing.
#include <string>
#include <vector>

namespace podsim {

// The cells of one line, each trimmed; a trailing comma ends with an empty cell.
std::vector<std::string> split_csv_line(const std::string& line);

// Whether a line is blank or a '#' comment.
bool csv_line_skipped(const std::string& line);

// A line as an error quotes it: its first 40 bytes (whole UTF-8 characters) and "..." when cut.
// A file that is not CSV at all (a scenario naming /etc/shadow) must not be echoed whole.
std::string csv_line_excerpt(const std::string& line);

}  // namespace podsim
