#pragma once
// What a serving run found (run_serving in scenario_run produces it): summary.json,
// requests.csv (one row per request), steps.csv (one row per step of every server) and
// trace.json (a track per server for Perfetto).
#include <memory>
#include <string>

#include "sim/engine/serving_costs.hpp"
#include "sim/report/report.hpp"

namespace podsim {

// Distribution summaries: mean and linearly interpolated percentiles (numpy's default).
struct Distribution {
  double mean = 0, std = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;   // std: population (numpy's, as vLLM's)
  size_t count = 0;
};
Distribution distribution(std::vector<double> values);

// What the summary and the table report, computed once from a run.
struct ServingStats {
  Distribution ttft, tpot, latency, per_token_latency, queueing;   // per request (tpot: output > 1)
  Distribution itl;                                                // per token after a request's first
  Distribution prefill_step, decode_step;                          // per step
  double span_s = 0;            // first arrival to last token
  double requests_per_s = 0, tokens_per_s = 0, tokens_per_s_per_chip = 0;   // tokens: output tokens
  // vLLM benchmark_serving's totals: prompt tokens (as given, not padded) and output tokens;
  // total token throughput counts both.
  double total_input_tokens = 0, total_output_tokens = 0, total_tokens_per_s = 0;
  // With a latency SLO: requests that met it, per second of the run, and their share.
  double goodput_requests_per_s = 0, slo_attainment = 0;
};

struct ServingRun {
  std::unique_ptr<ServingCostModel> costs;
  ServingResult result;
  int generate_chips = 0;     // per server
  int prefill_chips = 0;      // per prefill server (disaggregated)
  int total_chips = 0;        // all servers
  ServingStats stats;
  double wall_time_s = 0;
};

ServingStats serving_stats(const ServingResult& result, int chips, const ServingWorkload::Slo& slo = {});

std::string serving_summary_json(const Scenario& scenario, const ServingRun& run, const ReportOptions& options);
std::string serving_requests_csv(const ServingRun& run);
std::string serving_steps_csv(const ServingRun& run);
std::string serving_trace_json(const Scenario& scenario, const ServingRun& run);
std::string serving_table(const Scenario& scenario, const ServingRun& run);

}  // namespace podsim
