#pragma once
// `podsim run --draws N`: the step-time distribution over N draws of a scenario's random
// stragglers (perturbations with `stragglers:`, topology/stragglers.hpp), beside the same pod
// with none of them. Each draw is a whole simulation (draw i: each entry's seed + i); they run
// side by side (simulate_summaries_json), so the outputs are the same for any number of jobs.
// Runs that outgrow one machine split into a Slurm job array (`--emit slurm`: a task a draw and
// one for the pod without stragglers, each writing tasks/NNNNN/summary.json) merged by
// `--collect` into the same draws.csv and draws.json.
#include <string>
#include <vector>

#include "sim/commands/run_command.hpp"

namespace podsim {

struct DrawsOutputs {
  std::string table;                 // what `podsim run --draws` prints
  std::vector<std::string> files;    // the paths written
};

// Runs every draw here, `jobs` at a time. Throws InputError (exit 2) naming the scenario file
// when it draws no stragglers, or when `draws` is outside 1 to 100,000.
DrawsOutputs run_straggler_draws(const Scenario& scenario, int draws, const std::string& out_dir,
                                 const RunCommandOptions& options, int jobs);

// The Slurm route. `command` is the podsim command line that names the scenario and its --set
// overrides (shell-quoted), to which the script adds --draws, --task or --collect and -o.
DrawsOutputs emit_draws_slurm(const Scenario& scenario, int draws, const std::string& out_dir,
                              const std::string& command);
// Task `task` of the array: draw `task`, or for task == draws the pod without stragglers.
DrawsOutputs run_draws_task(const Scenario& scenario, int draws, int task, const std::string& out_dir,
                            const RunCommandOptions& options);
// Merges the tasks' summaries; InputError naming the tasks missing when some are.
DrawsOutputs collect_draws(const Scenario& scenario, int draws, const std::string& out_dir);

}  // namespace podsim
