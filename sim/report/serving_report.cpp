#include "sim/report/serving_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "sim/report/trace_time.hpp"
#include "sim/report/csv_text.hpp"
#include "sim/scenario/units.hpp"

namespace podsim {

namespace {

using Json = nlohmann::ordered_json;

Json distribution_json(const Distribution& d) {
  return {{"mean", d.mean}, {"std", d.std}, {"p50", d.p50}, {"p90", d.p90}, {"p99", d.p99}, {"max", d.max}};
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

Distribution distribution(std::vector<double> values) {
  Distribution d;
  d.count = values.size();
  if (values.empty()) return d;
  std::sort(values.begin(), values.end());
  double sum = 0;
  for (double v : values) sum += v;
  d.mean = sum / values.size();
  double squares = 0;
  for (double v : values) squares += (v - d.mean) * (v - d.mean);
  d.std = std::sqrt(squares / values.size());
  auto at = [&](double q) {
    const double pos = q * (values.size() - 1);
    const size_t lo = static_cast<size_t>(std::floor(pos));
    const size_t hi = std::min(values.size() - 1, lo + 1);
    return values[lo] + (pos - lo) * (values[hi] - values[lo]);
  };
  d.p50 = at(0.5);
  d.p90 = at(0.9);
  d.p99 = at(0.99);
  d.max = values.back();
  return d;
}

ServingStats serving_stats(const ServingResult& r, int chips, const ServingWorkload::Slo& slo) {
  std::vector<double> ttft, tpot, latency, queueing, per_token, prefill_steps, decode_steps;
  double tokens = 0, prompt_tokens = 0;
  for (const auto& q : r.requests) {
    prompt_tokens += q.request.prompt_tokens;
    ttft.push_back(q.ttft_s());
    latency.push_back(q.latency_s());
    queueing.push_back(q.queueing_s());
    per_token.push_back(q.per_token_latency_s());
    if (q.request.output_tokens > 1) tpot.push_back(q.tpot_s());
    tokens += q.request.output_tokens;
  }
  for (const auto& s : r.steps) {
    if (s.kind == StepKind::Prefill) prefill_steps.push_back(s.end_s - s.start_s);
    if (s.kind == StepKind::Decode) decode_steps.push_back(s.end_s - s.start_s);
  }
  ServingStats st;
  st.ttft = distribution(std::move(ttft));
  st.tpot = distribution(std::move(tpot));
  st.latency = distribution(std::move(latency));
  st.per_token_latency = distribution(std::move(per_token));
  st.queueing = distribution(std::move(queueing));
  st.itl = distribution(r.inter_token_s);
  st.prefill_step = distribution(std::move(prefill_steps));
  st.decode_step = distribution(std::move(decode_steps));
  // Throughput (tokens generated per second of the run) and latency are kept apart.
  st.span_s = r.end_s - (r.requests.empty() ? 0.0 : r.requests.front().request.arrival_s);
  if (st.span_s > 0) {
    st.requests_per_s = r.requests.size() / st.span_s;
    st.tokens_per_s = tokens / st.span_s;
    st.tokens_per_s_per_chip = st.tokens_per_s / chips;
    st.total_tokens_per_s = (tokens + prompt_tokens) / st.span_s;
  }
  if (slo.given() && !r.requests.empty()) {
    size_t good = 0;
    for (const auto& q : r.requests) {
      good += (slo.ttft_s <= 0 || q.ttft_s() <= slo.ttft_s) && (slo.tpot_s <= 0 || q.tpot_s() <= slo.tpot_s) &&
              (slo.latency_s <= 0 || q.latency_s() <= slo.latency_s);
    }
    st.slo_attainment = static_cast<double>(good) / r.requests.size();
    if (st.span_s > 0) st.goodput_requests_per_s = good / st.span_s;
  }
  st.total_input_tokens = prompt_tokens;
  st.total_output_tokens = tokens;
  return st;
}

std::string serving_summary_json(const Scenario& scenario, const ServingRun& run, const ReportOptions& options) {
  const ServingWorkload& w = scenario.serving;
  const ServingResult& r = run.result;
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
                   {"hbm_slots", w.hbm_slots}};
  if (disaggregated(scenario)) workload["prefill_topology"] = topology_json(w.prefill_topology);
  j["workload"] = workload;
  j["servers"] = w.config.servers;
  j["prefill_servers"] = w.config.prefill_servers;
  j["chips"] = run.total_chips;
  j["requests"] = r.requests.size();
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
  j["step_costs"] = {{"collectives_replayed", run.costs->collectives_replayed()},
                     {"prefill_shapes", run.costs->prefill_shapes()},
                     {"decode_shapes", run.costs->decode_comm().size()},
                     {"kv_transfer_shapes", run.costs->kv_transfer_shapes()}};
  return j.dump(2) + "\n";
}

std::string serving_requests_csv(const ServingRun& run) {
  std::string out =
      "id,arrival_s,prompt_tokens,padded_prompt_tokens,output_tokens,server,generate_server,queueing_s,ttft_s,"
      "tpot_s,latency_s,per_token_latency_s,first_token_s,end_s\n";
  for (const auto& q : run.result.requests) {
    out += std::to_string(q.request.id) + "," + csv_number(q.request.arrival_s) + "," +
           std::to_string(q.request.prompt_tokens) + "," + std::to_string(q.padded_prompt_tokens) + "," +
           std::to_string(q.request.output_tokens) + "," + std::to_string(q.server) + "," +
           std::to_string(q.generate_server) + "," + csv_number(q.queueing_s()) + "," + csv_number(q.ttft_s()) + "," +
           csv_number(q.tpot_s()) + "," + csv_number(q.latency_s()) + "," +
           csv_number(q.per_token_latency_s()) + "," + csv_number(q.first_token_s) + "," +
           csv_number(q.end_s) + "\n";
  }
  return out;
}

namespace {

const char* kind_name(StepKind k) {
  return k == StepKind::Prefill ? "prefill" : k == StepKind::Decode ? "decode" : "kv_transfer";
}

std::string pool_name(const StepRecord& s, bool split) {
  if (!split) return "server";
  return s.on_prefill_server ? "prefill_server" : "generate_server";
}

}  // namespace

std::string serving_steps_csv(const ServingRun& run) {
  std::string out = "pool,server,kind,start_s,end_s,batch,tokens\n";
  const bool split = run.prefill_chips > 0;
  for (const auto& s : run.result.steps) {
    out += pool_name(s, split) + "," + std::to_string(s.server) + "," + kind_name(s.kind) + "," + csv_number(s.start_s) +
           "," + csv_number(s.end_s) + "," + std::to_string(s.batch) + "," + csv_number(s.tokens) + "\n";
  }
  return out;
}

std::string serving_trace_json(const Scenario& scenario, const ServingRun& run) {
  // One process per server pool, a thread per server (and one for each generate server's
  // incoming KV transfers); a counter of the decode batch per server.
  Json events = Json::array();
  const bool split = disaggregated(scenario);
  auto pid = [&](const StepRecord& s) { return s.on_prefill_server ? 2 : 1; };
  auto tid = [&](const StepRecord& s) { return s.kind == StepKind::KvTransfer ? 2 * s.server + 1 : 2 * s.server; };
  events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", 1},
                    {"args", {{"name", split ? "generate servers" : "servers"}}}});
  if (split) events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", 2}, {"args", {{"name", "prefill servers"}}}});
  for (int s = 0; s < scenario.serving.config.servers; ++s) {
    events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", 1}, {"tid", 2 * s},
                      {"args", {{"name", "server " + std::to_string(s)}}}});
    if (split)
      events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", 1}, {"tid", 2 * s + 1},
                        {"args", {{"name", "server " + std::to_string(s) + " KV in"}}}});
  }
  for (int s = 0; s < scenario.serving.config.prefill_servers; ++s)
    events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", 2}, {"tid", 2 * s},
                      {"args", {{"name", "prefill " + std::to_string(s)}}}});
  for (const auto& s : run.result.steps) {
    const TraceTime t = trace_time(s.start_s, s.end_s);
    events.push_back({{"ph", "X"}, {"name", kind_name(s.kind)}, {"cat", kind_name(s.kind)}, {"pid", pid(s)},
                      {"tid", tid(s)}, {"ts", t.ts_us}, {"dur", t.dur_us},
                      {"args", {{"batch", s.batch}, {"tokens", s.tokens}}}});
    if (s.kind == StepKind::Decode)
      events.push_back({{"ph", "C"}, {"name", "decode batch " + std::to_string(s.server)}, {"pid", pid(s)},
                        {"ts", t.ts_us}, {"args", {{"sequences", s.batch}}}});
  }
  Json trace = {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
  return trace.dump() + "\n";
}

std::string serving_table(const Scenario& scenario, const ServingRun& run) {
  const ServingWorkload& w = scenario.serving;
  const ServingStats& st = run.stats;
  char buf[2048];
  auto d = [&](const Distribution& x) {
    return human_time(x.mean) + " mean, " + human_time(x.std) + " std, " + human_time(x.p50) + " median, " +
           human_time(x.p99) + " p99";
  };
  std::string goodput;
  if (w.slo.given()) {
    char line[160];
    std::snprintf(line, sizeof line, "  goodput    %.4g requests/s (%.1f%% within the SLO)\n", st.goodput_requests_per_s,
                  100 * st.slo_attainment);
    goodput = line;
  }
  std::string servers = std::to_string(w.config.servers) + " server(s) of " + std::to_string(run.generate_chips) +
                        " " + scenario.topology.chip.name;
  if (w.config.policy == BatchingPolicy::Disaggregated)
    servers = std::to_string(w.config.prefill_servers) + " prefill server(s) of " + std::to_string(run.prefill_chips) +
              " + " + std::to_string(w.config.servers) + " generate server(s) of " + std::to_string(run.generate_chips);
  std::snprintf(buf, sizeof buf,
                "%s: %s serving %zu requests (%s), %s batching, %s, %d slots per server\n"
                "  TTFT       %s\n  TPOT       %s\n  ITL        %s\n  latency    %s\n  queueing   %s\n"
                "  steps      prefill %s mean (%lld), decode %s mean (%lld)\n"
                "  throughput %.4g requests/s, output %.4g tokens/s (%.4g tokens/s/chip), total %.4g tokens/s over %s\n"
                "%s"
                "  step costs %lld collectives replayed in %s\n",
                scenario.name.c_str(), w.model.name.c_str(), run.result.requests.size(), w.requests_source.c_str(),
                to_string(w.config.policy), servers.c_str(), w.config.slots, d(st.ttft).c_str(), d(st.tpot).c_str(), d(st.itl).c_str(),
                d(st.latency).c_str(), d(st.queueing).c_str(), human_time(st.prefill_step.mean).c_str(),
                run.result.prefill_steps, human_time(st.decode_step.mean).c_str(), run.result.decode_steps,
                st.requests_per_s, st.tokens_per_s, st.tokens_per_s_per_chip, st.total_tokens_per_s,
                human_time(run.result.end_s).c_str(), goodput.c_str(),
                run.costs->collectives_replayed(), human_time(run.costs->wall_s()).c_str());
  return buf;
}

}  // namespace podsim
