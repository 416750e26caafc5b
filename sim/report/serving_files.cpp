#include "sim/report/serving_files.hpp"

#include <nlohmann/json.hpp>

#include "sim/report/csv_text.hpp"
#include "sim/report/trace_time.hpp"

namespace podsim {

namespace {

using Json = nlohmann::ordered_json;

const char* kind_name(StepKind k) {
  return k == StepKind::Prefill ? "prefill" : k == StepKind::Decode ? "decode" : "kv_transfer";
}

std::string pool_name(const StepRecord& s, bool split) {
  if (!split) return "server";
  return s.on_prefill_server ? "prefill_server" : "generate_server";
}

// Trace processes: the (generate) servers, the prefill servers, the requests.
constexpr int kServersPid = 1, kPrefillPid = 2, kRequestsPid = 3;

}  // namespace

ServingFileSink::ServingFileSink(const Scenario& scenario, OutputFiles& files, uint64_t max_trace_events)
    : requests_(files.stream("requests.csv")),
      steps_(files.stream("steps.csv")),
      trace_(files.stream("trace.json")),
      split_(scenario.serving().config.policy == BatchingPolicy::Disaggregated),
      max_trace_events_(max_trace_events) {
  requests_ << "id,arrival_s,prompt_tokens,padded_prompt_tokens,output_tokens,server,generate_server,queueing_s,"
               "ttft_s,tpot_s,latency_s,per_token_latency_s,first_token_s,end_s\n";
  steps_ << "pool,server,kind,start_s,end_s,batch,tokens\n";
  // One process per server pool, a thread per server (and one for each generate server's
  // incoming KV transfers), and a process of requests with a thread each.
  trace_ << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  auto meta = [&](Json event) { trace_event(event.dump(), 0); };
  meta({{"ph", "M"}, {"name", "process_name"}, {"pid", kServersPid},
        {"args", {{"name", split_ ? "generate servers" : "servers"}}}});
  if (split_) meta({{"ph", "M"}, {"name", "process_name"}, {"pid", kPrefillPid}, {"args", {{"name", "prefill servers"}}}});
  meta({{"ph", "M"}, {"name", "process_name"}, {"pid", kRequestsPid}, {"args", {{"name", "requests"}}}});
  for (int s = 0; s < scenario.serving().config.servers; ++s) {
    meta({{"ph", "M"}, {"name", "thread_name"}, {"pid", kServersPid}, {"tid", 2 * s},
          {"args", {{"name", "server " + std::to_string(s)}}}});
    if (split_)
      meta({{"ph", "M"}, {"name", "thread_name"}, {"pid", kServersPid}, {"tid", 2 * s + 1},
            {"args", {{"name", "server " + std::to_string(s) + " KV in"}}}});
  }
  for (int s = 0; s < scenario.serving().config.prefill_servers; ++s)
    meta({{"ph", "M"}, {"name", "thread_name"}, {"pid", kPrefillPid}, {"tid", 2 * s},
          {"args", {{"name", "prefill " + std::to_string(s)}}}});
}

bool ServingFileSink::trace_event(const std::string& event_json, double at_s) {
  if (!extent_.complete) return false;
  if (extent_.events >= max_trace_events_) {
    extent_.complete = false;
    extent_.until_s = at_s;
    return false;
  }
  if (extent_.events > 0) trace_ << ",\n";
  trace_ << event_json;
  ++extent_.events;
  return true;
}

void ServingFileSink::step(const StepRecord& s) {
  steps_ << pool_name(s, split_) << ',' << s.server << ',' << kind_name(s.kind) << ',' << csv_number(s.start_s) << ','
         << csv_number(s.end_s) << ',' << s.batch << ',' << csv_number(s.tokens) << '\n';
  if (!extent_.complete) return;
  const int pid = s.on_prefill_server ? kPrefillPid : kServersPid;
  const int tid = s.kind == StepKind::KvTransfer ? 2 * s.server + 1 : 2 * s.server;
  const TraceTime t = trace_time(s.start_s, s.end_s);
  const Json span = {{"ph", "X"}, {"name", kind_name(s.kind)}, {"cat", kind_name(s.kind)}, {"pid", pid},
                     {"tid", tid}, {"ts", t.ts_us}, {"dur", t.dur_us},
                     {"args", {{"batch", s.batch}, {"tokens", s.tokens}}}};
  if (!trace_event(span.dump(), s.start_s)) return;
  if (s.kind == StepKind::Decode)
    trace_event(Json({{"ph", "C"}, {"name", "decode batch " + std::to_string(s.server)}, {"pid", pid},
                      {"ts", t.ts_us}, {"args", {{"sequences", s.batch}}}})
                    .dump(),
                s.start_s);
}

void ServingFileSink::request(const RequestRecord& q) {
  requests_ << q.request.id << ',' << csv_number(q.request.arrival_s) << ',' << q.request.prompt_tokens << ','
            << q.padded_prompt_tokens << ',' << q.request.output_tokens << ',' << q.server << ',' << q.generate_server
            << ',' << csv_number(q.queueing_s()) << ',' << csv_number(q.ttft_s()) << ',' << csv_number(q.tpot_s()) << ','
            << csv_number(q.latency_s()) << ',' << csv_number(q.per_token_latency_s()) << ','
            << csv_number(q.first_token_s) << ',' << csv_number(q.end_s) << '\n';
  if (!extent_.complete) return;
  // A track per request: queued, prefill, the KV hand-off (disaggregated: the transfer and the
  // wait for a generate slot), decode. Adjacent phases share their rounded endpoints, so the
  // spans touch and never overlap.
  const int tid = static_cast<int>(request_index_++);
  if (!trace_event(Json({{"ph", "M"}, {"name", "thread_name"}, {"pid", kRequestsPid}, {"tid", tid},
                         {"args", {{"name", "request " + std::to_string(q.request.id)}}}})
                       .dump(),
                   q.request.arrival_s))
    return;
  auto phase = [&](const char* name, double start_s, double end_s) {
    if (!(end_s > start_s)) return;
    const TraceTime t = trace_time(start_s, end_s);
    trace_event(Json({{"ph", "X"}, {"name", name}, {"cat", "request"}, {"pid", kRequestsPid}, {"tid", tid},
                      {"ts", t.ts_us}, {"dur", t.dur_us},
                      {"args", {{"id", q.request.id}, {"prompt_tokens", q.request.prompt_tokens},
                                {"output_tokens", q.request.output_tokens}}}})
                    .dump(),
                start_s);
  };
  phase("queued", q.request.arrival_s, q.prefill_start_s);
  phase("prefill", q.prefill_start_s, q.first_token_s);
  if (q.request.output_tokens > 1) {
    phase("kv_handoff", q.first_token_s, q.decode_start_s);
    phase("decode", q.decode_start_s, q.end_s);
  }
}

ServingTraceExtent ServingFileSink::finish() {
  trace_ << "\n]}\n";
  return extent_;
}

}  // namespace podsim
