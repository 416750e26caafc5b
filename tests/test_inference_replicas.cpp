// Data-parallel replicas inside an inference slice (parallelism.replica).
#include <catch2/catch.hpp>

#include "meshes.hpp"

#include "sim/engine/run.hpp"
#include "workloads/inference.hpp"

using namespace podsim;

TEST_CASE("replicas inside a slice: each decodes its share as a slice of its own would", "[inference][replicas]") {
  // The batch split over Y's replicas; collectives stay on X, so the step is exactly one
  // replica's on an X-only mesh, and the slice produces the whole batch's tokens.
  auto model = *find_model_preset("llama3-8b");
  model.layers = 4;
  InferencePlan whole;
  whole.batch = 32;
  whole.context_length = 2048;
  whole.model_axes = {0};
  whole.replica_axes = {1};
  InferencePlan single = whole;
  single.batch = 8;
  single.replica_axes = {};
  const auto replicated_topo = podsim_test::v5e_mesh({4, 4});
  const auto single_topo = podsim_test::v5e_mesh({4});
  InferenceLayout replicated, alone;
  const auto program = inference_program(model, whole, replicated_topo, replicated);
  const auto one = inference_program(model, single, single_topo, alone);
  const auto run = run_program(replicated_topo, {}, program, {});
  const auto run_one = run_program(single_topo, {}, one, {});
  CHECK(run.total_time_s == Approx(run_one.total_time_s).epsilon(1e-12));
  CHECK(replicated.replicas == 4);
  CHECK(replicated.tokens == 32);
  CHECK(replicated.max_batch == 4 * alone.max_batch);
  CHECK(replicated.memory_per_chip_bytes == Approx(alone.memory_per_chip_bytes));
  whole.batch = 30;
  CHECK_THROWS_WITH(inference_program(model, whole, replicated_topo, replicated), Catch::Contains("does not split over 4 replicas"));
}
