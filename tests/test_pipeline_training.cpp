// Pipelines simulated: interleaved 1F1B and ZB-H1 bubbles against their papers' formulas, and
// 3D parallelism (FSDP and TP inside each stage) keeping the pipeline's shape. Communication is
// made negligible where a formula counts compute only; the pass times come from the layout.
#include <catch2/catch.hpp>

#include "meshes.hpp"
#include "replay_equality.hpp"
#include "seeded_rng.hpp"

#include "sim/engine/run.hpp"
#include "sim/report/training_report.hpp"

using namespace podsim;

namespace {

TransformerSpec pipeline_model(int layers) {
  TransformerSpec m = *find_model_preset("llama2-7b");
  m.name = "test-model";
  m.layers = layers;
  m.vocab = 256;   // keep the output projection from weighing on the stages
  return m;
}

// v5p chips whose links are so fast, with no latency, that sends and collectives take ~0.
TopologySpec free_links(std::vector<int> sizes) {
  auto topo = podsim_test::v5p_mesh(std::move(sizes));
  topo.chip.ici_bandwidth_Bps *= 1e4;
  topo.chip.hop_latency_s = 0;
  return topo;
}

struct Step {
  TrainingReport report;
  TrainingLayout layout;
  Program program;
};

Step simulate(const TransformerSpec& model, const TrainingPlan& plan, const TopologySpec& topo) {
  Step s;
  s.program = training_program(model, plan, topo, s.layout);
  const auto run = run_program(topo, {}, s.program, {});
  s.report = training_report(TrainingWorkload{model, plan, false}, s.layout, s.program, run);
  return s;
}

TrainingPlan pipeline_plan(PipelineSchedule schedule, int microbatches, int virtual_stages = 1) {
  TrainingPlan plan;
  plan.pipeline_axis = 0;
  plan.schedule = schedule;
  plan.virtual_stages = virtual_stages;
  plan.microbatches = microbatches;
  plan.sequence_length = 1024;
  plan.global_batch_tokens = 1024.0 * 2 * microbatches;
  plan.checkpointing = Checkpointing::None;
  return plan;
}

// One stage's F, B and W over a microbatch, from the blocks (the pipeline spreads the
// output projection over the stages).
struct StageTimes {
  double forward = 0, backward = 0, weight = 0;
};
StageTimes stage_times(const TrainingLayout& layout, int stages, double tokens, int tensor) {
  StageTimes t;
  for (const auto& blk : layout.blocks) {
    const double w = (2 * tokens * blk.params / tensor) / (2 * blk.forward_flops_per_chip);
    t.forward += blk.forward_s / stages;
    t.backward += (blk.backward_s * (1 - w) + blk.recompute_s) / stages;
    t.weight += blk.backward_s * w / stages;
  }
  return t;
}

}  // namespace

TEST_CASE("interleaved 1F1B: the simulated bubble is (P-1)/(vM+P-1)", "[training][pipeline]") {
  const auto topo = free_links({4});
  for (int v : {2, 4}) {
    for (int M : {4, 8}) {
      const auto step = simulate(pipeline_model(16), pipeline_plan(PipelineSchedule::Interleaved1F1B, M, v), topo);
      INFO("v=" << v << " M=" << M);
      CHECK(step.report.pipeline_bubble_fraction == Approx(3.0 / (v * M + 3)).epsilon(0.005));
      CHECK(step.layout.strategy == "PP(interleaved 1F1B v=" + std::to_string(v) + ")");
    }
  }
}

TEST_CASE("ZB-H1: the simulated bubble is (P-1)(F+B-W) over M(F+B+W) + (P-1)(F+B-W)", "[training][pipeline]") {
  const auto topo = free_links({4});
  for (int M : {4, 8, 16}) {
    const auto plan = pipeline_plan(PipelineSchedule::ZeroBubbleH1, M);
    const auto step = simulate(pipeline_model(8), plan, topo);
    const auto t = stage_times(step.layout, 4, step.layout.tokens_per_microbatch, 1);
    const double idle = 3 * (t.forward + t.backward - t.weight);
    const double busy = M * (t.forward + t.backward + t.weight);
    INFO("M=" << M << " F=" << t.forward << " B=" << t.backward << " W=" << t.weight);
    CHECK(step.report.pipeline_bubble_fraction == Approx(idle / (busy + idle)).epsilon(0.005));
    // Against 1F1B at the same M: less idle, the same work.
    const auto one_f_one_b = simulate(pipeline_model(8), pipeline_plan(PipelineSchedule::OneFOneB, M), topo);
    CHECK(step.report.step_time_s < one_f_one_b.report.step_time_s);
    CHECK(step.report.compute_time_s == Approx(one_f_one_b.report.compute_time_s).epsilon(1e-9));
  }
}

TEST_CASE("3D parallelism: FSDP and TP inside the stages keep the pipeline's shape and shard the weights", "[training][pipeline]") {
  // 4 stages over X, FSDP over Y, TP over Z. With free links the passes are compute only, so
  // the step is the schedule's (vM + P - 1)/v slots of a stage's F + B, plus the optimizer.
  const auto topo = free_links({4, 2, 2});
  const auto model = pipeline_model(16);
  for (auto [schedule, v] : {std::pair{PipelineSchedule::OneFOneB, 1}, std::pair{PipelineSchedule::Interleaved1F1B, 2}}) {
    auto plan = pipeline_plan(schedule, 8, v);
    plan.data_axes = {1};
    plan.fsdp = true;
    plan.tensor_axes = {2};
    plan.global_batch_tokens *= 2;   // two data shards
    const auto step = simulate(model, plan, topo);
    INFO(step.layout.strategy);
    CHECK(step.layout.strategy == (v == 1 ? "PP(1F1B)+FSDP+TP" : "PP(interleaved 1F1B v=2)+FSDP+TP"));
    const auto t = stage_times(step.layout, 4, step.layout.tokens_per_microbatch, 2);
    const double P = 4, M = 8;
    CHECK(step.report.step_time_s - step.layout.optimizer_s ==
          Approx((v * M + P - 1) / v * (t.forward + t.backward + t.weight)).epsilon(0.01));
    // Weights, gradients and optimizer state split 4 (stages) x 2 (FSDP) x 2 (TP) ways.
    CHECK(step.layout.memory.params_bytes == Approx(param_count(model) * model.param_bytes / 16));
    // The traffic inside the stages is there: every block's TP gather, FSDP gathers per pass.
    int tp = 0, fsdp = 0, reductions = 0;
    for (const auto& op : step.program) {
      tp += op.role == OpRole::TensorAllGather;
      fsdp += op.role == OpRole::FsdpAllGather;
      reductions += op.role == OpRole::FsdpReduceScatter;
    }
    const int blocks_per_chunk = 2 * 16 / (4 * v) + 1;   // attention, MLP per layer, and the unembedding share
    CHECK(tp == 2 * v * 8 * (blocks_per_chunk - 1));        // forward and backward, no TP for the share
    CHECK(fsdp == 2 * v * 8 * blocks_per_chunk);
    CHECK(reductions == v * blocks_per_chunk);
  }
}

TEST_CASE("impossible pipelines are refused with the reason", "[training][pipeline]") {
  const auto topo = free_links({4});
  TrainingLayout layout;
  auto plan = pipeline_plan(PipelineSchedule::Interleaved1F1B, 6, 2);
  CHECK_THROWS_WITH(training_program(pipeline_model(16), plan, topo, layout), Catch::Contains("multiple of the pipeline stages"));
  plan = pipeline_plan(PipelineSchedule::Interleaved1F1B, 8, 2);
  CHECK_THROWS_WITH(training_program(pipeline_model(6), plan, topo, layout), Catch::Contains("more stages than layers"));
}

TEST_CASE("3D pipelines: the symmetry-reduced replay equals the full one, chip by chip (generated cases)",
          "[training][pipeline][generated]") {
  // The pipeline axis is kept whole (sends, stage-dependent orders); the data and tensor axes
  // reduce. Real links here: collectives, sends round the end and prefetched gathers all take
  // time, on wrapped and unwrapped axes.
  const int cases = podsim_test::env_int("PODSIM_PIPELINE_CASES", 24);
  const PipelineSchedule schedules[] = {PipelineSchedule::GPipe, PipelineSchedule::OneFOneB,
                                        PipelineSchedule::Interleaved1F1B, PipelineSchedule::ZeroBubbleH1};
  int reduced_cases = 0;
  for (int c = 0; c < cases; ++c) {
    auto rng = podsim_test::case_rng(0x3d3d, c);
    const int P = 2 + rng.below(3);
    const auto schedule = schedules[rng.below(4)];
    const int v = schedule == PipelineSchedule::Interleaved1F1B ? 2 : 1;
    const int M = schedule == PipelineSchedule::Interleaved1F1B ? P * (1 + rng.below(2)) : 1 + rng.below(6);
    auto topo = podsim_test::v5p_mesh({P, 2 + 2 * rng.below(2), 2});
    for (auto& axis : topo.axes) axis.wraparound = rng.chance(0.5);
    auto plan = pipeline_plan(schedule, M, v);
    plan.data_axes = {1};
    plan.fsdp = rng.chance(0.5);
    plan.tensor_axes = {2};
    plan.tensor_overlap = rng.chance(0.3);
    plan.checkpointing = rng.chance(0.5) ? Checkpointing::Book : Checkpointing::None;
    plan.global_batch_tokens = 1024.0 * M * topo.axes[1].size;
    // ZeRO-1/2 in place of FSDP, and data parallelism over DCN across 2 slices, at times.
    if (!plan.fsdp && rng.chance(0.4)) plan.zero_stage = 1 + rng.below(2);
    if (rng.chance(0.3)) {
      topo.slices = 2;
      plan.dcn_data_parallel = true;
      plan.global_batch_tokens *= 2;
    }
    INFO("case " << c << ": " << schedule_name(schedule) << " P=" << P << " M=" << M << " data " << topo.axes[1].size
                 << " fsdp " << plan.fsdp << " zero " << plan.zero_stage << " slices " << topo.slices << " overlap "
                 << plan.tensor_overlap);
    // Uneven layers at times (drawn last: the cases before it keep their draws): the first
    // chunks take one more, the other stages' copies of those slots absent.
    const int extra = rng.chance(0.5) ? 1 + rng.below(P * v - 1) : 0;
    INFO("layers " << 2 * P * v + extra);
    TrainingLayout layout;
    const auto program = training_program(pipeline_model(2 * P * v + extra), plan, topo, layout);
    const auto reduced = run_program(topo, {}, program, {Fidelity::Auto, false, {}});
    const auto full = run_program(topo, {}, program, {Fidelity::Full, false, {}});
    reduced_cases += reduced.simulated.chip_count() < full.simulated.chip_count();
    CHECK(podsim_test::spans_differing(program, reduced, full) == 0);
    CHECK(full.total_time_s > 0);
  }
  CHECK(reduced_cases > 0);
}

TEST_CASE("interleaved stages over slices: the round-the-end send crosses the DCN", "[training][pipeline][dcn]") {
  auto topo = free_links({2});
  topo.slices = 4;
  topo.chip.dcn_bandwidth_per_host_Bps *= 1e4;
  topo.chip.pcie_bandwidth_Bps *= 1e4;
  const auto model = pipeline_model(16);
  auto plan = pipeline_plan(PipelineSchedule::Interleaved1F1B, 8, 2);
  plan.pipeline_axis = Topology::kSliceAxis;
  plan.data_axes = {0};
  plan.global_batch_tokens *= 2;
  const auto step = simulate(model, plan, topo);
  CHECK(step.report.pipeline_bubble_fraction == Approx(3.0 / (2 * 8 + 3)).epsilon(0.01));
}

TEST_CASE("pipelines with ZeRO-1/2: each chunk's gradients reduce-scattered, its shard updated, gathered back",
          "[training][pipeline][zero]") {
  // 2 stages over X, ZeRO over Y (4 replicas), interleaved (2 chunks a device): per chunk and
  // block, one ReduceScatter and one AllGather where plain DP has one AllReduce, the same bytes
  // each (sharding.md: AllReduce = ReduceScatter + AllGather); the optimizer touches 1/4.
  const auto topo = podsim_test::v5p_mesh({2, 4});
  const auto model = pipeline_model(8);
  auto plan = pipeline_plan(PipelineSchedule::Interleaved1F1B, 4, 2);
  plan.data_axes = {1};
  plan.global_batch_tokens = 1024.0 * 4 * 4;
  TrainingLayout dp_layout, zero_layout;
  const auto dp = training_program(model, plan, topo, dp_layout);
  plan.zero_stage = 1;
  const auto zero = training_program(model, plan, topo, zero_layout);
  int scatters = 0, gathers = 0, allreduces = 0;
  double scatter_bytes = 0, gather_bytes = 0, allreduce_bytes = 0;
  for (const auto& op : zero) {
    if (op.role == OpRole::ZeroReduceScatter) ++scatters, scatter_bytes += op.collective().bytes;
    if (op.role == OpRole::ZeroAllGather) ++gathers, gather_bytes += op.collective().bytes;
  }
  for (const auto& op : dp) {
    if (op.role == OpRole::DataAllReduce) ++allreduces, allreduce_bytes += op.collective().bytes;
  }
  CHECK(allreduces == 2 * (2 * 2 + 1));   // 2 chunks x (8 / 4 layers x (attention, MLP) + unembedding share)
  CHECK(scatters == allreduces);
  CHECK(gathers == allreduces);
  CHECK(scatter_bytes == Approx(allreduce_bytes));
  CHECK(gather_bytes == Approx(allreduce_bytes));
  CHECK(zero_layout.optimizer_s - topo.chip.compute_overhead_s ==
        Approx((dp_layout.optimizer_s - topo.chip.compute_overhead_s) / 4));
  // Memory: the stage's optimizer state over the 4 replicas (ZeRO-1), gradients too (ZeRO-2).
  CHECK(zero_layout.memory.optimizer_bytes == Approx(dp_layout.memory.optimizer_bytes / 4));
  CHECK(zero_layout.memory.grads_bytes == Approx(dp_layout.memory.grads_bytes));
  plan.zero_stage = 2;
  TrainingLayout zero2;
  training_program(model, plan, topo, zero2);
  CHECK(zero2.memory.grads_bytes == Approx(dp_layout.memory.grads_bytes / 4));
  // The step ends when the gathered weights are back, after the optimizer.
  const auto run = run_program(topo, {}, zero, {});
  double optimizer_end = 0;
  for (size_t i = 0; i < zero.size(); ++i) {
    if (zero[i].name == "optimizer") optimizer_end = run.operations[i].end_s;
  }
  CHECK(run.total_time_s > optimizer_end);
}

TEST_CASE("pipelines with data parallelism over DCN: each slice runs the pipeline, its gradients cross DCN",
          "[training][pipeline][dcn]") {
  // 4 stages over X in each of 2 slices, the batch split over the slices. With DCN ~free, the
  // step is the one-slice step of half the batch (same microbatches), and the bubble keeps
  // (P-1)/(M+P-1); with real DCN the gradients' AllReduces cross the slices and the step can
  // only grow.
  auto topo = free_links({4});
  const auto model = pipeline_model(8);
  auto plan = pipeline_plan(PipelineSchedule::OneFOneB, 8);
  const auto single = simulate(model, plan, topo);
  topo.slices = 2;
  plan.dcn_data_parallel = true;
  plan.global_batch_tokens *= 2;
  auto fast = topo;
  fast.chip.dcn_bandwidth_per_host_Bps *= 1e4;
  fast.chip.pcie_bandwidth_Bps *= 1e4;
  const auto across = simulate(model, plan, fast);
  int dcn = 0;
  for (const auto& op : across.program) dcn += op.is(ProgramOpKind::Collective) && op.collective().over_dcn;
  CHECK(dcn == 2 * 2 + 1);   // one hierarchical AllReduce per block of the stage: 8 / 4 layers x 2, + unembedding share
  CHECK(across.report.step_time_s == Approx(single.report.step_time_s).epsilon(1e-3));
  CHECK(across.report.pipeline_bubble_fraction == Approx(3.0 / (8 + 3)).epsilon(0.01));
  CHECK(across.layout.data_degree == 2);
  const auto real = simulate(model, plan, topo);
  CHECK(real.report.step_time_s >= across.report.step_time_s * (1 - 1e-9));
  // A pipeline over the slices leaves none for DCN data parallelism.
  plan.pipeline_axis = Topology::kSliceAxis;
  TrainingLayout layout;
  CHECK_THROWS_WITH(training_program(model, plan, topo, layout), Catch::Contains("leaves no slices"));
}

namespace {

// Mixtral 8x7B's shape cut to `layers` layers (every layer MoE: 8 experts, 2 a token).
TransformerSpec moe_pipeline_model(int layers) {
  TransformerSpec m = *find_model_preset("mixtral-8x7b");
  m.name = "test-moe";
  m.layers = layers;
  m.vocab = 256;
  return m;
}

}  // namespace

TEST_CASE("MoE models in pipelines: the bubble keeps its formula, the experts' traffic runs inside each pass",
          "[training][pipeline][moe]") {
  // 4 stages over X, experts over Y (4 ranks, 2 experts each), uniform routing, links ~free:
  // 1F1B's bubble is (P-1)/(M+P-1); every MoE layer of a pass dispatches and combines over Y.
  auto topo = free_links({4, 4});
  const auto model = moe_pipeline_model(8);
  for (const int M : {4, 8}) {
    auto plan = pipeline_plan(PipelineSchedule::OneFOneB, M);
    plan.data_axes = {1};
    plan.expert_axes = {1};
    plan.global_batch_tokens = 1024.0 * 4 * M;
    const auto step = simulate(model, plan, topo);
    INFO("M = " << M);
    CHECK(step.report.pipeline_bubble_fraction == Approx(3.0 / (M + 3)).epsilon(0.01));
    int dispatches = 0;
    for (const auto& op : step.program) dispatches += op.role == OpRole::MoeDispatch;
    // Per microbatch, the stage's 2 MoE layers, forward (dispatch) and backward (its mirror).
    CHECK(dispatches == M * 2 * 2);
    CHECK(step.layout.moe.expert_degree == 4);
    // The optimizer passes over what the chip holds: the params bucket's parameters (the stage's
    // dense ones and its 1/4 of the routed experts), read and written at HBM speed.
    const double local = step.layout.memory.params_bytes / model.param_bytes;
    CHECK(step.layout.optimizer_s - topo.chip.compute_overhead_s ==
          Approx(local * (3 * model.param_bytes + 2 * model.optimizer_bytes_per_param) / topo.chip.achieved_hbm_Bps()));
  }
}

TEST_CASE("ZB-H1 with an MoE model: the experts' weight gradients wait for W, the same work in a shorter step",
          "[training][pipeline][moe]") {
  // As the dense ZB-H1 test, with every layer MoE: B computes input gradients only (the
  // experts' dY W^T, the router and shared experts' B share), W the experts' X^T dY and the
  // rest. The same FLOPs as 1F1B; less idle; the expert gradients reduced after W.
  auto topo = free_links({4, 4});
  const auto model = moe_pipeline_model(8);
  for (const int M : {4, 8}) {
    auto plan = pipeline_plan(PipelineSchedule::ZeroBubbleH1, M);
    plan.data_axes = {1};
    plan.expert_axes = {1};
    plan.global_batch_tokens = 1024.0 * 4 * M;
    const auto zb = simulate(model, plan, topo);
    plan.schedule = PipelineSchedule::OneFOneB;
    const auto one_f_one_b = simulate(model, plan, topo);
    INFO("M = " << M);
    CHECK(zb.layout.total_flops == Approx(one_f_one_b.layout.total_flops).epsilon(1e-12));
    double zb_flops = 0, base_flops = 0;
    for (const auto& op : zb.program) zb_flops += op.flops();
    for (const auto& op : one_f_one_b.program) base_flops += op.flops();
    CHECK(zb_flops == Approx(base_flops).epsilon(1e-12));
    CHECK(zb.report.step_time_s < one_f_one_b.report.step_time_s);
    CHECK(zb.report.pipeline_bubble_fraction < one_f_one_b.report.pipeline_bubble_fraction);
    // Each MoE layer's W: its experts, then the router and shared experts; the last
    // microbatch's expert gradients are reduced after its experts' W.
    int expert_w = 0;
    for (const auto& op : zb.program) expert_w += op.name.find(".wgrad.experts") != std::string::npos;
    CHECK(expert_w == M * 2);
  }
}

TEST_CASE("MoE pipelines: the symmetry-reduced replay equals the full one, chip by chip (generated cases)",
          "[training][pipeline][moe][generated]") {
  // Skewed routing makes the expert compute and the AllToAll pairs differ by position along the
  // expert axis, which then stays whole; the pipeline axis is whole; the rest reduces.
  const int cases = podsim_test::env_int("PODSIM_MOE_PIPELINE_CASES", 12);
  int reduced_cases = 0, overlap_cases = 0;
  for (int c = 0; c < cases; ++c) {
    auto rng = podsim_test::case_rng(0x30e, c);
    const int P = 2 + 2 * rng.below(2);
    const int ep = rng.chance(0.5) ? 2 : 4;
    auto topo = podsim_test::v5p_mesh({P, ep, 2});
    for (auto& axis : topo.axes) axis.wraparound = rng.chance(0.5);
    const double draw = rng.uniform(0.0, 1.0);
    const auto schedule = draw < 0.35   ? PipelineSchedule::OneFOneB
                          : draw < 0.7 ? PipelineSchedule::Interleaved1F1B
                                       : PipelineSchedule::ZeroBubbleH1;
    const int v = schedule == PipelineSchedule::Interleaved1F1B ? 2 : 1;
    const int M = schedule == PipelineSchedule::Interleaved1F1B ? P : 1 + rng.below(4);
    auto plan = pipeline_plan(schedule, M, v);
    plan.data_axes = {1};
    plan.expert_axes = {1};
    if (rng.chance(0.5)) plan.tensor_axes = {2};
    else plan.data_axes.push_back(2);
    plan.fsdp = rng.chance(0.5);
    if (!plan.fsdp && rng.chance(0.5)) plan.zero_stage = 1 + rng.below(2);   // expert state sharded too
    plan.global_batch_tokens = 1024.0 * M * ep * (plan.tensor_axes.empty() ? 2 : 1);
    if (rng.chance(0.6)) {
      plan.routing.spec.kind = RoutingKind::Zipf;
      plan.routing.spec.zipf_s = rng.uniform(0.5, 1.5);
    }
    // Collective matmuls around the MoE layers (drawn last: the cases before it keep their draws).
    if (!plan.tensor_axes.empty()) plan.tensor_overlap = rng.chance(0.5);
    INFO("case " << c << ": P=" << P << " EP=" << ep << " " << schedule_name(schedule) << " M=" << M << " tp "
                 << plan.tensor_axes.size() << " overlap " << plan.tensor_overlap << " fsdp " << plan.fsdp << " zero " << plan.zero_stage << " zipf "
                 << (plan.routing.spec.kind == RoutingKind::Zipf));
    // Dense first layers and uneven layer counts at times (drawn last: the cases before keep
    // their draws): stages then hold different blocks, absent where the stage lacks them.
    auto model = moe_pipeline_model(2 * P * v + (rng.chance(0.5) ? 1 + rng.below(P * v - 1) : 0));
    if (rng.chance(0.5)) model.moe->dense_layers = 1 + rng.below(3);
    INFO("layers " << model.layers << " dense first " << model.moe->dense_layers);
    TrainingLayout layout;
    const auto program = training_program(model, plan, topo, layout);
    const auto reduced = run_program(topo, {}, program, {Fidelity::Auto, false, {}});
    const auto full = run_program(topo, {}, program, {Fidelity::Full, false, {}});
    reduced_cases += reduced.simulated.chip_count() < full.simulated.chip_count();
    overlap_cases += plan.tensor_overlap;
    CHECK(podsim_test::spans_differing(program, reduced, full) == 0);
  }
  CHECK(reduced_cases > 0);
  CHECK(overlap_cases > 0);
}
