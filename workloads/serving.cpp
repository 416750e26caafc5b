#include "workloads/serving.hpp"

#include <algorithm>
#include <deque>
#include <queue>
#include <stdexcept>

namespace podsim {

const char* to_string(BatchingPolicy policy) {
  switch (policy) {
    case BatchingPolicy::Static: return "static";
    case BatchingPolicy::Interleaved: return "interleaved";
    case BatchingPolicy::Continuous: return "continuous";
    case BatchingPolicy::Disaggregated: return "disaggregated";
  }
  return "?";
}

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
  int total = 0;
  for (int chunk : prefill_chunks(prompt_tokens, buckets)) total += chunk;
  return total;
}

namespace {

enum class EventKind { Arrival, StepDone, TransferDone };

struct Event {
  double t;
  long long seq;   // ties break in the order events were made: deterministic
  EventKind kind;
  int index;       // request (Arrival, TransferDone) or server (StepDone)
  int pool;        // 0: colocated or generate servers, 1: prefill servers; TransferDone: the generate server
  bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
};

struct Server {
  bool busy = false;
  bool last_was_prefill = false;
  std::vector<int> active;        // decoding
  std::vector<int> prefilling;    // admitted, chunks left
  std::vector<int> static_batch;  // static policy: the batch until all of it is done
  StepKind step = StepKind::Decode;
  std::vector<int> members;       // of the running step
  int reserved = 0;               // slots promised to KV transfers under way
  double ingress_free_s = 0;      // its DCN ingress is busy until then
};

struct RequestState {
  std::vector<int> chunks;
  size_t chunks_done = 0;
  int generated = 0;
  double last_token_s = 0;        // when its latest token appeared
  int offset = 0;                 // prompt tokens cached so far (padded)
};

class Simulation {
 public:
  Simulation(const std::vector<Request>& requests, const ServingConfig& config, const StepCosts& costs)
      : config_(config), costs_(costs), state_(requests.size()) {
    result_.requests.resize(requests.size());
    for (size_t i = 0; i < requests.size(); ++i) {
      auto& record = result_.requests[i];
      record.request = requests[i];
      state_[i].chunks = prefill_chunks(requests[i].prompt_tokens, config.buckets);
      record.padded_prompt_tokens = padded_prompt_tokens(requests[i].prompt_tokens, config.buckets);
      push(requests[i].arrival_s, EventKind::Arrival, static_cast<int>(i), 0);
    }
    const bool split = config.policy == BatchingPolicy::Disaggregated;
    servers_.resize(config.servers);
    prefill_servers_.resize(split ? config.prefill_servers : 0);
  }

  ServingResult run() {
    while (!events_.empty()) {
      const Event e = events_.top();
      events_.pop();
      now_ = e.t;
      switch (e.kind) {
        case EventKind::Arrival:
          // Requests arriving together are seen together.
          waiting_.push_back(e.index);
          while (!events_.empty() && events_.top().kind == EventKind::Arrival && events_.top().t == now_) {
            waiting_.push_back(events_.top().index);
            events_.pop();
          }
          wake_all();
          break;
        case EventKind::StepDone: finish_step(e.pool == 1 ? prefill_servers_ : servers_, e.index, e.pool == 1); break;
        case EventKind::TransferDone: {
          Server& g = servers_[e.pool];
          --g.reserved;
          g.active.push_back(e.index);
          result_.requests[e.index].decode_start_s = now_;
          wake(servers_, e.pool, false);
          break;
        }
      }
    }
    for (const auto& r : result_.requests) result_.end_s = std::max(result_.end_s, r.end_s);
    return std::move(result_);
  }

 private:
  bool disaggregated() const { return config_.policy == BatchingPolicy::Disaggregated; }

  void push(double t, EventKind kind, int index, int pool) { events_.push({t, seq_++, kind, index, pool}); }

  void wake_all() {
    for (size_t s = 0; s < prefill_servers_.size(); ++s) wake(prefill_servers_, static_cast<int>(s), true);
    for (size_t s = 0; s < servers_.size(); ++s) wake(servers_, static_cast<int>(s), false);
  }

  // Starts the server's next step if it is idle and has work.
  void wake(std::vector<Server>& pool, int s, bool prefill_pool) {
    Server& server = pool[s];
    if (server.busy) return;
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
      }
      if (!server.prefilling.empty()) start_prefill(server, s, false);
      else if (!server.static_batch.empty()) start_decode(server, s);
      return;
    }
    if (server.last_was_prefill && !server.active.empty()) {
      start_decode(server, s);
      return;
    }
    const int per_step = config_.policy == BatchingPolicy::Interleaved ? 1 : config_.prefill_batch;
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
    const int bucket = state_[waiting_.front()].chunks.front();
    for (auto it = waiting_.begin(); it != waiting_.end() && static_cast<int>(server.prefilling.size()) < count;) {
      if (state_[*it].chunks.front() == bucket) {
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
      auto& st = state_[r];
      chunk = std::max(chunk, st.chunks[st.chunks_done]);
      offset = std::max(offset, st.offset);
      if (st.chunks_done == 0) {
        result_.requests[r].prefill_start_s = now_;
        result_.requests[r].server = s;
      }
    }
    const int batch = static_cast<int>(server.prefilling.size());
    const double d = costs_.prefill_s(batch, chunk, offset);
    server.members = server.prefilling;
    begin(server, s, prefill_pool, StepKind::Prefill, d, batch, static_cast<double>(batch) * chunk);
    result_.prefill_busy_s += d;
    ++result_.prefill_steps;
  }

  void start_decode(Server& server, int s) {
    // Static batching keeps finished sequences in the batch until all are done.
    const auto& batch = config_.policy == BatchingPolicy::Static ? server.static_batch : server.active;
    double context = 0;
    for (int r : batch) context += result_.requests[r].request.prompt_tokens + state_[r].generated;
    const double d = costs_.decode_s(static_cast<int>(batch.size()), context);
    server.members = server.active;
    begin(server, s, false, StepKind::Decode, d, static_cast<int>(batch.size()),
          static_cast<double>(server.active.size()));
    result_.decode_busy_s += d;
    ++result_.decode_steps;
  }

  void begin(Server& server, int s, bool prefill_pool, StepKind kind, double d, int batch, double tokens) {
    server.busy = true;
    server.step = kind;
    result_.steps.push_back({kind, prefill_pool, s, now_, now_ + d, batch, tokens});
    push(now_ + d, EventKind::StepDone, s, prefill_pool ? 1 : 0);
  }

  void finish_step(std::vector<Server>& pool, int s, bool prefill_pool) {
    Server& server = pool[s];
    server.busy = false;
    server.last_was_prefill = server.step == StepKind::Prefill;
    if (server.step == StepKind::Prefill) {
      std::vector<int> still;
      for (int r : server.members) {
        auto& st = state_[r];
        st.offset += st.chunks[st.chunks_done];
        if (++st.chunks_done < st.chunks.size()) {
          still.push_back(r);
          continue;
        }
        auto& record = result_.requests[r];
        record.first_token_s = now_;   // the prefill's logits give the first token
        st.generated = 1;
        st.last_token_s = now_;
        if (record.request.output_tokens <= 1) {
          record.end_s = now_;
        } else if (disaggregated()) {
          handoff_.push_back(r);
        } else {
          record.generate_server = s;
          record.decode_start_s = now_;
          server.active.push_back(r);
        }
      }
      server.prefilling = still;
    } else {
      for (int r : server.members) {
        auto& record = result_.requests[r];
        result_.inter_token_s.push_back(now_ - state_[r].last_token_s);
        state_[r].last_token_s = now_;
        if (++state_[r].generated >= record.request.output_tokens) record.end_s = now_;
      }
      // Sequences that joined during the step (KV transfers) stay; finished ones leave.
      std::erase_if(server.active, [&](int r) { return result_.requests[r].end_s >= 0; });
    }
    if (server.active.empty() && server.prefilling.empty()) server.static_batch.clear();
    if (disaggregated()) start_transfers();
    wake(pool, s, prefill_pool);
    if (!waiting_.empty() || disaggregated()) wake_all();
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
      auto& record = result_.requests[r];
      record.generate_server = best;
      const double start = std::max(now_, g.ingress_free_s);
      const double end = start + costs_.kv_transfer_s(record.padded_prompt_tokens);
      g.ingress_free_s = end;
      result_.steps.push_back({StepKind::KvTransfer, false, best, start, end, 1,
                               static_cast<double>(record.padded_prompt_tokens)});
      push(end, EventKind::TransferDone, r, best);
    }
  }

  const ServingConfig& config_;
  const StepCosts& costs_;
  std::vector<RequestState> state_;
  std::vector<Server> servers_;
  std::vector<Server> prefill_servers_;
  std::deque<int> waiting_;
  std::deque<int> handoff_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  long long seq_ = 0;
  double now_ = 0;
  ServingResult result_;
};

}  // namespace

ServingResult simulate_serving(const std::vector<Request>& requests, const ServingConfig& config,
                               const StepCosts& costs) {
  if (config.servers < 1) throw std::invalid_argument("at least one server is needed");
  if (config.policy == BatchingPolicy::Disaggregated && config.prefill_servers < 1)
    throw std::invalid_argument("disaggregated serving needs at least one prefill server");
  if (config.slots < 1) throw std::invalid_argument("no sequence fits beside the weights");
  if (config.prefill_batch < 1) throw std::invalid_argument("the prefill batch must be at least 1");
  if (config.buckets.empty() || !std::is_sorted(config.buckets.begin(), config.buckets.end()) ||
      config.buckets.front() < 1)
    throw std::invalid_argument("prompt buckets must be ascending and positive");
  for (size_t i = 1; i < requests.size(); ++i) {
    if (requests[i].arrival_s < requests[i - 1].arrival_s) throw std::invalid_argument("requests must be sorted by arrival");
  }
  return Simulation(requests, config, costs).run();
}

}  // namespace podsim
