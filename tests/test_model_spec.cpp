// Transformer parameter and FLOP counts (workloads/model_spec.hpp). Expectations are built from
// the book's formulas (transformers.md; training.md:L653-L674, book-cases.md row 51) and the
// published model sizes; printed numbers are compared only loosely.
#include <catch2/catch.hpp>

#include <stdexcept>

#include "workloads/model_spec.hpp"

using namespace podsim;

namespace {

const TransformerSpec& preset(const char* name) {
  const TransformerSpec* p = find_model_preset(name);
  REQUIRE(p != nullptr);
  return *p;
}

}  // namespace

TEST_CASE("LLaMA-2 13B parameter count matches the book's breakdown", "[model]") {
  // training.md:L653-L674 (book-cases.md row 51): FFW 3LDF, attention 4DNHL, vocab 2VD.
  const auto& s = preset("llama2-13b");
  const double L = 40, D = 5120, F = 13824, N = 40, H = 128, V = 32000;

  const double ffw = 3 * L * D * F;
  const double attention = 4 * D * N * H * L;
  const double vocab = 2 * V * D;
  CHECK(L * mlp_params_per_layer(s) == Approx(ffw));
  CHECK(L * attention_params_per_layer(s) == Approx(attention));
  CHECK(embedding_params(s) == Approx(vocab));

  // The book's rounded figures: FFW 8.5e9, attention 4.2e9, vocab 0.33e9, total 13.0e9.
  CHECK(ffw == Approx(8.49e9).epsilon(0.01));
  CHECK(attention == Approx(4.19e9).epsilon(0.01));
  CHECK(vocab == Approx(0.33e9).epsilon(0.01));
  CHECK(param_count(s) == Approx(ffw + attention + vocab).epsilon(1e-4));  // norms are ~0.0003%
  CHECK(param_count(s) == Approx(13.0e9).epsilon(0.01));
}

TEST_CASE("GQA attention parameters shrink only the K and V projections", "[model]") {
  const auto& s = preset("llama3-70b");
  const double D = 8192, N = 64, K = 8, H = 128;
  // W_Q and W_O are D*N*H each; W_K and W_V are D*K*H each.
  CHECK(attention_params_per_layer(s) == Approx(2 * D * N * H + 2 * D * K * H));

  TransformerSpec mha = s;
  mha.kv_heads = mha.heads;
  CHECK(attention_params_per_layer(mha) == Approx(4 * D * N * H));  // the book's 4DNH
}

TEST_CASE("Published model sizes", "[model]") {
  // Nominal sizes from the model cards (LLaMA-2: 6.7B for "7B"; Llama 3: 8.0B, 70.6B, 405B).
  CHECK(param_count(preset("llama2-7b")) == Approx(6.7e9).epsilon(0.02));
  CHECK(param_count(preset("llama2-13b")) == Approx(13.0e9).epsilon(0.02));
  CHECK(param_count(preset("llama2-70b")) == Approx(69.0e9).epsilon(0.02));
  CHECK(param_count(preset("llama3-8b")) == Approx(8.0e9).epsilon(0.02));
  CHECK(param_count(preset("llama3-70b")) == Approx(70.6e9).epsilon(0.02));
  CHECK(param_count(preset("llama3-405b")) == Approx(405e9).epsilon(0.02));
}

TEST_CASE("Each preset's total is the sum of its parts", "[model]") {
  for (const auto& s : model_presets()) {
    INFO(s.name);
    CHECK_NOTHROW(validate_transformer_spec(s));
    const double L = s.layers, D = s.d_model;
    const double expected = L * (attention_params_per_layer(s) + mlp_params_per_layer(s)) +
                            embedding_params(s) + (2 * L * D + D);
    CHECK(param_count(s) == Approx(expected));
    CHECK(s.d_model == s.heads * s.head_dim);
  }
}

TEST_CASE("Preset lookup", "[model]") {
  REQUIRE(find_model_preset("llama3-8b") != nullptr);
  CHECK(find_model_preset("llama3-8b")->max_sequence_length == 8192);
  CHECK(find_model_preset("llama2-7b")->max_sequence_length == 4096);
  CHECK(find_model_preset("gpt-5") == nullptr);
  CHECK(find_model_preset("") == nullptr);
}

TEST_CASE("Tied embeddings count the [V, D] matrix once but still pay for the output matmul",
          "[model]") {
  TransformerSpec s = preset("llama3-8b");
  const double V = s.vocab, D = s.d_model;
  const double untied_params = param_count(s);
  const double untied_flops = matmul_flops_per_token_forward(s);
  s.tied_embeddings = true;
  CHECK(embedding_params(s) == Approx(V * D));
  CHECK(param_count(s) == Approx(untied_params - V * D));
  CHECK(matmul_flops_per_token_forward(s) == Approx(untied_flops));
}

TEST_CASE("Plain (non-gated) MLP has 2DF weights", "[model]") {
  TransformerSpec s = preset("llama2-7b");
  s.gated_mlp = false;
  CHECK(mlp_params_per_layer(s) == Approx(2.0 * s.d_model * s.d_ff));
}

TEST_CASE("Training FLOPs per token are about 6P without attention", "[model]") {
  // transformers.md: 2 FLOPs per weight forward, 4 backward -> 6 * params * tokens.
  for (const auto& s : model_presets()) {
    INFO(s.name);
    const double L = s.layers, V = s.vocab, D = s.d_model;
    // Everything but the input embedding lookup and the (elementwise) norms is a matmul.
    const double matmul_weights = param_count(s) - V * D - (2 * L * D + D);
    CHECK(matmul_flops_per_token_forward(s) == Approx(2 * matmul_weights));
    CHECK(training_flops_per_token(s, 4096, false) == Approx(6 * matmul_weights));
    // The input embedding is < 7% of any preset (largest: llama3-8b, 0.53e9 of 8.0e9 = 6.5%).
    CHECK(training_flops_per_token(s, 4096, false) == Approx(6 * param_count(s)).epsilon(0.07));
  }
  // For the book's 13B the 6P rule is good to ~1.3% (vocab input is 0.16e9 of 13e9).
  const auto& s13 = preset("llama2-13b");
  CHECK(training_flops_per_token(s13, 4096, false) == Approx(6 * param_count(s13)).epsilon(0.015));
}

TEST_CASE("Dot-product attention FLOPs follow the book's 12BT^2NH convention", "[model]") {
  const auto& s = preset("llama3-70b");
  const double T = 8192, L = s.layers, N = s.heads, H = s.head_dim;
  // transformers.md: training 12BT^2NH per layer = 12*T*N*H per token per layer; forward is 1/3.
  CHECK(attention_flops_per_token_forward(s, T) == Approx(4 * T * N * H * L));
  CHECK(attention_flops_per_token_forward(s, T, true) == Approx(2 * T * N * H * L));
  CHECK(training_flops_per_token(s, T, true) ==
        Approx(training_flops_per_token(s, T, false) + 12 * T * N * H * L));
  CHECK(attention_flops_per_token_forward(s, 0) == 0);
  CHECK_THROWS_AS(attention_flops_per_token_forward(s, -1), std::invalid_argument);
}

TEST_CASE("Attention / matmul FLOPs = T / 8D for F = 4D, D = NH", "[model]") {
  // transformers.md "Fractional cost of attention": 12BT^2NH / (18BTDF + 24BTDNH) = T / (8D),
  // with the book's 3DF MLP and no vocabulary.
  TransformerSpec s;
  s.name = "ratio";
  s.layers = 4;
  s.d_model = 1024;
  s.d_ff = 4 * 1024;
  s.heads = s.kv_heads = 8;
  s.head_dim = 128;
  s.vocab = 0;
  const double T = 16384;
  const double attention = training_flops_per_token(s, T, true) - training_flops_per_token(s, T, false);
  CHECK(attention / training_flops_per_token(s, T, false) == Approx(T / (8.0 * s.d_model)));
}

TEST_CASE("Invalid specs are rejected", "[model]") {
  const TransformerSpec good = *find_model_preset("llama2-13b");
  SECTION("zero layers") {
    TransformerSpec s = good;
    s.layers = 0;
    CHECK_THROWS_AS(validate_transformer_spec(s), std::invalid_argument);
  }
  SECTION("negative d_model") {
    TransformerSpec s = good;
    s.d_model = -1;
    CHECK_THROWS_AS(validate_transformer_spec(s), std::invalid_argument);
  }
  SECTION("heads not a multiple of kv_heads") {
    TransformerSpec s = good;
    s.kv_heads = 7;
    CHECK_THROWS_AS(validate_transformer_spec(s), std::invalid_argument);
  }
  SECTION("negative byte size") {
    TransformerSpec s = good;
    s.optimizer_bytes_per_param = -8;
    CHECK_THROWS_AS(validate_transformer_spec(s), std::invalid_argument);
  }
}
