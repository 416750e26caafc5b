#include "sim/python/records.hpp"

#include <cerrno>
#include <cstdlib>
#include <optional>

namespace py = pybind11;

namespace podsim::python {

py::object json_value(const std::string& text) { return py::module_::import("json").attr("loads")(text); }

std::vector<std::vector<std::string>> csv_cells(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string cell;
  bool quoted = false, row_started = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        cell += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cell += c;
      }
      continue;
    }
    row_started = true;
    if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      row.push_back(std::move(cell));
      cell.clear();
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      row.push_back(std::move(cell));
      cell.clear();
      rows.push_back(std::move(row));
      row.clear();
      row_started = false;
    } else {
      cell += c;
    }
  }
  if (row_started) {   // a last line without its line break
    row.push_back(std::move(cell));
    rows.push_back(std::move(row));
  }
  return rows;
}

namespace {

enum class ColumnType { Bool, Int, Float, Str };

bool is_integer(const std::string& s) {
  errno = 0;
  char* end = nullptr;
  std::strtoll(s.c_str(), &end, 10);
  return errno == 0 && end == s.c_str() + s.size();
}

bool is_number(const std::string& s) {
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && s.find_first_of(" \t") == std::string::npos;
}

ColumnType column_type(const std::vector<std::vector<std::string>>& rows, size_t column) {
  bool all_bool = true, all_int = true, all_number = true, any = false;
  for (size_t r = 1; r < rows.size(); ++r) {
    if (column >= rows[r].size() || rows[r][column].empty()) continue;
    const std::string& s = rows[r][column];
    any = true;
    all_bool = all_bool && (s == "true" || s == "false");
    all_int = all_int && is_integer(s);
    all_number = all_number && is_number(s);
  }
  if (!any) return ColumnType::Str;
  return all_bool ? ColumnType::Bool : all_int ? ColumnType::Int : all_number ? ColumnType::Float : ColumnType::Str;
}

py::object cell_value(const std::string& s, ColumnType type) {
  if (s.empty()) return py::none();
  switch (type) {
    case ColumnType::Bool: return py::bool_(s == "true");
    case ColumnType::Int: return py::int_(std::strtoll(s.c_str(), nullptr, 10));
    case ColumnType::Float: return py::float_(std::strtod(s.c_str(), nullptr));
    case ColumnType::Str: break;
  }
  return py::str(s);
}

}  // namespace

py::list csv_records(const std::string& text) {
  const auto rows = csv_cells(text);
  py::list records;
  if (rows.empty()) return records;
  const auto& header = rows[0];
  std::vector<ColumnType> types;
  for (size_t c = 0; c < header.size(); ++c) types.push_back(column_type(rows, c));
  std::vector<py::str> keys(header.begin(), header.end());
  for (size_t r = 1; r < rows.size(); ++r) {
    py::dict record;
    for (size_t c = 0; c < header.size(); ++c) {
      record[keys[c]] = c < rows[r].size() ? cell_value(rows[r][c], types[c]) : py::none();
    }
    records.append(std::move(record));
  }
  return records;
}

}  // namespace podsim::python
