#pragma once
// How a MoE layer's tokens land on its experts (issue 11): every token picks k distinct experts
// from a routing distribution (uniform, Zipf over the experts' ranks, or given weights, e.g. a
// measured load CSV), sampled from a seed; an expert takes at most its capacity,
// ceil(capacity_factor x tokens x k / E) (Switch Transformer's capacity), and drops the rest.
// Plain C++: what the loads cost (the expert compute per chip, the uneven AllToAll) is the
// workloads' and the engine's to simulate.
#include <cstdint>
#include <vector>

#include "workloads/grouped_matmul.hpp"

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

// How a layer computes its routed experts, by MaxText's `sparse_matmul` (layers/moe.py; at
// 449b4fe5 layers/linears.py:621-735, docs/reference/tpu-recipes-runs.md 2.4):
//   Grouped: tokens sorted by expert into grouped matmuls (megablox's gmm, ragged_dot);
//   Einsum:  MaxText's dense_matmul with a capacity: a one-hot mask places each sequence's
//            tokens in every expert's C = ceil(S k / E) x capacity_factor slots, and two
//            einsums over it move them, dispatch [B,S,M] x [B,S,E,C] -> [E,B,C,M] and combine
//            back, each 2 S E C M FLOPs a sequence, real matmuls beside the experts' own.
enum class MoeDispatch { Grouped, Einsum };

// How a run routes its MoE layers: the distribution, per-layer loads read from a CSV, and
// what a capacity does (the YAML's workload.routing; docs/scenario-schema.md).
struct MoeRouting {
  RoutingSpec spec;   // kind, zipf_s, capacity_factor, seed (weights: see layer_weights)
  // kind Weights: one row of E weights per MoE layer (in layer order), or one row for them all
  // (an expert-load CSV, sim/scenario/expert_loads.hpp).
  std::vector<std::vector<double>> layer_weights;
  // Zipf: each layer ranks its experts in its own order, drawn from the seed, so the hot experts
  // differ from layer to layer (and land on different chips); false: expert 0 is hottest in all.
  bool shuffle = true;
  // With a capacity: every expert's buffer holds `capacity` tokens whatever it receives (the
  // fixed shapes of GShard and Switch on TPU: dispatch and expert compute are even, tokens past
  // the capacity dropped); false: buffers hold what is kept (dropless, uneven).
  bool pad_to_capacity = true;
  MoeDispatch dispatch = MoeDispatch::Grouped;
  // Grouped dispatch under the kernels compute model: the grouped matmuls' tiles (MaxText's
  // tile_batch_seq, tile_embed_dim, tile_mlp_dim).
  GroupedMatmulTiling tiling;
};

// The loads of MoE layer `moe_layer` (0 = the first MoE layer) in sample `sample` (a step or a
// microbatch): route_tokens with the layer's weights (shuffled Zipf ranks, or its CSV row).
ExpertLoads route_layer(const MoeRouting& routing, long long tokens, int experts, int experts_per_token,
                        int moe_layer, int sample);

// The loads of one layer (`layer` and the spec's seed select the sample, so every layer and
// step differs and every run repeats). Throws std::invalid_argument for k > E, k < 1, E < 1,
// tokens < 0, or weights that do not fit the experts.
ExpertLoads route_tokens(long long tokens, int experts, int experts_per_token, const RoutingSpec& spec,
                         uint64_t layer = 0);

}  // namespace podsim
