// Per-chip training memory (workloads/memory.hpp), checked against the book's worked answers
// (training.md:L198-L200, L678-L702; book-cases.md rows 40, 52, 53). Each expectation is the
// book's arithmetic redone here; the printed figures are compared only loosely.
#include <catch2/catch.hpp>

#include <stdexcept>

#include "topology/chip_spec.hpp"
#include "workloads/memory.hpp"

using namespace podsim;

namespace {

const TransformerSpec& llama2_13b() {
  const TransformerSpec* p = find_model_preset("llama2-13b");
  REQUIRE(p != nullptr);
  return *p;
}

double v5p_hbm_bytes() {
  const ChipSpec* v5p = find_chip_preset("v5p");
  REQUIRE(v5p != nullptr);
  return v5p->hbm_bytes;
}

constexpr double kBf16 = 2;       // bytes
constexpr double kAdamFp32 = 8;   // two fp32 moments, bytes per param

}  // namespace

TEST_CASE("Case 40: largest model trainable with Adam and pure DP on a v5p", "[memory]") {
  // training.md:L198-L200: bf16 params (2) + fp32 Adam (8) = 10 B/param; HBM / 10, "~9B".
  const double hbm = v5p_hbm_bytes();
  const double max_params = max_params_pure_dp(hbm, kBf16 + kAdamFp32);
  CHECK(max_params == Approx(hbm / 10));
  CHECK(max_params > 9e9);  // "about 9B" (96e9 / 10 = 9.6e9)
  CHECK(max_params < 10e9);
  CHECK(max_params_pure_dp(hbm) == Approx(max_params));  // 10 B/param is the default
  CHECK_THROWS_AS(max_params_pure_dp(hbm, 0), std::invalid_argument);
}

TEST_CASE("Case 52: LLaMA-2 13B, 16M-token batch, Adam, 3 checkpoints per layer", "[memory]") {
  // training.md:L678-L682: (2 + 4 + 4) * 13e9 ~ 130 GB; activations 2 * L * B * (D + 2F) ~ 42 TB.
  const auto& s = llama2_13b();
  const double L = s.layers, D = s.d_model, F = s.d_ff, B = 16e6;
  const double P = param_count(s);

  const MemoryBreakdown m = training_memory_per_chip(s, ShardingDegrees{}, B, Checkpointing::Book, 1);
  CHECK(m.params_bytes == Approx(kBf16 * P));
  CHECK(m.grads_bytes == Approx(kBf16 * P));
  CHECK(m.optimizer_bytes == Approx(kAdamFp32 * P));
  CHECK(m.params_bytes + m.optimizer_bytes == Approx(10 * P));
  CHECK(m.params_bytes + m.optimizer_bytes == Approx(130e9).epsilon(0.01));  // the book's ~130 GB

  const double activations = 2 * L * B * (D + 2 * F);
  CHECK(m.activations_bytes == Approx(activations));
  CHECK(m.activations_bytes == Approx(42e12).epsilon(0.01));  // the book's ~42 TB
  CHECK(m.total_bytes ==
        Approx(m.params_bytes + m.grads_bytes + m.optimizer_bytes + m.activations_bytes));
}

TEST_CASE("Case 53: LLaMA-2 13B, 3M-token batch on a v5p 16x16x16", "[memory]") {
  // training.md:L686-L702 (book-cases.md row 53). 4096 chips, 96 GB each.
  const auto& s = llama2_13b();
  const double L = s.layers, D = s.d_model, F = s.d_ff, P = param_count(s);
  const double batch = 3e6;
  const int chips = 16 * 16 * 16;
  const double hbm = v5p_hbm_bytes();

  SECTION("(1) pure data parallelism does not fit: params + Adam alone exceed 96 GB") {
    ShardingDegrees dp;
    dp.data = chips;
    const MemoryBreakdown m =
        training_memory_per_chip(s, dp, batch / chips, Checkpointing::Book, 1);
    CHECK(m.params_bytes + m.optimizer_bytes == Approx(10 * P));  // replicated, ~130 GB
    CHECK(m.params_bytes + m.optimizer_bytes > hbm);
    CHECK_FALSE(m.fits(hbm));
  }

  SECTION("(2) FSDP over all 4096 chips fits: ~8 TB in all against 393 TB") {
    ShardingDegrees fsdp;
    fsdp.fsdp = chips;
    const double tokens_per_chip = batch / chips;
    const MemoryBreakdown m =
        training_memory_per_chip(s, fsdp, tokens_per_chip, Checkpointing::Book, 1);
    CHECK(m.params_bytes == Approx(kBf16 * P / chips));
    CHECK(m.optimizer_bytes == Approx(kAdamFp32 * P / chips));
    CHECK(m.activations_bytes == Approx(2 * L * tokens_per_chip * (D + 2 * F)));
    CHECK(m.fits(hbm));
    // The book's total: 2*L*B*(D + 2F) activations (~7.86e12) + 1.3e11 optimizer ~ 8 TB; we also
    // hold bf16 grads (2P = 0.026e12).
    const double slice_total = m.total_bytes * chips;
    CHECK(slice_total == Approx(2 * L * batch * (D + 2 * F) + 12 * P));
    CHECK(slice_total == Approx(8e12).epsilon(0.01));
    CHECK(slice_total < chips * hbm);
  }

  SECTION("(3) 1024-way FSDP x 4-way TP fits") {
    ShardingDegrees hybrid;
    hybrid.fsdp = 1024;
    hybrid.tensor = 4;
    // The 4 chips of a TP group share their tokens: the batch is split 1024 ways.
    const double tokens_per_chip = batch / hybrid.fsdp;
    const MemoryBreakdown m =
        training_memory_per_chip(s, hybrid, tokens_per_chip, Checkpointing::Book, 1);
    CHECK(m.params_bytes == Approx(kBf16 * P / chips));
    CHECK(m.optimizer_bytes == Approx(kAdamFp32 * P / chips));
    // Megatron splits the two F-sized checkpoints; the D-sized one stays whole.
    CHECK(m.activations_bytes == Approx(2 * L * tokens_per_chip * (D + 2 * F / 4)));
    CHECK(m.fits(hbm));
  }
}

TEST_CASE("Checkpointing policies", "[memory]") {
  const auto& s = llama2_13b();
  const double D = s.d_model, F = s.d_ff;
  const double NH = s.heads * s.head_dim, KH = s.kv_heads * s.head_dim;
  const double a = s.activation_bytes;

  CHECK(activation_bytes_per_token_per_layer(s, Checkpointing::Block) == Approx(a * D));
  CHECK(activation_bytes_per_token_per_layer(s, Checkpointing::Book) == Approx(a * (D + 2 * F)));
  CHECK(activation_bytes_per_token_per_layer(s, Checkpointing::None) ==
        Approx(a * (6 * D + 2 * NH + 2 * KH + 4 * F)));
  CHECK(activation_bytes_per_token_per_layer(s, Checkpointing::Block) <
        activation_bytes_per_token_per_layer(s, Checkpointing::Book));
  CHECK(activation_bytes_per_token_per_layer(s, Checkpointing::Book) <
        activation_bytes_per_token_per_layer(s, Checkpointing::None));

  SECTION("no remat is the book's ~20 D-sized tensors per layer for a plain F = 4D MHA layer") {
    // transformers.md "Gradient checkpointing": 2 * 20 * B * T * D * L bytes.
    TransformerSpec plain = s;
    plain.gated_mlp = false;
    plain.d_ff = 4 * plain.d_model;
    const double per_token = activation_bytes_per_token_per_layer(plain, Checkpointing::None);
    CHECK(per_token == Approx(a * 18 * D));  // 6D + 4D (Q, K, V, attn out) + 2 * 4D
    CHECK(per_token == Approx(a * 20 * D).epsilon(0.1));
  }

  SECTION("tensor parallelism splits the head- and F-sized tensors only") {
    const int t = 8;
    CHECK(activation_bytes_per_token_per_layer(s, Checkpointing::Block, t) == Approx(a * D));
    CHECK(activation_bytes_per_token_per_layer(s, Checkpointing::None, t) ==
          Approx(a * (6 * D + (2 * NH + 2 * KH + 4 * F) / t)));
  }
}

TEST_CASE("Pipeline stages hold ceil(L / stages) layers per microbatch in flight", "[memory]") {
  const auto& s = llama2_13b();  // 40 layers
  const double tokens = 4096, P = param_count(s);
  const double per_layer = activation_bytes_per_token_per_layer(s, Checkpointing::Block);
  ShardingDegrees pp;
  pp.pipeline = 3;  // 40 / 3 -> the fullest stage has 14 layers
  const MemoryBreakdown m = training_memory_per_chip(s, pp, tokens, Checkpointing::Block, 3);
  CHECK(m.activations_bytes == Approx(per_layer * 14 * tokens * 3));
  CHECK(m.params_bytes == Approx(kBf16 * P / 3));
}

TEST_CASE("Master weights add to the optimizer state", "[memory]") {
  TransformerSpec s = llama2_13b();
  s.master_weight_bytes_per_param = 4;  // fp32 copy
  ShardingDegrees d;
  d.fsdp = 8;
  const MemoryBreakdown m = training_memory_per_chip(s, d, 0, Checkpointing::Book, 1);
  CHECK(m.optimizer_bytes == Approx(param_count(s) * (kAdamFp32 + 4) / 8));
  CHECK(m.activations_bytes == 0);
}

TEST_CASE("Invalid memory inputs are rejected", "[memory]") {
  const auto& s = llama2_13b();
  SECTION("zero degree") {
    ShardingDegrees d;
    d.fsdp = 0;
    CHECK_THROWS_AS(training_memory_per_chip(s, d, 1, Checkpointing::Book, 1),
                    std::invalid_argument);
  }
  SECTION("negative tensor degree") {
    ShardingDegrees d;
    d.tensor = -2;
    CHECK_THROWS_AS(training_memory_per_chip(s, d, 1, Checkpointing::Book, 1),
                    std::invalid_argument);
  }
  SECTION("negative tokens") {
    CHECK_THROWS_AS(training_memory_per_chip(s, ShardingDegrees{}, -1, Checkpointing::Book, 1),
                    std::invalid_argument);
  }
  SECTION("no microbatch in flight") {
    CHECK_THROWS_AS(training_memory_per_chip(s, ShardingDegrees{}, 1, Checkpointing::Book, 0),
                    std::invalid_argument);
  }
  SECTION("invalid model") {
    TransformerSpec bad = s;
    bad.layers = 0;
    CHECK_THROWS_AS(training_memory_per_chip(bad, ShardingDegrees{}, 1, Checkpointing::Book, 1),
                    std::invalid_argument);
  }
}
