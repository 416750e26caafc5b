// The MoE layer's ops, emitted once for training and inference (workloads/moe_ops.hpp).
#include <catch2/catch.hpp>

#include <numeric>

#include "workloads/model_spec.hpp"
#include "workloads/moe_ops.hpp"

using namespace podsim;

namespace {

MoeLayerWork skewed_work(int ranks, double tokens_per_rank) {
  const TransformerSpec& model = moe_model_presets().front();
  MoeRouting routing;
  routing.spec.kind = RoutingKind::Zipf;
  routing.spec.zipf_s = 1.5;
  routing.pad_to_capacity = false;
  return moe_layer_work(model, routing, tokens_per_rank, ranks, 0, 0);
}

}  // namespace

TEST_CASE("moe ops: the AllToAll carries every pair's rows, pairs attached only when ranks differ", "[moe]") {
  const MoeLayerWork skewed = skewed_work(4, 4096);
  REQUIRE_FALSE(skewed.uniform);
  ProgramBuilder b;
  const double row_bytes = 7168 * 2.0;
  const int dispatch = emit_moe_all_to_all(b, "d", skewed, {0, 1}, row_bytes, false, {}, 3, OpRole::MoeDispatch);
  const int combine = emit_moe_all_to_all(b, "c", skewed, {0, 1}, row_bytes, true, {dispatch}, 3, OpRole::MoeCombine);
  const Program p = b.take();
  // Every row goes somewhere once and comes back once: the group's kept rows x row bytes.
  const double rows = std::accumulate(skewed.rows_per_rank.begin(), skewed.rows_per_rank.end(), 0.0);
  CHECK(p[dispatch].collective().bytes == Approx(rows * row_bytes).epsilon(1e-12));
  CHECK(p[combine].collective().bytes == Approx(rows * row_bytes).epsilon(1e-12));
  REQUIRE(p[dispatch].collective().pair_bytes.size() == 16);
  // Combine's pairs are dispatch's transposed.
  for (int r = 0; r < 4; ++r)
    for (int s = 0; s < 4; ++s)
      CHECK(p[combine].collective().pair_bytes[r * 4 + s] == p[dispatch].collective().pair_bytes[s * 4 + r]);
  CHECK(p[combine].after == std::vector<int>{dispatch});

  MoeLayerWork one = skewed;
  one.ranks = 1;
  ProgramBuilder none;
  CHECK(emit_moe_all_to_all(none, "d", one, {}, row_bytes, false, {}, 0, OpRole::MoeDispatch) == -1);
  CHECK(none.take().empty());
}

TEST_CASE("moe ops: expert compute varies by position only where the ranks' times differ", "[moe]") {
  ProgramBuilder b;
  const int even = emit_expert_compute(b, "e", {2e-3, 2e-3, 2e-3}, 1e12, {1}, {}, 0, OpRole::Experts);
  const int uneven = emit_expert_compute(b, "u", {1e-3, 4e-3, 1e-3}, 1e12, {1}, {even}, 0, OpRole::Experts);
  const Program p = b.take();
  CHECK(p[even].compute().compute_s == 2e-3);
  CHECK(p[even].compute().vary_axes.empty());
  CHECK(p[even].compute().compute_s_by_position.empty());
  CHECK(p[uneven].compute().compute_s == Approx(2e-3).epsilon(1e-15));
  CHECK(p[uneven].compute().vary_axes == std::vector<int>{1});
  CHECK(p[uneven].compute().compute_s_by_position == std::vector<double>{1e-3, 4e-3, 1e-3});
  CHECK(p[uneven].flops() == 1e12);
}

TEST_CASE("moe layer work: a rank's used experts are those with rows, all of them when padded", "[moe]") {
  const MoeLayerWork w = skewed_work(8, 0.25);   // 2 tokens: most experts get none
  const TransformerSpec& model = moe_model_presets().front();
  const int per_rank = model.moe->experts / 8;
  for (int r = 0; r < 8; ++r) {
    int used = 0;
    for (int e = r * per_rank; e < (r + 1) * per_rank; ++e) used += w.loads.kept[e] > 0;
    CHECK(w.experts_used_per_rank[r] == used);
  }
  CHECK(std::accumulate(w.experts_used_per_rank.begin(), w.experts_used_per_rank.end(), 0) < model.moe->experts);

  MoeRouting padded;
  padded.spec.capacity_factor = 1.25;
  const MoeLayerWork p = moe_layer_work(model, padded, 16, 8, 0, 0);
  for (int used : p.experts_used_per_rank) CHECK(used == per_rank);
}
