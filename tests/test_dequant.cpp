// Weight-only quantisation's conversion cost (ChipSpec::dequant_weights_per_s, a calibration
// parameter): bf16 matmuls over int8 weights first convert each weight on the vector units, in
// line with the math; int8 x int8 matmuls and bf16 weights need no conversion.
#include <catch2/catch.hpp>

#include "meshes.hpp"
#include "scenario_errors.hpp"
#include "workloads/inference.hpp"

using namespace podsim;

TEST_CASE("int8 weights with bf16 matmuls pay weights / dequant_rate beside the math", "[calibrate][dequant]") {
  const auto& model = *find_model_preset("llama2-7b");
  TopologySpec topo = podsim_test::v5e_mesh({2, 2});
  InferencePlan plan;
  plan.model_axes = {0, 1};
  plan.weight_bytes = 1;
  const StepShape prefill = prefill_shape(4, 2048, 0);   // compute-bound: math and conversion add
  const StepCompute ideal = chip_step_compute(model, plan, topo, prefill);
  TopologySpec slow = topo;
  slow.chip.dequant_weights_per_s = 2e12;
  const StepCompute converted = chip_step_compute(model, plan, slow, prefill);
  CHECK(converted.mlp_s - ideal.mlp_s == Approx(mlp_params_per_layer(model) / 4 / 2e12).epsilon(1e-9));
  CHECK(converted.attention_s - ideal.attention_s == Approx(attention_params_per_layer(model) / 4 / 2e12).epsilon(1e-9));
  // int8 x int8 matmuls, and bf16 weights, convert nothing.
  InferencePlan int8_math = plan;
  int8_math.int8_compute = true;
  CHECK(chip_step_compute(model, int8_math, slow, prefill).mlp_s == chip_step_compute(model, int8_math, topo, prefill).mlp_s);
  InferencePlan bf16 = plan;
  bf16.weight_bytes = 2;
  CHECK(chip_step_compute(model, bf16, slow, prefill).mlp_s == chip_step_compute(model, bf16, topo, prefill).mlp_s);
  // A memory-bound decode hides a conversion faster than HBM streams the weights.
  const StepShape decode = decode_shape(1, 1024);
  CHECK(chip_step_compute(model, plan, slow, decode).mlp_s == chip_step_compute(model, plan, topo, decode).mlp_s);
}

TEST_CASE("dequant_rate: an override within range, located errors", "[calibrate][dequant][scenario]") {
  const std::string base = "version: 1\nhardware:\n  preset: v5e\n  overrides: {dequant_rate: 5e12}\n"
                           "topology: {mesh: {X: 4}}\nworkload:\n  kind: collectives\n  operations:\n"
                           "    - {name: ag, kind: all_gather, axes: [X], bytes: \"1 MB\"}\n";
  CHECK(load_scenario_text(base, podsim_test::kScenarioFile).topology.chip.dequant_weights_per_s == 5e12);
  podsim_test::require_error(podsim_test::replaced_in(base, "5e12", "-3"), "hardware.overrides.dequant_rate", "-3",
                             "overrides:");
}
