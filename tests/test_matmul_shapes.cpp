// Matmul shapes padded to the MXU (workloads/matmul_shapes.hpp): the padding factor from the
// tile rule, the blocks' shapes, and what turning it on does to training and inference steps.
#include <catch2/catch.hpp>

#include "meshes.hpp"
#include "scenario_errors.hpp"
#include "sim/scenario/scenario.hpp"
#include "workloads/inference.hpp"
#include "workloads/matmul_shapes.hpp"
#include "workloads/training.hpp"

using namespace podsim;

namespace {

ChipSpec padded(const char* preset) {
  ChipSpec chip = *find_chip_preset(preset);
  chip.mxu_padding = true;
  return chip;
}

}  // namespace

TEST_CASE("MXU padding: K and N up to the array, M up to 8 rows, off on the ideal machine", "[mxu]") {
  const ChipSpec v5e = padded("v5e");
  // LLaMA-2 7B's MLP split 16 ways: d_ff 11008 / 16 = 688 columns a chip, 768 padded.
  const auto& llama = *find_model_preset("llama2-7b");
  const auto mlp = mlp_weight_shapes(llama, llama.d_ff, 16);
  REQUIRE(mlp.size() == 3);
  CHECK(mlp[0].rows == 4096);
  CHECK(mlp[0].cols == 688);
  CHECK(mlp[2].rows == 688);
  CHECK(mxu_padding_factor(8192, mlp, v5e) == Approx(768.0 / 688.0).epsilon(1e-12));
  CHECK(mxu_padding_factor(8192, mlp, *find_chip_preset("v5e")) == 1.0);   // the preset: off
  // Rows: one decode token pads to 8.
  // (11008 = 86 x 128 and 4096 divide; only M pads.)
  CHECK(mxu_padding_factor(1, mlp_weight_shapes(llama, llama.d_ff, 1), v5e) == Approx(8.0));
  CHECK(mxu_padding_factor(1, {{4096, 4096}}, v5e) == Approx(8.0));
  // v6e's 256-wide array: 688 pads to 768 as well, 4096 x 640 to 4096 x 768.
  CHECK(mxu_padding_factor(8192, {{4096, 640}}, padded("v6e")) == Approx(768.0 / 640.0));
  CHECK(mxu_padding_factor(8192, {{4096, 640}}, v5e) == Approx(1.0));
  // Attention: KV heads fewer than the chips are one per chip; heads split, rounded up.
  const auto& l70 = *find_model_preset("llama3-70b");   // 64 heads, 8 KV heads, H 128
  const auto attn = attention_weight_shapes(l70, 16);
  REQUIRE(attn.size() == 4);
  CHECK(attn[0].cols == 4 * 128);
  CHECK(attn[1].cols == 1 * 128);
  CHECK(attn[3].rows == 4 * 128);
  // MLA: the latent down-projections stay whole; the up-projections split by head.
  const auto& v3 = *find_model_preset("deepseek-v3");
  const auto mla = attention_weight_shapes(v3, 4);
  REQUIRE(mla.size() == 5);
  CHECK(mla[0].cols == v3.mla.q_lora_rank);
  CHECK(mla[1].cols == 32.0 * (v3.mla.qk_nope_head_dim + v3.mla.qk_rope_head_dim));
}

TEST_CASE("MXU padding slows a compute-bound training block by its padding, and only that block", "[mxu][training]") {
  // LLaMA-2 7B, TP over a 16-ring of v5p: the MLP's 688 columns pad to 768; attention's 256
  // (2 heads of 128) and the unembedding's 2000 (32000 / 16, padded to 2048) as they are.
  TopologySpec topo = podsim_test::v5p_mesh({16});
  TrainingPlan plan;
  plan.tensor_axes = {0};
  plan.sequence_length = 2048;
  plan.global_batch_tokens = 16 * 2048;
  plan.checkpointing = Checkpointing::None;
  const auto& model = *find_model_preset("llama2-7b");
  TrainingLayout ideal_layout, padded_layout;
  training_program(model, plan, topo, ideal_layout);
  topo.chip.mxu_padding = true;
  training_program(model, plan, topo, padded_layout);
  auto block = [](const TrainingLayout& l, const std::string& name) {
    for (const auto& b : l.blocks)
      if (b.name == name) return b;
    FAIL("no block " << name);
    return TrainingBlock{};
  };
  const auto mlp_ideal = block(ideal_layout, "L3.mlp"), mlp_padded = block(padded_layout, "L3.mlp");
  // Compute-bound (32k tokens): time scales with the padded FLOPs; model FLOPs do not change.
  CHECK(mlp_padded.forward_s / mlp_ideal.forward_s == Approx(768.0 / 688.0).epsilon(1e-9));
  CHECK(mlp_padded.backward_s / mlp_ideal.backward_s == Approx(768.0 / 688.0).epsilon(1e-9));
  CHECK(mlp_padded.forward_flops_per_chip == mlp_ideal.forward_flops_per_chip);
  CHECK(padded_layout.total_flops == ideal_layout.total_flops);
  CHECK(block(padded_layout, "L3.attn").forward_s == Approx(block(ideal_layout, "L3.attn").forward_s).epsilon(1e-12));
  CHECK(block(padded_layout, "unembed").forward_s / block(ideal_layout, "unembed").forward_s ==
        Approx(2048.0 / 2000.0).epsilon(1e-9));
}

TEST_CASE("MXU padding leaves a memory-bound decode step alone and slows a prefill", "[mxu][inference]") {
  TopologySpec topo = podsim_test::v5e_mesh({4, 4});
  const auto& model = *find_model_preset("llama2-7b");
  InferencePlan plan;
  plan.model_axes = {0, 1};
  TopologySpec padded_topo = topo;
  padded_topo.chip.mxu_padding = true;
  // Decode of 4 sequences: 4 rows pad to 8, 2x the math, still far under the weights' reads.
  const StepShape decode = decode_shape(4, 1024);
  const auto a = chip_step_compute(model, plan, topo, decode), b = chip_step_compute(model, plan, padded_topo, decode);
  CHECK(b.mlp_s == a.mlp_s);
  CHECK(b.attention_s == a.attention_s);
  // A prefill of 8 x 2048 tokens is compute-bound: the MLP's 688 columns cost 768.
  const StepShape prefill = prefill_shape(8, 2048, 0);
  const auto c = chip_step_compute(model, plan, topo, prefill), d = chip_step_compute(model, plan, padded_topo, prefill);
  CHECK(d.mlp_s / c.mlp_s == Approx(768.0 / 688.0).epsilon(1e-9));
  CHECK(d.mlp_flops == c.mlp_flops);
}

TEST_CASE("mxu_padding: an override, a profile's key, and located errors", "[mxu][scenario]") {
  const std::string base = "version: 1\nhardware:\n  preset: v5e\n  profile: ideal\n  overrides: {mxu_padding: true}\ntopology: {mesh: {X: 4}}\n"
                           "workload:\n  kind: collectives\n  operations:\n    - {name: ag, kind: all_gather, axes: [X], bytes: \"1 MB\"}\n";
  CHECK(load_scenario_text(base, podsim_test::kScenarioFile).topology.chip.mxu_padding);
  CHECK_FALSE(load_scenario_text(podsim_test::replaced_in(base, "  overrides: {mxu_padding: true}\n", ""),
                                 podsim_test::kScenarioFile)
                  .topology.chip.mxu_padding);
  // Without a profile, v5e's built-in one pads (the real chip does); an override still wins.
  const std::string real = podsim_test::replaced_in(base, "  profile: ideal\n", "");
  CHECK(load_scenario_text(podsim_test::replaced_in(real, "  overrides: {mxu_padding: true}\n", ""),
                           podsim_test::kScenarioFile).topology.chip.mxu_padding);
  CHECK_FALSE(load_scenario_text(podsim_test::replaced_in(real, "{mxu_padding: true}", "{mxu_padding: false}"),
                                 podsim_test::kScenarioFile).topology.chip.mxu_padding);
  const std::string bad = podsim_test::replaced_in(base, "{mxu_padding: true}", "{mxu_padding: sometimes}");
  podsim_test::require_error(bad, "hardware.overrides.mxu_padding", "sometimes", "overrides:");
}
