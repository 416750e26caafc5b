#include "workloads/moe_ops.hpp"

#include <algorithm>
#include <numeric>

namespace podsim {

int emit_moe_all_to_all(ProgramBuilder& b, const std::string& name, const MoeLayerWork& w,
                        const std::vector<int>& expert_axes, double row_bytes, bool transposed,
                        std::vector<int> after, int layer, OpRole role) {
  if (w.ranks <= 1) return -1;
  std::vector<double> pairs = moe_pair_bytes(w, row_bytes, transposed);
  const double total = std::accumulate(pairs.begin(), pairs.end(), 0.0);
  const int op = b.collective(name, CollectiveKind::AllToAll, expert_axes, {}, total, std::move(after), layer, role);
  if (!w.uniform) b.op(op).collective().pair_bytes = std::move(pairs);
  return op;
}

int emit_expert_compute(ProgramBuilder& b, const std::string& name, std::vector<double> seconds_by_rank, double flops,
                        const std::vector<int>& expert_axes, std::vector<int> after, int layer, OpRole role) {
  const bool even = std::all_of(seconds_by_rank.begin(), seconds_by_rank.end(),
                                [&](double t) { return t == seconds_by_rank[0]; });
  const double mean =
      std::accumulate(seconds_by_rank.begin(), seconds_by_rank.end(), 0.0) / static_cast<double>(seconds_by_rank.size());
  const int op = b.compute(name, even ? seconds_by_rank[0] : mean, flops, std::move(after), layer, role);
  if (!even) {
    b.op(op).compute().vary_axes = expert_axes;
    b.op(op).compute().compute_s_by_position = std::move(seconds_by_rank);
  }
  return op;
}

double router_shared_input_share(const TransformerSpec& model) {
  const double router = router_params_per_layer(model);
  const double shared = model.moe->shared_experts * expert_params(model);
  const double in_projections = shared * (model.gated_mlp ? 2.0 / 3.0 : 0.5);
  return (router + in_projections) / (router + shared);
}

}  // namespace podsim
