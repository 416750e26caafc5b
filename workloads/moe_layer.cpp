#include "workloads/moe_layer.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

namespace podsim {

double MoeLayerWork::busiest_rank_rows() const {
  return rows_per_rank.empty() ? 0.0 : *std::max_element(rows_per_rank.begin(), rows_per_rank.end());
}

double MoeLayerWork::mean_rank_rows() const {
  return rows_per_rank.empty() ? 0.0
                               : std::accumulate(rows_per_rank.begin(), rows_per_rank.end(), 0.0) / rows_per_rank.size();
}

MoeLayerWork moe_layer_work(const TransformerSpec& model, const MoeRouting& routing, double tokens_per_rank, int ranks,
                            int moe_layer, int sample) {
  if (!model.moe) throw std::invalid_argument("moe_layer_work: " + model.name + " has no experts");
  const int experts = model.moe->experts;
  if (ranks < 1 || experts % ranks != 0) {
    throw std::invalid_argument(std::to_string(experts) + " experts do not split evenly over " + std::to_string(ranks) +
                                " expert-parallel chips");
  }
  MoeLayerWork work;
  work.ranks = ranks;
  const long long tokens = std::llround(tokens_per_rank * ranks);
  work.loads = route_layer(routing, tokens, experts, model.moe->experts_per_token, moe_layer, sample);
  const bool padded = routing.spec.capacity_factor > 0 && routing.pad_to_capacity;
  const int per_rank = experts / ranks;
  work.rows_per_rank.assign(ranks, 0.0);
  work.experts_used_per_rank.assign(ranks, 0);
  for (int e = 0; e < experts; ++e) {
    work.rows_per_rank[e / per_rank] += padded ? static_cast<double>(work.loads.capacity)
                                               : static_cast<double>(work.loads.kept[e]);
    work.experts_used_per_rank[e / per_rank] += padded || work.loads.kept[e] > 0;
  }
  work.pair_rows.resize(static_cast<size_t>(ranks) * ranks);
  for (int r = 0; r < ranks; ++r)
    for (int s = 0; s < ranks; ++s) work.pair_rows[r * ranks + s] = work.rows_per_rank[s] / ranks;
  work.uniform = std::all_of(work.rows_per_rank.begin(), work.rows_per_rank.end(),
                             [&](double x) { return x == work.rows_per_rank[0]; });
  return work;
}

std::vector<double> moe_pair_bytes(const MoeLayerWork& work, double row_bytes, bool transposed) {
  const int n = work.ranks;
  std::vector<double> out(static_cast<size_t>(n) * n);
  for (int r = 0; r < n; ++r)
    for (int s = 0; s < n; ++s) out[r * n + s] = (transposed ? work.pair_rows[s * n + r] : work.pair_rows[r * n + s]) * row_bytes;
  return out;
}

}  // namespace podsim
