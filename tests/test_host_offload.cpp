// Remat `offload` timed (workloads/training_pass.cpp, docs/modelling.md "Host offload"): each
// block's offloaded activations go to the host over PCIe behind its forward and come back ahead
// of its backward, one DMA stream each way; the bytes are the memory model's; the stream's rules
// hold on the timeline; a step whose PCIe keeps up equals the same step keeping the tensors in
// HBM, one whose PCIe does not shows the wait as host_offload / host_prefetch on axis "host";
// a slow chip's compute does not stretch its DMAs.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "meshes.hpp"
#include "sim/engine/run.hpp"
#include "sim/report/training_report.hpp"
#include "workloads/remat_policy.hpp"

using namespace podsim;

namespace {

TransformerSpec small_model() {
  TransformerSpec m = *find_model_preset("llama3-8b");
  m.layers = 4;
  return m;
}

// FSDP over 4 chips, 2 sequences of 2048 a chip; the attention projections, the layer input and
// the MLP's up-projection kept, on the host (`offload`) or in HBM (`device`).
TrainingPlan plan_keeping(const std::string& where, int microbatches = 1) {
  TrainingPlan p;
  p.data_axes = {0};
  p.fsdp = true;
  p.sequence_length = 2048;
  p.microbatches = microbatches;
  p.global_batch_tokens = 2048.0 * 2 * 4 * microbatches;
  p.remat = custom_remat_policy({{"query_proj", where}, {"key_proj", where}, {"value_proj", where},
                                 {"out_proj", where}, {"decoder_layer_input", where}, {"mlpwi_0", where}});
  return p;
}

TopologySpec mesh(double pcie_factor = 1.0) {
  auto topo = podsim_test::v5p_mesh({4});
  topo.chip.compute_model = ComputeModel::Kernels;
  topo.chip.pcie_bandwidth_Bps *= pcie_factor;
  return topo;
}

struct Step {
  Program program;
  TrainingLayout layout;
  RunResult run;
  TrainingReport report;
};

Step simulate(const TrainingPlan& plan, const TopologySpec& topo) {
  const auto model = small_model();
  TrainingLayout layout;
  Program program = training_program(model, plan, topo, layout);
  RunResult run = run_program(topo, {}, program, {});
  TrainingReport report = training_report(TrainingWorkload{model, plan, false}, layout, program, run);
  return Step{std::move(program), std::move(layout), std::move(run), std::move(report)};
}

int find_op(const Program& program, const std::string& name) {
  for (size_t i = 0; i < program.size(); ++i)
    if (program[i].name == name) return static_cast<int>(i);
  return -1;
}

}  // namespace

TEST_CASE("host offload: each block's DMAs move what the memory model takes out of HBM", "[training][remat][offload]") {
  const Step s = simulate(plan_keeping("offload"), mesh());
  double offloaded = 0, prefetched = 0;
  int offloads = 0, prefetches = 0;
  for (const auto& op : s.program) {
    if (!op.is(ProgramOpKind::HostTransfer)) continue;
    (op.host_transfer().to_host ? offloaded : prefetched) += op.bytes();
    (op.host_transfer().to_host ? offloads : prefetches) += 1;
    CHECK(op.role == (op.host_transfer().to_host ? OpRole::HostOffload : OpRole::HostPrefetch));
  }
  // Both blocks of each layer offload (attention's tensors and the layer input; the MLP's mlpwi_0).
  CHECK(offloads == 2 * small_model().layers);
  CHECK(prefetches == offloads);
  CHECK(offloaded == Approx(s.layout.memory.offloaded_activations_bytes).epsilon(1e-12));
  CHECK(prefetched == Approx(offloaded).epsilon(1e-12));
  // The MLP block's: mlpwi_0's output, d_ff bf16 values a token, for the chip's 4096 tokens.
  const auto& mlp = s.program.at(find_op(s.program, "L1.mlp.fwd.offload"));
  CHECK(mlp.bytes() == Approx(small_model().d_ff * 2.0 * 4096).epsilon(1e-12));
  // Each lasts its bytes over PCIe, one direction.
  const int o = find_op(s.program, "L1.attn.fwd.offload");
  REQUIRE(o >= 0);
  const auto& span = s.run.span(o, 0, 0);
  CHECK(span.end_s - span.start_s == Approx(s.program[o].bytes() / mesh().chip.pcie_bandwidth_Bps).epsilon(1e-9));
  CHECK(s.run.operations[o].traffic()->axes == std::vector<std::string>{"host"});
  // On the memory timeline: in HBM until copied out, and back from the prefetch until the
  // block's backward ends.
  CHECK(s.program[o].holds_bytes == s.program[o].bytes());
  CHECK(s.program[o].released_by == std::vector<int>{o});
  const int p = find_op(s.program, "L1.attn.bwd.prefetch");
  REQUIRE(p >= 0);
  CHECK(s.program[p].holds_bytes == s.program[o].bytes());
  REQUIRE(s.program[p].released_by.size() == 1);
  CHECK(s.program[s.program[p].released_by[0]].name.rfind("L1.attn.bwd", 0) == 0);
  CHECK(s.program[s.program[p].released_by[0]].is(ProgramOpKind::Compute));
}

TEST_CASE("host offload: the streams' rules hold on the timeline", "[training][remat][offload]") {
  // PCIe slow enough that the streams, not the compute, set the pace: every rule binds somewhere.
  for (double factor : {1.0, 0.05}) {
    INFO("PCIe x " << factor);
    const Step s = simulate(plan_keeping("offload", 2), mesh(factor));
    const auto end = [&](int op) { return s.run.span(op, 0, 0).end_s; };
    const auto start = [&](int op) { return s.run.span(op, 0, 0).start_s; };
    int last[2] = {-1, -1};
    for (size_t i = 0; i < s.program.size(); ++i) {
      const ProgramOp& op = s.program[i];
      if (!op.is(ProgramOpKind::HostTransfer)) continue;
      const int dir = op.host_transfer().to_host ? 0 : 1;
      // One DMA at a time each way, in program order.
      if (last[dir] >= 0) CHECK(start(static_cast<int>(i)) >= end(last[dir]) - 1e-12);
      last[dir] = static_cast<int>(i);
      const std::string block = op.name.substr(0, op.name.rfind(dir == 0 ? ".fwd.offload" : ".bwd.prefetch"));
      if (dir == 0) {
        // After the block's forward has produced it.
        CHECK(start(static_cast<int>(i)) >= end(find_op(s.program, block + ".fwd")) - 1e-12);
      } else {
        // After its offload; before the block's backward (its rerun first, where it has one).
        CHECK(start(static_cast<int>(i)) >= end(find_op(s.program, block + ".fwd.offload")) - 1e-12);
        const int rerun = find_op(s.program, block + ".recompute");
        const int backward = find_op(s.program, block + ".bwd");
        REQUIRE(backward >= 0);
        CHECK(end(static_cast<int>(i)) <= start(rerun >= 0 ? rerun : backward) + 1e-12);
      }
    }
    // The forward's block three on waits for the offload three blocks back (L0.attn's before L1.mlp).
    CHECK(start(find_op(s.program, "mb0.L1.mlp.fwd")) >= end(find_op(s.program, "mb0.L0.attn.fwd.offload")) - 1e-12);
  }
}

TEST_CASE("host offload: hidden while PCIe keeps up, exposed as host_offload and host_prefetch when not",
          "[training][remat][offload]") {
  const Step kept = simulate(plan_keeping("device"), mesh());
  const Step fast = simulate(plan_keeping("offload"), mesh(1e6));
  // The same compute (offload and device keep the same tensors); the DMAs take no time.
  CHECK(fast.report.step_time_s == Approx(kept.report.step_time_s).epsilon(1e-9));
  CHECK(fast.report.exposed_comm_by_category_s.count("host_offload") == 0);
  const Step slow = simulate(plan_keeping("offload"), mesh(0.02));
  double offload_s = 0;
  for (size_t i = 0; i < slow.program.size(); ++i)
    if (slow.program[i].is(ProgramOpKind::HostTransfer) && slow.program[i].host_transfer().to_host)
      offload_s += slow.run.operations[i].time_s;
  // One stream: the step lasts at least every offload end to end, and the compute units wait.
  CHECK(slow.report.step_time_s >= offload_s);
  CHECK(slow.report.step_time_s > 1.5 * kept.report.step_time_s);
  CHECK(slow.report.exposed_comm_by_axis_s.count("host") == 1);
  const auto& by = slow.report.exposed_comm_by_category_s;
  REQUIRE(by.count("host_offload") == 1);
  REQUIRE(by.count("host_prefetch") == 1);
  CHECK(by.at("host_offload") > 0);
  CHECK(by.at("host_prefetch") > 0);
  CHECK(slow.report.compute_time_s == Approx(kept.report.compute_time_s).epsilon(1e-9));
}

TEST_CASE("host offload: a slow chip's compute does not stretch its DMAs", "[training][remat][offload]") {
  auto topo = mesh();
  Perturbation slow;
  slow.name = "slow";
  slow.kind = PerturbationKind::SlowChips;
  slow.chips = {ChipBox{{{1, 1}}}};
  slow.compute_slowdown = 2.0;
  topo.perturbations = {slow};
  const Step s = simulate(plan_keeping("offload"), topo);
  const int o = find_op(s.program, "L2.attn.fwd.offload");
  const int f = find_op(s.program, "L2.attn.fwd");
  const double dma_s = s.program[o].bytes() / topo.chip.pcie_bandwidth_Bps;
  for (ChipId chip : {0, 1}) {
    const auto& span = s.run.span(o, 0, chip);
    CHECK(span.end_s - span.start_s == Approx(dma_s).epsilon(1e-9));
  }
  const auto compute = [&](ChipId chip) { return s.run.span(f, 0, chip).end_s - s.run.span(f, 0, chip).start_s; };
  CHECK(compute(1) == Approx(2 * compute(0)).epsilon(1e-9));
}

TEST_CASE("host offload in a pipeline: each stage's DMAs, queued within the pass", "[training][remat][offload][pipeline]") {
  auto topo = podsim_test::v5p_mesh({2, 2});
  topo.chip.compute_model = ComputeModel::Kernels;
  TrainingPlan plan = plan_keeping("offload", 4);
  plan.data_axes = {0};
  plan.pipeline_axis = 1;
  plan.global_batch_tokens = 2048.0 * 2 * 2 * 4;
  const Step s = simulate(plan, topo);
  int transfers = 0, checked = 0;
  for (size_t i = 0; i < s.program.size(); ++i) {
    const ProgramOp& op = s.program[i];
    if (!op.is(ProgramOpKind::HostTransfer)) continue;
    transfers += 1;
    if (op.host_transfer().to_host) continue;
    // On every chip where it runs, a prefetch ends before its block's backward starts.
    const int backward = find_op(s.program, op.name.substr(0, op.name.rfind(".prefetch")));
    REQUIRE(backward >= 0);
    for (ChipId chip = 0; chip < 4; ++chip) {
      if (!s.run.present(static_cast<int>(i), chip)) continue;
      CHECK(s.run.span(static_cast<int>(i), 0, chip).end_s <= s.run.span(backward, 0, chip).start_s + 1e-12);
      checked += 1;
    }
  }
  // A stage's chunk of two layers, two blocks each, each microbatch's offload and prefetch.
  CHECK(transfers == 2 * 2 * (small_model().layers / 2) * 4);
  CHECK(checked == 2 * 2 * 4 * 4);   // each prefetch on its stage's 2 chips
}
