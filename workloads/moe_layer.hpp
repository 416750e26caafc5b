#pragma once
// What one MoE layer asks of an expert-parallel group: each rank's expert rows (the tokens
// routed to the experts it holds) and what each rank sends each other at dispatch, from one
// routing sample (workloads/moe_routing.hpp). Training and inference both build their MoE
// blocks from it; the engine turns the rows into compute time per chip and the pair sizes into
// an uneven AllToAll.
//
// Experts are split over the `ranks` of the group in order, E / ranks consecutive experts each
// (as MaxText and DeepSpeed shard the expert dimension). The group's tokens are `ranks` x the
// tokens of one rank; the routing is drawn once for them, and every source rank sends each
// expert its 1/ranks share of that expert's rows (a rank's routing is a sample of the same
// router: the per-source fluctuation, ~sqrt(rows) of a binomial, is left out and named in
// docs/modelling.md). Combine sends every row back: its pair sizes are dispatch's transposed.
#include <vector>

#include "workloads/model_spec.hpp"
#include "workloads/moe_routing.hpp"

namespace podsim {

struct MoeLayerWork {
  int ranks = 1;
  std::vector<double> rows_per_rank;   // expert rows each rank computes (kept, or capacity when padded)
  std::vector<double> pair_rows;       // [r * ranks + s]: rows rank r sends rank s at dispatch
  std::vector<int> experts_used_per_rank;   // of each rank's experts, those with rows (padded buffers: all)
  bool uniform = true;                 // every rank the same rows (the symmetric AllToAll)
  ExpertLoads loads;                   // of the whole group, before and after capacity
  double busiest_rank_rows() const;
  double mean_rank_rows() const;
};

// Throws std::invalid_argument when the experts do not divide over the ranks.
MoeLayerWork moe_layer_work(const TransformerSpec& model, const MoeRouting& routing, double tokens_per_rank, int ranks,
                            int moe_layer, int sample);

// The dispatch AllToAll's pair sizes in bytes for rows of `row_bytes` (combine: transposed = true).
std::vector<double> moe_pair_bytes(const MoeLayerWork& work, double row_bytes, bool transposed);

}  // namespace podsim
