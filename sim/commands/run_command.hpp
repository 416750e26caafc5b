#pragma once
// `podsim run` as a function: simulate a loaded scenario and write its outputs into a directory
// (summary.json, trace.json and operations.csv; a serving run's summary.json, requests.csv,
// steps.csv and trace.json). The CLI and the Python module (sim/python/) both call it, so their
// files are the same by construction.
#include <functional>
#include <string>
#include <vector>

#include "sim/commands/preflight_check.hpp"
#include "sim/engine/run.hpp"
#include "sim/scenario/scenario.hpp"

namespace podsim {

struct RunCommandOptions {
  Fidelity fidelity = Fidelity::Auto;
  ReplayEngine engine = ReplayEngine::Auto;   // --engine
  bool record_hops = false;     // --trace-detail hops
  bool reproducible = false;    // wall_time_s written as 0
  bool trace_gzip = false;      // trace.json.gz instead of trace.json (not for serving runs)
  // A training or inference plan that does not fit HBM is simulated anyway (--allow-oom); else it
  // throws DoesNotFitHbm (sim/commands/memory_fit.hpp) unless its workload.strict_memory is false.
  bool allow_oom = false;
  // While the simulation runs (RunOptions::progress); a serving run reports requests done.
  std::function<void(const SimulationProgress&)> progress;
  std::function<void(const SimulationProgress&)> serving_progress;
  PreflightLimits limits;       // a run estimated beyond them is refused (preflight_check.hpp)
};

struct RunCommandOutputs {
  std::string table;                 // what `podsim run` prints
  std::vector<std::string> files;    // the paths written, in the order the CLI names them
};

// Throws InputError for a plan that cannot be built, DoesNotFitHbm for one that does not fit HBM
// (unless allowed: RunCommandOptions::allow_oom, workload.strict_memory: false).
RunCommandOutputs run_to_directory(Scenario scenario, const std::string& out_dir, const RunCommandOptions& options);

// The summary.json a run would write, without writing anything (a calibration evaluates its
// measurements this way; a serving run's records go to no file).
std::string simulate_summary_json(Scenario scenario, const RunCommandOptions& options);

// The simulation a run of a collectives, training or inference scenario reports on, without
// writing anything (podsim bench times it). Serving: InputError.
RunResult simulate_run(Scenario scenario, const RunCommandOptions& options);

// Each scenario's simulate_summary_json, the same bytes, with up to `jobs` simulations running at
// once (each in its own child process, started and waited on from the calling thread: call it
// from a process with one thread; serving runs in this process, between). A scenario whose
// plan cannot be built throws as it would.
std::vector<std::string> simulate_summaries_json(std::vector<Scenario> scenarios, const RunCommandOptions& options,
                                                 int jobs);

}  // namespace podsim
