#include "sim/scenario/request_trace.hpp"

#include <array>
#include <cmath>
#include <fstream>
#include <sstream>

#include "sim/scenario/csv_cells.hpp"
#include "sim/scenario/input_error.hpp"
#include "sim/scenario/input_file.hpp"
#include "sim/scenario/units.hpp"

namespace podsim {

std::vector<Request> parse_request_trace(const std::string& text, const std::string& path, int max_tokens,
                                         const std::string& model_name) {
  const std::array<std::string, 3> names = {"arrival_s", "prompt_tokens", "output_tokens"};
  std::array<int, 3> column = {-1, -1, -1};
  std::vector<Request> requests;
  std::istringstream in(text);
  std::string line;
  int line_number = 0;
  bool header = false;
  size_t columns = 0;
  while (std::getline(in, line)) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (csv_line_skipped(line)) continue;
    const auto cells = split_csv_line(line);
    if (!header) {
      for (size_t c = 0; c < cells.size(); ++c) {
        for (size_t k = 0; k < names.size(); ++k) {
          if (cells[c] == names[k]) column[k] = static_cast<int>(c);
        }
      }
      for (size_t k = 0; k < names.size(); ++k) {
        if (column[k] < 0)
          throw InputError({path, line_number, 1}, "header", csv_line_excerpt(line),
                           "no column " + names[k] + "; expected a header naming arrival_s, prompt_tokens and "
                           "output_tokens");
      }
      header = true;
      columns = cells.size();
      continue;
    }
    if (cells.size() != columns)
      throw InputError({path, line_number, 1}, "row", csv_line_excerpt(line),
                       std::to_string(cells.size()) + " columns; expected " + std::to_string(columns) +
                           ", as in the header");
    Request r;
    r.id = static_cast<int>(requests.size());
    for (size_t k = 0; k < names.size(); ++k) {
      const std::string& cell = cells[column[k]];
      const SourceLocation where{path, line_number, column[k] + 1};
      if (k == 0) {
        const std::optional<double> parsed = parse_whole_number<double>(cell);
        if (!parsed || !std::isfinite(*parsed) || *parsed < 0)
          throw InputError(where, names[k], cell, "expected seconds from the start of the trace, >= 0");
        const double value = *parsed;
        if (!requests.empty() && value < requests.back().arrival_s)
          throw InputError(where, names[k], cell,
                           "earlier than the line before; expected arrivals in non-decreasing order");
        r.arrival_s = value;
      } else {
        const std::optional<long long> value = parse_whole_number<long long>(cell);
        if (!value || *value < 1 || *value > (1 << 30))
          throw InputError(where, names[k], cell, "expected a whole number of tokens, at least 1");
        (k == 1 ? r.prompt_tokens : r.output_tokens) = static_cast<int>(*value);
      }
    }
    if (static_cast<int64_t>(r.prompt_tokens) + r.output_tokens > max_tokens)
      throw InputError({path, line_number, column[1] + 1}, "prompt_tokens + output_tokens",
                       std::to_string(r.prompt_tokens) + " + " + std::to_string(r.output_tokens),
                       "longer than " + model_name + "'s max_sequence_length of " + std::to_string(max_tokens));
    requests.push_back(r);
  }
  if (!header) throw InputError({path, 0, 0}, "", "", "empty trace; expected a header and one request per line");
  if (requests.empty()) throw InputError({path, line_number, 0}, "", "", "no requests after the header");
  return requests;
}

std::vector<Request> read_request_trace(const std::string& path, int max_tokens, const std::string& model_name) {
  // 4 GiB: well beyond the 10,000,000 rows the serving loop takes (about 250 MB as CSV).
  return parse_request_trace(read_input_file(path, "request trace", uintmax_t{4} << 30), path, max_tokens, model_name);
}

}  // namespace podsim
