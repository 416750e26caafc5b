// Attention's fixed cost a sequence (ChipSpec::attention_sequence_overhead_s, a calibration
// parameter): a paged-attention kernel walks a step's sequences one after another, each paying
// its grid step and the small DMAs its pages' prefetch does not hide, once a layer on every chip
// that attends over it.
#include <catch2/catch.hpp>

#include "meshes.hpp"
#include "scenario_errors.hpp"
#include "workloads/inference.hpp"

using namespace podsim;

namespace {
double attention_with(const TransformerSpec& model, const InferencePlan& plan, TopologySpec topo, const StepShape& shape,
                      double per_sequence_s) {
  topo.chip.attention_sequence_overhead_s = per_sequence_s;
  return chip_step_compute(model, plan, topo, shape).attention_s;
}
}  // namespace

TEST_CASE("attention pays its cost once a sequence a layer, on each chip that walks the sequence",
          "[inference][attention_sequence_overhead]") {
  const double t = 0.4e-6;
  InferencePlan plan;
  plan.model_axes = {0, 1};
  SECTION("heads over every model axis: every chip walks every sequence") {
    const auto& model = *find_model_preset("llama2-7b");   // 32 KV heads over 4 chips
    const TopologySpec topo = podsim_test::v5e_mesh({2, 2});
    for (const StepShape& shape : {decode_shape(48, 1500), prefill_shape(3, 512, 256)}) {
      INFO("decode " << shape.decode << ", " << shape.sequences << " sequences");
      CHECK(attention_with(model, plan, topo, shape, t) - attention_with(model, plan, topo, shape, 0) ==
            Approx(shape.sequences * t).epsilon(1e-9));
    }
    // The ideal machine pays none: the book's decode is unchanged.
    CHECK(attention_with(model, plan, topo, decode_shape(48, 1500), 0) ==
          chip_step_compute(model, plan, topo, decode_shape(48, 1500)).attention_s);
  }
  SECTION("a cache sharded by batch: a decoding chip walks its share of the sequences") {
    const auto& model = *find_model_preset("llama3-70b");   // 8 KV heads: 4 over X, the batch over Y's 4
    const TopologySpec topo = podsim_test::v5e_mesh({4, 4});
    REQUIRE(kv_batch_axes(model, plan, topo) == std::vector<int>{1});
    const StepShape decode = decode_shape(64, 1000);
    CHECK(attention_with(model, plan, topo, decode, t) - attention_with(model, plan, topo, decode, 0) ==
          Approx(64 / 4 * t).epsilon(1e-9));
    // A prefill replicates K and V over Y instead: every chip walks every prompt.
    const StepShape prefill = prefill_shape(4, 256, 0);
    CHECK(attention_with(model, plan, topo, prefill, t) - attention_with(model, plan, topo, prefill, 0) ==
          Approx(4 * t).epsilon(1e-9));
  }
  SECTION("2D attention and expert parallelism: a chip walks its D shard's, its group's sequences") {
    const auto& dense = *find_model_preset("llama3-8b");
    const TopologySpec topo = podsim_test::v5e_mesh({2, 4});
    InferencePlan two_d;
    two_d.model_axes = {1};
    two_d.d_axes = {0};   // X = 2: each D shard its half of the sequences
    const StepShape decode = decode_shape(32, 1000);
    CHECK(attention_with(dense, two_d, topo, decode, t) - attention_with(dense, two_d, topo, decode, 0) ==
          Approx(32 / 2 * t).epsilon(1e-9));
    TransformerSpec moe = dense;
    moe.moe = MoeSpec{8, 2, 0, 2048, 0};
    InferencePlan ep;
    ep.model_axes = {0};
    ep.expert_axes = {1};   // 4 expert-parallel groups, each its quarter of the sequences
    const StepShape prefill = prefill_shape(8, 128, 0);
    CHECK(attention_with(moe, ep, topo, prefill, t) - attention_with(moe, ep, topo, prefill, 0) ==
          Approx(8 / 4 * t).epsilon(1e-9));
  }
}

TEST_CASE("attention_sequence_overhead: an override within range, located errors",
          "[inference][attention_sequence_overhead][scenario]") {
  const std::string base = "version: 1\nhardware:\n  preset: v6e\n  overrides: {attention_sequence_overhead: \"0.4 us\"}\n"
                           "topology: {mesh: {X: 4}}\nworkload:\n  kind: collectives\n  operations:\n"
                           "    - {name: ag, kind: all_gather, axes: [X], bytes: \"1 MB\"}\n";
  CHECK(load_scenario_text(base, podsim_test::kScenarioFile).topology.chip.attention_sequence_overhead_s ==
        Approx(0.4e-6));
  podsim_test::require_error(podsim_test::replaced_in(base, "\"0.4 us\"", "\"-1 us\""),
                             "hardware.overrides.attention_sequence_overhead", "-1 us", "overrides:");
  podsim_test::require_error(podsim_test::replaced_in(base, "\"0.4 us\"", "0.4"),
                             "hardware.overrides.attention_sequence_overhead", "0.4", "overrides:");
}
