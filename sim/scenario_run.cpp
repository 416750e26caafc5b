#include "sim/scenario_run.hpp"

namespace podsim {

SimulationSettings simulation_settings(const Scenario& scenario) {
  return {scenario.hop_model, scenario.link_efficiency, scenario.launch_overhead_s};
}

Program collectives_program(const Scenario& scenario) {
  Program program;
  for (const auto& op : scenario.operations) {
    ProgramOp p;
    p.name = op.name;
    p.kind = ProgramOpKind::Collective;
    p.collective = op.collective;
    p.repeat = op.repeat;
    p.category = std::string(to_string(op.collective.kind));
    for (const auto& name : op.after) {
      for (size_t j = 0; j < scenario.operations.size(); ++j) {
        if (scenario.operations[j].name == name) p.after.push_back(static_cast<int>(j));
      }
    }
    program.push_back(std::move(p));
  }
  return program;
}

RunResult run_scenario(const Scenario& scenario, const RunOptions& options) {
  return run_program(scenario.topology, simulation_settings(scenario), collectives_program(scenario), options);
}

}  // namespace podsim
