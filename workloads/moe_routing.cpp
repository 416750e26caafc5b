#include "workloads/moe_routing.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

#include "topology/splitmix.hpp"

namespace podsim {

namespace {

std::vector<double> routing_weights(int experts, const RoutingSpec& spec) {
  std::vector<double> w(experts, 1.0);
  if (spec.kind == RoutingKind::Zipf) {
    if (!(spec.zipf_s >= 0) || !std::isfinite(spec.zipf_s))
      throw std::invalid_argument("routing: zipf s must be finite and >= 0");
    for (int e = 0; e < experts; ++e) w[e] = 1.0 / std::pow(e + 1.0, spec.zipf_s);
  } else if (spec.kind == RoutingKind::Weights) {
    if (static_cast<int>(spec.weights.size()) != experts)
      throw std::invalid_argument("routing: " + std::to_string(spec.weights.size()) + " expert weights for " +
                                  std::to_string(experts) + " experts");
    w = spec.weights;
    for (double x : w)
      if (!(x >= 0) || !std::isfinite(x)) throw std::invalid_argument("routing: expert weights must be finite and >= 0");
  }
  return w;
}

}  // namespace

double ExpertLoads::dropped_fraction() const {
  const long long total = std::accumulate(routed.begin(), routed.end(), 0LL);
  return total > 0 ? static_cast<double>(dropped) / static_cast<double>(total) : 0.0;
}

long long ExpertLoads::busiest() const { return kept.empty() ? 0 : *std::max_element(kept.begin(), kept.end()); }

double ExpertLoads::mean() const {
  return kept.empty() ? 0.0
                      : static_cast<double>(std::accumulate(kept.begin(), kept.end(), 0LL)) / static_cast<double>(kept.size());
}

ExpertLoads route_tokens(long long tokens, int experts, int experts_per_token, const RoutingSpec& spec, uint64_t layer) {
  if (experts < 1) throw std::invalid_argument("routing: experts must be >= 1");
  if (experts_per_token < 1 || experts_per_token > experts)
    throw std::invalid_argument("routing: experts_per_token must be in [1, experts]");
  if (tokens < 0) throw std::invalid_argument("routing: tokens must be >= 0");
  ExpertLoads loads;
  loads.routed.assign(experts, 0);
  const long long assignments = tokens * experts_per_token;
  if (spec.kind == RoutingKind::Uniform) {
    // Every expert the same share; the remainder r = (T k) mod E spread evenly over the expert
    // index (expert e takes one more where floor((e + 1) r / E) steps), so over the ranks that
    // hold consecutive experts: at a small decode batch no rank takes all of it. (Some routing of
    // T tokens to k distinct experts each gives these counts: none exceeds ceil(T k / E) <= T.)
    const long long r = assignments % experts;
    for (int e = 0; e < experts; ++e)
      loads.routed[e] = assignments / experts + ((e + 1) * r / experts - e * r / experts);
  } else {
    const std::vector<double> w = routing_weights(experts, spec);
    std::vector<double> cumulative(experts);
    std::partial_sum(w.begin(), w.end(), cumulative.begin());
    const double total = cumulative.back();
    int positive = 0;
    for (double x : w) positive += x > 0;
    if (!(total > 0) || positive < experts_per_token)
      throw std::invalid_argument("routing: fewer experts with weight > 0 than experts_per_token");
    SplitMix64 rng{spec.seed ^ (0xd1b54a32d192ed03ULL * (layer + 1))};
    std::vector<int> chosen;
    double taken_weight = 0;
    for (long long t = 0; t < tokens; ++t) {
      // k distinct experts, each drawn in proportion to its weight among those not yet taken
      // (sampling without replacement, as top-k routing of a noisy router picks distinct ones).
      // A draw that hits a taken expert is redrawn (rejection keeps the proportions); after 16
      // misses (a skew that concentrates the weight on the taken ones) one draw over the
      // remaining weights, by a scan, ends it.
      chosen.clear();
      taken_weight = 0;
      while (static_cast<int>(chosen.size()) < experts_per_token) {
        int e = -1;
        for (int attempt = 0; attempt < 16 && e < 0; ++attempt) {
          const double u = rng.unit() * total;
          int c = static_cast<int>(std::upper_bound(cumulative.begin(), cumulative.end(), u) - cumulative.begin());
          c = std::min(c, experts - 1);
          if (w[c] > 0 && std::find(chosen.begin(), chosen.end(), c) == chosen.end()) e = c;
        }
        if (e < 0) {
          double u = rng.unit() * (total - taken_weight);
          for (int c = 0; c < experts; ++c) {
            if (w[c] <= 0 || std::find(chosen.begin(), chosen.end(), c) != chosen.end()) continue;
            e = c;   // the last candidate absorbs rounding
            if ((u -= w[c]) < 0) break;
          }
        }
        chosen.push_back(e);
        taken_weight += w[e];
      }
      for (int e : chosen) ++loads.routed[e];
    }
  }
  loads.kept = loads.routed;
  if (spec.capacity_factor > 0) {
    // Switch Transformer's expert capacity: capacity_factor x tokens x k / E, whole tokens.
    loads.capacity = static_cast<long long>(
        std::ceil(spec.capacity_factor * static_cast<double>(assignments) / static_cast<double>(experts) - 1e-9));
    for (int e = 0; e < experts; ++e) {
      loads.kept[e] = std::min(loads.routed[e], loads.capacity);
      loads.dropped += loads.routed[e] - loads.kept[e];
    }
  }
  return loads;
}

ExpertLoads route_layer(const MoeRouting& routing, long long tokens, int experts, int experts_per_token,
                        int moe_layer, int sample) {
  RoutingSpec spec = routing.spec;
  const uint64_t draw = static_cast<uint64_t>(sample) * 1000003ULL + static_cast<uint64_t>(moe_layer);
  if (spec.kind == RoutingKind::Weights && !routing.layer_weights.empty()) {
    spec.weights = routing.layer_weights[routing.layer_weights.size() == 1 ? 0 : moe_layer % routing.layer_weights.size()];
  }
  if (spec.kind == RoutingKind::Zipf && routing.shuffle) {
    // The layer's ranking of its experts: a Fisher-Yates permutation from the seed and layer
    // (not the sample: a router's hot experts stay hot from step to step).
    std::vector<int> rank(experts);
    std::iota(rank.begin(), rank.end(), 0);
    SplitMix64 rng{spec.seed ^ (0x9e3779b97f4a7c15ULL * (static_cast<uint64_t>(moe_layer) + 1)) ^ 0x5bd1e995ULL};
    for (int i = experts - 1; i > 0; --i) std::swap(rank[i], rank[static_cast<int>(rng.next() % (i + 1))]);
    spec.kind = RoutingKind::Weights;
    spec.weights.assign(experts, 0);
    if (!(spec.zipf_s >= 0) || !std::isfinite(spec.zipf_s)) throw std::invalid_argument("routing: zipf s must be finite and >= 0");
    for (int e = 0; e < experts; ++e) spec.weights[e] = 1.0 / std::pow(rank[e] + 1.0, spec.zipf_s);
  }
  return route_tokens(tokens, experts, experts_per_token, spec, draw);
}

}  // namespace podsim
