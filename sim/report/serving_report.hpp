#pragma once
// What a serving run found (run_serving in scenario_run produces it): summary.json and the
// table. Its per-request and per-step files are written while it runs (serving_files.hpp).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/engine/serving_costs.hpp"
#include "sim/report/perfetto_trace.hpp"
#include "sim/report/report.hpp"
#include "sim/report/serving_stats.hpp"

namespace podsim {

struct ServingRun {
  std::unique_ptr<ServingCostModel> costs;
  std::unique_ptr<ServingCostModel> draft_costs;   // speculative decoding's draft model, if any
  // Servers whose chips the scenario's perturbations select: their own step costs (and their
  // draft model's), by server index; null for the others.
  std::vector<std::unique_ptr<ServingCostModel>> server_costs, server_draft_costs;
  ServingTotals totals;
  int generate_chips = 0;     // per server
  int prefill_chips = 0;      // per prefill server (disaggregated)
  int total_chips = 0;        // all servers
  ServingStats stats;
  double wall_time_s = 0;
  std::optional<TraceExtent> trace;   // when a trace was written (it stops at a cap: serving_files.hpp)
};

std::string serving_summary_json(const Scenario& scenario, const ServingRun& run, const ReportOptions& options);
std::string serving_table(const Scenario& scenario, const ServingRun& run);

}  // namespace podsim
