#include "workloads/serving.hpp"

#include "workloads/kv_cache.hpp"

#include <algorithm>
#include <deque>
#include <limits>
#include <queue>
#include <stdexcept>

namespace podsim {

const NamedValues<BatchingPolicy>& batching_policy_names() {
  static const NamedValues<BatchingPolicy> names = {{"static", BatchingPolicy::Static},
                                                    {"interleaved", BatchingPolicy::Interleaved},
                                                    {"continuous", BatchingPolicy::Continuous},
                                                    {"disaggregated", BatchingPolicy::Disaggregated},
                                                    {"mixed", BatchingPolicy::Mixed},
                                                    {"jetstream", BatchingPolicy::JetStream}};
  return names;
}

const char* to_string(BatchingPolicy policy) { return name_of(batching_policy_names(), policy); }

std::vector<int> prefill_chunks(int prompt_tokens, const std::vector<int>& buckets) {
  const int largest = buckets.back();
  std::vector<int> chunks;
  int left = prompt_tokens;
  while (left > largest) {
    chunks.push_back(largest);
    left -= largest;
  }
  chunks.push_back(*std::lower_bound(buckets.begin(), buckets.end(), left));
  return chunks;
}

int padded_prompt_tokens(int prompt_tokens, const std::vector<int>& buckets) {
  // The sum of prefill_chunks without listing them: the loader asks this of every request, and
  // a 2^30-token prompt over a bucket of 1 would list 2^30 chunks (4 GB) each time.
  const int largest = buckets.back();
  const int full = prompt_tokens > largest ? (prompt_tokens - 1) / largest : 0;   // chunks of `largest`
  const int left = prompt_tokens - full * largest;                                  // in (0, largest]
  return full * largest + *std::lower_bound(buckets.begin(), buckets.end(), left);
}

const NamedValues<Preemption>& preemption_names() {
  static const NamedValues<Preemption> names = {{"recompute", Preemption::Recompute}, {"swap", Preemption::Swap}};
  return names;
}

const char* to_string(Preemption preemption) { return name_of(preemption_names(), preemption); }

const NamedValues<Router>& router_names() {
  static const NamedValues<Router> names = {{"shared_queue", Router::SharedQueue},
                                            {"round_robin", Router::RoundRobin},
                                            {"least_outstanding", Router::LeastOutstanding},
                                            {"kv_aware", Router::KvAware}};
  return names;
}

const char* to_string(Router router) { return name_of(router_names(), router); }

namespace {

enum class EventKind { StepDone, TransferDone };

struct Event {
  double t;
  long long seq;   // ties break in the order events were made: deterministic
  EventKind kind;
  int index;       // request slot (TransferDone) or server (StepDone)
  int pool;        // 0: colocated or generate servers, 1: prefill servers; TransferDone: the generate server
  bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
};

struct Server {
  bool busy = false;
  bool last_was_prefill = false;
  std::vector<int> active;        // decoding (slots of live_)
  std::vector<int> prefilling;    // admitted, chunks left
  std::vector<int> static_batch;  // static policy: the batch until all of it is done
  StepKind step = StepKind::Decode;
  std::vector<int> members;       // of the running step
  int reserved = 0;               // slots promised to KV transfers under way
  double ingress_free_s = 0;      // its DCN ingress is busy until then
  // Mixed: the running sequences in admission order, its paged KV cache, and the step's
  // (sequence, new tokens).
  std::vector<int> running;
  std::deque<int> queue;          // mixed under a router: the requests routed here, waiting
  PagedKvCache cache{0, 1};
  std::vector<std::pair<int, int>> scheduled;
  long long host_blocks = 0;      // swap: blocks its swapped sequences hold in host memory
  long long swap_tokens = 0;      // swap: tokens the step being scheduled copies out or in
  double step_start_s = -1;       // mixed: its latest step's start and end (async scheduling)
  double step_end_s = -1;
};

// A request between its arrival and the moment its record is passed on.
struct Live {
  RequestRecord record;
  int full_chunks = 0;            // chunks of the largest bucket before the last one
  int last_chunk = 0;             // the last chunk, padded to its bucket
  int chunks_done = 0;
  int generated = 0;
  double last_token_s = 0;        // when its latest token appeared
  int offset = 0;                 // prompt tokens cached so far (padded)
  bool done = false;              // its last token exists
  bool passed_on = false;         // its record went to the sink
  bool in_static_batch = false;   // a static batch still counts it (its context sizes the decode step)
  int largest = 0;                // the largest bucket
  // Mixed: tokens whose KV is cached (the prompt, then each output once a step has fed it),
  // and the blocks holding them. Tokens still to compute before the next output:
  // prompt + generated - computed (after a preemption, the prompt and every output again).
  long long computed = 0;
  long long blocks = 0;            // its own (the rest of its tokens sit in its prefix's cached blocks)
  long long hit_tokens = 0;        // of `computed`: its prefix's cached blocks it uses
  bool pinned = false;             // it uses its prefix's cached blocks (prefix caching)
  long long verifications = 0;     // speculative decoding: its steps that verified drafts so far
  bool swapped = false;            // swap preemption: its `computed` tokens wait in host memory
  long long pending() const { return record.request.prompt_tokens + generated - computed; }
  int chunks() const { return full_chunks + 1; }
  int chunk(int i) const { return i < full_chunks ? largest : last_chunk; }
};

class Simulation {
 public:
  Simulation(const std::vector<Request>& requests, const ServingConfig& config, const StepCosts& costs,
             ServingSink& sink)
      : requests_(requests), config_(config), costs_(costs), sink_(sink) {
    const bool split = config.policy == BatchingPolicy::Disaggregated;
    servers_.resize(config.servers);
    if (config.policy == BatchingPolicy::Mixed)
      for (auto& server : servers_) server.cache = PagedKvCache(config.kv_blocks, config.block_size);
    prefill_servers_.resize(split ? config.prefill_servers : 0);
    totals_.request_count = requests.size();
    totals_.first_arrival_s = requests.empty() ? 0.0 : requests.front().arrival_s;
  }

  ServingTotals run() {
    // Arrivals are read from the sorted requests as time reaches them, not queued as events,
    // so the event queue holds only steps and transfers under way. An arrival at the time of a
    // step's end is seen first (as when arrivals were the first events queued).
    // Under a concurrency limit, a request waits for its arrival and for a request to end.
    const size_t n = requests_.size();
    while (next_arrival_ < n || !events_.empty()) {
      const double send = next_send_s();
      if (send < kNever && (events_.empty() || send <= events_.top().t)) {
        // Requests arriving together are seen together.
        now_ = send;
        while (next_arrival_ < n && can_send() && requests_[next_arrival_].arrival_s <= now_) arrive(requests_[next_arrival_++]);
        wake_all();
        continue;
      }
      if (events_.empty()) throw std::logic_error("serving: requests wait with nothing under way");
      const Event e = events_.top();
      events_.pop();
      now_ = e.t;
      switch (e.kind) {
        case EventKind::StepDone: finish_step(e.pool == 1 ? prefill_servers_ : servers_, e.index, e.pool == 1); break;
        case EventKind::TransferDone: {
          Server& g = servers_[e.pool];
          --g.reserved;
          g.active.push_back(e.index);
          live_[e.index].record.decode_start_s = now_;
          wake(servers_, e.pool, false);
          break;
        }
      }
    }
    if (config_.policy == BatchingPolicy::Mixed) mixed_totals();
    return totals_;
  }

 private:
  bool disaggregated() const { return config_.policy == BatchingPolicy::Disaggregated; }

  void push(double t, EventKind kind, int index, int pool) { events_.push({t, seq_++, kind, index, pool}); }

  static constexpr double kNever = std::numeric_limits<double>::infinity();
  bool can_send() const { return config_.max_concurrency <= 0 || in_flight_ < config_.max_concurrency; }
  // When the next request is sent: at its arrival, or now if it waited for the limit.
  double next_send_s() const {
    if (next_arrival_ >= requests_.size() || !can_send()) return kNever;
    return std::max(requests_[next_arrival_].arrival_s, now_);
  }

  void arrive(const Request& request) {
    int slot;
    if (free_.empty()) {
      slot = static_cast<int>(live_.size());
      live_.emplace_back();
    } else {
      slot = free_.back();
      free_.pop_back();
    }
    Live& l = live_[slot];
    l = Live{};
    l.record.request = request;
    l.record.request.arrival_s = now_;   // sent now: its arrival, or later under a concurrency limit
    ++in_flight_;
    // Mixed steps take prompts as they are, in chunks of whatever the token budget leaves.
    l.record.padded_prompt_tokens = config_.policy == BatchingPolicy::Mixed
                                        ? request.prompt_tokens
                                        : padded_prompt_tokens(request.prompt_tokens, config_.buckets);
    // prefill_chunks' arithmetic without its vector: (p - 1) / L chunks of the largest bucket L,
    // then the rest padded up to a bucket.
    l.largest = config_.buckets.back();
    l.full_chunks = (request.prompt_tokens - 1) / l.largest;
    l.last_chunk = *std::lower_bound(config_.buckets.begin(), config_.buckets.end(),
                                     request.prompt_tokens - l.full_chunks * l.largest);
    order_.push_back(slot);
    if (routed()) servers_[route(l)].queue.push_back(slot);
    else waiting_.push_back(slot);
    totals_.peak_records_held = std::max(totals_.peak_records_held, live_.size() - free_.size());
  }

  // Marks a request done and passes on every record now complete in request order.
  void finish_request(int slot) {
    Live& l = live_[slot];
    l.done = true;
    l.record.end_s = now_;
    --in_flight_;
    totals_.end_s = std::max(totals_.end_s, now_);
    while (!order_.empty() && live_[order_.front()].done) {
      const int front = order_.front();
      order_.pop_front();
      sink_.request(live_[front].record);
      live_[front].passed_on = true;
      release(front);
    }
  }

  // A slot is reused once its record is passed on and no static batch counts it any more.
  void release(int slot) {
    if (live_[slot].passed_on && !live_[slot].in_static_batch) free_.push_back(slot);
  }

  void wake_all() {
    for (size_t s = 0; s < prefill_servers_.size(); ++s) wake(prefill_servers_, static_cast<int>(s), true);
    for (size_t s = 0; s < servers_.size(); ++s) wake(servers_, static_cast<int>(s), false);
  }

  // Starts the server's next step if it is idle and has work.
  void wake(std::vector<Server>& pool, int s, bool prefill_pool) {
    Server& server = pool[s];
    if (server.busy) return;
    if (config_.policy == BatchingPolicy::Mixed) {
      start_mixed(server, s);
      return;
    }
    if (prefill_pool) {
      admit_bucket(server, config_.prefill_batch);
      if (!server.prefilling.empty()) start_prefill(server, s, true);
      return;
    }
    if (disaggregated()) {
      if (!server.active.empty()) start_decode(server, s);
      return;
    }
    if (config_.policy == BatchingPolicy::Static) {
      if (server.static_batch.empty()) {
        admit(server, config_.slots, config_.slots);
        server.static_batch = server.prefilling;
        for (int r : server.static_batch) live_[r].in_static_batch = true;
      }
      if (!server.prefilling.empty()) start_prefill(server, s, false);
      else if (!server.static_batch.empty()) start_decode(server, s);
      return;
    }
    if (server.last_was_prefill && !server.active.empty()) {
      start_decode(server, s);
      return;
    }
    const bool alone = config_.policy == BatchingPolicy::Interleaved || config_.policy == BatchingPolicy::JetStream;
    const int per_step = alone ? 1 : config_.prefill_batch;
    const int free = config_.slots - static_cast<int>(server.active.size());
    admit_bucket(server, std::min(per_step, free));
    if (!server.prefilling.empty()) start_prefill(server, s, false);
    else if (!server.active.empty()) start_decode(server, s);
  }

  // Between prefills, takes the oldest waiting prompt and up to `count - 1` more that pad to
  // the same first chunk (bucketed batching: a batch pads to its longest prompt, so mixing
  // buckets would waste compute on padding), oldest first.
  void admit_bucket(Server& server, int count) {
    if (!server.prefilling.empty() || waiting_.empty() || count < 1) return;
    const int bucket = live_[waiting_.front()].chunk(0);
    for (auto it = waiting_.begin(); it != waiting_.end() && static_cast<int>(server.prefilling.size()) < count;) {
      if (live_[*it].chunk(0) == bucket) {
        server.prefilling.push_back(*it);
        it = waiting_.erase(it);
      } else {
        ++it;
      }
    }
  }

  // Moves waiting requests into prefill, up to `per_step` being prefilled and `limit` in all.
  void admit(Server& server, int per_step, int limit) {
    while (!waiting_.empty() && static_cast<int>(server.prefilling.size()) < std::min(per_step, limit)) {
      server.prefilling.push_back(waiting_.front());
      waiting_.pop_front();
    }
  }

  void start_prefill(Server& server, int s, bool prefill_pool) {
    // One chunk of every prompt being prefilled, padded to the longest chunk and offset.
    int chunk = 0, offset = 0;
    for (int r : server.prefilling) {
      Live& l = live_[r];
      chunk = std::max(chunk, l.chunk(l.chunks_done));
      offset = std::max(offset, l.offset);
      if (l.chunks_done == 0) {
        l.record.prefill_start_s = now_;
        l.record.server = s;
      }
    }
    const int batch = static_cast<int>(server.prefilling.size());
    // The host's work between device steps (ServingConfig::host_overhead_s) adds to the step.
    const double d = costs_at(s, prefill_pool).prefill_s(batch, chunk, offset) + config_.host_overhead_s(batch);
    server.members = server.prefilling;
    begin(server, s, prefill_pool, StepKind::Prefill, d, batch, static_cast<double>(batch) * chunk);
    totals_.prefill_busy_s += d;
    ++totals_.prefill_steps;
  }

  void start_decode(Server& server, int s) {
    // Static batching keeps finished sequences in the batch until all are done.
    const auto& batch = config_.policy == BatchingPolicy::Static ? server.static_batch : server.active;
    double context = 0;
    for (int r : batch) context += live_[r].record.request.prompt_tokens + live_[r].generated;
    const double d = costs_at(s, false).decode_s(static_cast<int>(batch.size()), context) +
                     config_.host_overhead_s(static_cast<int>(batch.size()));
    server.members = server.active;
    begin(server, s, false, StepKind::Decode, d, static_cast<int>(batch.size()),
          static_cast<double>(server.active.size()));
    totals_.decode_busy_s += d;
    ++totals_.decode_steps;
  }

  void begin(Server& server, int s, bool prefill_pool, StepKind kind, double d, int batch, double tokens) {
    server.busy = true;
    server.step = kind;
    sink_.step({kind, prefill_pool, s, now_, now_ + d, batch, tokens});
    push(now_ + d, EventKind::StepDone, s, prefill_pool ? 1 : 0);
  }

  void finish_step(std::vector<Server>& pool, int s, bool prefill_pool) {
    Server& server = pool[s];
    server.busy = false;
    if (server.step == StepKind::Mixed) {
      finish_mixed(server);
      wake(pool, s, prefill_pool);
      if (!waiting_.empty()) wake_all();
      return;
    }
    server.last_was_prefill = server.step == StepKind::Prefill;
    if (server.step == StepKind::Prefill) {
      std::vector<int> still;
      for (int r : server.members) {
        Live& l = live_[r];
        l.offset += l.chunk(l.chunks_done);
        if (++l.chunks_done < l.chunks()) {
          still.push_back(r);
          continue;
        }
        l.record.first_token_s = now_;   // the prefill's logits give the first token
        l.generated = 1;
        l.last_token_s = now_;
        if (l.record.request.output_tokens <= 1) {
          finish_request(r);
        } else if (disaggregated()) {
          handoff_.push_back(r);
        } else {
          l.record.generate_server = s;
          l.record.decode_start_s = now_;
          server.active.push_back(r);
        }
      }
      server.prefilling = still;
    } else {
      for (int r : server.members) {
        Live& l = live_[r];
        sink_.token_gap(now_ - l.last_token_s);
        l.last_token_s = now_;
        if (++l.generated >= l.record.request.output_tokens) finish_request(r);
      }
      // Sequences that joined during the step (KV transfers) stay; finished ones leave.
      std::erase_if(server.active, [&](int r) { return live_[r].done; });
    }
    if (server.active.empty() && server.prefilling.empty()) {
      for (int r : server.static_batch) {
        live_[r].in_static_batch = false;
        release(r);
      }
      server.static_batch.clear();
    }
    if (disaggregated()) start_transfers();
    wake(pool, s, prefill_pool);
    if (!waiting_.empty() || disaggregated()) wake_all();
  }

  // --- mixed (ServingConfig::max_num_batched_tokens; vLLM v1's Scheduler.schedule) ---

  bool routed() const { return config_.router != Router::SharedQueue; }
  std::deque<int>& queue_of(Server& server) { return routed() ? server.queue : waiting_; }

  // The server a routed request goes to (Router).
  int route(const Live& l) {
    const int n = static_cast<int>(servers_.size());
    if (config_.router == Router::RoundRobin) return static_cast<int>(routed_++ % static_cast<uint64_t>(n));
    const Request& q = l.record.request;
    int best = 0;
    long long best_hit = -1;
    size_t best_load = 0;
    for (int s = 0; s < n; ++s) {
      const Server& server = servers_[s];
      const size_t load = server.running.size() + server.queue.size();
      const long long hit =
          config_.router == Router::KvAware && q.prefix_id >= 0 ? server.cache.cached(q.prefix_id, cacheable_blocks(q)) : 0;
      if (hit > best_hit || (hit == best_hit && load < best_load)) best = s, best_hit = hit, best_load = load;
    }
    return best;
  }

  // Gives `r` the blocks for `n` more tokens, preempting the latest admitted running sequences
  // while the cache is short; false when `r` itself was preempted.
  bool grow_or_preempt(Server& server, int r, long long n) {
    Live& l = live_[r];
    while (!server.cache.grow(l.blocks, l.computed + n - l.hit_tokens, now_)) {
      const int last = server.running.back();
      server.running.pop_back();
      Live& p = live_[last];
      drop_cache(server, p);
      swap_out_or_drop(server, p);
      queue_of(server).push_front(last);
      ++totals_.preemptions;
      if (last == r) return false;
    }
    return true;
  }

  // Preemption: the sequence's cached tokens go to host memory where swap has room, else it
  // is recomputed from its first token when readmitted.
  void swap_out_or_drop(Server& server, Live& p) {
    const long long blocks = server.cache.blocks_for(p.computed);
    if (config_.preemption == Preemption::Swap && p.computed > 0 && server.host_blocks + blocks <= config_.swap_blocks) {
      p.swapped = true;
      server.host_blocks += blocks;
      server.swap_tokens += p.computed;
      ++totals_.swap_outs;
      return;
    }
    p.computed = 0;
  }

  // Waiting prompts' chunks, in arrival order, while the budget and max_num_seqs allow, of
  // requests sent by `cutoff_s` (strictly before it if `strict`).
  void admit_waiting(Server& server, long long& budget, double cutoff_s, bool strict) {
    std::deque<int>& waiting = queue_of(server);
    while (!waiting.empty() && budget > 0 && static_cast<int>(server.running.size()) < config_.max_num_seqs) {
      const int r = waiting.front();
      Live& l = live_[r];
      const double sent = l.record.request.arrival_s;
      if (strict ? sent >= cutoff_s : sent > cutoff_s) break;
      // vLLM looks every new or recomputed request up in the prefix cache, prefix or not.
      const bool lookup = config_.prefix_caching && l.computed == 0;
      const long long hit = use_prefix(server, l);
      const long long n = std::min(l.pending(), budget);
      if (!server.cache.grow(l.blocks, l.computed + n - l.hit_tokens, now_)) {
        drop_cache(server, l);
        if (!l.swapped) l.computed = 0;
        break;
      }
      if (l.swapped) {   // its cache comes back from the host in this step
        server.host_blocks -= server.cache.blocks_for(l.computed);
        server.swap_tokens += l.computed;
        l.swapped = false;
      }
      totals_.prefix_hit_tokens += static_cast<double>(hit);
      totals_.prefix_query_tokens += lookup ? l.record.request.prompt_tokens : 0;
      waiting.pop_front();
      server.running.push_back(r);
      server.scheduled.emplace_back(r, static_cast<int>(n));
      budget -= n;
    }
  }

  void start_mixed(Server& server, int s) {
    long long budget = config_.max_num_batched_tokens;
    server.scheduled.clear();
    server.swap_tokens = 0;
    const long long preemptions = totals_.preemptions;
    for (size_t i = 0; i < server.running.size() && budget > 0; ++i) {
      const int r = server.running[i];
      const long long n = std::min(live_[r].pending() + drafts(live_[r]), budget);
      if (!grow_or_preempt(server, r, n)) break;
      server.scheduled.emplace_back(r, static_cast<int>(n));
      budget -= n;
    }
    // Waiting prompts join only in a step that preempted nothing. Under async scheduling a step
    // that follows another at once was scheduled when that one started: only requests sent
    // before then join it (a request sent at that very moment was sent after the engine read its
    // queue: it answers a token the step before produced). An idle server schedules at once.
    const bool ahead = config_.async_scheduling && server.step_end_s == now_ && server.step_start_s >= 0;
    if (totals_.preemptions == preemptions) {
      admit_waiting(server, budget, ahead ? server.step_start_s : now_, ahead);
      if (ahead && server.scheduled.empty()) admit_waiting(server, budget, now_, false);
    }
    if (server.scheduled.empty()) return;
    StepShape shape;
    for (const auto& [r, n] : server.scheduled) {
      Live& l = live_[r];
      // Each row attends over the cached context and the chunk (prefill_shape's full square;
      // a decode token's context is its sequence so far).
      shape.tokens += n;
      shape.attended_tokens += static_cast<double>(n) * static_cast<double>(l.computed + n);
      shape.kv_tokens += static_cast<double>(l.computed + n);
      if (l.record.prefill_start_s < 0) {
        l.record.prefill_start_s = now_;
        l.record.server = s;
        l.record.generate_server = s;
      }
    }
    shape.logit_rows = 0;
    for (const auto& [r, n] : server.scheduled) shape.logit_rows += verifying(live_[r], n) ? n : 1;
    shape.sequences = static_cast<double>(server.scheduled.size());
    const double swap = server.swap_tokens > 0 ? costs_.kv_swap_s(server.swap_tokens) : 0.0;
    totals_.swap_s += swap;
    const double draft = draft_passes_s(shape, server, s);
    totals_.spec_draft_s += draft;
    const double device = costs_at(s, false).mixed_s(shape) + swap + draft;
    const double host = config_.host_overhead_s(static_cast<int>(server.scheduled.size()));
    const double d = config_.async_scheduling ? std::max(device, host) : device + host;
    server.busy = true;
    server.step_start_s = now_;
    server.step_end_s = now_ + d;
    server.step = StepKind::Mixed;
    StepRecord record{StepKind::Mixed, false, s, now_, now_ + d, static_cast<int>(server.scheduled.size()), shape.tokens};
    record.kv_blocks_used = server.cache.in_use();   // held or pinned, as the summary counts them
    record.draft_s = draft;
    record.swap_s = swap;
    record.decode_only = std::all_of(server.scheduled.begin(), server.scheduled.end(),
                                     [&](const auto& scheduled) { return decoding(live_[scheduled.first]); });
    sink_.step(record);
    push(now_ + d, EventKind::StepDone, s, 0);
    totals_.mixed_busy_s += d;
    ++totals_.mixed_steps;
  }

  // Speculative decoding: a decoding sequence (its next token to feed is a sampled one, not a
  // prompt's) proposes drafts, none past its last output token; a step of its `n` tokens
  // verifies n - 1 of them (then each of the n rows computes logits).
  bool decoding(const Live& l) const { return l.generated > 0 && l.pending() == 1; }
  long long drafts(const Live& l) const {
    if (!config_.speculative.enabled() || !decoding(l)) return 0;
    return std::min<long long>(config_.speculative.num_tokens, l.record.request.output_tokens - l.generated - 1);
  }
  bool verifying(const Live& l, long long n) const { return config_.speculative.enabled() && decoding(l) && n > 1; }

  // A draft model's passes after the step (SpeculativeDecoding::method): the sequences whose
  // step completes what they had to compute and that have tokens left after the one it emits
  // decode next, so the drafter proposes for them, over their caches as the step leaves them.
  double draft_passes_s(const StepShape& shape, const Server& server, int s) const {
    if (!config_.speculative.enabled() || config_.speculative.method != DraftMethod::DraftModel) return 0.0;
    int sequences = 0;
    double context = 0;
    for (const auto& [r, n] : server.scheduled) {
      const Live& l = live_[r];
      if (n < l.pending() || l.generated + 1 >= l.record.request.output_tokens) continue;
      ++sequences;
      context += static_cast<double>(l.computed + n);
    }
    return sequences > 0 ? costs_at(s, false).draft_s(shape, sequences, context) : 0.0;
  }

  // The full blocks of a request's prefix a cache can hold for it: all but its last prompt
  // token, which a sequence always computes (it samples from it).
  long long cacheable_blocks(const Request& q) const {
    return std::min<long long>(q.prefix_tokens, q.prompt_tokens - 1) / config_.block_size;
  }

  // Prefix caching: a sequence joining starts with its prefix's cached full blocks computed
  // and pins them; returns the tokens found.
  long long use_prefix(Server& server, Live& l) {
    const Request& q = l.record.request;
    if (!config_.prefix_caching || q.prefix_id < 0 || l.computed > 0) return 0;
    server.cache.pin(q.prefix_id, now_);
    l.pinned = true;
    l.hit_tokens = server.cache.cached(q.prefix_id, cacheable_blocks(q)) * config_.block_size;
    l.computed = l.hit_tokens;
    return l.hit_tokens;
  }
  // A sequence leaves the cache (finished or preempted): its own blocks freed, its prefix unpinned.
  void drop_cache(Server& server, Live& l) {
    server.cache.release(l.blocks, now_);
    if (l.pinned) server.cache.unpin(l.record.request.prefix_id, now_);
    l.pinned = false;
    l.hit_tokens = 0;
  }

  // The step's tokens are cached; a sequence whose cache now holds everything it has samples
  // its next token (its first ends its prefill). The prefix blocks it computed join the cache.
  void finish_mixed(Server& server) {
    for (const auto& [r, n] : server.scheduled) {
      Live& l = live_[r];
      // The tokens the step emits: one, or under speculative decoding the drafts accepted
      // and one more; the rejected drafts' KV is discarded.
      int emitted = 1;
      if (verifying(l, n)) {
        const int accepted = accepted_drafts(config_.speculative, l.record.request.id, l.verifications++, n - 1);
        ++totals_.spec_drafts;
        totals_.spec_draft_tokens += n - 1;
        totals_.spec_accepted_tokens += accepted;
        emitted += accepted;
        l.computed += 1 + accepted;
      } else {
        l.computed += n;
      }
      if (l.pinned) {
        const Request& q = l.record.request;
        const long long full = std::min(cacheable_blocks(q), l.computed / config_.block_size);
        l.hit_tokens += server.cache.extend(q.prefix_id, full, l.blocks) * config_.block_size;
      }
      if (l.pending() > 0) continue;   // a chunk of a longer prompt
      l.generated += emitted;
      if (l.generated == 1) {
        l.record.first_token_s = now_;
        l.record.decode_start_s = now_;
      } else {
        sink_.token_gap(now_ - l.last_token_s);
      }
      l.last_token_s = now_;
      if (l.generated < l.record.request.output_tokens) continue;
      drop_cache(server, l);
      std::erase(server.running, r);
      finish_request(r);
    }
    server.scheduled.clear();
  }

  void mixed_totals() {
    totals_.kv_blocks = config_.kv_blocks;
    double block_seconds = 0;
    for (const auto& server : servers_) {
      totals_.peak_kv_blocks_used = std::max(totals_.peak_kv_blocks_used, server.cache.peak());
      block_seconds += server.cache.block_seconds(totals_.end_s);
    }
    const double span = totals_.end_s - totals_.first_arrival_s;
    totals_.mean_kv_blocks_used = span > 0 ? block_seconds / span / static_cast<double>(servers_.size()) : 0.0;
  }

  // Disaggregated: each prefilled request's KV cache goes to the generate server with the most
  // free slots (lowest index on ties) once one has a slot; transfers into one server queue on
  // its DCN ingress.
  void start_transfers() {
    while (!handoff_.empty()) {
      int best = -1, best_free = 0;
      for (size_t g = 0; g < servers_.size(); ++g) {
        const int free = config_.slots - static_cast<int>(servers_[g].active.size()) - servers_[g].reserved;
        if (free > best_free) best = static_cast<int>(g), best_free = free;
      }
      if (best < 0) return;
      const int r = handoff_.front();
      handoff_.pop_front();
      Server& g = servers_[best];
      ++g.reserved;
      auto& record = live_[r].record;
      record.generate_server = best;
      const double start = std::max(now_, g.ingress_free_s);
      const double end = start + costs_.kv_transfer_s(record.padded_prompt_tokens);
      g.ingress_free_s = end;
      sink_.step({StepKind::KvTransfer, false, best, start, end, 1, static_cast<double>(record.padded_prompt_tokens)});
      push(end, EventKind::TransferDone, r, best);
    }
  }

  const std::vector<Request>& requests_;
  const ServingConfig& config_;
  const StepCosts& costs_;
  // Server s's own costs where its chips differ; a disaggregated prefill server's are the shared ones.
  const StepCosts& costs_at(int s, bool prefill_pool) const {
    return prefill_pool || costs_.per_server.empty() ? costs_ : costs_.per_server.at(static_cast<size_t>(s));
  }
  ServingSink& sink_;
  size_t next_arrival_ = 0;
  int in_flight_ = 0;             // sent, last token not yet out
  uint64_t routed_ = 0;           // requests routed round-robin so far
  std::vector<Live> live_;        // slots; free_ lists the reusable ones
  std::vector<int> free_;
  std::deque<int> order_;         // arrived slots in request order, until passed on
  std::vector<Server> servers_;
  std::vector<Server> prefill_servers_;
  std::deque<int> waiting_;
  std::deque<int> handoff_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  long long seq_ = 0;
  double now_ = 0;
  ServingTotals totals_;
};

// Keeps every record (ServingResult).
class CollectingSink : public ServingSink {
 public:
  explicit CollectingSink(ServingResult& result) : result_(result) {}
  void step(const StepRecord& s) override { result_.steps.push_back(s); }
  void request(const RequestRecord& r) override { result_.requests.push_back(r); }
  void token_gap(double gap_s) override { result_.inter_token_s.push_back(gap_s); }

 private:
  ServingResult& result_;
};

}  // namespace

ServingTotals simulate_serving(const std::vector<Request>& requests, const ServingConfig& config,
                               const StepCosts& costs, ServingSink& sink) {
  if (config.servers < 1) throw std::invalid_argument("at least one server is needed");
  if (config.policy == BatchingPolicy::Disaggregated && config.prefill_servers < 1)
    throw std::invalid_argument("disaggregated serving needs at least one prefill server");
  if (config.slots < 1) throw std::invalid_argument("no sequence fits beside the weights");
  if (config.prefill_batch < 1) throw std::invalid_argument("the prefill batch must be at least 1");
  if (config.buckets.empty() || !std::is_sorted(config.buckets.begin(), config.buckets.end()) ||
      config.buckets.front() < 1)
    throw std::invalid_argument("prompt buckets must be ascending and positive");
  if (config.policy == BatchingPolicy::Mixed) {
    if (config.max_num_batched_tokens < 1 || config.max_num_seqs < 1 || config.block_size < 1 || config.kv_blocks < 1)
      throw std::invalid_argument("mixed steps need a token budget, sequences, and a KV cache of at least one block");
    if (!costs.mixed_s) throw std::invalid_argument("mixed steps need their cost");
    if (config.speculative.enabled() && config.speculative.method == DraftMethod::DraftModel && !costs.draft_s)
      throw std::invalid_argument("a draft model needs its passes' cost");
    if (config.preemption == Preemption::Swap && !costs.kv_swap_s)
      throw std::invalid_argument("swap preemption needs the swaps' cost");
    if (config.preemption == Preemption::Swap && config.servers > 1 && config.router == Router::SharedQueue)
      throw std::invalid_argument("a swapped sequence's cache is on its server's host: swap needs a router");
    const double capacity = static_cast<double>(config.kv_blocks) * config.block_size;
    for (const auto& r : requests)
      if (static_cast<double>(r.prompt_tokens) + r.output_tokens > capacity)
        throw std::invalid_argument("request " + std::to_string(r.id) + " needs more KV cache than a server has");
  }
  if (config.speculative.enabled()) {
    if (config.policy != BatchingPolicy::Mixed) throw std::invalid_argument("speculative decoding runs under policy mixed");
    const double p = config.speculative.acceptance_probability;
    if (!(p >= 0 && p <= 1)) throw std::invalid_argument("a draft's acceptance probability must be in [0, 1]");
  }
  for (size_t i = 0; i < requests.size(); ++i) {
    if (requests[i].prompt_tokens < 1) throw std::invalid_argument("a prompt needs at least one token");
    if (i > 0 && requests[i].arrival_s < requests[i - 1].arrival_s)
      throw std::invalid_argument("requests must be sorted by arrival");
  }
  return Simulation(requests, config, costs, sink).run();
}

ServingResult simulate_serving(const std::vector<Request>& requests, const ServingConfig& config,
                               const StepCosts& costs) {
  ServingResult result;
  CollectingSink sink(result);
  static_cast<ServingTotals&>(result) = simulate_serving(requests, config, costs, sink);
  return result;
}

}  // namespace podsim
