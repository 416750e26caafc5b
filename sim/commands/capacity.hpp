#pragma once
// `podsim capacity`: the highest request rate a serving scenario's servers sustain with every
// latency SLO met (p99 TTFT <= 200 ms, p99 TPOT <= 50 ms, ...), found by simulating the
// scenario at rates on a geometric grid, and the latency-versus-load curve those simulations
// trace (capacity.csv, and capacity.png through scripts/plot_capacity.py). docs/modelling.md,
// "Serving capacity", says how the search runs and what it reports.
#include <functional>
#include <string>
#include <vector>

#include "sim/scenario/scenario.hpp"

namespace podsim {

// One bound on a statistic of a latency distribution, as --slo writes it: `ttft_p99<=200ms`.
struct LatencySlo {
  std::string text;        // as given
  std::string metric;      // ttft, tpot, itl or e2e
  std::string statistic;   // mean, median or pN (p99, p99.9)
  double percent = 0;      // pN's N; 50 for median; 0 for mean
  double bound_s = 0;
  std::string name() const { return metric + "_" + statistic; }   // capacity.csv's columns: slo_<name>_s, ...
};
// Throws InputError naming --slo, the text and the form expected.
LatencySlo parse_latency_slo(const std::string& text);

struct CapacityOptions {
  std::string scenario_path;
  std::vector<ScenarioOverride> overrides;   // --set, applied to every simulation
  std::vector<LatencySlo> slos;              // at least one
  double precision = 0.05;       // the grid's ratio less one: the found rate is within this of the limit
  double rate_start_per_s = 0;   // the grid's origin; 0: the scenario's rate (scaled by servers)
  double rate_min_per_s = 0;     // 0: start / 1000
  double rate_max_per_s = 0;     // 0: start x 1000
  std::vector<int> servers;      // values of workload.servers to search; empty: the scenario's
  std::function<void(const std::string&)> on_simulation;   // told of each simulation as it ends
};

// One simulation: the rate offered, the latencies it gave, and which SLOs held.
struct CapacityPoint {
  int servers = 0;        // workload.servers as set
  int server_count = 0;   // model servers it makes (ServingConfig::servers)
  double rate_per_s = 0;
  int order = 0;          // 1 for the first simulation of the search
  double ttft_p50_s = 0, ttft_p99_s = 0, tpot_p50_s = 0, tpot_p99_s = 0, itl_p50_s = 0, itl_p99_s = 0,
         e2e_p50_s = 0, e2e_p99_s = 0;
  double requests_per_s = 0, output_tokens_per_s = 0;
  std::vector<double> slo_values_s;   // each SLO's statistic, in options.slos's order
  std::vector<bool> slo_met;
  bool meets_all = false;
  bool found = false;     // the rate this search reports for its servers
};

// A search's answer for one value of servers.
struct CapacityResult {
  int servers = 0, server_count = 0;
  // The highest rate on the grid that meets every SLO with every tested lower rate meeting them
  // too (0 if none down to rate_min); next_rate_per_s, that times (1 + precision), failed.
  double max_rate_per_s = 0, next_rate_per_s = 0;
  std::string limit;      // "found", "below rate_min" or "at rate_max" (every rate up to it met)
  int simulations = 0;
};

struct CapacityReport {
  std::string scenario_name;
  std::vector<CapacityPoint> points;   // by servers, then rate
  std::vector<CapacityResult> results;
};

// Runs the searches and writes capacity.csv and capacity.json into out_dir (whole, or not).
CapacityReport run_capacity(const CapacityOptions& options, const std::string& out_dir);
std::string capacity_csv(const CapacityReport& report, const std::vector<LatencySlo>& slos);
std::string capacity_table(const CapacityReport& report, const CapacityOptions& options);

}  // namespace podsim
