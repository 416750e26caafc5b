#pragma once
// `podsim sweep`: the Cartesian grid of --set overrides over one scenario, each point run as its
// own `podsim run` (in parallel on the local cores, or as Slurm array tasks), each writing its
// outputs under <out>/points/<index>/; sweep.csv has one row per point. Finished points (a
// summary.json, or an error.txt for a point that failed) are not run again.
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
};

std::string point_dir(const std::string& out_dir, int index);
bool point_done(const std::string& out_dir, int index);

struct SweepProgress {
  int points = 0, already_done = 0, ran = 0, failed = 0;
};

// Runs the points not yet done, `jobs` at a time, then writes sweep.csv.
SweepProgress run_sweep(const SweepOptions& options);
// Runs one point (a Slurm array task) and records a failure as its error.txt.
void run_sweep_point(const SweepOptions& options, int index);
// Merges the points' outputs into <out>/sweep.csv; returns the number of rows missing.
int collect_sweep(const SweepOptions& options);
// Writes <out>/sweep.sbatch: a job array with a task per point and a final --collect step
// to run after it (printed as a comment and run by the script's dependency line).
std::string emit_slurm(const SweepOptions& options);

}  // namespace podsim
