// The FLOP conventions (workloads/flop_conventions.hpp) against numbers worked by hand for one
// small model, each from its source's own formula.
#include <catch2/catch.hpp>

#include "workloads/flop_conventions.hpp"

using namespace podsim;

namespace {

// L 2, D 64, F 256 (plain MLP), 4 heads of 16 (MHA), vocab 100 tied. Its parameters:
//   attention 64 x 16 x (4 + 2 x 4) + 4 x 16 x 64 = 16,384 a layer; MLP 2 x 64 x 256 = 32,768 a layer;
//   embedding (tied) 100 x 64 = 6,400; norms 2 x 2 x 64 + 64 = 320;
//   N = 2 x (16,384 + 32,768) + 6,400 + 320 = 105,024.
TransformerSpec small_model() {
  TransformerSpec m;
  m.name = "hand";
  m.layers = 2;
  m.d_model = 64;
  m.d_ff = 256;
  m.heads = 4;
  m.kv_heads = 4;
  m.head_dim = 16;
  m.vocab = 100;
  m.gated_mlp = false;
  m.tied_embeddings = true;
  return m;
}

double count(const std::string& name, const FlopCountInputs& in) {
  const FlopConvention* convention = find_flop_convention(name);
  REQUIRE(convention != nullptr);
  return convention->flops_per_chip(in);
}

}  // namespace

TEST_CASE("each FLOP convention counts a small model as its source's formula does by hand", "[flop_conventions]") {
  const TransformerSpec m = small_model();
  REQUIRE(param_count(m) == 105024);
  // S 8, 4 sequences a chip: 32 tokens.
  const FlopCountInputs in{m, 8, 32, true};
  // MaxText 2023: 6 N S B = 6 x 105,024 x 32.
  CHECK(count("maxtext-2023", in) == 20164608);
  // MaxText 76bd53b: that + 12 heads L head_dim S^2 B / 2 = 6 x 4 x 2 x 16 x 8 x 32 = 196,608.
  CHECK(count("maxtext-76bd53b", in) == 20164608 + 196608);
  // MaxText of October 2023 (the v5e table): the same attention term not halved.
  CHECK(count("maxtext-2023-10", in) == 20164608 + 2 * 196608);
  // MaxText per device: weights in matmuls 2 x (16,384 + 32,768) + 64 x 100 = 104,704, 2 FLOPs each,
  // + attention 4 S N H L = 4 x 8 x 4 x 16 x 2 = 4,096; x 3 (forward, backward) x 32 tokens.
  CHECK(count("maxtext-per-device", in) == 3 * (2 * 104704 + 4096) * 32);
  // podsim: the same terms (model_spec's training_flops_per_token), and without attention when
  // workload.attention_flops is false.
  CHECK(count("podsim", in) == 3 * (2 * 104704 + 4096) * 32);
  CHECK(count("podsim", FlopCountInputs{m, 8, 32, false}) == 3 * 2 * 104704 * 32);
}

TEST_CASE("FLOP conventions are found by name and cite a source", "[flop_conventions]") {
  CHECK(find_flop_convention("maxtext") == nullptr);
  CHECK(flop_convention_names() == "podsim, maxtext-2023, maxtext-76bd53b, maxtext-2023-10, maxtext-per-device");
  for (const auto& row : flop_conventions()) {
    INFO(row.name);
    CHECK_FALSE(row.source.empty());
    CHECK_FALSE(row.formula.empty());
  }
}

TEST_CASE("MaxText's 76bd53b count turns T1's 328 TFLOP/s/chip into its step time", "[flop_conventions]") {
  // MX23-32B (MaxText base config x 32 at 76bd53b): 32 layers, D 10240, 32 heads of 256, ReLU FFN
  // 32768, vocab 32768 tied; seq 2048, 8 sequences a chip (v5p/32b.sh). podsim's N counts two
  // RMSNorms a layer where MaxText's pytree has one plus q/k/v norm scales: 32,548,464,640
  // against MaxText's 32,548,161,536 (1e-5).
  TransformerSpec m = small_model();
  m.layers = 32;
  m.d_model = 10240;
  m.d_ff = 32768;
  m.heads = 32;
  m.kv_heads = 32;
  m.head_dim = 256;
  m.vocab = 32768;
  CHECK(param_count(m) == 32548464640.0);
  const double flops = count("maxtext-76bd53b", FlopCountInputs{m, 2048, 2048.0 * 8, true});
  // 6 N S B = 3199.6 TFLOP, + 6 x 32 x 32 x 256 x 2048^2 x 8 = 52.8 TFLOP of causal attention.
  CHECK(flops == Approx(6 * 32548464640.0 * 16384 + 6.0 * 32 * 32 * 256 * 2048.0 * 2048 * 8).epsilon(1e-15));
  CHECK(flops / 328e12 == Approx(9.916).epsilon(1e-4));
}
