#pragma once
// `podsim run --draws N`: the step-time distribution over N draws of a scenario's random
// stragglers (perturbations with `stragglers:`, topology/stragglers.hpp), beside the same pod
// with none of them. Each draw is a whole simulation (draw i: each entry's seed + i); they run
// side by side (simulate_summaries_json), so the outputs are the same for any number of jobs.
#include <string>
#include <vector>

#include "sim/commands/run_command.hpp"

namespace podsim {

struct DrawsOutputs {
  std::string table;                 // what `podsim run --draws` prints
  std::vector<std::string> files;    // draws.csv, draws.json
};

// Throws InputError (exit 2) naming the scenario file when it draws no stragglers, or when
// `draws` is outside 1 to 100,000.
DrawsOutputs run_straggler_draws(const Scenario& scenario, int draws, const std::string& out_dir,
                                 const RunCommandOptions& options, int jobs);

}  // namespace podsim
