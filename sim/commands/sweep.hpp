#pragma once
// `podsim sweep`: the Cartesian grid of --set overrides over one scenario, each point run as its
// own `podsim run` (in parallel on the local cores, or as Slurm array tasks), each writing its
// outputs under <out>/points/<index>/; sweep.csv has one row per point. A point is finished
// when its summary.json (or the error.txt of a point that failed on its input) is there and
// its inputs.txt equals the point's inputs now: the podsim version, the scenario resolved with
// the point's --set values, and the size and FNV-1a hash of each file it names (every
// file_references() key: a calibration profile, a request trace, an expert-load CSV).
// Anything else is run again: a changed scenario, profile, trace or grid, a point killed by a
// signal (recorded as interrupted.txt), a point never finished.
#include <functional>
#include <string>
#include <vector>

#include "sim/scenario/scenario.hpp"

namespace podsim {

struct SweepAxis {
  std::string key;                   // dotted scenario key
  std::vector<std::string> values;   // YAML values
};

// "key=v1,v2,...": commas inside [] or {} belong to the value ("model=[X,Y],[X]").
// Throws InputError naming the option for a malformed one.
SweepAxis parse_set_option(const std::string& option);

struct SweepPoint {
  int index = 0;
  std::vector<ScenarioOverride> overrides;   // one per axis, in axis order
};

// Points in row-major order: the last --set varies fastest.
std::vector<SweepPoint> sweep_grid(const std::vector<SweepAxis>& axes);

struct SweepOptions {
  std::string scenario_path;
  std::string out_dir;
  std::vector<SweepAxis> axes;
  int jobs = 1;
  std::string podsim_binary;   // the executable that runs each point
  // After each point run here: points finished (run now or before) of all, and the
  // seconds left at the pace of the points run so far (negative before the first ends).
  std::function<void(int finished, int total, double eta_s)> on_progress;
  // Asked before each wait for points and whenever a signal the process handles interrupts one
  // (the Python module's Ctrl-C; the CLI handles none and dies with its points): true kills the
  // points under way, recorded as interrupted (they run again next time), and starts no more.
  std::function<bool()> stop_requested;
};

std::string point_dir(const std::string& out_dir, int index);
// The text a point's outputs are keyed by (see above).
std::string point_inputs(const SweepOptions& options, const SweepPoint& point);
// What a scenario's outputs depend on: podsim's version, a fingerprint of each file it reads,
// and its text with the overrides applied (shared with `plan --emit slurm`'s tasks).
std::string scenario_inputs(const std::string& path, const std::vector<ScenarioOverride>& overrides);
bool point_done(const std::string& out_dir, int index, const std::string& inputs);

struct SweepCounts {
  int ok = 0, failed = 0, missing = 0;   // missing: not run, interrupted, or run on other inputs
  // Points whose run reported a plan that does not fit HBM (run with --allow-oom, so their
  // figures and memory are in sweep.csv): not failures, not ok either.
  int does_not_fit = 0;
  // The first failed point (-1: none), its --set values and its message, for the sweep's error.
  int first_failed = -1;
  std::string first_failed_sets, first_error;
};

struct SweepProgress {
  int points = 0, already_done = 0, ran = 0, failed = 0, interrupted = 0;
  int succeeded = 0;   // points with a summary after the run, whether run now or before
  SweepCounts rows;    // sweep.csv's rows after the run, whether run now or before
};

// Runs the points not yet done, `jobs` at a time, then writes sweep.csv.
SweepProgress run_sweep(const SweepOptions& options);
// Runs one point (a Slurm array task) and records a failure as its error.txt.
void run_sweep_point(const SweepOptions& options, int index);
// Merges the points' outputs into <out>/sweep.csv (a point run on other inputs is missing).
SweepCounts collect_sweep(const SweepOptions& options);
// Same, with each point's point_inputs already worked out (run_sweep has them).
SweepCounts collect_sweep(const SweepOptions& options, const std::vector<std::string>& inputs);
// Writes <out>/sweep.sbatch: a job array with a task per point and a final --collect step
// to run after it (printed as a comment and run by the script's dependency line).
std::string emit_slurm(const SweepOptions& options);

}  // namespace podsim
