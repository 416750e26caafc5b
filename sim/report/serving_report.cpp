#include "sim/report/serving_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "sim/report/summary_writer.hpp"

#include "sim/report/csv_text.hpp"
#include "sim/scenario/units.hpp"

namespace podsim {

namespace {

using Json = nlohmann::ordered_json;

Json topology_json(const TopologySpec& t) {
  const Topology topo(t);
  Json axes = Json::array();
  for (size_t a = 0; a < t.axes.size(); ++a)
    axes.push_back({{"name", t.axes[a].name}, {"size", t.axes[a].size}, {"wraparound", topo.wraps(static_cast<int>(a))}});
  return {{"chip", t.chip.name}, {"axes", axes}, {"chips", t.chips_per_slice()}, {"diameter_hops", topo.diameter()},
          {"bisection_links", topo.bisection_links()}};
}

}  // namespace

std::string serving_summary_json(const Scenario& scenario, const ServingRun& run, const ReportOptions& options) {
  return write_summary({.scenario = scenario, .options = options, .serving = &run});
}

// The serving summary's parts the field table's getters call (summary_field_table.hpp).
namespace summary_parts {

bool serving_disaggregated(const SummaryInputs& in) {
  return in.scenario.serving().config.policy == BatchingPolicy::Disaggregated;
}

// vLLM's statistics of a distribution: mean, std, median and the percentiles asked for, with
// the count and whether the percentiles are exact (quantiles.hpp).
Json distribution(const Distribution& d) {
  Json j = {{"mean", d.mean}, {"std", d.std}, {"median", d.median}};
  for (const auto& [p, v] : d.percentiles) j[percentile_name(p)] = v;
  j["max"] = d.max;
  j["count"] = d.count;
  j["exact"] = d.exact;
  return j;
}

Json serving_topology(const SummaryInputs& in) { return topology_json(in.scenario.topology); }

Json serving_workload(const SummaryInputs& in) {
  const ServingWorkload& w = in.scenario.serving();
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
  if (w.config.max_concurrency > 0) workload["max_concurrency"] = w.config.max_concurrency;
  if (w.config.host_overhead_per_step_s > 0 || w.config.host_overhead_per_sequence_s > 0) {
    workload["host_overhead_per_step_s"] = w.config.host_overhead_per_step_s;
    workload["host_overhead_per_sequence_s"] = w.config.host_overhead_per_sequence_s;
  }
  if (w.config.policy == BatchingPolicy::Mixed) {
    workload["max_num_batched_tokens"] = w.config.max_num_batched_tokens;
    workload["max_num_seqs"] = w.config.max_num_seqs;
    if (w.max_model_len > 0) workload["max_model_len"] = w.max_model_len;
    workload["async_scheduling"] = w.config.async_scheduling;
    workload["router"] = to_string(w.config.router);
    workload["preemption"] = to_string(w.config.preemption);
    if (w.config.preemption == Preemption::Swap) workload["swap_blocks"] = w.config.swap_blocks;
  }
  if (const SpeculativeDecoding& spec = w.config.speculative; spec.enabled())
    workload["speculative"] = {{"method", to_string(spec.method)},
                               {"num_speculative_tokens", spec.num_tokens},
                               {"acceptance_probability", spec.acceptance_probability},
                               {"expected_acceptance_rate", expected_accepted_drafts(spec.acceptance_probability, spec.num_tokens) / spec.num_tokens}};
  if (w.draft_model) workload["speculative"]["model"] = w.draft_model->name;
  if (serving_disaggregated(in)) workload["prefill_topology"] = topology_json(w.prefill_topology);
  return workload;
}

double serving_kv_cache_bytes_per_token(const SummaryInputs& in) {
  return kv_cache_bytes_per_token(in.scenario.serving().model, in.scenario.serving().generate.kv_bytes);
}

Json serving_slo(const SummaryInputs& in) {
  const auto& slo = in.scenario.serving().slo;
  if (!slo.given()) return absent();
  Json j = Json::object();
  if (slo.ttft_s > 0) j["ttft_s"] = slo.ttft_s;
  if (slo.tpot_s > 0) j["tpot_s"] = slo.tpot_s;
  if (slo.latency_s > 0) j["latency_s"] = slo.latency_s;
  return j;
}

bool serving_mixed(const SummaryInputs& in) { return in.scenario.serving().config.policy == BatchingPolicy::Mixed; }

bool serving_speculative(const SummaryInputs& in) { return in.scenario.serving().config.speculative.enabled(); }

bool serving_draft_model(const SummaryInputs& in) { return in.scenario.serving().draft_model.has_value(); }

bool serving_swaps(const SummaryInputs& in) {
  return serving_mixed(in) && in.scenario.serving().config.preemption == Preemption::Swap;
}

// Busy seconds over the servers' capacity (servers x the span of the run).
Json busy_fraction(const SummaryInputs& in, bool prefill) {
  const auto& config = in.scenario.serving().config;
  const int servers = prefill && serving_disaggregated(in) ? config.prefill_servers : config.servers;
  const double capacity = in.serving->stats.span_s * servers;
  const double busy_s = prefill ? in.serving->totals.prefill_busy_s
                                : in.serving->totals.decode_busy_s + in.serving->totals.mixed_busy_s;
  return capacity > 0 ? busy_s / capacity : 0.0;
}

Json serving_trace(const SummaryInputs& in) {
  const auto& extent = in.serving->trace;
  if (!extent) return absent();
  Json trace = {{"events", extent->events}, {"complete", extent->complete}};
  if (!extent->complete) trace["until_s"] = extent->until_s;
  return trace;
}

// Servers whose chips differ replay every step at its own shape on their own mesh
// (serving_costs.hpp): how many servers, and the steps they replayed.
void perturbed_server_costs(const ServingRun& run, Json& j) {
  long long servers = 0, steps = 0;
  for (const auto& costs : run.server_costs) {
    if (!costs) continue;
    ++servers;
    steps += costs->steps_replayed();
  }
  if (servers == 0) return;
  j["perturbed_servers"] = servers;
  j["perturbed_server_steps_replayed"] = steps;
}

// How the shared step costs were priced.
Json uniform_step_costs(const SummaryInputs& in) {
  const ServingCostModel& costs = *in.serving->costs;
  if (serving_mixed(in)) {
    Json j = {{"priced_by", "whole steps, shifted by attention (mixed)"},
              {"mixed_steps_replayed_at_own_shape", costs.decode_steps_replayed_whole()},
              {"collectives_replayed", costs.collectives_replayed()},
              {"mixed_shapes", costs.mixed_shapes()}};
    // The draft model's passes are mixed steps of its own cost model, counted apart.
    if (const ServingCostModel* draft = in.serving->draft_costs.get())
      j["draft_model_steps_replayed_at_own_shape"] = draft->decode_steps_replayed_whole();
    return j;
  }
  Json j = {{"priced_by", costs.whole_steps() ? "whole steps" : "layers"},
            {"decode_steps_replayed_at_own_context", costs.decode_steps_replayed_whole()},
            {"collectives_replayed", costs.collectives_replayed()},
            {"prefill_shapes", costs.prefill_shapes()},
            {"decode_shapes", costs.decode_shapes()},
            {"kv_transfer_shapes", costs.kv_transfer_shapes()}};
  // 2D weight-stationary servers price each step at its batch padded up to these multiples
  // (serving_costs.hpp); the steps' records keep the real batch.
  if (costs.pads_2d_batches())
    j["batch_padded_to_multiple_of"] = {{"prefill", costs.prefill_batch_multiple()},
                                        {"decode", costs.decode_batch_multiple()}};
  return j;
}

Json step_costs(const SummaryInputs& in) {
  Json j = uniform_step_costs(in);
  perturbed_server_costs(*in.serving, j);
  return j;
}

}  // namespace summary_parts

std::string serving_table(const Scenario& scenario, const ServingRun& run) {
  const ServingWorkload& w = scenario.serving();
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
  char steps_line[512];
  if (w.config.policy == BatchingPolicy::Mixed)
    std::snprintf(steps_line, sizeof steps_line,
                  "mixed %s mean (%lld), %lld preemptions, KV cache %lld blocks of %d tokens: peak %.1f%%, mean %.1f%%",
                  human_time(st.mixed_step.mean).c_str(), r.mixed_steps, r.preemptions, r.kv_blocks, w.config.block_size,
                  100.0 * static_cast<double>(r.peak_kv_blocks_used) / static_cast<double>(std::max(1LL, r.kv_blocks)),
                  100.0 * r.mean_kv_blocks_used / static_cast<double>(std::max(1LL, r.kv_blocks)));
  else
    std::snprintf(steps_line, sizeof steps_line, "prefill %s mean (%lld), decode %s mean (%lld)",
                  human_time(st.prefill_step.mean).c_str(), r.prefill_steps, human_time(st.decode_step.mean).c_str(),
                  r.decode_steps);
  std::string steps = steps_line;
  if (w.config.policy == BatchingPolicy::Mixed && w.config.preemption == Preemption::Swap) {
    std::snprintf(steps_line, sizeof steps_line, " (%lld swapped, %s of copies over PCIe)", r.swap_outs,
                  human_time(r.swap_s).c_str());
    steps += steps_line;
  }
  if (r.spec_drafts > 0) {
    std::snprintf(steps_line, sizeof steps_line, "; speculative: %.1f%% of %lld drafts accepted, %.3g tokens a verifying step",
                  100.0 * static_cast<double>(r.spec_accepted_tokens) / static_cast<double>(r.spec_draft_tokens),
                  r.spec_draft_tokens, 1.0 + static_cast<double>(r.spec_accepted_tokens) / static_cast<double>(r.spec_drafts));
    steps += steps_line;
  }
  std::snprintf(buf, sizeof buf,
                "%s: %s serving %zu requests (%s), %s batching, %s, %d slots per server\n"
                "  TTFT       %s\n  TPOT       %s\n  ITL        %s\n  latency    %s\n  queueing   %s\n"
                "  steps      %s\n"
                "  throughput %.4g requests/s, output %.4g tokens/s (%.4g tokens/s/chip), total %.4g tokens/s over %s\n"
                "%s"
                "  step costs %lld collectives replayed in %s\n",
                scenario.name.c_str(), w.model.name.c_str(), r.request_count, w.requests_source.c_str(),
                to_string(w.config.policy), servers.c_str(), w.config.slots, d(st.ttft).c_str(), d(st.tpot).c_str(), d(st.itl).c_str(),
                d(st.latency).c_str(), d(st.queueing).c_str(), steps.c_str(),
                st.requests_per_s, st.tokens_per_s, st.tokens_per_s_per_chip, st.total_tokens_per_s,
                human_time(r.end_s).c_str(), goodput.c_str(),
                run.costs->collectives_replayed(), human_time(run.costs->wall_s()).c_str());
  return buf;
}

}  // namespace podsim
