#pragma once
// Turns a loaded Scenario into engine input (settings, a per-chip program) and runs it. The
// engine never sees a Scenario (docs/design.md, "The flow of one run"), so this sits with the
// commands, above both.
#include "sim/engine/run.hpp"
#include "sim/report/serving_report.hpp"
#include "sim/scenario/scenario.hpp"

namespace podsim {

// The scenario's hop model, link efficiency and launch overhead.
SimulationSettings simulation_settings(const Scenario& scenario);

// A `collectives` scenario: its operations as a program.
Program collectives_program(const Scenario& scenario);
RunResult run_scenario(const Scenario& scenario, const RunOptions& options);

// A `serving` scenario: the step costs replayed on SimGrid, then the serving event loop.
// Throws std::invalid_argument for a plan that cannot be served (main reports it as input).
// `outputs`, when given, receives every record as the run produces it (serving_files.hpp).
// `progress`, when given, hears requests done (their records final) of all, at most once per
// progress_interval_s of wall time and once at the end.
ServingRun run_serving(const Scenario& scenario, ServingSink* outputs = nullptr,
                       const std::function<void(const SimulationProgress&)>& progress = {},
                       double progress_interval_s = 0.25);

}  // namespace podsim
