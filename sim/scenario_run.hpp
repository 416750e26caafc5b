#pragma once
// The one place a loaded Scenario becomes engine input: settings and a per-chip program.
// The engine never sees a Scenario (design.md, "The flow of one run"), so this bridge sits
// above both.
#include "sim/engine/run.hpp"
#include "sim/scenario/scenario.hpp"

namespace podsim {

// The scenario's hop model, link efficiency and launch overhead.
SimulationSettings simulation_settings(const Scenario& scenario);

// A `collectives` scenario: its operations as a program.
Program collectives_program(const Scenario& scenario);
RunResult run_scenario(const Scenario& scenario, const RunOptions& options);

}  // namespace podsim
