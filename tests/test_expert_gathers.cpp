// FSDP of the routed experts (MaxText's fsdp_shard_on_exp): each MoE layer's experts gathered
// whole before its grouped matmuls, in HBM until they have computed, and their gradients until
// the ReduceScatter ends; where prefetching a layer ahead does not fit HBM the gathers run one
// at a time (training.cpp, "Gathered experts"). Expected values from the shapes: E = experts x
// 3 D F x 2 bytes per layer, the peak base + max(logits + E, (layers in flight + 1) E).
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "meshes.hpp"
#include "sim/engine/run.hpp"
#include "sim/report/training_report.hpp"
#include "workloads/model_spec.hpp"
#include "workloads/training.hpp"

using namespace podsim;

namespace {

// 4 layers (the first dense), D 1024, 8 experts of 1024 (3 D F = 3.1 M parameters each), k 2,
// vocabulary 1024.
TransformerSpec gathered_moe() {
  TransformerSpec m;
  m.name = "gathered-moe";
  m.layers = 4;
  m.d_model = 1024;
  m.d_ff = 4096;
  m.heads = 8;
  m.kv_heads = 8;
  m.head_dim = 128;
  m.vocab = 1024;   // small logits, so the experts' buffers set the peak
  m.max_sequence_length = 4096;
  m.moe = MoeSpec{8, 2, 0, 1024, 1};
  return m;
}

// FSDP over all 16 chips, no expert parallelism: every chip gathers all 8 experts a layer.
TrainingPlan fsdp_experts_plan() {
  TrainingPlan plan;
  plan.data_axes = {0, 1, 2};
  plan.fsdp = true;
  plan.global_batch_tokens = 16 * 2048.0;
  plan.sequence_length = 2048;
  return plan;
}

struct Step {
  TrainingLayout layout;
  Program program;
  TrainingReport report;
};

Step simulate(const TopologySpec& topo) {
  Step s;
  const auto model = gathered_moe();
  const auto plan = fsdp_experts_plan();
  s.program = training_program(model, plan, topo, s.layout);
  const auto run = run_program(topo, {}, s.program, {});
  s.report = training_report(TrainingWorkload{model, plan, false}, s.layout, s.program, run);
  return s;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The memory without the experts' buffers: what add_gathered_experts starts from.
double base_bytes(const MemoryBreakdown& m, double gathered_layers, double e) {
  return m.params_bytes + m.grads_bytes + m.optimizer_bytes + m.activations_bytes +
         (m.gathered_weights_bytes - gathered_layers * e) + m.ring_blocks_bytes;
}

TopologySpec with_hbm(double hbm_bytes) {
  TopologySpec topo = podsim_test::v5p_mesh({2, 2, 4});
  topo.chip.hbm_bytes = hbm_bytes;
  topo.chip.hbm_headroom = 0;
  return topo;
}

}  // namespace

TEST_CASE("gathered experts: held in HBM until they compute, their gradients until the scatter, counted in the peak",
          "[moe][training][memory]") {
  const Step s = simulate(with_hbm(1e12));
  const double e = 8 * 3.0 * 1024 * 1024 * 2;
  const MemoryBreakdown& m = s.layout.memory;
  CHECK(s.layout.moe.expert_gather_bytes == Approx(e).epsilon(1e-12));
  CHECK_FALSE(s.layout.moe.serial_expert_gathers);
  CHECK(m.unreduced_gradients_bytes == Approx(e).epsilon(1e-12));
  CHECK(m.total_bytes == Approx(base_bytes(m, 2, e) + std::max(m.logits_bytes + e, 3 * e)).epsilon(1e-12));
  int gathers = 0, scatters = 0;
  for (size_t i = 0; i < s.program.size(); ++i) {
    const ProgramOp& op = s.program[i];
    if (ends_with(op.name, ".allgather_expert_weights")) {
      ++gathers;
      CHECK(op.holds_bytes == Approx(e).epsilon(1e-12));
      REQUIRE(op.released_by.size() == 1);
      CHECK(ends_with(s.program[op.released_by[0]].name, ".experts"));
      // Prefetching: no gather waits for an experts' compute.
      for (int a : op.after) CHECK_FALSE(ends_with(s.program[a].name, ".experts"));
    }
    if (ends_with(op.name, ".reducescatter_expert_grads")) {
      ++scatters;
      CHECK(op.holds_bytes == Approx(e).epsilon(1e-12));
      CHECK(op.released_by == std::vector<int>{static_cast<int>(i)});
    }
  }
  CHECK(gathers == 3 * 2);   // three MoE layers, forward and the backward's rerun (remat: full)
  CHECK(scatters == 3);
  // The timeline reaches at least one layer's gathered experts over the state and checkpoints,
  // and stays within the bound.
  CHECK(s.report.memory_peak_bytes >= m.params_bytes + m.grads_bytes + m.optimizer_bytes + m.activations_bytes + e);
  CHECK(s.report.memory_peak_bytes <= m.total_bytes * (1 + 1e-12));
}

TEST_CASE("gathered experts: where prefetching does not fit HBM the gathers run one at a time, slower and within it",
          "[moe][training][memory]") {
  const Step roomy = simulate(with_hbm(1e12));
  const double e = roomy.layout.moe.expert_gather_bytes;
  const MemoryBreakdown& r = roomy.layout.memory;
  const double base = base_bytes(r, 2, e);
  const double one_at_a_time = base + std::max(r.logits_bytes + e, 2 * e);
  const double prefetched = base + std::max(r.logits_bytes + e, 3 * e);
  REQUIRE(one_at_a_time < prefetched);
  const Step tight = simulate(with_hbm((one_at_a_time + prefetched) / 2));
  CHECK(tight.layout.moe.serial_expert_gathers);
  CHECK(tight.layout.fits_hbm);
  CHECK(tight.layout.memory.total_bytes == Approx(one_at_a_time).epsilon(1e-12));
  // Each gather after the first waits for the experts' compute emitted before it.
  int previous_experts = -1, waiting = 0;
  for (size_t i = 0; i < tight.program.size(); ++i) {
    const ProgramOp& op = tight.program[i];
    if (ends_with(op.name, ".allgather_expert_weights") && previous_experts >= 0) {
      CHECK(std::count(op.after.begin(), op.after.end(), previous_experts) == 1);
      ++waiting;
    }
    if (ends_with(op.name, ".experts")) previous_experts = static_cast<int>(i);
  }
  CHECK(waiting == 5);
  CHECK(tight.report.step_time_s >= roomy.report.step_time_s);
  CHECK(tight.report.memory_peak_bytes <= tight.layout.memory.total_bytes * (1 + 1e-12));
  // Neither fits: not serial (nothing to gain), and reported as not fitting.
  const Step full = simulate(with_hbm(one_at_a_time * 0.9));
  CHECK_FALSE(full.layout.moe.serial_expert_gathers);
  CHECK_FALSE(full.layout.fits_hbm);
}
