// Memory as frameworks count it (Megatron's mixed precision, ZeRO stages, logits, FSDP's
// weights in flight), from the layout, against the byte counts of the papers.
#include <catch2/catch.hpp>

#include "meshes.hpp"

#include "sim/engine/run.hpp"
#include "sim/report/training_report.hpp"
#include "workloads/training.hpp"

using namespace podsim;

namespace {

TransformerSpec model_with(double master, double gradients) {
  TransformerSpec m = *find_model_preset("llama2-7b");
  m.layers = 4;
  m.master_weight_bytes_per_param = master;
  m.gradient_bytes_per_param = gradients;
  return m;
}

TrainingPlan data_plan(int zero_stage) {
  TrainingPlan plan;
  plan.data_axes = {0};
  plan.zero_stage = zero_stage;
  plan.sequence_length = 1024;
  plan.global_batch_tokens = 1024.0 * 8;
  return plan;
}

}  // namespace

TEST_CASE("Megatron's 18 bytes a parameter, and what ZeRO-1 and ZeRO-2 shard of them", "[memory]") {
  // Rajbhandari et al. 2020 (ZeRO), sec. 3 with Megatron's mixed precision: bf16 weights (2),
  // fp32 gradients (4), fp32 master weights (4) and Adam's two fp32 moments (8) = 18 B; ZeRO-1
  // shards the 12 B of optimizer state over the N_d replicas, ZeRO-2 the gradients as well.
  const auto topo = podsim_test::v5p_mesh({8});
  const auto model = model_with(4, 4);
  const double P = param_count(model);
  const double d = 8;
  const auto plain = training_layout(model, data_plan(0), topo).memory;
  CHECK(plain.params_bytes + plain.grads_bytes + plain.optimizer_bytes == Approx(18 * P));
  const auto zero1 = training_layout(model, data_plan(1), topo).memory;
  CHECK(zero1.params_bytes + zero1.grads_bytes + zero1.optimizer_bytes == Approx((2 + 4 + 12 / d) * P));
  const auto zero2 = training_layout(model, data_plan(2), topo).memory;
  CHECK(zero2.params_bytes + zero2.grads_bytes + zero2.optimizer_bytes == Approx((2 + (4 + 12) / d) * P));
  // The book's count (no master copy, bf16 gradients): 2 + 2 + 8 = 12 B.
  const auto book = training_layout(model_with(0, 0), data_plan(0), topo).memory;
  CHECK(book.params_bytes + book.grads_bytes + book.optimizer_bytes == Approx(12 * P));
}

TEST_CASE("logits and FSDP's gathered weights in flight are counted", "[memory]") {
  const auto topo = podsim_test::v5p_mesh({4, 2});
  const auto model = model_with(0, 0);
  TrainingPlan plan = data_plan(0);
  plan.fsdp = true;
  plan.tensor_axes = {1};
  plan.microbatches = 2;
  const auto layout = training_layout(model, plan, topo);
  // fp32 logits of one microbatch's tokens on a chip, the vocabulary split over TP.
  CHECK(layout.memory.logits_bytes == Approx(layout.tokens_per_microbatch * model.vocab * 4.0 / 2));
  // Three blocks' gathered weights (the one computing and two prefetched), the largest block's,
  // split over TP: the MLP's 3 D F bf16 (the output projection V D is smaller here).
  CHECK(layout.memory.gathered_weights_bytes == Approx(3 * mlp_params_per_layer(model) * 2.0 / 2));
  CHECK(layout.memory.total_bytes ==
        Approx(layout.memory.params_bytes + layout.memory.grads_bytes + layout.memory.optimizer_bytes +
               layout.memory.activations_bytes + layout.memory.logits_bytes + layout.memory.gathered_weights_bytes));
  plan.fsdp = false;
  CHECK(training_layout(model, plan, topo).memory.gathered_weights_bytes == 0);
}

TEST_CASE("ZeRO-1/2 steps: gradients reduce-scattered, the shard updated, the weights gathered back", "[memory][training]") {
  const auto topo = podsim_test::v5p_mesh({8});
  const auto model = model_with(4, 4);
  TrainingLayout dp_layout, zero_layout;
  const auto dp = training_program(model, data_plan(0), topo, dp_layout);
  const auto zero = training_program(model, data_plan(1), topo, zero_layout);
  int scatters = 0, gathers = 0, allreduces = 0;
  double zero_bytes = 0, dp_bytes = 0;
  for (const auto& op : zero) {
    scatters += op.role == OpRole::ZeroReduceScatter;
    gathers += op.role == OpRole::ZeroAllGather;
    if (op.is(ProgramOpKind::Collective)) zero_bytes += op.collective().bytes;
  }
  for (const auto& op : dp) {
    allreduces += op.role == OpRole::DataAllReduce;
    if (op.is(ProgramOpKind::Collective)) dp_bytes += op.collective().bytes;
  }
  CHECK(scatters == allreduces);
  CHECK(gathers == allreduces);
  // An AllReduce is a ReduceScatter and an AllGather of the same V (sharding.md): the same
  // traffic when both move one dtype. Here the gradients are fp32 (4 B a parameter, reduced as
  // such) and the updated weights gathered back bf16 (2 B): 6 B against the AllReduce's 4.
  CHECK(zero_bytes == Approx(1.5 * dp_bytes));
  // The optimizer touches 1/N_d of the state.
  CHECK(zero_layout.optimizer_s - topo.chip.compute_overhead_s ==
        Approx((dp_layout.optimizer_s - topo.chip.compute_overhead_s) / 8));
  // The step waits for the weights to come back: it ends after the optimizer's gathers.
  const auto run = run_program(topo, {}, zero, {});
  double optimizer_end = 0;
  for (size_t i = 0; i < zero.size(); ++i) {
    if (zero[i].name == "optimizer") optimizer_end = run.operations[i].end_s;
  }
  CHECK(run.total_time_s > optimizer_end);
  CHECK(zero_layout.strategy == "ZeRO-1");
}

namespace {

TrainingReport simulate_report(const TransformerSpec& model, const TrainingPlan& plan, const TopologySpec& topo,
                               TrainingLayout& layout) {
  const auto program = training_program(model, plan, topo, layout);
  const auto run = run_program(topo, {}, program, {});
  return training_report(TrainingWorkload{model, plan, false}, layout, program, run);
}

}  // namespace

TEST_CASE("the timeline peak: every layer's checkpoints and the logits at the turn, FSDP's gathers within their bound",
          "[memory][timeline]") {
  const auto topo = podsim_test::v5p_mesh({4, 2});
  const auto model = model_with(0, 0);
  for (int microbatches : {1, 2, 4}) {
    TrainingPlan plan = data_plan(0);
    plan.fsdp = true;
    plan.tensor_axes = {1};
    plan.microbatches = microbatches;
    plan.global_batch_tokens = 1024.0 * 4 * microbatches;
    TrainingLayout layout;
    const auto report = simulate_report(model, plan, topo, layout);
    const auto& m = layout.memory;
    const double base = m.params_bytes + m.grads_bytes + m.optimizer_bytes + m.activations_bytes + m.logits_bytes;
    INFO("M = " << microbatches << ": peak " << report.memory_peak_bytes << ", buckets " << m.total_bytes);
    // One microbatch's checkpoints are live at its turn (the next forward starts after the
    // backward), with the logits; the gathered weights add at most the in-flight bound.
    CHECK(report.memory_peak_bytes >= base * (1 - 1e-12));
    CHECK(report.memory_peak_bytes <= base + m.gathered_weights_bytes + 1e-6 * base);
    CHECK(report.memory_peak_bytes <= m.total_bytes * (1 + 1e-12));
  }
}

TEST_CASE("the timeline peak of a pipeline: 1F1B and ZB-H1 hold P microbatches on the first stage, GPipe all M",
          "[memory][timeline][pipeline]") {
  auto topo = podsim_test::v5p_mesh({4});
  auto model = model_with(0, 0);
  model.layers = 8;
  model.vocab = 256;
  for (auto schedule : {PipelineSchedule::OneFOneB, PipelineSchedule::ZeroBubbleH1, PipelineSchedule::GPipe}) {
    TrainingPlan plan;
    plan.pipeline_axis = 0;
    plan.schedule = schedule;
    plan.microbatches = 8;
    plan.sequence_length = 1024;
    plan.global_batch_tokens = 1024.0 * 2 * 8;
    TrainingLayout layout;
    const auto report = simulate_report(model, plan, topo, layout);
    const auto& m = layout.memory;
    // The buckets count the first stage's microbatches in flight (P, or M under GPipe) and the
    // timeline must reach exactly that: checkpoints and logits shares of that many passes.
    const double held = schedule == PipelineSchedule::GPipe ? 8 : 4;
    INFO(schedule_name(schedule));
    CHECK(m.logits_bytes == Approx(layout.tokens_per_microbatch * model.vocab * 4.0 * held / 4));
    CHECK(report.memory_peak_bytes == Approx(m.total_bytes));
  }
}
