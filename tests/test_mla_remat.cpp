// MaxText's remat policies on an MLA layer (DeepSeek-V3): each tensor under the checkpoint name
// attention_mla.py gives it (at e591f30), what the backward reruns (what it reads and the policy
// did not keep) and what is kept, from the layer's shapes; custom's decoder_layer_input and the
// MLA names as scenario keys, with their located errors.
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "scenario_errors.hpp"
#include "sim/scenario/scenario.hpp"
#include "workloads/layer_kernels.hpp"
#include "workloads/training.hpp"

using namespace podsim;
using namespace podsim_test;

namespace {

// DeepSeek-V3's shapes with a dense MLP (the MoE layers' experts are moe_training's).
TransformerSpec dense_deepseek() {
  TransformerSpec m = *find_model_preset("deepseek-v3");
  m.layers = 4;
  m.moe.reset();
  return m;
}

ChipSpec unpadded_v5p() {
  ChipSpec c = *find_chip_preset("v5p");
  c.mxu_padding = false;
  c.compute_model = ComputeModel::Kernels;
  return c;
}

std::set<std::string> recomputed(const std::vector<Kernel>& kernels, const RematPolicy& policy) {
  const auto plan = recompute_plan(kernels, policy);
  std::set<std::string> names;
  for (size_t i = 0; i < kernels.size(); ++i)
    if (plan[i] != 0) names.insert(kernels[i].name);
  return names;
}

double recomputed_flops(const std::vector<Kernel>& kernels, const RematPolicy& policy, KernelKind kind) {
  const auto plan = recompute_plan(kernels, policy);
  double sum = 0;
  for (size_t i = 0; i < kernels.size(); ++i)
    if (plan[i] != 0 && kernels[i].kind == kind) sum += kernels[i].flops_per_token;
  return sum;
}

double attention_flops(const std::vector<Kernel>& kernels) {
  for (const auto& k : kernels)
    if (k.kind == KernelKind::Attention) return k.flops_per_token;
  return 0;
}

}  // namespace

TEST_CASE("MLA remat: the latents carry MaxText's names, each read by its norm or up-projection", "[kernels][mla][remat]") {
  const TransformerSpec m = dense_deepseek();
  const auto kernels = layer_kernels(m, 1, 4096, 4096, unpadded_v5p());
  std::set<std::string> names;
  for (const auto& k : kernels) names.insert(k.name);
  for (const char* t : {"query_wa_proj", "mla_q", "kv_wa_proj", "mla_kv", "query_proj", "key_proj", "value_proj",
                        "context", "out_proj"})
    CHECK(names.count(t) == 1);
  // Kept bytes a token: query_wa_proj and mla_q d_c' each, kv_wa_proj d_c + d_h^R, mla_kv d_c.
  const double a = m.activation_bytes;
  const MlaSpec& mla = m.mla;
  auto output = [&](const std::string& t) {
    for (const auto& k : kernels)
      if (k.name == t) return k.output_bytes_per_token;
    return -1.0;
  };
  CHECK(output("query_wa_proj") == mla.q_lora_rank * a);
  CHECK(output("mla_q") == mla.q_lora_rank * a);
  CHECK(output("kv_wa_proj") == (mla.kv_lora_rank + mla.qk_rope_head_dim) * a);
  CHECK(output("mla_kv") == mla.kv_lora_rank * a);
}

TEST_CASE("MLA remat: minimal reruns the latent down-projections, their norms and attention", "[kernels][mla][remat]") {
  const TransformerSpec m = dense_deepseek();
  const auto kernels = layer_kernels(m, 1, 4096, 4096, unpadded_v5p());
  const double d = m.d_model;
  const MlaSpec& mla = m.mla;
  // minimal keeps query_proj, key_proj, value_proj, out_proj and the MLP's names: neither latent
  // is among them, so the backward of wq_b (reading mla_q) and of wkv_b (reading mla_kv) reruns
  // wq_a and wkv_a from the (rerun) norm; the up-projections themselves are not rerun.
  const RematPolicy minimal = remat_policy("minimal");
  CHECK(recomputed(kernels, minimal) == std::set<std::string>{"attn_norm", "query_wa_proj", "mla_q", "kv_wa_proj",
                                                               "mla_kv", "context", "attn_residual", "mlp_norm",
                                                               "mlp_activation"});
  // The recomputed matmuls: 2 D (d_c' + d_c + d_h^R) a token; attention's forward once more.
  CHECK(recomputed_flops(kernels, minimal, KernelKind::Matmul) ==
        Approx(2 * d * (mla.q_lora_rank + mla.kv_lora_rank + mla.qk_rope_head_dim)));
  CHECK(recomputed_flops(kernels, minimal, KernelKind::Attention) == Approx(attention_flops(kernels)));
  // Offloading the same names reruns the same.
  CHECK(recomputed(kernels, remat_policy("minimal_offloaded")) == recomputed(kernels, minimal));
  // save_qkv_proj keeps out_proj no more: the MLP's norm reads x + out_proj, so the MLP's
  // backward reruns the output projection (from a rerun attention) before its own.
  const auto qkv = recompute_plan(kernels, remat_policy("save_qkv_proj"));
  for (size_t i = 0; i < kernels.size(); ++i)
    if (kernels[i].name == "out_proj" || kernels[i].name == "context") CHECK(qkv[i] == 2);
}

TEST_CASE("MLA remat: kept bytes are the kept tensors' shapes, the layer input offloadable", "[kernels][mla][remat]") {
  const TransformerSpec m = dense_deepseek();
  const auto kernels = layer_kernels(m, 1, 4096, 4096, unpadded_v5p());
  const double a = m.activation_bytes, d = m.d_model, f = m.d_ff, n = m.heads;
  const MlaSpec& mla = m.mla;
  const double qk = mla.qk_nope_head_dim + mla.qk_rope_head_dim, v = mla.v_head_dim;
  // minimal: the layer input, the heads' Q and K (N (d_h + d_h^R)) and V (N v), out_proj (read
  // by the rerun residual sum), both up-projections of the MLP; mlpwo's sum is read by nothing.
  const auto minimal = saved_bytes_per_token(kernels, remat_policy("minimal"), d * a);
  CHECK(minimal.device == Approx((d + 2 * n * qk + n * v + d + 2 * f) * a));
  CHECK(minimal.host == 0);
  // The latents kept instead of the heads: d_c' + d_c' + (d_c + d_h^R) + d_c a token, 11x fewer
  // than the heads' 2 N (d_h + d_h^R) + N v.
  const RematPolicy latents = custom_remat_policy({{"query_wa_proj", "device"},
                                                   {"mla_q", "device"},
                                                   {"kv_wa_proj", "device"},
                                                   {"mla_kv", "device"},
                                                   {"out_proj", "device"},
                                                   {"mlpwi_0", "device"},
                                                   {"mlpwi_1", "device"}});
  const double latent = 2.0 * mla.q_lora_rank + (mla.kv_lora_rank + mla.qk_rope_head_dim) + mla.kv_lora_rank;
  CHECK(saved_bytes_per_token(kernels, latents, d * a).device == Approx((d + latent + d + 2 * f) * a));
  // What that costs: the up-projections rerun (2 (d_c' N (d_h + d_h^R) + d_c N (d_h + v)) a token),
  // the rotary key, the concatenations and attention; the latents' projections do not.
  CHECK(recomputed(kernels, latents) == std::set<std::string>{"attn_norm", "query_up", "query_proj", "key_rope",
                                                               "kv_up", "key_proj", "value_proj", "context",
                                                               "attn_residual", "mlp_norm", "mlp_activation"});
  CHECK(recomputed_flops(kernels, latents, KernelKind::Matmul) ==
        Approx(2 * (mla.q_lora_rank * n * qk + mla.kv_lora_rank * n * (mla.qk_nope_head_dim + v))));
  // The v5p recipe's custom policy: the layer input and out_proj offloaded, D each, nothing in
  // HBM; the backward reruns every kernel of the layer but out_proj and mlpwo (its own FLOPs
  // 2 N v D and 2 F D: the MLP's norm reads x + out_proj, both kept).
  const RematPolicy recipe = custom_remat_policy({{"decoder_layer_input", "offload"}, {"out_proj", "offload"}});
  const auto saved = saved_bytes_per_token(kernels, recipe, d * a);
  CHECK(saved.device == 0);
  CHECK(saved.host == Approx(2 * d * a));
  CHECK(recipe.offloads());
  double matmuls = 0;
  for (const auto& k : kernels)
    if (k.kind == KernelKind::Matmul) matmuls += k.flops_per_token;
  CHECK(recomputed_flops(kernels, recipe, KernelKind::Matmul) == Approx(matmuls - 2 * n * v * d - 2 * f * d));
  CHECK_THROWS_AS(custom_remat_policy({{"decoder_layer_input", "remat"}}), std::invalid_argument);
}

namespace {

const std::string kDeepSeek = R"(version: 1
hardware: {preset: v5p, overrides: {compute_model: kernels, mxu_padding: true}}
topology: {mesh: {X: 2, Y: 2, Z: 2}}
workload:
  kind: training
  model: {preset: deepseek-v3, layers: 4, moe: {dense_layers: 1}}
  batch_tokens: 32768
  sequence_length: 4096
  parallelism: {data: [X, Y, Z], fsdp: true}
  routing: {dispatch: grouped}
  remat_policy: minimal
)";

TrainingLayout layout_of(const std::string& text) {
  const Scenario s = load_scenario_text(text, kScenarioFile);
  const auto& w = s.training();
  TrainingLayout layout;
  training_program(w.model, w.plan, s.topology, layout);
  return layout;
}

}  // namespace

TEST_CASE("MLA remat: every MaxText policy loads for DeepSeek-V3, and a step follows it", "[kernels][mla][remat]") {
  for (const char* policy : {"minimal", "minimal_offloaded", "minimal_with_context", "save_dot_except_mlpwi",
                             "save_dot_except_mlp", "save_dot_with_context_except_mlp", "save_qkv_proj",
                             "qkv_proj_offloaded", "save_out_proj", "full"}) {
    INFO(policy);
    const Scenario s = load_scenario_text(replaced_in(kDeepSeek, "remat_policy: minimal",
                                                      std::string("remat_policy: ") + policy), kScenarioFile);
    REQUIRE(s.training().plan.remat);
    CHECK(s.training().plan.remat->name == policy);
  }
  // minimal reruns less than full, keeps more.
  const TrainingLayout minimal = layout_of(kDeepSeek);
  const TrainingLayout full = layout_of(replaced_in(kDeepSeek, "remat_policy: minimal", "remat_policy: full"));
  CHECK(minimal.recompute_flops < full.recompute_flops);
  CHECK(minimal.memory.activations_bytes > full.memory.activations_bytes);
  // The recipe's custom policy: the layer input offloaded moves L T D a to the host (4096 tokens
  // a chip, 4 layers, D 7168, bf16).
  const std::string device = replaced_in(kDeepSeek, "remat_policy: minimal",
                                         "remat_policy: custom\n  remat: {decoder_layer_input: device}");
  const std::string offload = replaced_in(kDeepSeek, "remat_policy: minimal",
                                          "remat_policy: custom\n  remat: {decoder_layer_input: offload}");
  const TrainingLayout kept = layout_of(device), moved = layout_of(offload);
  const double layer_inputs = 4.0 * (32768 / 8) * 7168 * 2;
  CHECK(kept.memory.activations_bytes == Approx(layer_inputs));
  CHECK(moved.memory.activations_bytes == Approx(0).margin(1e-6));
  CHECK(moved.memory.offloaded_activations_bytes == Approx(layer_inputs));
  CHECK(moved.recompute_flops == Approx(kept.recompute_flops));
}

TEST_CASE("MLA remat: the latents' keys and decoder_layer_input, located errors saying why", "[kernels][mla][remat][errors]") {
  const std::string custom = replaced_in(kDeepSeek, "remat_policy: minimal", "remat_policy: custom\n  remat: {mla_q: device}");
  CHECK(load_scenario_text(custom, kScenarioFile).training().plan.remat->of("mla_q") == TensorFate::Device);
  // A layer input is where the backward's rerun starts: MaxText refuses to rematerialise it.
  const std::string remat_input = replaced_in(custom, "mla_q: device", "decoder_layer_input: remat");
  require_error(remat_input, "workload.remat.decoder_layer_input", "remat", "remat:");
  CHECK(contains(error_from(remat_input).what(), "expected device or offload"));
  // A GQA model has no latent; an MLA model without a query latent has no query_wa_proj nor mla_q.
  const std::string gqa = replaced_in(custom, "model: {preset: deepseek-v3, layers: 4, moe: {dense_layers: 1}}",
                                      "model: {preset: llama2-7b, layers: 2}");
  const std::string dense = replaced_in(gqa, "  routing: {dispatch: grouped}\n", "");
  require_error(dense, "workload.remat.mla_q", "device", "remat:");
  CHECK(contains(error_from(dense).what(), "not MLA"));
  const std::string no_q_latent =
      replaced_in(custom, "moe: {dense_layers: 1}}", "moe: {dense_layers: 1}, attention: {q_lora_rank: 0}}");
  require_error(no_q_latent, "workload.remat.mla_q", "device", "remat:");
  CHECK(contains(error_from(no_q_latent).what(), "q_lora_rank 0"));
  // kv_wa_proj and mla_kv it has.
  CHECK_NOTHROW(load_scenario_text(replaced_in(no_q_latent, "mla_q: device", "mla_kv: offload"), kScenarioFile));
}
