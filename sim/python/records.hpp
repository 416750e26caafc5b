#pragma once
// podsim's text outputs as Python values: summary.json as it parses with json.loads, and CSV
// files (operations.csv, requests.csv, steps.csv, sweep.csv, ...) as lists of records (dicts
// keyed by the header), so Python sees exactly what the command line writes.
#include <pybind11/pybind11.h>

#include <string>
#include <vector>

namespace podsim::python {

// JSON text through Python's json.loads (key order kept).
pybind11::object json_value(const std::string& text);

// RFC 4180 CSV (quoted cells, "" for a quote) into rows of cells; the first row is the header.
std::vector<std::vector<std::string>> csv_cells(const std::string& text);

// One dict per row. Each column gets one type for all its rows, so a column reads the same
// whatever values a run produced: bool when every cell is true or false, int when every cell
// is an integer, float when every cell is a number (inf and nan too), else str. An empty cell
// is None.
pybind11::list csv_records(const std::string& text);

}  // namespace podsim::python
