#include "sim/python/sweep.hpp"

#include <filesystem>
#include <thread>

#include "sim/commands/sweep.hpp"
#include "sim/python/call_lock.hpp"
#include "sim/python/cli_binary.hpp"
#include "sim/python/interrupt.hpp"
#include "sim/python/records.hpp"
#include "sim/python/scenario_object.hpp"
#include "sim/python/work_dir.hpp"
#include "sim/report/csv_text.hpp"

namespace py = pybind11;
namespace fs = std::filesystem;

namespace podsim::python {

namespace {

py::list sweep(const py::object& scenario_or_path, const py::dict& grid, const py::object& overrides,
               const py::object& output_dir, int jobs, const std::string& podsim_binary) {
  // The base scenario must load (as `podsim sweep` checks); points may still fail.
  const LoadedScenario s = as_scenario(scenario_or_path, overrides);
  SweepOptions options;
  options.podsim_binary = cli_binary(podsim_binary);
  // The scenario's own overrides go first, as axes of one value: every point gets them.
  for (const auto& o : s.overrides) options.axes.push_back({o.key, {point_override(s, o.key, o.value)}});
  std::vector<std::pair<py::str, std::vector<py::object>>> swept;   // the caller's values, for the records
  for (auto item : grid) {
    if (!py::isinstance<py::str>(item.first)) throw py::type_error("podsim.sweep: grid keys must be dotted keys (str)");
    if (py::isinstance<py::str>(item.second) || !py::hasattr(item.second, "__iter__"))
      throw py::type_error("podsim.sweep: grid['" + utf8_text(item.first, "") + "'] must be a list of values");
    SweepAxis axis{utf8_text(item.first, ""), {}};
    std::vector<py::object> values;
    for (auto v : item.second) {
      axis.values.push_back(point_override(s, axis.key, override_text(v, axis.key)));
      values.push_back(py::reinterpret_borrow<py::object>(v));
    }
    if (values.empty()) throw py::value_error("podsim.sweep: grid['" + axis.key + "'] has no values");
    options.axes.push_back(std::move(axis));
    swept.emplace_back(py::reinterpret_borrow<py::str>(item.first), std::move(values));
  }
  const WorkDir dir(optional_path(output_dir));
  options.out_dir = dir.path();
  options.scenario_path = scenario_file(s, dir.path());
  options.jobs = jobs > 0 ? jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::string table;
  std::vector<std::string> summaries;
  options.stop_requested = stop_on_interrupt;
  const auto points = sweep_grid(options.axes);
  {
    const py::gil_scoped_release release;
    const std::lock_guard<std::mutex> one_at_a_time(call_lock());
    run_sweep(options);
    table = read_text_file((fs::path(dir.path()) / "sweep.csv").string());
    for (const auto& p : points)
      summaries.push_back(read_text_file((fs::path(point_dir(dir.path(), p.index)) / "summary.json").string()));
  }
  raise_if_interrupted();
  // Status and error as sweep.csv has them.
  const py::list rows = csv_records(table);
  py::list out;
  for (const auto& p : points) {
    py::dict parameters;
    size_t rest = static_cast<size_t>(p.index);   // row-major, the last axis fastest
    for (size_t a = swept.size(); a-- > 0;) {
      const size_t n = swept[a].second.size();
      parameters[swept[a].first] = swept[a].second[rest % n];
      rest /= n;
    }
    py::dict ordered;   // in the grid's key order
    for (const auto& [key, values] : swept) ordered[key] = parameters[key];
    const py::dict row = rows[static_cast<size_t>(p.index)];
    py::dict record;
    record["point"] = p.index;
    record["parameters"] = ordered;
    record["status"] = row["status"];
    record["error"] = row["error"];
    const std::string status = row["status"].cast<std::string>();
    record["summary"] = status == "ok" || status == "does_not_fit" ? json_value(summaries[p.index]) : py::none();
    out.append(record);
  }
  return out;
}

}  // namespace

void bind_sweep(py::module_& m) {
  m.def("sweep", &sweep, py::arg("scenario"), py::arg("grid"), py::arg("overrides") = py::none(), py::kw_only(),
        py::arg("output_dir") = py::none(), py::arg("jobs") = 0, py::arg("podsim_binary") = "",
        R"(Run a scenario over the Cartesian grid of values, as `podsim sweep` does, and return one
dict per point in grid order (the last key varies fastest):
{'point': index, 'parameters': {key: value},
 'status': 'ok' | 'does_not_fit' (simulated anyway: a plan that does not fit HBM) | 'error' | 'interrupted',
 'error': the point's message or None, 'summary': its summary.json as a dict, or None}.

scenario: a podsim.Scenario or the path of a scenario file.
grid: {dotted key: [values]}, e.g. {'workload.batch': [1, 8, 64]}.
overrides: fixed {dotted key: value} for every point.
output_dir: keep the sweep there (sweep.csv, points/NNNNN/); running again into it re-runs only
    the points whose inputs changed. Default: a temporary directory, removed.
jobs: points at once (default: every core). Each point is a `podsim run` process of the
    podsim executable (podsim_binary, else $PODSIM_BINARY, else ../podsim beside this module).
Raises podsim.InputError when the base scenario is bad input; a bad point is a record with
status 'error'.)");
}

}  // namespace podsim::python
