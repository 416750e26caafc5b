#pragma once
// Runs a serving scenario (the step costs replayed on SimGrid, then the serving simulation)
// and writes what it found: summary.json, requests.csv (one row per request), steps.csv (one
// row per step of every server) and trace.json (a track per server for Perfetto).
#include <memory>
#include <string>

#include "sim/report.hpp"
#include "sim/serving_costs.hpp"

namespace podsim {

struct ServingRun {
  std::unique_ptr<ServingCostModel> costs;
  ServingResult result;
  int generate_chips = 0;     // per server
  int prefill_chips = 0;      // per prefill server (disaggregated)
  int total_chips = 0;        // all servers
  double wall_time_s = 0;
};

ServingRun run_serving(const Scenario& scenario);

// Distribution summaries: mean and linearly interpolated percentiles (numpy's default).
struct Distribution {
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
  size_t count = 0;
};
Distribution distribution(std::vector<double> values);

std::string serving_summary_json(const Scenario& scenario, const ServingRun& run, const ReportOptions& options);
std::string serving_requests_csv(const ServingRun& run);
std::string serving_steps_csv(const ServingRun& run);
std::string serving_trace_json(const Scenario& scenario, const ServingRun& run);
std::string serving_table(const Scenario& scenario, const ServingRun& run);

}  // namespace podsim
