#pragma once
// Serving: requests queue, are prefilled and decoded in batches on one or more model servers,
// and the per-request latencies come out of the event timeline (applied-inference.md,
// "Serving"; inference.md, "Disaggregated serving"). A discrete-event simulation of its own:
// each step's duration comes from a StepCosts model (sim/engine/serving_costs.cpp builds it from
// SimGrid replays of the step programs); queueing, batching and slot limits happen here.
#include <functional>
#include <string>
#include <vector>

#include "workloads/inference.hpp"
#include "workloads/named_values.hpp"
#include "workloads/requests.hpp"
#include "workloads/speculative.hpp"

namespace podsim {

enum class BatchingPolicy {
  Static,          // take up to `slots` waiting prompts, prefill them together, decode until all are done
  Interleaved,     // prefill one prompt (batch 1) between decode steps while a slot is free
  Continuous,      // prefill every waiting prompt a free slot allows (up to prefill_batch) between decode steps
  Disaggregated,   // prefill servers hand KV caches over DCN to generate servers
  Mixed,           // vLLM v1: one step of every running sequence's next tokens and waiting prompts' chunks, paged KV
  // JetStream's interleaved mode (jetstream/core/orchestrator.py): a prompt prefilled alone,
  // padded to its power-of-two bucket, between generate steps while a decode slot is free, its
  // cache inserted into that slot of the fixed-slot decode batch. The steps are interleaved's;
  // the insert (a copy of the prompt's cache within HBM, e.g. 0.5 GB at 6.6 TB/s for LLaMA-2
  // 7B's 1,024 tokens on v5e-8: 0.16 ms beside a prefill of tens of ms) is not priced.
  JetStream,
};
const NamedValues<BatchingPolicy>& batching_policy_names();   // as `policy:` spells them
const char* to_string(BatchingPolicy policy);

// How requests reach a policy-mixed fleet's servers (replicas). SharedQueue: one queue every
// idle server takes from (an ideal balancer); the others give each server its own queue, the
// request routed on arrival: RoundRobin in turn; LeastOutstanding to the server with the
// fewest requests running or queued (lowest index on ties); KvAware to the server whose cache
// holds most of the request's prefix (prefix-aware routing, as llm-d and vLLM's production
// stack do), least outstanding among equals. A preempted request stays on its server.
enum class Router { SharedQueue, RoundRobin, LeastOutstanding, KvAware };
const NamedValues<Router>& router_names();   // as `router:` spells them
const char* to_string(Router router);

// What a preempted sequence (policy mixed) keeps. Recompute: nothing; readmitted, it prefills
// its prompt and outputs again (vLLM's default, v1's only kind). Swap (vLLM v0's
// preemption_mode "swap"): its cached tokens are copied to host memory over PCIe, and back
// when it is readmitted, as part of those steps (vLLM v0 runs the swap ops before the step's
// forward pass); when the host's swap space has no room, it is recomputed.
enum class Preemption { Recompute, Swap };
const NamedValues<Preemption>& preemption_names();   // as `preemption:` spells them
const char* to_string(Preemption preemption);

struct ServingConfig {
  BatchingPolicy policy = BatchingPolicy::Continuous;
  int servers = 1;             // model servers (colocated), or generate servers (disaggregated)
  int prefill_servers = 0;     // disaggregated only
  int slots = 1;               // sequences one (generate) server decodes at once: its HBM's KV limit
  int prefill_batch = 1;       // prompts one prefill step takes (static: all of its batch)
  // Prompts are padded up to the smallest bucket that holds them; longer prompts are prefilled
  // in chunks of the largest bucket, the last one padded up to a bucket.
  std::vector<int> buckets;    // ascending
  // The benchmark client's concurrency limit (vLLM benchmark_serving --max-concurrency): a
  // request is sent at its arrival or, while this many are in flight (sent, last token not yet
  // out), when one ends, in request order; its record's arrival is when it was sent, where the
  // client starts its clocks. 0: no limit (open loop).
  int max_concurrency = 0;
  // Mixed (vLLM v1's scheduler, vllm/v1/core/sched/scheduler.py): each step takes the running
  // sequences in admission order, a decode token each or a prompt's next chunk, then waiting
  // prompts' chunks in arrival order, up to max_num_batched_tokens tokens and max_num_seqs
  // running; the KV cache is paged (kv_cache.hpp: kv_blocks blocks of block_size tokens a
  // server). A running sequence whose next tokens find no free block preempts the latest
  // admitted (itself last), which frees its blocks and returns to the front of the queue, its
  // prompt and outputs so far prefilled again when it is readmitted (preemption by recompute,
  // vLLM's default); no waiting prompt is admitted in a step that preempted. A step's cost is
  // StepCosts::mixed_s of its shape (every token through the weights, each sequence's
  // attention over its context, one logit row a sequence). Prompts are not padded to buckets.
  int max_num_batched_tokens = 2048;
  int max_num_seqs = 256;
  int block_size = 16;
  long long kv_blocks = 0;
  // Automatic prefix caching (vLLM's enable_prefix_caching, on by default in v1; kv_cache.hpp):
  // a request whose prefix (Request::prefix_id) has full blocks cached starts with them
  // computed, all but its last prompt token at most.
  bool prefix_caching = true;
  Router router = Router::SharedQueue;
  // Speculative decoding (policy mixed; speculative.hpp): a decoding sequence's step feeds its
  // last token and up to k drafts (fewer near its last output token or when the token budget
  // runs out), with logits at each, and emits the accepted drafts and one more token together.
  SpeculativeDecoding speculative;
  Preemption preemption = Preemption::Recompute;
  long long swap_blocks = 0;   // swap: blocks a server's host holds (vLLM's swap_space)
  // The serving process's own work for each step, beside the device's (any policy): scheduling,
  // building the step's input arrays and copying them to the device, dispatching the compiled
  // step and reading the sampled tokens back (per step), and each sequence's bookkeeping,
  // detokenisation and streaming of its token (per sequence in the step). Without
  // async_scheduling it runs between device steps: a step lasts device + host.
  double host_overhead_per_step_s = 0;
  double host_overhead_per_sequence_s = 0;
  // vLLM's --async-scheduling (policy mixed; vllm/v1/engine/core.py, step_with_batch_queue with a
  // batch queue of two): the engine schedules step k + 1 while step k runs on the device, so the
  // host's work overlaps the device's (a step lasts max(device, host)), and step k + 1's batch is
  // decided when step k starts: a request that arrives after that joins step k + 2 at the earliest.
  bool async_scheduling = false;
  double host_overhead_s(int sequences) const {
    return host_overhead_per_step_s + host_overhead_per_sequence_s * sequences;
  }
};

// A prompt's chunks as prefilled: each padded length, in order.
std::vector<int> prefill_chunks(int prompt_tokens, const std::vector<int>& buckets);
// The prompt as cached after its prefill: the sum of its padded chunks.
int padded_prompt_tokens(int prompt_tokens, const std::vector<int>& buckets);

// Durations of the steps a server runs, in seconds.
struct StepCosts {
  // `batch` prompts' chunks of `chunk` tokens after `offset` cached ones, on a prefill server
  // (disaggregated) or on the one kind of server (colocated).
  std::function<double(int batch, int chunk, int offset)> prefill_s;
  // One decode step of `batch` sequences whose contexts sum to `context_tokens`.
  std::function<double(int batch, double context_tokens)> decode_s;
  // Moving the KV cache of `tokens` cached tokens from a prefill to a generate server.
  std::function<double(int tokens)> kv_transfer_s;
  // A mixed step of this shape (policy mixed).
  std::function<double(const StepShape& shape)> mixed_s;
  // Copying `tokens` cached tokens between a server's HBM and its host, one way (swap).
  std::function<double(long long tokens)> kv_swap_s;
  // Speculative decoding by a draft model: its passes after a step of `step`'s shape, which
  // leaves `sequences` sequences decoding with `context_tokens` cached tokens in all.
  std::function<double(const StepShape& step, int sequences, double context_tokens)> draft_s;
  // Servers whose chips differ (perturbations): the (generate, or colocated) server s prices its
  // prefill, decode and mixed steps and its draft passes by per_server[s]; KV transfers and
  // swaps by these. Empty: every server by these.
  std::vector<StepCosts> per_server;
};

struct RequestRecord {
  Request request;
  int padded_prompt_tokens = 0;
  int server = -1;                // the server that prefilled it
  int generate_server = -1;       // the server that decoded it
  double prefill_start_s = -1;    // its first prefill step starts
  double first_token_s = -1;      // its prefill ends: the first token exists
  double decode_start_s = -1;     // it joins a decode batch (after the KV transfer when disaggregated)
  double end_s = -1;              // its last token exists
  // Derived, as reported (definitions in docs/scenario-schema.md).
  double queueing_s() const { return prefill_start_s - request.arrival_s; }
  double ttft_s() const { return first_token_s - request.arrival_s; }
  double latency_s() const { return end_s - request.arrival_s; }
  double per_token_latency_s() const { return latency_s() / request.output_tokens; }
  // Time per output token after the first; 0 for one-token responses.
  double tpot_s() const {
    return request.output_tokens > 1 ? (end_s - first_token_s) / (request.output_tokens - 1) : 0.0;
  }
};

enum class StepKind { Prefill, Decode, KvTransfer, Mixed };

struct StepRecord {
  StepKind kind = StepKind::Decode;
  bool on_prefill_server = false;   // disaggregated: which pool `server` indexes
  int server = 0;
  double start_s = 0;
  double end_s = 0;
  int batch = 0;                    // sequences (decode, mixed), prompts (prefill), 1 (transfer)
  double tokens = 0;                // tokens produced (decode), prefilled incl. padding, moved, or through the weights (mixed)
  long long kv_blocks_used = -1;    // mixed: the server's KV cache blocks held or pinned during the step (not evictable ones)
  // Mixed: of the step's duration, a draft model's passes and swap preemption's copies.
  double draft_s = 0, swap_s = 0;
  // Mixed: every sequence in the step decodes (no prompt's chunk, no recompute), so the step is
  // a decode step as the other policies run them (summary.json's decode_step_time_s).
  bool decode_only = false;
};

// Receives a serving run's records as they become final, so a run of millions of requests
// holds only what is in flight (serve_command streams them to their files; docs/modelling.md,
// "Serving at scale"). Called in this order within one run:
// - step: when a step starts (its end is known then), per server in start order;
// - request: when a request and every request before it are done, in request order (records
//   done early wait for the ones before them: a run holds at most those);
// - token_gap: for every chunk of output after a request's first token, the gap to the chunk
//   before (vLLM's ITL samples, one a streamed chunk), as the chunks appear. A chunk is one
//   token, or under speculative decoding the tokens one step emits.
class ServingSink {
 public:
  virtual ~ServingSink() = default;
  virtual void step(const StepRecord&) {}
  virtual void request(const RequestRecord&) {}
  virtual void token_gap(double) {}
};

// Passes every record to each of several sinks (null ones skipped), in the order given.
class ServingSinks : public ServingSink {
 public:
  explicit ServingSinks(std::vector<ServingSink*> sinks) : sinks_(std::move(sinks)) {
    std::erase(sinks_, nullptr);
  }
  void step(const StepRecord& s) override {
    for (auto* sink : sinks_) sink->step(s);
  }
  void request(const RequestRecord& r) override {
    for (auto* sink : sinks_) sink->request(r);
  }
  void token_gap(double gap_s) override {
    for (auto* sink : sinks_) sink->token_gap(gap_s);
  }

 private:
  std::vector<ServingSink*> sinks_;
};

// What a run adds up, beside the streamed records.
struct ServingTotals {
  size_t request_count = 0;
  double first_arrival_s = 0;
  double end_s = 0;                      // the last request's last token
  long long decode_steps = 0;
  long long prefill_steps = 0;
  double decode_busy_s = 0;              // sum of decode step durations, all servers
  double prefill_busy_s = 0;
  size_t peak_records_held = 0;          // request records in memory at once (arrived, not yet passed on)
  // Mixed: preemptions (each returns a running sequence to the queue), and each server's KV
  // cache blocks at their peak and in the time mean over the run (all servers).
  long long mixed_steps = 0;
  double mixed_busy_s = 0;
  long long preemptions = 0;
  long long kv_blocks = 0;               // one server's
  long long peak_kv_blocks_used = 0;     // the most any server held at once
  double mean_kv_blocks_used = 0;        // per server, over first arrival to the end
  // Prefix caching: prompt tokens looked up at admission (every request's, with a prefix or
  // not, readmissions by recompute too) and those found cached (vLLM's prefix cache hit rate
  // is hits / queries).
  double prefix_query_tokens = 0, prefix_hit_tokens = 0;
  // Speculative decoding, as vLLM counts it (spec_decode_num_drafts, _num_draft_tokens,
  // _num_accepted_tokens): sequence-steps that verified drafts, drafts verified, drafts accepted.
  long long spec_drafts = 0, spec_draft_tokens = 0, spec_accepted_tokens = 0;
  double spec_draft_s = 0;   // the draft model's passes, all steps and servers
  // Swap preemption: preemptions that swapped out (the rest recomputed), and the seconds the
  // copies out and back in added to steps.
  long long swap_outs = 0;
  double swap_s = 0;
};

// Runs the requests (sorted by arrival) through the servers, passing records to `sink`. Throws
// std::invalid_argument for a configuration that cannot serve (no slots, no servers, no buckets).
ServingTotals simulate_serving(const std::vector<Request>& requests, const ServingConfig& config,
                               const StepCosts& costs, ServingSink& sink);

// Every record of a run, kept (for small runs and tests).
struct ServingResult : ServingTotals {
  std::vector<RequestRecord> requests;   // in request order
  std::vector<StepRecord> steps;         // in start order per server
  std::vector<double> inter_token_s;     // one per output chunk after a request's first token
};
ServingResult simulate_serving(const std::vector<Request>& requests, const ServingConfig& config,
                               const StepCosts& costs);

}  // namespace podsim
