#include "sim/report/serving_files.hpp"

#include "sim/report/csv_text.hpp"

namespace podsim {

namespace {

const char* kind_name(StepKind k) {
  switch (k) {
    case StepKind::Prefill: return "prefill";
    case StepKind::Decode: return "decode";
    case StepKind::KvTransfer: return "kv_transfer";
    case StepKind::Mixed: return "mixed";
  }
  return "?";
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
      trace_(files.stream("trace.json"), "ms", max_trace_events),
      split_(scenario.serving().config.policy == BatchingPolicy::Disaggregated) {
  requests_ << "id,arrival_s,prompt_tokens,padded_prompt_tokens,output_tokens,server,generate_server,queueing_s,"
               "ttft_s,tpot_s,latency_s,per_token_latency_s,first_token_s,end_s\n";
  steps_ << "pool,server,kind,start_s,end_s,batch,tokens\n";
  // One process per server pool, a thread per server (and one for each generate server's
  // incoming KV transfers), and a process of requests with a thread each.
  trace_.process_name(kServersPid, split_ ? "generate servers" : "servers");
  if (split_) trace_.process_name(kPrefillPid, "prefill servers");
  trace_.process_name(kRequestsPid, "requests");
  for (int s = 0; s < scenario.serving().config.servers; ++s) {
    trace_.thread_name(kServersPid, 2 * s, "server " + std::to_string(s));
    if (split_) trace_.thread_name(kServersPid, 2 * s + 1, "server " + std::to_string(s) + " KV in");
  }
  for (int s = 0; s < scenario.serving().config.prefill_servers; ++s)
    trace_.thread_name(kPrefillPid, 2 * s, "prefill " + std::to_string(s));
}

void ServingFileSink::step(const StepRecord& s) {
  steps_ << pool_name(s, split_) << ',' << s.server << ',' << kind_name(s.kind) << ',' << csv_number(s.start_s) << ','
         << csv_number(s.end_s) << ',' << s.batch << ',' << csv_number(s.tokens) << '\n';
  if (!trace_.accepting()) return;
  const int pid = s.on_prefill_server ? kPrefillPid : kServersPid;
  const int tid = s.kind == StepKind::KvTransfer ? 2 * s.server + 1 : 2 * s.server;
  TraceArgs args = TraceArgs().add("batch", s.batch).add("tokens", s.tokens);
  // Of a mixed step's time, what speculative drafting and swap copies took (only when some).
  if (s.draft_s > 0) args.add("draft_s", s.draft_s);
  if (s.swap_s > 0) args.add("swap_s", s.swap_s);
  if (!trace_.span(kind_name(s.kind), kind_name(s.kind), pid, tid, s.start_s, s.end_s, args)) return;
  if (s.kind == StepKind::Decode)
    trace_.counter("decode batch " + std::to_string(s.server), pid, s.start_s, TraceArgs().add("sequences", s.batch));
  if (s.kind == StepKind::Mixed) {
    trace_.counter("batch " + std::to_string(s.server), pid, s.start_s,
                   TraceArgs().add("sequences", s.batch).add("tokens", s.tokens));
    trace_.counter("KV cache blocks " + std::to_string(s.server), pid, s.start_s,
                   TraceArgs().add("used", static_cast<double>(s.kv_blocks_used)));
  }
}

void ServingFileSink::request(const RequestRecord& q) {
  requests_ << q.request.id << ',' << csv_number(q.request.arrival_s) << ',' << q.request.prompt_tokens << ','
            << q.padded_prompt_tokens << ',' << q.request.output_tokens << ',' << q.server << ',' << q.generate_server
            << ',' << csv_number(q.queueing_s()) << ',' << csv_number(q.ttft_s()) << ',' << csv_number(q.tpot_s()) << ','
            << csv_number(q.latency_s()) << ',' << csv_number(q.per_token_latency_s()) << ','
            << csv_number(q.first_token_s) << ',' << csv_number(q.end_s) << '\n';
  if (!trace_.accepting()) return;
  // A track per request: queued, prefill, the KV hand-off (disaggregated: the transfer and the
  // wait for a generate slot), decode. Adjacent phases share their rounded endpoints, so the
  // spans touch and never overlap.
  const int tid = static_cast<int>(request_index_++);
  if (!trace_.thread_name(kRequestsPid, tid, "request " + std::to_string(q.request.id), q.request.arrival_s)) return;
  const TraceArgs args = TraceArgs()
                             .add("id", q.request.id)
                             .add("prompt_tokens", q.request.prompt_tokens)
                             .add("output_tokens", q.request.output_tokens);
  auto phase = [&](const char* name, double start_s, double end_s) {
    if (end_s > start_s) trace_.span(name, "request", kRequestsPid, tid, start_s, end_s, args);
  };
  phase("queued", q.request.arrival_s, q.prefill_start_s);
  phase("prefill", q.prefill_start_s, q.first_token_s);
  if (q.request.output_tokens > 1) {
    phase("kv_handoff", q.first_token_s, q.decode_start_s);
    phase("decode", q.decode_start_s, q.end_s);
  }
}

TraceExtent ServingFileSink::finish() { return trace_.finish(); }

}  // namespace podsim
