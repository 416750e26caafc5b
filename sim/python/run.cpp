#include "sim/python/run.hpp"

#include <filesystem>
#include <spdlog/spdlog.h>

#include "sim/commands/run_command.hpp"
#include "sim/python/call_lock.hpp"
#include "sim/python/records.hpp"
#include "sim/python/scenario_object.hpp"
#include "sim/python/work_dir.hpp"
#include "sim/report/csv_text.hpp"

namespace py = pybind11;
namespace fs = std::filesystem;

namespace podsim::python {

namespace {

RunResultObject run(const py::object& scenario_or_path, const py::object& overrides, const std::string& fidelity,
                    const std::string& trace_detail, bool allow_oom, bool /*strict*/, bool reproducible,
                    const py::object& output_dir) {
  if (fidelity != "auto" && fidelity != "full")
    throw py::value_error("podsim.run: fidelity '" + fidelity + "'; expected 'auto' (symmetry-reduced where exact) or 'full'");
  if (trace_detail != "collectives" && trace_detail != "hops")
    throw py::value_error("podsim.run: trace_detail '" + trace_detail + "'; expected 'collectives' or 'hops'");
  const LoadedScenario s = as_scenario(scenario_or_path, overrides);
  for (const std::string& warning : s.scenario.warnings) spdlog::warn("{}", warning);   // as `podsim run` logs them
  RunCommandOptions options;
  options.fidelity = fidelity == "full" ? Fidelity::Full : Fidelity::Auto;
  options.record_hops = trace_detail == "hops";
  options.allow_oom = allow_oom;
  options.reproducible = reproducible;
  const WorkDir dir(optional_path(output_dir));
  const bool serving = s.scenario.kind() == WorkloadKind::Serving;
  RunCommandOutputs outputs;
  std::string summary, operations, requests, steps;
  {
    // The simulation runs in a child process (sim/engine/replay.cpp) and the rest is C++:
    // other Python threads may go on meanwhile.
    const py::gil_scoped_release release;
    const std::lock_guard<std::mutex> one_at_a_time(call_lock());
    outputs = run_to_directory(s.scenario, dir.path(), options);
    const fs::path out = dir.path();
    summary = read_text_file((out / "summary.json").string());
    if (serving) {
      requests = read_text_file((out / "requests.csv").string());
      steps = read_text_file((out / "steps.csv").string());
    } else {
      operations = read_text_file((out / "operations.csv").string());
    }
  }
  RunResultObject r;
  r.name = s.scenario.name;
  r.kind = workload_kind_name(s.scenario.kind());
  r.summary = json_value(summary);
  r.operations = serving ? py::none() : py::object(csv_records(operations));
  r.requests = serving ? py::object(csv_records(requests)) : py::none();
  r.steps = serving ? py::object(csv_records(steps)) : py::none();
  r.table = outputs.table;
  r.output_dir = dir.temporary() ? py::object(py::none()) : py::object(py::str(dir.path()));
  if (!dir.temporary())
    for (const auto& f : outputs.files) r.files.append(f);
  return r;
}

}  // namespace

void bind_run(py::module_& m) {
  py::class_<RunResultObject>(m, "Result", "What podsim.run returns: the outputs of `podsim run` as Python values.")
      .def_readonly("name", &RunResultObject::name, "the scenario's name")
      .def_readonly("kind", &RunResultObject::kind, "collectives, training, inference or serving")
      .def_readonly("summary", &RunResultObject::summary, "summary.json as a dict (json.loads of the file)")
      .def_readonly("operations", &RunResultObject::operations,
                    "operations.csv as a list of dicts, one per operation (None for serving)")
      .def_readonly("requests", &RunResultObject::requests,
                    "requests.csv as a list of dicts, one per request (serving; None otherwise)")
      .def_readonly("steps", &RunResultObject::steps,
                    "steps.csv as a list of dicts, one per step of every server (serving; None otherwise)")
      .def_readonly("table", &RunResultObject::table, "the table `podsim run` prints")
      .def_readonly("output_dir", &RunResultObject::output_dir, "where the files were kept (None: not kept)")
      .def_readonly("files", &RunResultObject::files, "the files written to output_dir")
      .def("__str__", [](const RunResultObject& r) { return r.table; })
      .def("__repr__", [](const RunResultObject& r) {
        return "<podsim.Result '" + r.name + "' (" + r.kind + ")" +
               (r.output_dir.is_none() ? std::string() : ", files in " + r.output_dir.cast<std::string>()) + ">";
      });

  m.def("run", &run, py::arg("scenario"), py::arg("overrides") = py::none(), py::kw_only(),
        py::arg("fidelity") = "auto", py::arg("trace_detail") = "collectives", py::arg("allow_oom") = false,
        py::arg("strict") = false,
        py::arg("reproducible") = false, py::arg("output_dir") = py::none(),
        R"(Simulate a scenario as `podsim run` does and return a podsim.Result.

scenario: a podsim.Scenario or the path of a scenario file.
overrides: {dotted key: value} applied before the scenario is checked (`--set`).
fidelity: 'auto' (symmetry-reduced where provably exact) or 'full' (every chip).
trace_detail: 'collectives' or 'hops' (every hop in trace.json).
allow_oom: simulate a training or inference plan that does not fit in HBM (less the chip's
  headroom) anyway, as `podsim run --allow-oom`; by default it raises RuntimeError with the
  memory breakdown and what to change (unless the scenario says workload.strict_memory: false).
strict: accepted and ignored: refusing such a plan is the default since issue 42.
reproducible: summary['wall_time_s'] is 0, so equal inputs give equal results.
output_dir: keep summary.json, trace.json and the CSV files there (default: not kept).
Raises podsim.InputError for bad input, RuntimeError if the plan does not fit or the simulation
fails.)");
}

}  // namespace podsim::python
