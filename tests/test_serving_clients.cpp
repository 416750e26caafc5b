// The benchmark client as vLLM's benchmark_serving drives a server: the random dataset's
// lengths and gamma arrivals (workloads/requests.hpp), and the --max-concurrency closed loop
// (workloads/serving.hpp, ServingConfig::max_concurrency).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "scenario_errors.hpp"
#include "sim/scenario/scenario.hpp"
#include "workloads/requests.hpp"
#include "workloads/serving.hpp"

using namespace podsim;

namespace {

StepCosts fixed(double p, double d) {
  StepCosts c;
  c.prefill_s = [p](int, int, int) { return p; };
  c.decode_s = [d](int, double) { return d; };
  c.kv_transfer_s = [](int) { return 0.0; };
  return c;
}

ServingConfig continuous(int slots) {
  ServingConfig c;
  c.policy = BatchingPolicy::Continuous;
  c.slots = slots;
  c.prefill_batch = slots;
  c.buckets = {128, 256, 512, 1024, 2048};
  return c;
}

}  // namespace

TEST_CASE("the random dataset: vLLM's length windows, deterministic per seed", "[serving][clients]") {
  RandomDataset d;
  d.count = 20000;
  d.input_len = 1000;
  d.output_len = 300;
  d.range_ratio = 0.25;
  d.prefix_len = 64;
  d.seed = 5;
  // vLLM: [floor(L (1 - r)), ceil(L (1 + r))]; outputs at least 1.
  CHECK(random_input_lengths(d).min == 750);
  CHECK(random_input_lengths(d).max == 1250);
  CHECK(random_output_lengths(d).min == 225);
  CHECK(random_output_lengths(d).max == 375);
  const auto requests = random_requests(d);
  REQUIRE(requests.size() == 20000);
  std::map<int, int> seen;
  double input_sum = 0;
  for (const auto& r : requests) {
    REQUIRE(r.prompt_tokens >= 64 + 750);
    REQUIRE(r.prompt_tokens <= 64 + 1250);
    REQUIRE(r.output_tokens >= 225);
    REQUIRE(r.output_tokens <= 375);
    REQUIRE(r.arrival_s == 0.0);   // no rate: every request at once (--request-rate inf)
    input_sum += r.prompt_tokens - 64;
    seen[r.prompt_tokens] += 1;
  }
  CHECK(input_sum / 20000 == Approx(1000).epsilon(0.01));   // uniform: the window's middle
  CHECK(seen.count(64 + 750) == 1);                          // both ends drawn
  CHECK(seen.count(64 + 1250) == 1);
  const auto again = random_requests(d);
  CHECK(std::equal(requests.begin(), requests.end(), again.begin(), [](const Request& a, const Request& b) {
    return a.prompt_tokens == b.prompt_tokens && a.output_tokens == b.output_tokens && a.arrival_s == b.arrival_s;
  }));
  SECTION("a tiny output window never draws 0 tokens") {
    d.output_len = 1;
    d.range_ratio = 0.9;
    CHECK(random_output_lengths(d).min == 1);
    CHECK(random_output_lengths(d).max == 2);
  }
}

TEST_CASE("the random dataset's prefix share: that share of requests shares a prefix, lengths unchanged",
          "[serving][clients][prefix]") {
  RandomDataset d;
  d.count = 20000;
  d.input_len = 100;
  d.output_len = 10;
  d.prefix_len = 500;
  d.prefixes = 4;
  d.seed = 9;
  const auto all = random_requests(d);
  d.prefix_share = 0.3;
  const auto some = random_requests(d);
  int shared = 0;
  for (size_t i = 0; i < some.size(); ++i) {
    CHECK(some[i].prompt_tokens == all[i].prompt_tokens);   // the prefix's tokens are there either way
    CHECK(some[i].output_tokens == all[i].output_tokens);
    shared += some[i].prefix_id >= 0;
    if (some[i].prefix_id < 0) CHECK(some[i].prefix_tokens == 0);
  }
  // Binomial: standard error 0.0032 at 20,000 requests.
  CHECK(std::fabs(shared / 20000.0 - 0.3) < 0.015);
  d.prefix_share = 0;
  for (const auto& r : random_requests(d)) CHECK(r.prefix_id == -1);
  // A share of 1 draws nothing more: the requests of before the key existed.
  d.prefix_share = 1;
  CHECK(random_requests(d) == all);
}

TEST_CASE("gamma arrivals: mean gap 1 / rate, spread 1 / sqrt(burstiness)", "[serving][clients]") {
  for (double burstiness : {0.25, 1.0, 4.0}) {
    RandomDataset d;
    d.count = 40001;
    d.input_len = 100;
    d.output_len = 10;
    d.request_rate_per_s = 8;
    d.burstiness = burstiness;
    d.seed = 11;
    const auto requests = random_requests(d);
    CHECK(requests.front().arrival_s == 0.0);   // the first is sent at once, then the gaps
    double sum = 0, sum2 = 0;
    for (size_t i = 1; i < requests.size(); ++i) {
      const double gap = requests[i].arrival_s - requests[i - 1].arrival_s;
      REQUIRE(gap >= 0);
      sum += gap;
      sum2 += gap * gap;
    }
    const double n = static_cast<double>(requests.size() - 1);
    const double mean = sum / n, cv = std::sqrt(sum2 / n - mean * mean) / mean;
    INFO("burstiness " << burstiness << ": mean " << mean << " cv " << cv);
    CHECK(mean == Approx(1.0 / 8).epsilon(0.03));
    CHECK(cv == Approx(1.0 / std::sqrt(burstiness)).epsilon(0.05));   // Gamma(k): cv = 1 / sqrt(k)
  }
}

TEST_CASE("max_concurrency: a closed loop sends the next request when one ends", "[serving][clients]") {
  std::vector<Request> requests;
  for (int i = 0; i < 12; ++i) requests.push_back({i, 0.0, 100, 5});   // all at once (rate inf)
  SECTION("one at a time: each request is sent as the one before ends") {
    ServingConfig c = continuous(8);
    c.max_concurrency = 1;
    const auto run = simulate_serving(requests, c, fixed(0.5, 0.1));
    for (size_t i = 0; i < run.requests.size(); ++i) {
      const auto& r = run.requests[i];
      CHECK(r.request.arrival_s == Approx(i == 0 ? 0.0 : run.requests[i - 1].end_s));
      CHECK(r.ttft_s() == Approx(0.5));        // its clock starts when it is sent: no queueing
      CHECK(r.latency_s() == Approx(0.5 + 4 * 0.1));
    }
  }
  SECTION("never more in flight than the limit, sent in order, against the open loop") {
    ServingConfig c = continuous(8);
    c.max_concurrency = 3;
    const auto run = simulate_serving(requests, c, fixed(0.5, 0.1));
    for (size_t i = 1; i < run.requests.size(); ++i)
      CHECK(run.requests[i].request.arrival_s >= run.requests[i - 1].request.arrival_s);
    for (const auto& r : run.requests) {
      int in_flight = 0;   // sent at or before r's send and not yet ended
      for (const auto& o : run.requests)
        in_flight += o.request.arrival_s <= r.request.arrival_s && o.end_s > r.request.arrival_s ? 1 : 0;
      CHECK(in_flight <= 3);
    }
    ServingConfig open = continuous(8);
    const auto unlimited = simulate_serving(requests, open, fixed(0.5, 0.1));
    double closed_ttft = 0, open_ttft = 0;
    for (size_t i = 0; i < requests.size(); ++i) {
      closed_ttft += run.requests[i].ttft_s();
      open_ttft += unlimited.requests[i].ttft_s();
    }
    // The open loop queues all 12 against 8 slots; the client's limit keeps the server's queue
    // short and measures from the send.
    CHECK(closed_ttft < open_ttft);
  }
  SECTION("a limit above the requests changes nothing") {
    ServingConfig c = continuous(4);
    c.max_concurrency = 100;
    const auto limited = simulate_serving(requests, c, fixed(0.5, 0.1));
    const auto open = simulate_serving(requests, continuous(4), fixed(0.5, 0.1));
    for (size_t i = 0; i < requests.size(); ++i) CHECK(limited.requests[i].end_s == open.requests[i].end_s);
  }
}

namespace {

const std::string kRandom = R"(version: 1
hardware: {preset: v5e}
topology: {mesh: {X: 2, Y: 4}}
workload:
  kind: serving
  model: llama2-7b
  requests:
    random: {count: 50, input_len: 1000, output_len: 200, range_ratio: 0.5, request_rate: "4 /s", burstiness: 0.5, seed: 3}
    max_concurrency: 8
)";

}  // namespace

TEST_CASE("serving scenarios take vLLM's random dataset and concurrency limit, bad values located",
          "[serving][clients][scenario]") {
  using podsim_test::replaced_in;
  using podsim_test::require_error;
  const Scenario s = load_scenario_text(kRandom, podsim_test::kScenarioFile);
  CHECK(s.serving().requests.size() == 50);
  CHECK(s.serving().requests_source == "random");
  CHECK(s.serving().config.max_concurrency == 8);
  for (const auto& r : s.serving().requests) {
    CHECK(r.prompt_tokens >= 500);
    CHECK(r.prompt_tokens <= 1500);
  }
  const std::string line = "    random:";
  require_error(replaced_in(kRandom, "range_ratio: 0.5", "range_ratio: 1"), "workload.requests.random.range_ratio", "1", line);
  require_error(replaced_in(kRandom, "burstiness: 0.5", "burstiness: 0"), "workload.requests.random.burstiness", "0", line);
  require_error(replaced_in(kRandom, "max_concurrency: 8", "max_concurrency: 0"), "workload.requests.max_concurrency", "0",
                "    max_concurrency:");
  require_error(replaced_in(kRandom, "input_len: 1000", "input_len: 4000"), "workload.requests.random.output_len", "200",
                line);   // 6000 + 300 tokens at the longest: past llama2-7b's 4096
  require_error(replaced_in(kRandom, "count: 50,", "count: 50, prompt_tokens: 3,"), "workload.requests.random.prompt_tokens",
                "3", line);   // a poisson key: unknown here, the known ones listed
  require_error(replaced_in(kRandom, "seed: 3}", "seed: 3, prefixes: 4}"), "workload.requests.random.prefixes", "4", line);
  require_error(replaced_in(kRandom, "kind: serving", "kind: serving\n  prefix_caching: false"), "workload.prefix_caching",
                "false", "  prefix_caching:");   // policy continuous has no paged cache
  require_error(replaced_in(kRandom, "kind: serving", "kind: serving\n  router: kv_aware"), "workload.router", "kv_aware",
                "  router:");
  const auto both = replaced_in(kRandom, "    max_concurrency: 8\n",
                                "    poisson: {rate: \"1 /s\", count: 1, prompt_tokens: 1, output_tokens: 1}\n");
  CHECK(podsim_test::contains(podsim_test::error_from(both).what(), "expected exactly one of poisson:, random:, sharegpt: or trace:"));
}
