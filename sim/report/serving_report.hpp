#pragma once
// What a serving run found (run_serving in scenario_run produces it): summary.json and the
// table. Its per-request and per-step files are written while it runs (serving_files.hpp).
#include <memory>
#include <optional>
#include <string>

#include "sim/engine/serving_costs.hpp"
#include "sim/report/report.hpp"
#include "sim/report/serving_stats.hpp"

namespace podsim {

// How much of the run trace.json holds (it stops at a cap: serving_files.hpp).
struct ServingTraceExtent {
  uint64_t events = 0;
  bool complete = true;
  double until_s = 0;   // incomplete: the time of the first event left out
};

struct ServingRun {
  std::unique_ptr<ServingCostModel> costs;
  ServingTotals totals;
  int generate_chips = 0;     // per server
  int prefill_chips = 0;      // per prefill server (disaggregated)
  int total_chips = 0;        // all servers
  ServingStats stats;
  double wall_time_s = 0;
  std::optional<ServingTraceExtent> trace;   // when a trace was written
};

std::string serving_summary_json(const Scenario& scenario, const ServingRun& run, const ReportOptions& options);
std::string serving_table(const Scenario& scenario, const ServingRun& run);

}  // namespace podsim
