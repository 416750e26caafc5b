// The symmetry reduction on inference programs the other reduction tests do not generate: 2D
// weight-stationary sharding (parallelism.model_d), data-parallel replicas inside a slice
// (parallelism.replica) and context-parallel prefill (parallelism.context), decode and
// prefill, against the full replay chip by chip.
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "meshes.hpp"
#include "replay_equality.hpp"
#include "seeded_rng.hpp"

#include "sim/engine/run.hpp"
#include "workloads/inference.hpp"

using namespace podsim;

TEST_CASE("2D weight-stationary and replicated inference: the reduced replay equals the full one, chip by chip "
          "(generated cases)",
          "[inference][2d][replicas][generated]") {
  // PODSIM_INFERENCE_REDUCTION_CASES=<n> runs more (PODSIM_INFERENCE_REDUCTION_SEED: another seed).
  const int cases = podsim_test::env_int("PODSIM_INFERENCE_REDUCTION_CASES", 60);
  const auto seed = static_cast<uint64_t>(podsim_test::env_int("PODSIM_INFERENCE_REDUCTION_SEED", 2026112502));
  auto model = *find_model_preset("llama3-8b");   // 32 heads, 8 KV heads
  model.layers = 2;
  auto mla_model = model;   // DeepSeek-V3's attention dims on the same layer
  mla_model.attention = AttentionKind::Mla;
  mla_model.mla = MlaSpec{1536, 512, 128, 64, 128};
  int reduced_cases = 0, with_2d = 0, with_replicas = 0, with_context = 0, with_context_2d = 0, with_context_mla = 0,
      refused = 0, with_2d_overlap = 0;
  for (int c = 0; c < cases; ++c) {
    auto rng = podsim_test::case_rng(seed, c);
    // 2 or 3 axes of 2 or 4 chips, each wrapped or not (v5p links).
    std::vector<int> sizes(2 + rng.below(2));
    for (int& s : sizes) s = rng.chance(0.5) ? 2 : 4;
    auto topo = podsim_test::v5p_mesh(sizes);
    for (auto& axis : topo.axes) axis.wraparound = axis.size == 4 && rng.chance(0.6);
    // Roles: one axis of model parallelism at least; then D (2D) and replica axes from the rest.
    std::vector<int> order(sizes.size());
    std::iota(order.begin(), order.end(), 0);
    for (size_t i = order.size() - 1; i > 0; --i) std::swap(order[i], order[static_cast<size_t>(rng.below(static_cast<int>(i) + 1))]);
    InferencePlan plan;
    plan.phase = rng.chance(0.7) ? InferencePhase::Decode : InferencePhase::Prefill;
    plan.model_axes = {order[0]};
    for (size_t i = 1; i < order.size(); ++i) {
      const int role = rng.below(3);
      (role == 0 ? plan.model_axes : role == 1 ? plan.d_axes : plan.replica_axes).push_back(order[i]);
    }
    // A prefill may take a replica axis for context parallelism (ring attention) instead.
    if (plan.phase == InferencePhase::Prefill && plan.d_axes.empty() && !plan.replica_axes.empty() && rng.chance(0.6)) {
      plan.context_axis = plan.replica_axes.back();
      plan.replica_axes.pop_back();
    }
    int splits = 1;
    for (int a : plan.d_axes) splits *= sizes[a];
    for (int a : plan.replica_axes) splits *= sizes[a];
    plan.batch = splits * (1 << rng.below(4));
    plan.context_length = 256 << rng.below(3);
    plan.prompt_length = 128 << rng.below(3);
    plan.weight_bytes = rng.chance(0.5) ? 2 : 1;
    plan.collective_matmul = plan.d_axes.empty() && rng.chance(0.3);
    plan.kv_bytes = rng.chance(0.5) ? 2 : 1;
    // Drawn last, so the cases above stay as they were: a 2D prefill's replica axis for
    // context parallelism (the ring over it within each D and model group), and MLA attention.
    if (plan.phase == InferencePhase::Prefill && !plan.d_axes.empty() && !plan.replica_axes.empty() && rng.chance(0.6)) {
      plan.context_axis = plan.replica_axes.back();
      plan.replica_axes.pop_back();
    }
    const bool mla = rng.chance(0.3);
    if (!plan.d_axes.empty()) plan.collective_matmul = rng.chance(0.4);   // 2D with collective matmuls
    INFO("case " << c << ": mesh " << sizes.size() << " axes, model " << plan.model_axes.size() << ", d "
                 << plan.d_axes.size() << ", replicas " << plan.replica_axes.size() << ", context " << plan.context_axis
                 << ", batch " << plan.batch << (plan.phase == InferencePhase::Decode ? ", decode" : ", prefill")
                 << (mla ? ", MLA" : "") << (plan.collective_matmul ? ", collective matmuls" : ""));
    InferenceLayout layout;
    Program program;
    try {
      program = inference_program(mla ? mla_model : model, plan, topo, layout);
    } catch (const std::invalid_argument&) {
      ++refused;   // e.g. 16 model shards for 8 KV heads under 2D: refused with its reason
      continue;
    }
    const auto reduced = run_program(topo, {}, program, {Fidelity::Auto, false, {}});
    const auto full = run_program(topo, {}, program, {Fidelity::Full, false, {}});
    reduced_cases += reduced.simulated.chip_count() < full.simulated.chip_count();
    with_2d += !plan.d_axes.empty();
    with_replicas += !plan.replica_axes.empty();
    with_context += plan.context_axis >= 0;
    with_context_2d += plan.context_axis >= 0 && !plan.d_axes.empty();
    with_context_mla += plan.context_axis >= 0 && mla;
    with_2d_overlap += !plan.d_axes.empty() && plan.collective_matmul;
    CHECK(podsim_test::spans_differing(program, reduced, full) == 0);
    CHECK(reduced.total_time_s == Approx(full.total_time_s).epsilon(1e-9));
    CHECK(full.total_time_s > 0);
  }
  // The cases reached what they are for.
  INFO(reduced_cases << " of " << cases << " reduced, " << with_2d << " 2D, " << with_replicas << " with replicas, "
                     << with_context << " context-parallel (" << with_context_2d << " 2D, " << with_context_mla
                     << " MLA), " << with_2d_overlap << " 2D with collective matmuls, " << refused << " refused");
  CHECK(reduced_cases > 0);
  CHECK(with_2d > 0);
  CHECK(with_replicas > 0);
  CHECK(with_context > 0);
  CHECK(with_context_2d > 0);
  CHECK(with_context_mla > 0);
  CHECK(with_2d_overlap > 0);
  CHECK(refused < cases / 2);
}
