#include "sim/python/plan.hpp"

#include <algorithm>

#include "sim/commands/plan_inputs.hpp"
#include "sim/commands/planner.hpp"
#include "sim/python/call_lock.hpp"
#include "sim/python/records.hpp"
#include "sim/python/scenario_object.hpp"

namespace py = pybind11;

namespace podsim::python {

namespace {

// The scenario as `podsim plan` reads it: the keys the planner searches removed before the
// loader checks them (plan_inputs.hpp).
LoadedScenario planner_scenario(const py::object& scenario_or_path, const py::object& overrides) {
  const auto extra = to_overrides(overrides);
  if (py::isinstance<LoadedScenario>(scenario_or_path)) {
    const auto& s = scenario_or_path.cast<const LoadedScenario&>();
    std::vector<ScenarioOverride> all = s.overrides;
    all.insert(all.end(), extra.begin(), extra.end());
    const auto removals = planner_overrides(s.text, all);
    return with_overrides(s, std::vector<ScenarioOverride>(removals.begin() + s.overrides.size(), removals.end()));
  }
  if (py::isinstance<py::str>(scenario_or_path) || py::hasattr(scenario_or_path, "__fspath__")) {
    const std::string path = utf8_text(py::module_::import("os").attr("fspath")(scenario_or_path), "");
    return load_file(path, planner_overrides(resolve_scenario(path, extra).text, extra));
  }
  return as_scenario(scenario_or_path, overrides);   // its TypeError
}

py::dict plan(const py::object& scenario_or_path, const py::object& overrides, int top, bool exhaustive,
              double budget_s, int jobs) {
  const LoadedScenario s = planner_scenario(scenario_or_path, overrides);
  require_training(s.scenario);
  PlannerResult result;
  std::string table, csv;
  {
    const py::gil_scoped_release release;
    const std::lock_guard<std::mutex> one_at_a_time(call_lock());
    // As `podsim plan` does: simulate until the first `top` are certain, within the budget.
    result = plan_training(s.scenario, {}, {}, exhaustive ? 0 : (top > 0 ? top : 10), exhaustive ? 0.0 : budget_s,
                           std::max(1, jobs));
    table = planner_table(s.scenario, result);
    csv = planner_csv(result);
  }
  require_some_plan_fits(s.scenario, result);
  py::dict out;
  out["plans"] = csv_records(csv);
  out["x_opt"] = result.x_opt;
  out["x_opt_note"] = result.x_opt_note;
  out["table"] = table;
  return out;
}

}  // namespace

void bind_plan(py::module_& m) {
  m.def("plan", &plan, py::arg("scenario"), py::arg("overrides") = py::none(), py::arg("top") = 0,
        py::arg("exhaustive") = false, py::arg("budget_s") = 30.0, py::arg("jobs") = 1,
        R"(Rank parallelism plans for a training scenario by simulated step time, as `podsim plan`
does (the keys the planner searches, as `podsim plan --help` lists them, are ignored); top, exhaustive, budget_s and jobs as its --top,
--exhaustive, --budget and -j (the ranking is the same for any jobs). Returns {'plans': [...], 'x_opt': float,
'x_opt_note': str, 'table': str}: plans as plan.csv has them (rank, plan, feasible,
step_time_s, mfu, tokens_per_s_per_chip, exposed_comm_s, memory_per_chip_bytes, fits_hbm,
error), best first. Raises podsim.InputError for a scenario that is not a training one, or a
model that fits nowhere on the pod.)");
}

}  // namespace podsim::python
