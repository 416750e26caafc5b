#include "sim/scenario/csv_cells.hpp"

#include <sstream>

namespace podsim {

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, ',')) {
    const size_t a = cell.find_first_not_of(" \t\r");
    const size_t b = cell.find_last_not_of(" \t\r");
    cells.push_back(a == std::string::npos ? "" : cell.substr(a, b - a + 1));
  }
  if (!line.empty() && line.back() == ',') cells.emplace_back();
  return cells;
}

bool csv_line_skipped(const std::string& line) {
  const size_t first = line.find_first_not_of(" \t");
  return first == std::string::npos || line[first] == '#';
}

std::string csv_line_excerpt(const std::string& line) {
  constexpr size_t kKeep = 40;
  if (line.size() <= kKeep) return line;
  size_t end = kKeep;
  while (end > 0 && (static_cast<unsigned char>(line[end]) & 0xC0) == 0x80) --end;   // not inside a character
  return line.substr(0, end) + "...";
}

}  // namespace podsim
