// Grouped matmuls as MaxText's dropless MoE runs them (workloads/grouped_matmul.hpp), MLA's
// attention kernels (workloads/layer_kernels.hpp), and what both do to a training step under the
// kernels compute model: tile visits from the group boundaries, whole-tile MXU work, the bytes a
// tiled grid streams, the routing gathers, MLA's head dimensions on the MXU; the scenario keys.
#include <catch2/catch.hpp>

#include <cmath>
#include <numeric>
#include <random>

#include "meshes.hpp"
#include "scenario_errors.hpp"
#include "sim/scenario/scenario.hpp"
#include "workloads/grouped_matmul.hpp"
#include "workloads/layer_kernels.hpp"
#include "workloads/model_spec.hpp"
#include "workloads/moe_training.hpp"
#include "workloads/roofline.hpp"
#include "workloads/training.hpp"

using namespace podsim;
using namespace podsim_test;

namespace {

ChipSpec kernels_chip(const char* preset) {
  ChipSpec c = *find_chip_preset(preset);
  c.mxu_padding = true;
  c.compute_model = ComputeModel::Kernels;
  return c;
}

double flops_of(const std::vector<Kernel>& kernels, KernelKind kind) {
  double sum = 0;
  for (const auto& k : kernels)
    if (k.kind == kind) sum += k.flops_per_token;
  return sum;
}

}  // namespace

TEST_CASE("grouped matmul: a group of g rows from row 0 pads to ceil(g / tm) tiles", "[grouped]") {
  for (double g : {1.0, 511.0, 512.0, 513.0, 1536.0, 4000.0})
    CHECK(group_tile_visits({g}, 512, false) == std::ceil(g / 512));
  // Three groups of 1,000 rows: rows 1000 and 2000 fall inside tiles, so the tiles holding them
  // are visited twice: ceil(3000 / 512) = 6 tiles + 2.
  CHECK(group_tile_visits({1000, 1000, 1000}, 512, false) == 8);
  // Groups of a whole number of tiles share none: 3 + 3.
  CHECK(group_tile_visits({1536, 1536}, 512, false) == 6);
  // An empty group costs nothing in gmm and one (computing nothing) in tgmm, which zeroes it.
  CHECK(group_tile_visits({512, 0, 512}, 512, false) == 2);
  CHECK(group_tile_visits({512, 0, 512}, 512, true) == 3);
}

TEST_CASE("grouped matmul: visits are the tiles the rows cover plus one per group starting inside a tile",
          "[grouped]") {
  std::mt19937_64 rng(43);
  for (int c = 0; c < 200; ++c) {
    const double tm = std::uniform_int_distribution<int>(1, 4)(rng) * 128.0;
    std::vector<double> groups(std::uniform_int_distribution<int>(1, 40)(rng));
    for (double& g : groups) g = std::uniform_int_distribution<int>(0, 3)(rng) == 0 ? 0 : std::uniform_int_distribution<int>(1, 3000)(rng);
    double start = 0, unaligned = 0, empty = 0;
    for (double g : groups) {
      if (g > 0 && std::fmod(start, tm) != 0) ++unaligned;
      if (g == 0) ++empty;
      start += g;
    }
    INFO("case " << c);
    CHECK(group_tile_visits(groups, tm, false) == std::ceil(start / tm) + unaligned);
    CHECK(group_tile_visits(groups, tm, true) == std::ceil(start / tm) + unaligned + empty);
  }
}

TEST_CASE("grouped matmul: whole tiles on the MXU, the weights streamed again per row tile when K takes several",
          "[grouped]") {
  const ChipSpec chip = kernels_chip("v5p");
  // DeepSeek-V3's up-projection: K = D 7168, N = 2048, tiles (512, 1024, 1024): 7 k tiles, 2 n.
  const std::vector<double> groups{1000, 1000, 1000};   // 8 visits (above)
  const auto w = gmm_work(groups, 3000, 7168, 2048, 512, 1024, 1024, 2, chip);
  CHECK(w.visits == 8);
  CHECK(w.useful_flops == Approx(2 * 3000.0 * 7168 * 2048));
  CHECK(w.mxu_flops == Approx(2 * 8 * 512.0 * 7168 * 2048));
  // Per visit: its [512, 7168] rows once per n tile, its group's [7168, 2048] weights; the
  // output's 3,072 padded rows written once.
  CHECK(w.bytes == Approx((8 * 512.0 * 7168 * 2 + 8 * 7168.0 * 2048 + 3072.0 * 2048) * 2));
  // One k tile covering K keeps a group's weights in VMEM across its visits: 3 reads, not 8.
  const auto one_k = gmm_work(groups, 3000, 7168, 2048, 512, 7168, 1024, 2, chip);
  CHECK(one_k.bytes == Approx((8 * 512.0 * 7168 * 2 + 3 * 7168.0 * 2048 + 3072.0 * 2048) * 2));
  // MaxText pads the rows to a multiple of tile_batch_seq, then clamps each tile to its
  // dimension (min(tile, dim)): 64 rows run one whole tile of 512, and a K of 192 runs 256 on
  // the array.
  const auto small = gmm_work({64}, 64, 192, 128, 512, 1024, 1024, 2, chip);
  CHECK(small.mxu_flops == Approx(2 * 512.0 * 256 * 128));
  // The weight gradient visits an empty group once, computing nothing; every group's [K, N]
  // gradient is written.
  const auto t = tgmm_work({1000, 0, 1000, 1000}, 7168, 2048, 512, 1024, 1024, 2, chip);
  CHECK(t.visits == 9);
  CHECK(t.mxu_flops == Approx(2 * 8 * 512.0 * 7168 * 2048));
  CHECK(t.bytes == Approx((9 * 512.0 * 7168 * 2 + 9 * 512.0 * 2048 * 7 + 4 * 7168.0 * 2048) * 2));
}

namespace {

// An MoE model of D 1024, 8 experts of 1024 (gated), k 2; attention-free so the step is its MLPs.
TransformerSpec grouped_moe() {
  TransformerSpec m;
  m.name = "grouped-moe";
  m.layers = 2;
  m.d_model = 1024;
  m.d_ff = 4096;
  m.heads = 8;
  m.kv_heads = 8;
  m.head_dim = 128;
  m.vocab = 32000;
  m.max_sequence_length = 4096;
  m.attention = AttentionKind::None;
  m.moe = MoeSpec{8, 2, 0, 1024, 0};
  return m;
}

double op_time(const Program& program, const std::string& suffix) {
  for (const auto& op : program)
    if (op.name.size() >= suffix.size() && op.name.compare(op.name.size() - suffix.size(), suffix.size(), suffix) == 0)
      return op.compute().compute_s;
  return -1;
}

}  // namespace

TEST_CASE("grouped matmul in training: a chip's experts are their tiles' rooflines and the routing gathers",
          "[grouped][moe]") {
  TopologySpec topo = v5p_mesh({1, 1, 1});
  topo.chip = kernels_chip("v5p");
  const TransformerSpec model = grouped_moe();
  TrainingPlan plan;
  plan.data_axes = {0, 1, 2};
  plan.sequence_length = 2048;
  plan.global_batch_tokens = 2048;   // one chip, T = 2048: 4,096 rows, 512 an expert (uniform)
  plan.attention_flops = false;
  TrainingLayout layout;
  const Program program = training_program(model, plan, topo, layout);
  const ChipSpec& chip = topo.chip;
  const double eff = plan.matmul_efficiency, a = 2, t = 2048, rows = t * 2, d = 1024, f = 1024;
  // 8 groups of 512 rows in tiles of 512 (one k and n tile: K and N are 1024): 8 visits, no
  // tile shared, each group's weights read once.
  auto gmm = [&](double k, double n) {
    return roofline_s(2 * rows * k * n, (8 * 512 * k + 8 * k * n + rows * n) * a, chip, eff);
  };
  const double matmuls = 2 * gmm(d, f) + gmm(f, d);
  const double activation = roofline_s(0, 3 * rows * f * a, chip, eff);
  // Permute and unpermute gathers (T k rows read and written), the weighted sum (T k read, T written).
  const double routing = 2 * roofline_s(0, 2 * rows * d * a, chip, eff) + roofline_s(0, (rows + t) * d * a, chip, eff);
  CHECK(op_time(program, "L0.mlp.fwd.experts") == Approx(matmuls + activation + routing).epsilon(1e-12));

  // A tile of 384 rows: where a group starts inside a tile that tile is visited again: the
  // groups start at multiples of 512, of which 1,536 and 3,072 are tile edges, so
  // ceil(4096 / 384) = 11 tiles + 5 unaligned starts = 16 visits against 8 of 512. The step
  // slows, the useful FLOPs stay.
  plan.routing.tiling.batch_seq = 384;
  TrainingLayout odd_layout;
  const Program odd = training_program(model, plan, topo, odd_layout);
  CHECK(group_tile_visits(std::vector<double>(8, 512), 384, false) == 16);
  CHECK(op_time(odd, "L0.mlp.fwd.experts") > op_time(program, "L0.mlp.fwd.experts"));
  CHECK(odd_layout.total_flops == Approx(layout.total_flops).epsilon(1e-15));
}

TEST_CASE("MLA kernels: the weights' FLOPs are the model's, QK^T over d_h + d_h^R and AV over v on the MXU",
          "[kernels][mla]") {
  TransformerSpec m = *find_model_preset("deepseek-v3");
  m.layers = 4;
  m.moe.reset();
  ChipSpec v5p = kernels_chip("v5p");
  v5p.mxu_padding = false;
  for (int y : {1, 8}) {
    const auto kernels = layer_kernels(m, y, 4096, 4096, v5p, {true, false, 512});
    // The latent down-projections are replicated over the tensor axis; the rest split y ways.
    const MlaSpec& a = m.mla;
    const double heads = m.heads / y;
    const double weights = 7168.0 * a.q_lora_rank + a.q_lora_rank * heads * 192 + 7168.0 * (a.kv_lora_rank + 64) +
                           a.kv_lora_rank * heads * 256 + heads * 128 * 7168;
    INFO("y " << y);
    CHECK(flops_of(kernels, KernelKind::Matmul) == Approx(2 * (weights + mlp_params_per_layer(m) / y)).epsilon(1e-12));
    // Attention without the mask: 2 S N (192 + 128), the model's count.
    CHECK(flops_of(kernels, KernelKind::Attention) ==
          Approx(attention_flops_per_token_forward(m, 4096) / m.layers / y).epsilon(1e-12));
  }
  // On the array: QK^T contracts 192 as 256 (both MXUs), AV outputs 128 as 128 on v5p, 256 on v6e.
  const double per_key = 2.0 * 4096 * 128;   // 2 S N, each key and head
  ChipSpec padded = kernels_chip("v5p");
  auto attention = [&](const ChipSpec& chip) {
    for (const auto& k : layer_kernels(m, 1, 4096, 4096, chip, {true, false, 512}))
      if (k.kind == KernelKind::Attention) return k;
    return Kernel{};
  };
  CHECK(attention(padded).flops_per_token == Approx(per_key * (256 + 128)));
  // The backward: S again, dP and dV over v, dQ and dK over qk: (3 qk + 2 v) / (qk + v).
  CHECK(attention(padded).backward_flops_factor == Approx((3 * 256.0 + 2 * 128) / (256 + 128)));
  CHECK(attention(kernels_chip("v6e")).flops_per_token == Approx(per_key * (256 + 256)));
  // Unpadded: (3 x 192 + 2 x 128) / 320.
  CHECK(attention(v5p).backward_flops_factor == Approx((3 * 192.0 + 2 * 128) / 320));
}

TEST_CASE("MLA kernels: the heads' queries, keys and values are written and read, under MaxText's names",
          "[kernels][mla]") {
  TransformerSpec m = *find_model_preset("deepseek-v3");
  m.moe.reset();
  const ChipSpec chip = kernels_chip("v5p");
  const auto kernels = layer_kernels(m, 1, 4096, 4096, chip, {true, true, 2048});
  auto find = [&](const std::string& name) {
    for (const auto& k : kernels)
      if (k.name == name) return k;
    FAIL("no kernel " << name);
    return Kernel{};
  };
  // query_proj, key_proj, value_proj and out_proj as attention_mla.py names them (:707-709, :726):
  // N (d_h + d_h^R), N (d_h + d_h^R), N v and D values a token.
  CHECK(find("query_proj").output_bytes_per_token == 128 * 192 * 2);
  CHECK(find("key_proj").output_bytes_per_token == 128 * 192 * 2);
  CHECK(find("value_proj").output_bytes_per_token == 128 * 128 * 2);
  CHECK(find("out_proj").output_bytes_per_token == 7168 * 2);
  // The attention kernel reads them; under the book's checkpoints (nothing of attention kept)
  // the whole attention block is rerun.
  CHECK(find("context").inputs == std::vector<std::string>{"query_proj", "key_proj", "value_proj"});
  const auto plan = recompute_plan(kernels, remat_policy("book"));
  for (size_t i = 0; i < kernels.size(); ++i)
    if (!kernels[i].mlp && kernels[i].name != "attn_residual") CHECK(plan[i] != 0);
}

TEST_CASE("scenario: the grouped matmuls' tiles load, and bad ones are located errors", "[grouped][errors]") {
  const std::string base = R"(version: 1
name: t
hardware: {preset: v5p, overrides: {compute_model: kernels, mxu_padding: true}}
topology: {mesh: {X: 2, Y: 2, Z: 2}}
workload:
  kind: training
  model: mixtral-8x7b
  batch_tokens: 65536
  sequence_length: 4096
  parallelism: {data: [X, Y, Z], fsdp: true, expert: [Z]}
)";
  const Scenario s =
      load_scenario_text(base + "  routing: {tile_batch_seq: 256, tile_embed_dim: 512, tile_mlp_dim: 2048}\n", kScenarioFile);
  const GroupedMatmulTiling& t = s.training().plan.routing.tiling;
  CHECK(t.batch_seq == 256);
  CHECK(t.embed_dim == 512);
  CHECK(t.mlp_dim == 2048);
  CHECK(load_scenario_text(base, kScenarioFile).training().plan.routing.tiling.batch_seq == 512);   // MaxText's defaults
  const std::string einsum = base + "  routing: {capacity_factor: 1.25, dispatch: einsum, tile_batch_seq: 256}\n";
  require_error(einsum, "workload.routing.tile_batch_seq", "256", "routing:");
  CHECK(contains(error_from(einsum).what(), "expected no tile_batch_seq with dispatch: einsum"));
  require_error(base + "  routing: {tile_mlp_dim: 0}\n", "workload.routing.tile_mlp_dim", "0", "routing:");
}
