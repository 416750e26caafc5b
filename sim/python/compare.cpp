#include "sim/python/compare.hpp"

#include <thread>

#include "sim/commands/compare.hpp"
#include "sim/python/call_lock.hpp"
#include "sim/python/cli_binary.hpp"
#include "sim/python/interrupt.hpp"
#include "sim/python/records.hpp"
#include "sim/python/scenario_object.hpp"
#include "sim/python/work_dir.hpp"

namespace py = pybind11;

namespace podsim::python {

namespace {

std::vector<std::string> strings(const py::object& values, const char* what) {
  std::vector<std::string> out;
  if (values.is_none()) return out;
  if (py::isinstance<py::str>(values))
    throw py::type_error(std::string("podsim.compare: ") + what + " must be a list, e.g. ['4x4x4', '8x8']");
  for (auto v : values) out.push_back(utf8_text(py::str(v), what));   // 16 is the shape "16"
  return out;
}

py::list compare(const py::object& scenario_or_path, const py::object& topologies, const py::object& chips,
                 const py::object& overrides, const py::object& output_dir, int jobs, const std::string& podsim_binary) {
  const LoadedScenario s = as_scenario(scenario_or_path, overrides);
  CompareOptions options;
  for (const auto& o : s.overrides) options.overrides.push_back({o.key, point_override(s, o.key, o.value)});
  options.topologies = strings(topologies, "topologies");
  options.chips = strings(chips, "chips");
  options.podsim_binary = cli_binary(podsim_binary);
  options.jobs = jobs > 0 ? jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const WorkDir dir(optional_path(output_dir));
  options.out_dir = dir.path();
  options.scenario_path = scenario_file(s, dir.path());
  options.stop_requested = stop_on_interrupt;
  std::string csv;
  {
    const py::gil_scoped_release release;
    const std::lock_guard<std::mutex> one_at_a_time(call_lock());
    csv = compare_csv(run_compare(options));
  }
  raise_if_interrupted();
  return csv_records(csv);
}

}  // namespace

void bind_compare(py::module_& m) {
  m.def("compare", &compare, py::arg("scenario"), py::arg("topologies") = py::none(), py::arg("chips") = py::none(),
        py::arg("overrides") = py::none(), py::kw_only(), py::arg("output_dir") = py::none(), py::arg("jobs") = 0,
        py::arg("podsim_binary") = "",
        R"(Run one workload on several mesh shapes (and chips), as `podsim compare` does, and return
the rows of compare.csv as dicts: topology, chip, status, error, chips, wraparound,
diameter_hops, bisection_links, hops, time_metric, time_s, algbw_Bps, exposed_comm_s, mfu,
tokens_per_s_per_chip (None where a workload has no such figure, and in a row that did not
run). status: 'ok', 'does_not_fit', 'error', or as for podsim.sweep 'interrupted' or 'missing'; on Ctrl-C the
points under way are killed, compare.csv in output_dir records them, and KeyboardInterrupt is
raised.

topologies: mesh shapes, e.g. ['4x4x4', '8x8']; default: the scenario's compare: block.
chips: presets to cross with the shapes, e.g. ['v5e', 'v5p'].
output_dir, jobs, podsim_binary: as for podsim.sweep. No compare.png is drawn: plot the rows.)");
}

}  // namespace podsim::python
