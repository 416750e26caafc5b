#include "sim/report/serving_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "sim/report/price.hpp"

#include "sim/report/trace_time.hpp"
#include "sim/report/csv_text.hpp"
#include "sim/scenario/units.hpp"

namespace podsim {

namespace {

using Json = nlohmann::ordered_json;

// vLLM's statistics of a distribution: mean, std, median and the percentiles asked for, with
// the count and whether the percentiles are exact (quantiles.hpp).
Json distribution_json(const Distribution& d) {
  Json j = {{"mean", d.mean}, {"std", d.std}, {"median", d.median}};
  for (const auto& [p, v] : d.percentiles) j[percentile_name(p)] = v;
  j["max"] = d.max;
  j["count"] = d.count;
  j["exact"] = d.exact;
  return j;
}

Json topology_json(const TopologySpec& t) {
  const Topology topo(t);
  Json axes = Json::array();
  for (size_t a = 0; a < t.axes.size(); ++a)
    axes.push_back({{"name", t.axes[a].name}, {"size", t.axes[a].size}, {"wraparound", topo.wraps(static_cast<int>(a))}});
  return {{"chip", t.chip.name}, {"axes", axes}, {"chips", t.chips_per_slice()}, {"diameter_hops", topo.diameter()},
          {"bisection_links", topo.bisection_links()}};
}

bool disaggregated(const Scenario& s) { return s.serving.config.policy == BatchingPolicy::Disaggregated; }

}  // namespace

std::string serving_summary_json(const Scenario& scenario, const ServingRun& run, const ReportOptions& options) {
  const ServingWorkload& w = scenario.serving;
  const ServingTotals& r = run.totals;
  const ServingStats& st = run.stats;
  Json j;
  summary_header(j, scenario);
  j["wall_time_s"] = options.reproducible ? 0.0 : run.wall_time_s;
  j["topology"] = topology_json(scenario.topology);
  Json workload = {{"model", w.model.name},
                   {"policy", to_string(w.config.policy)},
                   {"weights_bytes_per_param", w.generate.weight_bytes},
                   {"kv_bytes_per_element", w.generate.kv_bytes},
                   {"efficiency", w.generate.efficiency},
                   {"prefill_efficiency", w.prefill.efficiency},
                   {"prompt_buckets", w.config.buckets},
                   {"prefill_batch", w.config.prefill_batch},
                   {"requests_source", w.requests_source},
                   {"max_context_tokens", w.max_context},
                   {"hbm_slots", w.hbm_slots},
                   {"metric_percentiles", w.metric_percentiles}};
  if (disaggregated(scenario)) workload["prefill_topology"] = topology_json(w.prefill_topology);
  j["workload"] = workload;
  j["servers"] = w.config.servers;
  j["prefill_servers"] = w.config.prefill_servers;
  // Model replicas a slice holds (parallelism.replica): servers = slices x replicas.
  j["replicas_per_slice"] = w.replicas_per_slice;
  if (disaggregated(scenario)) j["prefill_replicas_per_slice"] = w.prefill_replicas_per_slice;
  j["chips"] = run.total_chips;
  j["requests"] = r.request_count;
  j["total_time_s"] = r.end_s;
  j["max_batch"] = w.config.slots;
  j["kv_cache_bytes_per_token"] = kv_cache_bytes_per_token(w.model, w.generate.kv_bytes);
  // Step durations as simulated, averaged over the steps the servers ran.
  j["prefill_time_s"] = st.prefill_step.mean;
  j["decode_step_time_s"] = st.decode_step.mean;
  j["prefill_steps"] = r.prefill_steps;
  j["decode_steps"] = r.decode_steps;
  j["requests_per_s"] = st.requests_per_s;
  j["tokens_per_s"] = st.tokens_per_s;
  j["tokens_per_s_per_chip"] = st.tokens_per_s_per_chip;
  // vLLM benchmark_serving's names: request, output and total token throughput; token totals.
  j["total_input_tokens"] = st.total_input_tokens;
  j["total_output_tokens"] = st.total_output_tokens;
  j["request_throughput_per_s"] = st.requests_per_s;
  j["output_token_throughput_per_s"] = st.tokens_per_s;
  j["total_token_throughput_per_s"] = st.total_tokens_per_s;
  // Every chip's hours over the output tokens they produced (at the offered load, not at capacity).
  if (const double price = scenario.topology.chip.chip_hour_price_usd; price > 0 && st.tokens_per_s > 0) {
    j["cost_per_million_output_tokens_usd"] = run.total_chips * price / 3600 / st.tokens_per_s * 1e6;
    add_price(j, scenario.topology.chip);
  }
  if (w.slo.given()) {
    Json slo = Json::object();
    if (w.slo.ttft_s > 0) slo["ttft_s"] = w.slo.ttft_s;
    if (w.slo.tpot_s > 0) slo["tpot_s"] = w.slo.tpot_s;
    if (w.slo.latency_s > 0) slo["latency_s"] = w.slo.latency_s;
    j["slo"] = slo;
    j["goodput_requests_per_s"] = st.goodput_requests_per_s;
    j["slo_attainment"] = st.slo_attainment;
  }
  j["ttft_s"] = distribution_json(st.ttft);
  j["tpot_s"] = distribution_json(st.tpot);
  j["itl_s"] = distribution_json(st.itl);
  j["latency_s"] = distribution_json(st.latency);
  j["per_token_latency_s"] = distribution_json(st.per_token_latency);
  j["queueing_s"] = distribution_json(st.queueing);
  const double decode_capacity = st.span_s * w.config.servers;
  const double prefill_capacity =
      st.span_s * (disaggregated(scenario) ? w.config.prefill_servers : w.config.servers);
  j["decode_busy_fraction"] = decode_capacity > 0 ? r.decode_busy_s / decode_capacity : 0.0;
  j["prefill_busy_fraction"] = prefill_capacity > 0 ? r.prefill_busy_s / prefill_capacity : 0.0;
  // Records a run held at once (arrived, not yet written): what its memory grows with.
  j["peak_requests_in_memory"] = r.peak_records_held;
  if (run.trace) {
    Json trace = {{"events", run.trace->events}, {"complete", run.trace->complete}};
    if (!run.trace->complete) trace["until_s"] = run.trace->until_s;
    j["trace"] = trace;
  }
  j["step_costs"] = {{"priced_by", run.costs->whole_steps() ? "whole steps" : "layers"},
                     {"decode_steps_replayed_at_own_context", run.costs->decode_steps_replayed_whole()},
                     {"collectives_replayed", run.costs->collectives_replayed()},
                     {"prefill_shapes", run.costs->prefill_shapes()},
                     {"decode_shapes", run.costs->decode_shapes()},
                     {"kv_transfer_shapes", run.costs->kv_transfer_shapes()}};
  return j.dump(2) + "\n";
}

std::string serving_table(const Scenario& scenario, const ServingRun& run) {
  const ServingWorkload& w = scenario.serving;
  const ServingStats& st = run.stats;
  const ServingTotals& r = run.totals;
  char buf[4096];
  // Mean, std, median, then the percentiles asked for (median once).
  auto d = [&](const Distribution& x) {
    std::string line = human_time(x.mean) + " mean, " + human_time(x.std) + " std, " + human_time(x.median) + " median";
    for (const auto& [p, v] : x.percentiles)
      if (p != 50) line += ", " + human_time(v) + " " + percentile_name(p);
    return line;
  };
  std::string goodput;
  if (w.slo.given()) {
    char line[160];
    std::snprintf(line, sizeof line, "  goodput    %.4g requests/s (%.1f%% within the SLO)\n", st.goodput_requests_per_s,
                  100 * st.slo_attainment);
    goodput = line;
  }
  auto per_slice = [](int replicas) {
    return replicas > 1 ? " (" + std::to_string(replicas) + " a slice)" : std::string();
  };
  std::string servers = std::to_string(w.config.servers) + " server(s) of " + std::to_string(run.generate_chips) +
                        " " + scenario.topology.chip.name + per_slice(w.replicas_per_slice);
  if (w.config.policy == BatchingPolicy::Disaggregated)
    servers = std::to_string(w.config.prefill_servers) + " prefill server(s) of " + std::to_string(run.prefill_chips) +
              per_slice(w.prefill_replicas_per_slice) + " + " + std::to_string(w.config.servers) +
              " generate server(s) of " + std::to_string(run.generate_chips) + per_slice(w.replicas_per_slice);
  std::snprintf(buf, sizeof buf,
                "%s: %s serving %zu requests (%s), %s batching, %s, %d slots per server\n"
                "  TTFT       %s\n  TPOT       %s\n  ITL        %s\n  latency    %s\n  queueing   %s\n"
                "  steps      prefill %s mean (%lld), decode %s mean (%lld)\n"
                "  throughput %.4g requests/s, output %.4g tokens/s (%.4g tokens/s/chip), total %.4g tokens/s over %s\n"
                "%s"
                "  step costs %lld collectives replayed in %s\n",
                scenario.name.c_str(), w.model.name.c_str(), r.request_count, w.requests_source.c_str(),
                to_string(w.config.policy), servers.c_str(), w.config.slots, d(st.ttft).c_str(), d(st.tpot).c_str(), d(st.itl).c_str(),
                d(st.latency).c_str(), d(st.queueing).c_str(), human_time(st.prefill_step.mean).c_str(),
                r.prefill_steps, human_time(st.decode_step.mean).c_str(), r.decode_steps,
                st.requests_per_s, st.tokens_per_s, st.tokens_per_s_per_chip, st.total_tokens_per_s,
                human_time(r.end_s).c_str(), goodput.c_str(),
                run.costs->collectives_replayed(), human_time(run.costs->wall_s()).c_str());
  return buf;
}

}  // namespace podsim
