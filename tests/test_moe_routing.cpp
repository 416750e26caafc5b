// MoE routing loads (workloads/moe_routing.hpp) against their definitions: uniform is exact,
// sampled shares follow the weights of sampling without replacement, capacity drops what
// exceeds ceil(cf x T k / E), and a seed repeats a sample.
#include <catch2/catch.hpp>
#include <cmath>
#include <numeric>

#include "workloads/moe_routing.hpp"

using namespace podsim;

TEST_CASE("routing: uniform gives every expert T k / E, the remainder spread evenly", "[moe]") {
  const auto even = route_tokens(1000, 16, 2, {});
  for (long long load : even.routed) CHECK(load == 125);
  CHECK(even.dropped == 0);
  CHECK(even.busiest() == 125);
  const auto odd = route_tokens(7, 4, 3, {});   // 21 = 4 x 5 + 1
  CHECK(odd.routed == std::vector<long long>{5, 5, 5, 6});
  // A decode batch of 4 on Qwen3's 128 experts, k = 8: 32 experts get a token, 8 in each
  // quarter (the experts one of 4 expert-parallel ranks holds), not all on the first rank.
  const auto small = route_tokens(4, 128, 8, {});
  for (int rank = 0; rank < 4; ++rank) {
    long long rows = 0;
    for (int e = 32 * rank; e < 32 * (rank + 1); ++e) rows += small.routed[e];
    CHECK(rows == 8);
  }
  CHECK(small.busiest() == 1);
}

TEST_CASE("routing: sampled loads follow the weights, distinct experts per token, repeatable", "[moe]") {
  RoutingSpec spec;
  spec.kind = RoutingKind::Weights;
  spec.weights = {4, 2, 1, 1};
  spec.seed = 9;
  const long long tokens = 200000;
  const auto loads = route_tokens(tokens, 4, 1, spec);
  // k = 1: a multinomial draw; each share within 5 standard deviations of weight / 8.
  for (int e = 0; e < 4; ++e) {
    const double p = spec.weights[e] / 8.0;
    const double sd = std::sqrt(tokens * p * (1 - p));
    CHECK(std::abs(loads.routed[e] - tokens * p) < 5 * sd);
  }
  // k = E: every token takes every expert, whatever the weights.
  const auto all = route_tokens(1000, 4, 4, spec);
  for (long long load : all.routed) CHECK(load == 1000);
  CHECK(route_tokens(5000, 4, 2, spec, 3).routed == route_tokens(5000, 4, 2, spec, 3).routed);
  CHECK(route_tokens(5000, 4, 2, spec, 3).routed != route_tokens(5000, 4, 2, spec, 4).routed);
}

TEST_CASE("routing: k = 2 without replacement matches the exact pair probabilities", "[moe]") {
  // Weights w, k = 2: P(e chosen) = p_e + sum_{f != e} p_f p_e / (1 - p_f).
  RoutingSpec spec;
  spec.kind = RoutingKind::Weights;
  spec.weights = {6, 3, 1};
  const double p[] = {0.6, 0.3, 0.1};
  const long long tokens = 100000;
  const auto loads = route_tokens(tokens, 3, 2, spec);
  for (int e = 0; e < 3; ++e) {
    double q = p[e];
    for (int f = 0; f < 3; ++f)
      if (f != e) q += p[f] * p[e] / (1 - p[f]);
    const double sd = std::sqrt(tokens * q * (1 - q));
    INFO("expert " << e << ": " << loads.routed[e] << " vs " << tokens * q);
    CHECK(std::abs(loads.routed[e] - tokens * q) < 5 * sd);
  }
}

TEST_CASE("routing: a steep Zipf still gives k distinct experts per token", "[moe]") {
  RoutingSpec spec;
  spec.kind = RoutingKind::Zipf;
  spec.zipf_s = 6;   // the later picks per token come from ~1e-5 of the weight: the fallback scan
  const auto loads = route_tokens(20000, 256, 8, spec);
  CHECK(std::accumulate(loads.routed.begin(), loads.routed.end(), 0LL) == 20000 * 8);
  // Distinct per token: no expert more than once per token, and the sum is T k.
  for (long long load : loads.routed) CHECK(load <= 20000);
  CHECK(loads.routed[0] == 20000);   // weight 1 against 0.017 for all the others together
  CHECK(loads.routed[3] > loads.routed[8]);
  CHECK(loads.routed[8] > loads.routed[40]);
  spec.zipf_s = 0;   // flat: every expert near T k / E
  const auto flat = route_tokens(64000, 64, 2, spec);
  for (long long load : flat.routed) CHECK(std::abs(load - 2000) < 5 * std::sqrt(2000.0));
}

TEST_CASE("routing: capacity keeps ceil(cf T k / E) per expert and reports the dropped share", "[moe]") {
  RoutingSpec spec;
  spec.kind = RoutingKind::Weights;
  spec.weights = {1, 0, 0, 0};
  spec.capacity_factor = 1.25;
  const auto loads = route_tokens(1000, 4, 1, spec);   // all 1000 to expert 0
  CHECK(loads.capacity == 313);                        // ceil(1.25 x 1000 / 4) = 312.5 -> 313
  CHECK(loads.kept[0] == 313);
  CHECK(loads.dropped == 687);
  CHECK(loads.dropped_fraction() == Approx(0.687));
  CHECK(loads.busiest() == 313);
  CHECK(loads.mean() == Approx(313.0 / 4));
}

TEST_CASE("routing: impossible input is refused", "[moe]") {
  CHECK_THROWS_AS(route_tokens(10, 2, 3, {}), std::invalid_argument);
  CHECK_THROWS_AS(route_tokens(10, 0, 1, {}), std::invalid_argument);
  RoutingSpec spec;
  spec.kind = RoutingKind::Weights;
  spec.weights = {1, 0};
  CHECK_THROWS_AS(route_tokens(10, 2, 2, spec), std::invalid_argument);   // one expert with weight
  spec.weights = {1};
  CHECK_THROWS_AS(route_tokens(10, 2, 1, spec), std::invalid_argument);   // wrong shape
}
