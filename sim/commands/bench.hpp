#pragma once
// `podsim bench`: the pod-scale cases the engine issues set targets for, each timed in the
// default (symmetry-reduced) mode and, where it is feasible, in the full replay, with
// simulated messages per second of wall time. `--compare-naive` runs the plain SimGrid
// replay (sim/engine/yardstick/naive_ring.cpp) beside each full replay and prints the ratio.
// Targets (issue 11): a DeepSeek-V3 step on 16x16x16 at uniform routing <= 10 s; at Zipf
// routing on 8x8x8 in the full replay (no symmetry), wall time and memory, target <= 60 s.
// Targets (issue 9): the one-way AllGather over X of 16x16x16 in full replay at >= 2x the
// plain replay's rate; the 1 GiB AllReduce over XYZ of 16x16x16 in full replay at >= 1x,
// under 20 s and 2 GB.
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace podsim {

struct BenchRow {
  std::string name;
  std::string mode;                // "reduced" (the default) or "full"
  int chips = 0;
  int simulated_chips = 0;
  unsigned long long messages = 0;
  double simulated_time_s = 0;
  double wall_time_s = 0;          // the whole run: planning, platform, simulation
  double simulation_wall_s = 0;    // SimGrid's run loop only (what the plain replay times too)
  double peak_rss_bytes = 0;       // of the simulation process
  double messages_per_s() const { return simulation_wall_s > 0 ? messages / simulation_wall_s : 0; }
  // The plain replay of the same mesh, run alternately with this row (--compare-naive, full
  // rows): the median of its rates.
  std::optional<double> naive_messages_per_s;
  int runs = 1;                    // the row is the median of this many runs
};

struct BenchOptions {
  // "engine": the cases above; "perturbed": issue 27's pods whose chips differ, every chip
  // simulated (bench_perturbed.cpp; about an hour with the draws).
  std::string suite = "engine";
  std::string only;        // run the rows whose name contains this (empty: all)
  int draws = 100;         // the perturbed suite's straggler draws
  bool compare_naive = false;
  // Each full replay (and its plain replay, alternating with it) runs this many times and the
  // row shows the median run: a 1 s case on a shared 2-core machine varies by +-30% run to run.
  int repeat = 3;
  // Called with each row as soon as it is measured (the whole bench takes about a minute).
  std::function<void(const BenchRow&)> on_row;
};

std::vector<BenchRow> run_bench(const BenchOptions& options);
std::vector<BenchRow> run_perturbed_bench(const BenchOptions& options);
// The perturbed suite's rows, by name, with the scenario and --set overrides each runs (what
// `podsim bench --suite perturbed --list` prints, so a row can be rerun with `podsim run`).
std::vector<std::string> perturbed_bench_commands();

// Runs the plain replay (podsim_naive_ring X Y Z bytes) as a child process, without a shell,
// and returns its messages per second; nullopt if it cannot be run.
std::optional<double> run_naive_ring(int x, int y, int z, double bytes_per_hop);

}  // namespace podsim
