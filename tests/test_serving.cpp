// Serving: the batching policies on costs simple enough to work out by hand (the step-cost
// shortcut against whole-step replays is test_serving_costs.cpp).
#include <catch2/catch.hpp>
#include <algorithm>

#include "workloads/requests.hpp"
#include "workloads/serving.hpp"

using namespace podsim;

namespace {

// Fixed step costs: prefill p per chunk, decode d per step, transfer k.
StepCosts fixed(double p, double d, double k = 0) {
  StepCosts c;
  c.prefill_s = [p](int, int, int) { return p; };
  c.decode_s = [d](int, double) { return d; };
  c.kv_transfer_s = [k](int) { return k; };
  return c;
}

ServingConfig config(BatchingPolicy policy, int slots) {
  ServingConfig c;
  c.policy = policy;
  c.slots = slots;
  c.prefill_batch = slots;
  c.buckets = {128, 256, 512};
  return c;
}

}  // namespace

TEST_CASE("prompts are padded to buckets and chunked by the largest", "[serving]") {
  const std::vector<int> buckets = {128, 256, 512};
  CHECK(prefill_chunks(1, buckets) == std::vector<int>{128});
  CHECK(prefill_chunks(129, buckets) == std::vector<int>{256});
  CHECK(prefill_chunks(512, buckets) == std::vector<int>{512});
  CHECK(prefill_chunks(1100, buckets) == std::vector<int>{512, 512, 128});
}

TEST_CASE("a padded prompt is the sum of its chunks, worked out without listing them", "[serving]") {
  for (const std::vector<int>& buckets : std::vector<std::vector<int>>{{128, 256, 512}, {1}, {3, 7}, {1000}}) {
    for (int prompt = 1; prompt <= 3000; ++prompt) {
      int sum = 0;
      for (int chunk : prefill_chunks(prompt, buckets)) sum += chunk;
      REQUIRE(padded_prompt_tokens(prompt, buckets) == sum);
    }
  }
  // The loader asks this of every request: 2^30 chunks of 1 token were listed (4 GB) each time.
  CHECK(padded_prompt_tokens(1 << 30, {1}) == 1 << 30);
  CHECK(padded_prompt_tokens(1 << 30, {1 << 30}) == 1 << 30);
  CHECK(padded_prompt_tokens((1 << 30) - 1, {2, 1 << 30}) == 1 << 30);
}

TEST_CASE("one request: TTFT is its prefill, then one decode step per further token", "[serving]") {
  for (auto policy : {BatchingPolicy::Static, BatchingPolicy::Interleaved, BatchingPolicy::Continuous}) {
    const auto r = simulate_serving({{0, 1.0, 100, 11}}, config(policy, 4), fixed(0.5, 0.01));
    const auto& q = r.requests[0];
    CHECK(q.queueing_s() == 0);
    CHECK(q.ttft_s() == Approx(0.5));
    CHECK(q.tpot_s() == Approx(0.01));
    CHECK(q.latency_s() == Approx(0.5 + 10 * 0.01));
    CHECK(r.decode_steps == 10);
  }
}

TEST_CASE("static batching waits for the whole batch, continuous batching lets requests leave and join",
          "[serving]") {
  // Two requests at t=0 (outputs 3 and 21 tokens), a third at t=0.065.
  const std::vector<Request> requests = {{0, 0, 100, 3}, {1, 0, 100, 21}, {2, 0.065, 100, 3}};
  const auto s = simulate_serving(requests, config(BatchingPolicy::Static, 2), fixed(0.05, 0.01));
  // The batch of two runs 20 decode steps; the third waits for it to finish.
  CHECK(s.requests[0].latency_s() == Approx(0.05 + 2 * 0.01));
  CHECK(s.requests[1].latency_s() == Approx(0.05 + 20 * 0.01));
  CHECK(s.requests[2].prefill_start_s == Approx(0.25));
  const auto c = simulate_serving(requests, config(BatchingPolicy::Continuous, 2), fixed(0.05, 0.01));
  // Request 0 leaves after its 2 decode steps (t = 0.07); request 2 takes its slot then.
  CHECK(c.requests[2].prefill_start_s == Approx(0.07));
  CHECK(c.requests[2].first_token_s == Approx(0.12));
  // Request 1 lost one decode step to the prefill of request 2.
  CHECK(c.requests[1].end_s == Approx(0.05 + 20 * 0.01 + 0.05));
}

TEST_CASE("inter-token latencies: one gap per token after the first, summing to each request's decode", "[serving]") {
  // The continuous case above: request 1's 20 gaps include one stretched by request 2's prefill.
  const std::vector<Request> requests = {{0, 0, 100, 3}, {1, 0, 100, 21}, {2, 0.065, 100, 3}};
  const auto c = simulate_serving(requests, config(BatchingPolicy::Continuous, 2), fixed(0.05, 0.01));
  double decode = 0;
  size_t tokens = 0;
  for (const auto& q : c.requests) {
    decode += q.end_s - q.first_token_s;
    tokens += q.request.output_tokens - 1;
  }
  REQUIRE(c.inter_token_s.size() == tokens);
  double sum = 0;
  for (double gap : c.inter_token_s) sum += gap;
  CHECK(sum == Approx(decode));
  CHECK(*std::max_element(c.inter_token_s.begin(), c.inter_token_s.end()) == Approx(0.01 + 0.05));
  CHECK(*std::min_element(c.inter_token_s.begin(), c.inter_token_s.end()) == Approx(0.01));
}

TEST_CASE("interleaving prefills one prompt at a time between decode steps", "[serving]") {
  const std::vector<Request> requests = {{0, 0, 100, 5}, {1, 0, 100, 5}, {2, 0, 100, 5}};
  const auto r = simulate_serving(requests, config(BatchingPolicy::Interleaved, 4), fixed(0.1, 0.01));
  CHECK(r.requests[0].first_token_s == Approx(0.1));
  CHECK(r.requests[1].first_token_s == Approx(0.21));   // one decode step for request 0 between
  CHECK(r.requests[2].first_token_s == Approx(0.32));
  const auto c = simulate_serving(requests, config(BatchingPolicy::Continuous, 4), fixed(0.1, 0.01));
  for (const auto& q : c.requests) CHECK(q.first_token_s == Approx(0.1));   // one batched prefill
  // JetStream's interleaved mode runs the same steps under its own name.
  const auto j = simulate_serving(requests, config(BatchingPolicy::JetStream, 4), fixed(0.1, 0.01));
  REQUIRE(j.steps.size() == r.steps.size());
  for (size_t i = 0; i < j.steps.size(); ++i) CHECK(j.steps[i].end_s == r.steps[i].end_s);
  CHECK(std::string(to_string(BatchingPolicy::JetStream)) == "jetstream");
}

TEST_CASE("chunked prompts take one prefill step per chunk", "[serving]") {
  auto costs = fixed(0, 0.01);
  std::vector<std::tuple<int, int, int>> calls;
  costs.prefill_s = [&](int b, int chunk, int offset) {
    calls.emplace_back(b, chunk, offset);
    return 0.1;
  };
  const auto r = simulate_serving({{0, 0, 1100, 2}}, config(BatchingPolicy::Continuous, 4), costs);
  CHECK(calls == std::vector<std::tuple<int, int, int>>{{1, 512, 0}, {1, 512, 512}, {1, 128, 1024}});
  CHECK(r.requests[0].padded_prompt_tokens == 1152);
  CHECK(r.requests[0].first_token_s == Approx(0.3));
}

TEST_CASE("disaggregated: KV transfers wait for a free generate slot and queue on its ingress", "[serving]") {
  ServingConfig c = config(BatchingPolicy::Disaggregated, 1);
  c.prefill_servers = 2;
  c.prefill_batch = 1;
  const std::vector<Request> requests = {{0, 0, 100, 3}, {1, 0, 100, 3}};
  const auto r = simulate_serving(requests, c, fixed(0.5, 0.01, 0.02));
  // Both prefill at once on their own servers; one slot: the second transfer waits for it.
  CHECK(r.requests[0].first_token_s == Approx(0.5));
  CHECK(r.requests[1].first_token_s == Approx(0.5));
  CHECK(r.requests[0].decode_start_s == Approx(0.52));
  CHECK(r.requests[0].end_s == Approx(0.54));
  CHECK(r.requests[1].decode_start_s == Approx(0.56));
  CHECK(r.requests[1].end_s == Approx(0.58));
  CHECK(r.requests[1].tpot_s() == Approx(0.04));
}

TEST_CASE("Poisson arrivals: deterministic per seed, with the requested mean rate", "[serving]") {
  PoissonArrivals a;
  a.rate_per_s = 4;
  a.count = 20000;
  a.prompt_tokens = {100, 200};
  a.output_tokens = {10, 10};
  const auto r = poisson_requests(a);
  CHECK(r.back().arrival_s / a.count == Approx(0.25).epsilon(0.02));
  CHECK(poisson_requests(a)[777].arrival_s == r[777].arrival_s);
  int lo = 1 << 30, hi = 0;
  for (const auto& q : r) lo = std::min(lo, q.prompt_tokens), hi = std::max(hi, q.prompt_tokens);
  CHECK(lo == 100);
  CHECK(hi == 200);
  a.seed = 2;
  CHECK(poisson_requests(a)[777].arrival_s != r[777].arrival_s);
}

namespace {

// Records what a run passes on, in the order it does.
struct RecordingSink : ServingSink {
  std::vector<int> ids;
  size_t steps = 0, gaps = 0;
  void step(const StepRecord&) override { ++steps; }
  void request(const RequestRecord& r) override { ids.push_back(r.request.id); }
  void token_gap(double) override { ++gaps; }
};

}  // namespace

TEST_CASE("a streamed run passes each request on once, in order, and holds only what is in flight", "[serving]") {
  // 20,000 requests at 10 per second on a server that keeps up: a request lives at most a
  // prefill, 20 decode steps and what queues before it (well under a second), so about 10 are in
  // flight at a time; what the run holds must not grow with the request count.
  PoissonArrivals a;
  a.rate_per_s = 10;
  a.count = 20000;
  a.prompt_tokens = {50, 600};
  a.output_tokens = {1, 20};
  a.seed = 4;
  const auto requests = poisson_requests(a);
  for (auto policy : {BatchingPolicy::Continuous, BatchingPolicy::Static, BatchingPolicy::Interleaved}) {
    INFO(to_string(policy));
    RecordingSink sink;
    const auto totals = simulate_serving(requests, config(policy, 8), fixed(0.02, 0.005), sink);
    REQUIRE(sink.ids.size() == requests.size());
    for (size_t i = 0; i < sink.ids.size(); ++i) REQUIRE(sink.ids[i] == requests[i].id);
    size_t gaps = 0;
    for (const auto& r : requests) gaps += r.output_tokens - 1;
    CHECK(sink.gaps == gaps);
    CHECK(sink.steps == static_cast<size_t>(totals.prefill_steps + totals.decode_steps));
    CHECK(totals.request_count == requests.size());
    CHECK(totals.peak_records_held < 100);
    // The same run, records kept, agrees on every total.
    const auto kept = simulate_serving(requests, config(policy, 8), fixed(0.02, 0.005));
    CHECK(kept.end_s == totals.end_s);
    CHECK(kept.decode_steps == totals.decode_steps);
    CHECK(kept.peak_records_held == totals.peak_records_held);
  }
}
