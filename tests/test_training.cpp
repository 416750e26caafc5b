// Training steps against the book's closed forms (training.md); every expectation is derived
// from the formula, the simulation decides what overlaps.
#include <catch2/catch.hpp>

#include "meshes.hpp"

#include "sim/engine/run.hpp"
#include "sim/report/training_report.hpp"

using namespace podsim;

namespace {

using podsim_test::v5p_mesh;

// A small dense model whose blocks all have F = 4D: few layers keep the tests fast.
TransformerSpec small_model(int layers = 4) {
  TransformerSpec m = *find_model_preset("llama2-7b");
  m.name = "test-model";
  m.layers = layers;
  m.d_ff = 4 * m.d_model;
  m.gated_mlp = false;
  return m;
}

struct Step {
  TrainingReport report;
  TrainingLayout layout;
};

Step simulate(const TransformerSpec& model, const TrainingPlan& plan, const TopologySpec& topology) {
  TrainingWorkload w{model, plan, false};
  Step step;
  const auto program = training_program(model, plan, topology, step.layout);
  const auto run = run_program(topology, {}, program, {});
  step.report = training_report(w, step.layout, program, run);
  return step;
}

TrainingPlan fsdp_plan(std::vector<int> data_axes, double tokens_per_chip_group, int data_degree) {
  TrainingPlan p;
  p.data_axes = std::move(data_axes);
  p.fsdp = true;
  p.sequence_length = 1024;
  p.global_batch_tokens = tokens_per_chip_group * data_degree;
  p.attention_flops = false;   // the book's per-layer forms count the weight matmuls only
  p.checkpointing = Checkpointing::None;   // and no recomputation
  return p;
}

}  // namespace

TEST_CASE("compute-bound FSDP hides its communication: step = FLOPs / (N C eff)", "[training]") {
  const auto topo = v5p_mesh({16});
  auto plan = fsdp_plan({0}, 64 * 2048, 16);    // 131k tokens a chip: far above 2550
  plan.matmul_efficiency = 0.5;
  const auto step = simulate(small_model(), plan, topo);
  const double ideal = step.layout.total_flops / (16 * topo.chip.bf16_flops_per_s * 0.5);
  CHECK(step.report.step_time_s == Approx(ideal).epsilon(0.01));
  CHECK(step.report.mfu == Approx(0.5).epsilon(0.01));
  CHECK(step.report.exposed_comm_s < 0.01 * step.report.step_time_s);
}

TEST_CASE("rematerialisation costs its recomputed forward: none < book (attention) < block (every layer)",
          "[training][remat]") {
  // Compute-bound FSDP, so the step is its compute: (3 F + R) / (N C eff), with R the forward
  // FLOPs the policy reruns (transformers.md "Gradient checkpointing"): none 0; the book's
  // policy keeps the MLP's big matmul outputs, so attention reruns, 2 x 4 D^2 per token and
  // layer (MHA, attention_flops off); block keeps each layer's input, so every layer reruns,
  // 2 x (4 D^2 + 2 D F) (this model's MLP is not gated). HFU counts R, MFU does not.
  const auto topo = v5p_mesh({16});
  const auto model = small_model();
  const double tokens_per_chip = 64 * 2048;
  const double d = model.d_model, f = model.d_ff, layers = model.layers;
  const double expected_recompute[] = {0.0, 2 * 4 * d * d * layers, 2 * (4 * d * d + 2 * d * f) * layers};
  const Checkpointing policies[] = {Checkpointing::None, Checkpointing::Book, Checkpointing::Block};
  double previous = 0;
  for (int i = 0; i < 3; ++i) {
    auto plan = fsdp_plan({0}, tokens_per_chip, 16);
    plan.checkpointing = policies[i];
    plan.matmul_efficiency = 0.5;
    const auto step = simulate(model, plan, topo);
    INFO("policy " << i);
    CHECK(step.layout.recompute_flops == Approx(expected_recompute[i] * tokens_per_chip * 16).epsilon(1e-9));
    const double ideal = (step.layout.total_flops + step.layout.recompute_flops) / (16 * topo.chip.bf16_flops_per_s * 0.5);
    CHECK(step.report.step_time_s == Approx(ideal).epsilon(0.01));
    CHECK(step.report.hfu == Approx(0.5).epsilon(0.01));
    CHECK(step.report.mfu == Approx(0.5 * step.layout.total_flops / (step.layout.total_flops + step.layout.recompute_flops))
                                 .epsilon(0.01));
    CHECK(step.report.step_time_s > previous);
    previous = step.report.step_time_s;
  }
}

TEST_CASE("FSDP turns compute-bound at B/X = C / W_ici", "[training]") {
  // training.md:L235: per layer, 6 B D F / (X C) of math against 3 collectives of the
  // weights, 6 D F / W_ici: they balance at B/X = C / W_ici = 4.59e14 / 1.8e11 = 2550.
  const auto topo = v5p_mesh({16});
  const double critical = topo.chip.bf16_flops_per_s / (2 * topo.chip.ici_bandwidth_Bps);
  // Enough layers that the step's edges (the first gather, the last reduction) are small.
  const auto model = small_model(16);
  // Comms-bound: the step barely depends on the batch. Compute-bound: it grows with it.
  const auto low = simulate(model, fsdp_plan({0}, 1024, 16), topo);
  const auto high = simulate(model, fsdp_plan({0}, 16 * 2048, 16), topo);
  CHECK(low.report.exposed_comm_s > 0.3 * low.report.step_time_s);
  CHECK(high.report.exposed_comm_s < 0.2 * high.report.step_time_s);
  // Where the flat comms-bound step meets the compute line through the high point.
  const double per_token = high.report.compute_time_s / (16 * 2048);
  const double crossover = low.report.step_time_s / per_token;
  CHECK(crossover == Approx(critical).epsilon(0.05));
}

TEST_CASE("pipeline bubble is (P-1)/(M+P-1) under GPipe and 1F1B", "[training][pipeline]") {
  // training.md, pipelining: with communication negligible, P stages idle for P-1 of the
  // M+P-1 microbatch slots.
  auto model = small_model(8);
  model.vocab = 256;   // keep the output projection from unbalancing the stages
  auto topo = v5p_mesh({4});
  topo.chip.ici_bandwidth_Bps *= 1000;   // make the stage-to-stage sends negligible
  topo.chip.hop_latency_s = 0;
  for (auto schedule : {PipelineSchedule::GPipe, PipelineSchedule::OneFOneB}) {
    for (int microbatches : {4, 8, 16}) {
      TrainingPlan plan;
      plan.pipeline_axis = 0;
      plan.schedule = schedule;
      plan.microbatches = microbatches;
      plan.sequence_length = 1024;
      plan.global_batch_tokens = 1024.0 * 4 * microbatches;
      const auto step = simulate(model, plan, topo);
      const double P = 4, M = microbatches;
      INFO((schedule == PipelineSchedule::GPipe ? "GPipe" : "1F1B") << " M=" << microbatches);
      CHECK(step.report.pipeline_bubble_fraction == Approx((P - 1) / (M + P - 1)).epsilon(0.01));
    }
  }
}

TEST_CASE("bad training plans are refused with the reason", "[training]") {
  const auto topo = v5p_mesh({4, 4});
  const auto model = small_model(2);
  TrainingPlan plan;
  plan.sequence_length = 1024;
  plan.global_batch_tokens = 1024 * 16;
  TrainingLayout layout;
  SECTION("an axis used twice") {
    plan.data_axes = {0};
    plan.tensor_axes = {0};
    CHECK_THROWS_WITH(training_program(model, plan, topo, layout), Catch::Contains("two kinds"));
  }
  SECTION("a batch that does not divide over the data axes") {
    plan.data_axes = {0, 1};
    plan.global_batch_tokens = 1024 * 6;
    CHECK_THROWS_WITH(training_program(model, plan, topo, layout), Catch::Contains("does not divide"));
  }
  SECTION("more stages than layers") {
    plan.pipeline_axis = 0;
    plan.microbatches = 4;
    CHECK_THROWS_WITH(training_program(small_model(2), plan, topo, layout), Catch::Contains("more stages than layers"));
  }
}

TEST_CASE("TP turns comms-bound at Y = M_Y F / 2550", "[training]") {
  // training.md, tensor parallelism: per MLP forward, T_math = 4BDF/(YC) against an
  // AllGather and a ReduceScatter of the [B, D] activations, 2 x 2BD / W_ici: they balance
  // at Y = F W_ici / C = F / 2550 on v5p. With F = 8 x 2550 the balance is at Y = 8.
  auto model = small_model(2);
  model.d_ff = static_cast<int>(8 * 2550);
  const double critical_y = model.d_ff / 2550.0;
  for (int y : {4, 8, 16}) {
    auto topo = v5p_mesh({y});
    TrainingPlan plan;
    plan.tensor_axes = {0};
    plan.sequence_length = 2048;
    plan.global_batch_tokens = 8 * 2048;   // 16k tokens: far above the latency floor
    plan.attention_flops = false;
    TrainingWorkload w{model, plan, false};
    TrainingLayout layout;
    const auto program = training_program(model, plan, topo, layout);
    const auto run = run_program(topo, {}, program, {});
    double math = 0, comms = 0;
    for (size_t i = 0; i < program.size(); ++i) {
      const auto& name = program[i].name;
      if (name == "L0.mlp.fwd") math += run.operations[i].time_s;
      if (name == "L0.mlp.fwd.allgather_activations" || name == "L0.mlp.fwd.reducescatter_activations") {
        comms += run.operations[i].time_s;
      }
    }
    INFO("Y = " << y);
    CHECK(comms / math == Approx(y / critical_y).epsilon(0.02));
  }
}

TEST_CASE("TP backward: the dX ReduceScatter runs beside the dW matmul and is exposed by exactly its excess", "[training]") {
  // A backward block under blocking TP: gather dY, dX = dY W^T, then dX's ReduceScatter and
  // the weight gradients X^T dY at once (the sum scattered does not feed them). The next block's
  // gather follows the scatter; its dX waits for both that gather and the dW matmul. So between
  // the MLP's dX and the attention block's dX: max(T_dW, T_RS + T_AG). Without recomputation
  // or attention FLOPs, dW is half the backward: the forward's FLOPs. As above, the MLP's
  // forward balances one gather and one scatter at Y = F / 2550 (here 8): Y = 4 hides them
  // behind dW, Y = 16 leaves their excess over dW exposed.
  auto model = small_model(2);
  model.d_ff = static_cast<int>(8 * 2550);
  for (int y : {4, 16}) {
    auto topo = v5p_mesh({y});
    TrainingPlan plan;
    plan.tensor_axes = {0};
    plan.sequence_length = 2048;
    plan.global_batch_tokens = 8 * 2048;
    plan.attention_flops = false;
    plan.checkpointing = Checkpointing::None;
    TrainingLayout layout;
    const auto program = training_program(model, plan, topo, layout);
    const auto run = run_program(topo, {}, program, {});
    auto op = [&](const std::string& name) -> const OperationResult& {
      for (const auto& o : run.operations) {
        if (o.name == name) return o;
      }
      FAIL("no op " << name);
      return run.operations.front();
    };
    const auto& dx = op("L1.mlp.bwd");
    const auto& dw = op("L1.mlp.bwd.weight_grads");
    const auto& rs = op("L1.mlp.bwd.reducescatter_activations");
    const auto& ag = op("L1.attn.bwd.allgather_activations");
    const auto& next = op("L1.attn.bwd");
    INFO("Y = " << y << ": dW " << dw.time_s << " s, RS " << rs.time_s << " s, AG " << ag.time_s << " s");
    CHECK(dw.time_s == Approx(op("L1.mlp.fwd").time_s).epsilon(1e-9));
    CHECK(dx.time_s == Approx(dw.time_s).epsilon(1e-9));
    CHECK(rs.start_s == Approx(dx.end_s).margin(1e-12));
    CHECK(dw.start_s == Approx(dx.end_s).margin(1e-12));
    const double comm = rs.time_s + ag.time_s;
    CHECK(next.start_s - dx.end_s == Approx(std::max(dw.time_s, comm)).epsilon(1e-6));
    if (y == 4) CHECK(comm < dw.time_s);   // hidden
    if (y == 16) CHECK(comm > dw.time_s);  // exposed by comm - dW
  }
}

TEST_CASE("data parallelism across slices turns compute-bound at B_slice = (S-1)/S x C/W_dcn", "[training][dcn]") {
  // training.md, beyond a pod: each chip ring-AllReduces its gradient shard with its peers
  // in the other slices, 2(S-1)/S of the shard through its share of the host NIC (6.25e9 B/s
  // on v5p), against the backward's 4 B P / (N C): they balance at a per-slice batch of
  // (S-1)/S x C / W_dcn; the book's C / W_dcn = 73,440 is the many-slice limit.
  for (int slices : {2, 8}) {
    TopologySpec topo = v5p_mesh({2, 2});   // one host per slice: its 4 chips share one NIC
    topo.slices = slices;
    const double w_dcn_chip = topo.chip.dcn_bandwidth_per_host_Bps / topo.chip.chips_per_host;
    const double critical = (slices - 1.0) / slices * topo.chip.bf16_flops_per_s / w_dcn_chip;
    const auto model = small_model(16);
    auto plan_for = [&](double tokens_per_slice) {
      TrainingPlan p;
      p.data_axes = {0, 1};
      p.fsdp = true;
      p.dcn_data_parallel = true;
      p.sequence_length = 1024;
      p.attention_flops = false;
      p.checkpointing = Checkpointing::None;   // the book's balance counts no recomputation
      p.global_batch_tokens = tokens_per_slice * slices;
      return p;
    };
    const auto low = simulate(model, plan_for(8 * 1024), topo);
    const auto high = simulate(model, plan_for(256 * 1024), topo);
    INFO(slices << " slices");
    CHECK(low.report.exposed_comm_by_axis_s.count("DCN") == 1);
    CHECK(high.report.exposed_comm_s < 0.1 * high.report.step_time_s);
    // The DCN reductions overlap the backward only (2/3 of the compute): the DCN stream is the
    // backward's time plus what it left exposed; the crossover is where the backward matches it.
    const double dcn_stream = low.report.exposed_comm_by_axis_s.at("DCN") + low.report.compute_time_s * 2 / 3;
    const double backward_per_token = high.report.compute_time_s * 2 / 3 / (256 * 1024);
    CHECK(dcn_stream / backward_per_token == Approx(critical).epsilon(0.05));
  }
}

TEST_CASE("FSDP over two axes turns compute-bound at B/X = C / (2 W_ici)", "[training]") {
  // training.md:L235: over M_X axes the gathers run M_X times faster, so the critical batch per
  // chip is 2550 / M_X.
  const auto topo = v5p_mesh({4, 4});
  const double critical = topo.chip.bf16_flops_per_s / (2 * topo.chip.ici_bandwidth_Bps) / 2;
  const auto model = small_model(16);
  const auto low = simulate(model, fsdp_plan({0, 1}, 1024, 16), topo);
  const auto high = simulate(model, fsdp_plan({0, 1}, 16 * 1024, 16), topo);
  CHECK(low.report.exposed_comm_s > 0.3 * low.report.step_time_s);
  const double per_token = high.report.compute_time_s / (16 * 1024);
  // The two-axis schedule moves (1 + 1/4) of the book's bytes on a 4x4 (each part's first
  // phase), which moves the crossover by the same factor.
  CHECK(low.report.step_time_s / per_token == Approx(critical * 1.25).epsilon(0.05));
}

TEST_CASE("the book's LLaMA-2 13B on v5p 16x16x16: DP does not fit, FSDP is comms-bound", "[training]") {
  // training.md:L686-L702, book-cases.md row 53: 3M tokens, 4096 chips.
  const auto model = *find_model_preset("llama2-13b");
  const auto topo = v5p_mesh({16, 16, 16});
  TrainingPlan plan;
  plan.data_axes = {0, 1, 2};
  plan.sequence_length = 768;     // 768 tokens a chip: one sequence each
  plan.global_batch_tokens = 3145728;
  plan.matmul_efficiency = 0.4;
  plan.attention_flops = false;
  TrainingLayout layout;
  training_program(model, plan, topo, layout);
  CHECK_FALSE(layout.fits_hbm);   // 13e9 x (2 + 2 + 8) bytes of state per chip > 96 GB
  plan.fsdp = true;
  plan.matmul_efficiency = 1.0;   // the book's 850 compares with the peak FLOPs
  const auto fsdp = simulate(model, plan, topo);
  CHECK(fsdp.layout.fits_hbm);
  // 768 tokens a chip, under 2550 / 3 = 850: the gathers cannot hide behind the math.
  CHECK(fsdp.report.exposed_comm_s > 0.05 * fsdp.report.step_time_s);
}

TEST_CASE("FSDP+TP with collective matmuls is compute-bound above B/N = 2550^2 / (M_X M_Y F)", "[training]") {
  // training.md:L484-L486: FSDP over X (weights, 4DF/(Y W M_X) a layer) and TP over Y
  // (activations, 4BD/(X W M_Y)) against 4BDF/(NC) of math. At the best split both equal the
  // math exactly when B/N = alpha^2/(M_X M_Y F); here X = Y = 16 is that split for
  // F = N alpha / 16 (one axis each: M_X = M_Y = 1).
  const auto square = v5p_mesh({16, 16});
  const double alpha = square.chip.bf16_flops_per_s / (2 * square.chip.ici_bandwidth_Bps);
  auto model = small_model(16);   // enough layers that the step's edges stay small
  model.d_ff = static_cast<int>(256 * alpha / 16);
  model.max_sequence_length = 1 << 20;
  const double threshold = alpha * alpha / model.d_ff;   // tokens per chip
  // X_opt = sqrt(B/F * N) doubles at 4x the batch: 32 x 8 is the best split there.
  auto run_at = [&](double tokens_per_chip, const TopologySpec& topo) {
    TrainingPlan p;
    p.data_axes = {0};
    p.fsdp = true;
    p.tensor_axes = {1};
    p.tensor_overlap = true;
    p.attention_flops = false;
    p.sequence_length = 16;
    p.global_batch_tokens = std::round(tokens_per_chip * 256 / (16 * 32)) * 16 * 32;
    return simulate(model, p, topo).report;
  };
  const auto below = run_at(threshold / 4, square);
  const auto above = run_at(threshold * 4, v5p_mesh({32, 8}));
  INFO("threshold " << threshold << " tokens a chip");
  std::string by_axis;
  for (const auto& [axis, t] : above.exposed_comm_by_axis_s) by_axis += axis + " " + std::to_string(t) + " ";
  INFO("exposed above: " << by_axis << " compute " << above.compute_time_s);
  CHECK(below.exposed_comm_s > 0.3 * below.step_time_s);
  // Above it the weight gathers hide completely; what remains exposed is tensor-parallel
  // traffic of the attention blocks, which move the same activations as the MLP for a
  // fraction of its math (the book's threshold counts the MLP's F).
  CHECK(above.exposed_comm_by_axis_s.count("X") == 1);
  CHECK(above.exposed_comm_by_axis_s.at("X") < 0.01 * above.step_time_s);
  CHECK(above.exposed_comm_s / above.step_time_s < below.exposed_comm_s / below.step_time_s / 3);
}

TEST_CASE("pipeline stages over slices: sends cross the DCN, the bubble stays (P-1)/(M+P-1)", "[training][pipeline][dcn]") {
  auto model = small_model(8);
  model.vocab = 256;
  auto topo = v5p_mesh({2});
  topo.slices = 4;
  TrainingPlan plan;
  plan.pipeline_axis = Topology::kSliceAxis;
  plan.data_axes = {0};
  plan.microbatches = 8;
  plan.sequence_length = 1024;
  plan.global_batch_tokens = 1024.0 * 2 * 8;
  SECTION("with DCN made negligible, the bubble is the schedule's") {
    topo.chip.dcn_bandwidth_per_host_Bps *= 1e4;
    topo.chip.pcie_bandwidth_Bps *= 1e4;
    topo.chip.hop_latency_s = 0;
    const auto step = simulate(model, plan, topo);
    CHECK(step.report.pipeline_bubble_fraction == Approx(3.0 / 11).epsilon(0.01));
  }
  SECTION("with real DCN, the stage-to-stage sends show on DCN") {
    const auto step = simulate(model, plan, topo);
    CHECK(step.report.pipeline_bubble_fraction > 3.0 / 11);
    CHECK(step.report.exposed_comm_by_axis_s.count("DCN") == 1);
  }
}
