#pragma once
// How a MoE layer's tokens land on its experts (issue 11): every token picks k distinct experts
// from a routing distribution (uniform, Zipf over the experts' ranks, or given weights, e.g. a
// measured load CSV), sampled from a seed; an expert takes at most its capacity,
// ceil(capacity_factor x tokens x k / E) (Switch Transformer's capacity), and drops the rest.
// Plain C++: what the loads cost (the expert compute per chip, the uneven AllToAll) is the
// workloads' and the engine's to simulate.
#include <cstdint>
#include <vector>

namespace podsim {

enum class RoutingKind {
  Uniform,   // every expert the same share, exactly: tokens x k / E each where it divides
  Zipf,      // expert e (0-based) drawn with weight 1 / (e + 1)^s
  Weights,   // expert e drawn with weight weights[e]
};

struct RoutingSpec {
  RoutingKind kind = RoutingKind::Uniform;
  double zipf_s = 1.0;              // Zipf's exponent (0 is uniform in expectation)
  std::vector<double> weights;      // Weights: one non-negative weight per expert, not all 0
  double capacity_factor = 0;       // <= 0: no capacity (nothing dropped)
  uint64_t seed = 1;
};

struct ExpertLoads {
  std::vector<long long> routed;    // tokens routed to each expert (before capacity)
  std::vector<long long> kept;      // tokens each expert computes (after capacity)
  long long capacity = 0;           // per expert; 0 without a capacity
  long long dropped = 0;            // routed - kept, summed
  double dropped_fraction() const;  // of all tokens x k
  long long busiest() const;        // the largest kept load
  double mean() const;              // kept load per expert
};

// The loads of one layer (`layer` and the spec's seed select the sample, so every layer and
// step differs and every run repeats). Throws std::invalid_argument for k > E, k < 1, E < 1,
// tokens < 0, or weights that do not fit the experts.
ExpertLoads route_tokens(long long tokens, int experts, int experts_per_token, const RoutingSpec& spec,
                         uint64_t layer = 0);

}  // namespace podsim
