#include "sim/report/serving_stats.hpp"

namespace podsim {

ServingStatsSink::ServingStatsSink(std::vector<double> percents, ServingWorkload::Slo slo)
    : percents_(std::move(percents)), slo_(slo) {}

void ServingStatsSink::step(const StepRecord& s) {
  if (s.kind == StepKind::Prefill) prefill_step_.add(s.end_s - s.start_s);
  if (s.kind == StepKind::Decode || (s.kind == StepKind::Mixed && s.decode_only)) decode_step_.add(s.end_s - s.start_s);
  if (s.kind == StepKind::Mixed) mixed_step_.add(s.end_s - s.start_s);
}

void ServingStatsSink::request(const RequestRecord& q) {
  ++requests_;
  prompt_tokens_ += q.request.prompt_tokens;
  output_tokens_ += q.request.output_tokens;
  ttft_.add(q.ttft_s());
  latency_.add(q.latency_s());
  queueing_.add(q.queueing_s());
  per_token_.add(q.per_token_latency_s());
  if (q.request.output_tokens > 1) tpot_.add(q.tpot_s());
  if (slo_.given())
    good_ += (slo_.ttft_s <= 0 || q.ttft_s() <= slo_.ttft_s) && (slo_.tpot_s <= 0 || q.tpot_s() <= slo_.tpot_s) &&
             (slo_.latency_s <= 0 || q.latency_s() <= slo_.latency_s);
}

void ServingStatsSink::token_gap(double gap_s) { itl_.add(gap_s); }

ServingStats ServingStatsSink::finish(const ServingTotals& totals, int chips) const {
  ServingStats st;
  st.ttft = ttft_.summarize(percents_);
  st.tpot = tpot_.summarize(percents_);
  st.latency = latency_.summarize(percents_);
  st.per_token_latency = per_token_.summarize(percents_);
  st.queueing = queueing_.summarize(percents_);
  st.itl = itl_.summarize(percents_);
  st.prefill_step = prefill_step_.summarize(percents_);
  st.decode_step = decode_step_.summarize(percents_);
  st.mixed_step = mixed_step_.summarize(percents_);
  // Throughput (tokens generated per second of the run) and latency are kept apart.
  st.span_s = totals.end_s - totals.first_arrival_s;
  if (st.span_s > 0) {
    st.requests_per_s = static_cast<double>(requests_) / st.span_s;
    st.tokens_per_s = output_tokens_ / st.span_s;
    st.tokens_per_s_per_chip = st.tokens_per_s / chips;
    st.total_tokens_per_s = (output_tokens_ + prompt_tokens_) / st.span_s;
  }
  if (slo_.given() && requests_ > 0) {
    st.slo_attainment = static_cast<double>(good_) / static_cast<double>(requests_);
    if (st.span_s > 0) st.goodput_requests_per_s = static_cast<double>(good_) / st.span_s;
  }
  st.total_input_tokens = prompt_tokens_;
  st.total_output_tokens = output_tokens_;
  return st;
}

ServingStats serving_stats(const ServingResult& result, int chips, const ServingWorkload::Slo& slo,
                           const std::vector<double>& percents) {
  ServingStatsSink sink(percents, slo);
  for (const auto& s : result.steps) sink.step(s);
  for (const auto& r : result.requests) sink.request(r);
  for (double gap : result.inter_token_s) sink.token_gap(gap);
  return sink.finish(result, chips);
}

}  // namespace podsim
