#include "sim/scenario/request_trace.hpp"

#include <array>
#include <cmath>
#include <optional>
#include <sstream>

#include "sim/scenario/csv_cells.hpp"
#include "sim/scenario/input_error.hpp"
#include "sim/scenario/input_file.hpp"
#include "sim/scenario/units.hpp"

namespace podsim {

namespace {

enum Column { Arrival, Prompt, Output, PrefixId, PrefixTokens, kColumns };
const std::array<std::string, kColumns> kNames = {"arrival_s", "prompt_tokens", "output_tokens", "prefix_id",
                                                  "prefix_tokens"};

// The header's column of each name (-1: absent), checked: the required ones present, the
// prefix pair both or neither.
std::array<int, kColumns> header_columns(const std::vector<std::string>& cells, const std::string& line,
                                         const SourceLocation& where, bool arrivals) {
  std::array<int, kColumns> column;
  column.fill(-1);
  for (size_t c = 0; c < cells.size(); ++c)
    for (size_t k = 0; k < kColumns; ++k)
      if (cells[c] == kNames[k]) column[k] = static_cast<int>(c);
  const std::string expected = arrivals ? "arrival_s, prompt_tokens and output_tokens" : "prompt_tokens and output_tokens";
  for (int k = arrivals ? Arrival : Prompt; k <= Output; ++k)
    if (column[k] < 0)
      throw InputError(where, "header", csv_line_excerpt(line),
                       "no column " + kNames[k] + "; expected a header naming " + expected +
                           " (and prefix_id, prefix_tokens for shared prefixes)");
  if ((column[PrefixId] < 0) != (column[PrefixTokens] < 0))
    throw InputError(where, "header", csv_line_excerpt(line),
                     "a prefix needs both prefix_id and prefix_tokens; expected both columns or neither");
  return column;
}

// The request on one row; `previous_arrival_s` is the row before's (arrivals only).
Request parse_row(const std::vector<std::string>& cells, const std::array<int, kColumns>& column, const std::string& path,
                  int line_number, bool arrivals, double previous_arrival_s) {
  Request r;
  auto where = [&](int k) { return SourceLocation{path, line_number, column[k] + 1}; };
  if (arrivals) {
    const std::string& cell = cells[column[Arrival]];
    const std::optional<double> value = parse_whole_number<double>(cell);
    if (!value || !std::isfinite(*value) || *value < 0)
      throw InputError(where(Arrival), kNames[Arrival], cell, "expected seconds from the start of the trace, >= 0");
    if (*value < previous_arrival_s)
      throw InputError(where(Arrival), kNames[Arrival], cell,
                       "earlier than the line before; expected arrivals in non-decreasing order");
    r.arrival_s = *value;
  }
  for (int k : {Prompt, Output}) {
    const std::string& cell = cells[column[k]];
    const std::optional<long long> value = parse_whole_number<long long>(cell);
    if (!value || *value < 1 || *value > (1 << 30))
      throw InputError(where(k), kNames[k], cell, "expected a whole number of tokens, at least 1");
    (k == Prompt ? r.prompt_tokens : r.output_tokens) = static_cast<int>(*value);
  }
  if (column[PrefixId] < 0) return r;
  const std::string& id = cells[column[PrefixId]];
  const std::string& tokens = cells[column[PrefixTokens]];
  if (id.empty() != tokens.empty())
    throw InputError(where(id.empty() ? PrefixId : PrefixTokens), id.empty() ? kNames[PrefixId] : kNames[PrefixTokens],
                     id.empty() ? id : tokens, "a prefix needs both cells; expected both empty or both given");
  if (id.empty()) return r;
  const std::optional<long long> prefix = parse_whole_number<long long>(id);
  if (!prefix || *prefix < 0 || *prefix > (1 << 30))
    throw InputError(where(PrefixId), kNames[PrefixId], id, "expected a whole number >= 0 naming the shared prefix");
  const std::optional<long long> length = parse_whole_number<long long>(tokens);
  if (!length || *length < 1 || *length > (1 << 30))
    throw InputError(where(PrefixTokens), kNames[PrefixTokens], tokens, "expected a whole number of tokens, at least 1");
  if (*length > r.prompt_tokens)
    throw InputError(where(PrefixTokens), kNames[PrefixTokens], tokens,
                     "a prefix longer than its prompt of " + std::to_string(r.prompt_tokens) +
                         " tokens; expected at most prompt_tokens");
  r.prefix_id = static_cast<int>(*prefix);
  r.prefix_tokens = static_cast<int>(*length);
  return r;
}

LengthTable parse_rows(const std::string& text, const std::string& path, bool arrivals) {
  std::array<int, kColumns> column{};
  LengthTable table;
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
      column = header_columns(cells, line, {path, line_number, 1}, arrivals);
      table.prompt_column = column[Prompt] + 1;
      header = true;
      columns = cells.size();
      continue;
    }
    if (cells.size() != columns)
      throw InputError({path, line_number, 1}, "row", csv_line_excerpt(line),
                       std::to_string(cells.size()) + " columns; expected " + std::to_string(columns) +
                           ", as in the header");
    const double previous = table.rows.empty() ? 0.0 : table.rows.back().arrival_s;
    Request r = parse_row(cells, column, path, line_number, arrivals, previous);
    r.id = static_cast<int>(table.rows.size());
    table.rows.push_back(r);
    table.lines.push_back(line_number);
  }
  const std::string what = arrivals ? "trace" : "length table";
  if (!header) throw InputError({path, 0, 0}, "", "", "empty " + what + "; expected a header and one request per line");
  if (table.rows.empty()) throw InputError({path, line_number, 0}, "", "", "no requests after the header");
  return table;
}

}  // namespace

std::vector<Request> parse_request_trace(const std::string& text, const std::string& path, int max_tokens,
                                         const std::string& model_name) {
  LengthTable table = parse_rows(text, path, true);
  for (size_t i = 0; i < table.rows.size(); ++i) require_fits_model(table, path, i, table.rows[i], max_tokens, model_name);
  return std::move(table.rows);
}

void require_fits_model(const LengthTable& table, const std::string& path, size_t row, const Request& request,
                        int max_tokens, const std::string& model_name) {
  if (static_cast<int64_t>(request.prompt_tokens) + request.output_tokens <= max_tokens) return;
  throw InputError({path, table.lines[row], table.prompt_column}, "prompt_tokens + output_tokens",
                   std::to_string(request.prompt_tokens) + " + " + std::to_string(request.output_tokens),
                   "longer than " + model_name + "'s max_sequence_length of " + std::to_string(max_tokens));
}

std::vector<Request> read_request_trace(const std::string& path, int max_tokens, const std::string& model_name) {
  // 4 GiB: well beyond the 10,000,000 rows the serving loop takes (about 250 MB as CSV).
  return parse_request_trace(read_input_file(path, "request trace", uintmax_t{4} << 30), path, max_tokens, model_name);
}

LengthTable parse_length_table(const std::string& text, const std::string& path) { return parse_rows(text, path, false); }

LengthTable read_length_table(const std::string& path) {
  return parse_length_table(read_input_file(path, "length table", uintmax_t{4} << 30), path);
}

}  // namespace podsim
