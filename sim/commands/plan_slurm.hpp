#pragma once
// `podsim plan --emit slurm`: the planner's simulations as a Slurm job array, for pods whose
// plans take longer than one machine can give them. The array has a task per plan that
// `podsim plan --exhaustive` simulates (every fitting, buildable plan: no bound, no budget,
// since the cluster is where long plans go), in the planner's order. Task i (`--task i`)
// simulates plan i and writes tasks/NNNNN/plan.json: the plan's label, the inputs it came from
// (sweep.hpp's scenario_inputs) and the figures the ranking shows. `--collect` merges them into
// the plan.csv and table `podsim plan --exhaustive` writes, refusing tasks that are missing or
// came from other inputs (a scenario edited since, another --set) with one message listing them.
#include <string>
#include <vector>

#include "sim/commands/planner.hpp"

namespace podsim {

struct PlanArrayOutputs {
  std::string text;                  // what the command prints
  std::vector<std::string> files;    // the paths written
};

// `command` names podsim, `plan`, the scenario and its --set overrides (shell-quoted); the
// script adds -o, --task and --collect.
PlanArrayOutputs emit_plan_slurm(const Scenario& scenario, const std::string& out_dir, const std::string& command);
// Task `task` of the array; InputError when it is not one of the array's.
PlanArrayOutputs run_plan_task(const Scenario& scenario, const std::string& inputs, int task, const std::string& out_dir);
// The ranking from the tasks' plan.json files; InputError naming the tasks missing or stale.
PlannerResult collect_plan(const Scenario& scenario, const std::string& inputs, const std::string& out_dir);

}  // namespace podsim
