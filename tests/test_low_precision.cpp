// fp8 and int4 numerics in inference: the matmul rate a compute type takes, the bytes a cache
// dtype stores, and the chips that cannot do fp8.
#include <catch2/catch.hpp>

#include "meshes.hpp"

#include "workloads/inference.hpp"

using namespace podsim;

TEST_CASE("fp8 compute runs at the chip's fp8 rate, and a chip without one is refused", "[inference][precision]") {
  auto topo = podsim_test::v5e_mesh({2, 2});
  auto model = *find_model_preset("llama3-8b");
  InferencePlan plan;
  plan.phase = InferencePhase::Prefill;
  plan.batch = 4;
  plan.prompt_length = 4096;
  plan.model_axes = {0, 1};
  plan.weight_bytes = 1;
  plan.fp8_compute = true;
  InferenceLayout layout;
  CHECK_THROWS_WITH(inference_program(model, plan, topo, layout), Catch::Contains("no fp8 matmul rate"));
  // A chip given twice the bf16 rate for fp8: a compute-bound prefill's MLP takes half the time.
  topo.chip.fp8_flops_per_s = 2 * topo.chip.bf16_flops_per_s;
  const auto fp8 = step_compute(model, plan, topo.chip, 4, prefill_shape(4, 4096, 0));
  plan.fp8_compute = false;
  plan.weight_bytes = 2;
  const auto bf16 = step_compute(model, plan, topo.chip, 4, prefill_shape(4, 4096, 0));
  CHECK(fp8.mlp_s == Approx(bf16.mlp_s / 2).epsilon(1e-9));
}

TEST_CASE("int4 and fp8 KV caches store half a byte and one byte an element", "[inference][precision]") {
  const auto model = *find_model_preset("llama3-70b");
  // inference.md: 2 L K H elements a token: 163,840 for LLaMA-3 70B.
  CHECK(kv_cache_bytes_per_token(model, 0.5) == Approx(81920));
  CHECK(kv_cache_bytes_per_token(model, 1.0) == Approx(163840));
}
