// Pipelines whose stages hold unequal layer counts: the first L mod (P v) chunks take
// ceil(L / (P v)) layers, the rest floor (pipeline.cpp, chunk_layers). One program holds
// every stage's layers; a layer slot some stages lack is absent there (present_at_position).
#include <catch2/catch.hpp>

#include "meshes.hpp"
#include "replay_equality.hpp"

#include "sim/engine/run.hpp"
#include "sim/report/training_report.hpp"
#include "workloads/op_presence.hpp"
#include "workloads/pipeline.hpp"

using namespace podsim;

namespace {

TransformerSpec uneven_model(int layers) {
  TransformerSpec m = *find_model_preset("llama2-7b");
  m.name = "uneven-model";
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

TrainingPlan uneven_plan(PipelineSchedule schedule, int microbatches, int virtual_stages = 1) {
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

// Stage p's compute time in ops of `role` for microbatch 0 (ops named "mb0."), on its first chip.
double stage_compute_s(const Program& program, const RunResult& run, ChipId chip, OpRole role) {
  double total = 0;
  for (size_t i = 0; i < program.size(); ++i) {
    const auto& op = program[i];
    if (!op.is(ProgramOpKind::Compute) || op.role != role || op.name.rfind("mb0.", 0) != 0) continue;
    if (!run.present(static_cast<int>(i), chip)) continue;
    const auto& span = run.span(static_cast<int>(i), 0, chip);
    total += span.end_s - span.start_s;
  }
  return total;
}

// When the last forward or backward pass ends, on any chip.
double passes_end_s(const Program& program, const RunResult& run) {
  double end = 0;
  for (size_t i = 0; i < program.size(); ++i) {
    if (program[i].role == OpRole::Forward || program[i].role == OpRole::Backward) {
      end = std::max(end, run.operations[i].end_s);
    }
  }
  return end;
}

// One layer's forward (backward) time, and the output projection's share of one of C chunks.
struct LayerTimes {
  double layer_forward = 0, layer_backward = 0, unembed_forward = 0, unembed_backward = 0;
};
LayerTimes layer_times(const TrainingLayout& layout, int chunks) {
  LayerTimes t;
  for (const auto& blk : layout.blocks) {
    if (blk.layer == 0) {
      t.layer_forward += blk.forward_s;
      t.layer_backward += blk.backward_s;
    }
  }
  t.unembed_forward = layout.blocks.back().forward_s / chunks;
  t.unembed_backward = layout.blocks.back().backward_s / chunks;
  return t;
}

}  // namespace

TEST_CASE("10 layers over 4 stages: stages hold 3, 3, 2, 2 layers and compute in that ratio", "[training][pipeline]") {
  const auto topo = free_links({4});
  const auto model = uneven_model(10);
  const int M = 8;
  const auto plan = uneven_plan(PipelineSchedule::OneFOneB, M);
  TrainingLayout layout;
  const auto program = training_program(model, plan, topo, layout);
  const auto run = run_program(topo, {}, program, {});
  const Topology real(topo);
  const auto t = layer_times(layout, 4);
  const int layers[] = {3, 3, 2, 2};
  double slowest = 0, sum = 0;
  for (int p = 0; p < 4; ++p) {
    const ChipId chip = real.chip_at(0, std::vector<int>{p});
    const double forward = stage_compute_s(program, run, chip, OpRole::Forward);
    const double backward = stage_compute_s(program, run, chip, OpRole::Backward);
    INFO("stage " << p);
    CHECK(forward == Approx(layers[p] * t.layer_forward + t.unembed_forward).epsilon(1e-12));
    CHECK(backward == Approx(layers[p] * t.layer_backward + t.unembed_backward).epsilon(1e-12));
    slowest = std::max(slowest, forward + backward);
    sum += forward + backward;
  }
  // The passes end no earlier than any stage p can finish: its first input through the
  // stages before it, its M passes, its last gradient back through them (sum_{q<p} t_q + M
  // t_p), and no later than if every stage held 3 layers, 1F1B's (M + P - 1) t_0.
  double bound = 0, before = 0;
  for (int p = 0; p < 4; ++p) {
    const double t_p = layers[p] * (t.layer_forward + t.layer_backward) + t.unembed_forward + t.unembed_backward;
    bound = std::max(bound, before + M * t_p);
    before += t_p;
  }
  const double end = passes_end_s(program, run);
  CHECK(end >= bound * (1 - 1e-9));
  CHECK(end <= (M + 3) * slowest * (1 + 1e-9));
  CHECK(sum == Approx(10 * (t.layer_forward + t.layer_backward) + 4 * (t.unembed_forward + t.unembed_backward)));
  // Stage 0 ends last, then its optimizer over what it holds: 3 layers and a quarter of the
  // embeddings and norms, against the mean (a quarter of the model).
  const auto report = training_report(TrainingWorkload{model, plan, false}, layout, program, run);
  CHECK(report.step_time_s == Approx(end + layout.optimizer_s).epsilon(1e-9));
  const double stage0_params = 3 * (attention_params_per_layer(model) + mlp_params_per_layer(model)) +
                               (embedding_params(model) + norm_params(model)) / 4;
  const double mean_optimizer = optimizer_time_s(model, plan, topo, layout, 4) - topo.chip.compute_overhead_s;
  CHECK(layout.optimizer_s - topo.chip.compute_overhead_s ==
        Approx(mean_optimizer * stage0_params / (param_count(model) / 4)).epsilon(1e-12));
  // Memory: the fullest stage's weights.
  CHECK(layout.memory.params_bytes == Approx(stage0_params * model.param_bytes).epsilon(1e-12));
  // The step's FLOPs are the whole model's, as an even split would count them.
  TrainingLayout even;
  training_program(uneven_model(8), plan, topo, even);
  double layer_flops = 0;
  for (const auto& blk : layout.blocks) layer_flops += blk.layer == 0 ? blk.forward_flops_per_chip : 0.0;
  CHECK(layout.total_flops - even.total_flops == Approx(3.0 * 2 * layer_flops * M * 4 / 4).epsilon(1e-9));
}

TEST_CASE("uneven interleaved chunks: model chunk jP + p holds ceil or floor of L/(Pv) layers", "[training][pipeline]") {
  // 11 layers over 2 stages x 2 virtual = 4 chunks: chunks 0-2 take 3, chunk 3 takes 2. Stage 0
  // holds chunks 0 and 2 (6 layers), stage 1 chunks 1 and 3 (5).
  const auto topo = free_links({2});
  const auto plan = uneven_plan(PipelineSchedule::Interleaved1F1B, 4, 2);
  TrainingLayout layout;
  const auto program = training_program(uneven_model(11), plan, topo, layout);
  const Topology real(topo);
  int forward_blocks[2] = {0, 0};
  for (const auto& op : program) {
    if (op.role != OpRole::Forward || op.name.rfind("mb0.", 0) != 0 || op.layer < 0 || op.layer >= 11) continue;
    for (int p = 0; p < 2; ++p) forward_blocks[p] += present_at(op, p);
  }
  CHECK(forward_blocks[0] == 6 * 2);   // attention and MLP per layer
  CHECK(forward_blocks[1] == 5 * 2);
  const auto run = run_program(topo, {}, program, {});
  CHECK(run.total_time_s > 0);
}

TEST_CASE("a pipeline with more chunks than layers is refused", "[training][pipeline]") {
  const auto topo = free_links({4});
  TrainingLayout layout;
  CHECK_THROWS_WITH(training_program(uneven_model(6), uneven_plan(PipelineSchedule::Interleaved1F1B, 8, 2), topo, layout),
                    Catch::Contains("more stages than layers"));
}

namespace {

TransformerSpec dense_first_model(int layers, int dense_layers) {
  TransformerSpec m = *find_model_preset("mixtral-8x7b");
  m.name = "dense-first-moe";
  m.layers = layers;
  m.vocab = 256;
  m.moe->dense_layers = dense_layers;
  return m;
}

// The forward of one layer of each kind, from the blocks: attention and a dense MLP, or
// attention and an MoE layer's router and shared experts (its routed experts are extra ops).
double block_forward_s(const TrainingLayout& layout, bool moe) {
  double seconds = 0;
  bool attention_seen = false, mlp_seen = false;
  for (const auto& blk : layout.blocks) {
    if (blk.layer < 0 || blk.layer >= 1000000) continue;
    const bool is_mlp = blk.name.find(".mlp") != std::string::npos;
    if (!is_mlp && !attention_seen) seconds += blk.forward_s, attention_seen = true;
    if (is_mlp && !mlp_seen && (blk.moe_layer >= 0) == moe) seconds += blk.forward_s, mlp_seen = true;
  }
  return seconds;
}

}  // namespace

TEST_CASE("an MoE model with dense first layers in a 1F1B pipeline: stage 0 runs the dense layers, the others MoE",
          "[training][pipeline][moe]") {
  // 8 layers, the first 2 dense, over 4 stages (2 layers each): stage 0 holds both dense layers,
  // stages 1-3 two MoE layers, as the same model with every layer MoE puts there. Experts over
  // Y (4 ranks), uniform routing; links so fast the AllToAlls take ~1e-13 s.
  auto topo = free_links({4, 4});
  topo.chip.ici_bandwidth_Bps *= 1e5;
  const int M = 8;
  auto plan = uneven_plan(PipelineSchedule::OneFOneB, M);
  plan.data_axes = {1};
  plan.expert_axes = {1};
  plan.global_batch_tokens = 1024.0 * 4 * M;
  const auto model = dense_first_model(8, 2);
  TrainingLayout layout, all_moe_layout;
  const auto program = training_program(model, plan, topo, layout);
  const auto all_moe_program = training_program(dense_first_model(8, 0), plan, topo, all_moe_layout);
  const auto run = run_program(topo, {}, program, {});
  const auto all_moe = run_program(topo, {}, all_moe_program, {});
  const Topology real(topo);
  const double unembed = layout.blocks.back().forward_s / 4;
  double slowest = 0, sum = 0;
  for (int p = 0; p < 4; ++p) {
    const ChipId chip = real.chip_at(0, std::vector<int>{p, 0});
    const double forward = stage_compute_s(program, run, chip, OpRole::Forward);
    const double backward = stage_compute_s(program, run, chip, OpRole::Backward);
    INFO("stage " << p);
    if (p == 0) {
      CHECK(forward == Approx(2 * block_forward_s(layout, false) + unembed).epsilon(1e-12));
    } else {
      CHECK(forward == Approx(stage_compute_s(all_moe_program, all_moe, chip, OpRole::Forward)).epsilon(1e-12));
      CHECK(backward == Approx(stage_compute_s(all_moe_program, all_moe, chip, OpRole::Backward)).epsilon(1e-12));
      CHECK(forward > 2 * block_forward_s(layout, true) + unembed);   // the routed experts besides
    }
    slowest = std::max(slowest, forward + backward);
    sum += forward + backward;
  }
  // The MoE stages are the slower (k = 2 experts of the dense width a token): the passes end
  // at the flow shop's sum t_p + (M - 1) max t_p.
  CHECK(passes_end_s(program, run) == Approx(sum + (M - 1) * slowest).epsilon(1e-9));
  // Stage 0 holds the dense MLPs' weights, the others their experts' quarter (4 expert ranks):
  // the memory reported is the heavier stage's.
  const auto weights = pipeline_stage_weights(model, 4, 1);
  CHECK(weights[0].routed_params == 0);
  CHECK(weights[1].routed_params == Approx(2 * 8 * expert_params(model)));
  CHECK(layout.memory.params_bytes ==
        Approx((weights[1].dense_params + weights[1].routed_params / 4) * model.param_bytes).epsilon(1e-12));
  // The step's FLOPs are the model's, whichever stage runs which layer: those of the step
  // without a pipeline.
  auto single = plan;
  single.pipeline_axis = -1;
  single.data_axes = {0, 1};
  single.microbatches = 1;
  TrainingLayout single_layout;
  training_program(model, single, topo, single_layout);
  CHECK(layout.total_flops == Approx(single_layout.total_flops).epsilon(1e-9));
}

TEST_CASE("a stage holding dense and MoE layers: its forward is the dense layer's plus the MoE layer's",
          "[training][pipeline][moe]") {
  // 8 layers, the first dense, over 4 stages: stage 0 holds the dense layer 0 and the MoE layer
  // 1, stages 1-3 two MoE layers each; an MoE layer's forward is half such a stage's (uniform
  // routing: every MoE layer alike), so stage 0's is one dense layer's plus that half.
  auto topo = free_links({4, 4});
  topo.chip.ici_bandwidth_Bps *= 1e5;
  const int M = 4;
  auto plan = uneven_plan(PipelineSchedule::OneFOneB, M);
  plan.data_axes = {1};
  plan.expert_axes = {1};
  plan.global_batch_tokens = 1024.0 * 4 * M;
  const auto model = dense_first_model(8, 1);
  TrainingLayout layout;
  const auto program = training_program(model, plan, topo, layout);
  const auto run = run_program(topo, {}, program, {});
  const Topology real(topo);
  const double unembed = layout.blocks.back().forward_s / 4;
  const double moe_stage = stage_compute_s(program, run, real.chip_at(0, std::vector<int>{1, 0}), OpRole::Forward);
  const double moe_layer = (moe_stage - unembed) / 2;
  CHECK(stage_compute_s(program, run, real.chip_at(0, std::vector<int>{0, 0}), OpRole::Forward) ==
        Approx(block_forward_s(layout, false) + moe_layer + unembed).epsilon(1e-12));
  for (int p = 2; p < 4; ++p) {
    CHECK(stage_compute_s(program, run, real.chip_at(0, std::vector<int>{p, 0}), OpRole::Forward) ==
          Approx(moe_stage).epsilon(1e-12));
  }
  CHECK(moe_layer > block_forward_s(layout, false));   // k = 2 experts of the dense MLP's width
}
