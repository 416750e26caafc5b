#pragma once
// A serving run's statistics, added up as its records stream past (ServingSink), so they cost
// a bounded amount of memory however many requests run (quantiles.hpp).
#include <vector>

#include "sim/report/quantiles.hpp"
#include "sim/scenario/scenario.hpp"
#include "workloads/serving.hpp"

namespace podsim {

// What the summary and the table report.
struct ServingStats {
  Distribution ttft, tpot, latency, per_token_latency, queueing;   // per request (tpot: output > 1)
  Distribution itl;                                                // per token after a request's first
  Distribution prefill_step, decode_step, mixed_step;              // per step (policy mixed: decode_step
                                                                   // of the mixed steps that decode only)
  double span_s = 0;            // first arrival to last token
  double requests_per_s = 0, tokens_per_s = 0, tokens_per_s_per_chip = 0;   // tokens: output tokens
  // vLLM benchmark_serving's totals: prompt tokens (as given, not padded) and output tokens;
  // total token throughput counts both.
  double total_input_tokens = 0, total_output_tokens = 0, total_tokens_per_s = 0;
  // With a latency SLO: requests that met it, per second of the run, and their share.
  double goodput_requests_per_s = 0, slo_attainment = 0;
};

class ServingStatsSink : public ServingSink {
 public:
  // `percents`: the percentiles each distribution reports (vLLM's --metric-percentiles).
  ServingStatsSink(std::vector<double> percents, ServingWorkload::Slo slo);
  void step(const StepRecord& step) override;
  void request(const RequestRecord& record) override;
  void token_gap(double gap_s) override;
  ServingStats finish(const ServingTotals& totals, int chips) const;

 private:
  std::vector<double> percents_;
  ServingWorkload::Slo slo_;
  Quantiles ttft_, tpot_, latency_, per_token_, queueing_, itl_, prefill_step_, decode_step_, mixed_step_;
  double prompt_tokens_ = 0, output_tokens_ = 0;
  uint64_t requests_ = 0, good_ = 0;
};

// The statistics of a run whose records were kept (tests, small runs).
ServingStats serving_stats(const ServingResult& result, int chips, const ServingWorkload::Slo& slo = {},
                           const std::vector<double>& percents = {50, 90, 99});

}  // namespace podsim
