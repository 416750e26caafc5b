#pragma once
// `podsim compare`: one workload on several mesh shapes (and chips), each run as a sweep point;
// a table, compare.csv and, through scripts/plot_compare.py, compare.png.
#include <functional>
#include <string>
#include <vector>

#include "sim/scenario/scenario.hpp"

namespace podsim {

struct CompareOptions {
  std::string scenario_path;
  std::vector<ScenarioOverride> overrides;   // applied to every shape (as --set, before the shape's)
  std::string out_dir;
  std::vector<std::string> topologies;   // "4x4x4", ...; empty: the scenario's compare block
  std::vector<std::string> chips;        // presets; empty: the compare block's, else the scenario's
  int jobs = 1;
  std::string podsim_binary;
  std::string plot_script;               // scripts/plot_compare.py; empty: no PNG
  std::function<void(int, int, double)> on_progress;   // as SweepOptions::on_progress
  std::function<bool()> stop_requested;                // as SweepOptions::stop_requested
};

struct CompareRow {
  std::string topology, chip, status, error;
  double chips = 0, diameter_hops = 0, bisection_links = 0;
  double hops = 0;             // the most sequential hops of any collective (collectives workloads)
  bool has_hops = false;
  std::string wraparound;      // "X Y" axes that wrap, "-" for none
  std::string time_metric;     // which summary field time_s is
  double time_s = 0, algbw_Bps = 0, exposed_comm_s = 0, mfu = 0, tokens_per_s_per_chip = 0;
  bool has_algbw = false, has_exposed = false, has_mfu = false, has_tokens = false;
};

// Runs the comparison; writes compare.csv. A row's status is ok, does_not_fit (simulated with
// --allow-oom: its figures, for a plan that does not fit HBM), error (its message), or, as in
// sweep.csv, interrupted (killed by a signal) or missing (never started, or run on other inputs),
// with a message and no figures. `scenario_name` is set to the scenario's name.
std::vector<CompareRow> run_compare(const CompareOptions& options, std::string* scenario_name = nullptr);
std::string compare_table(const std::vector<CompareRow>& rows);
std::string compare_csv(const std::vector<CompareRow>& rows);

}  // namespace podsim
