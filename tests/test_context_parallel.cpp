// Context parallelism: ring attention against its closed forms, and the shortcut (symmetry
// reduction) against the full replay on generated plans.
#include <catch2/catch.hpp>

#include "meshes.hpp"
#include "replay_equality.hpp"
#include "seeded_rng.hpp"

#include "sim/engine/run.hpp"
#include "sim/report/training_report.hpp"

using namespace podsim;

namespace {

TransformerSpec cp_model(int layers = 2) {
  TransformerSpec m = *find_model_preset("llama3-8b");
  m.name = "test-model";
  m.layers = layers;
  m.vocab = 256;
  m.max_sequence_length = 1 << 17;
  return m;
}

// The same layer with DeepSeek-V3's attention dims: its ring passes the latent and rotary key.
TransformerSpec cp_mla_model(int layers) {
  TransformerSpec m = cp_model(layers);
  m.attention = AttentionKind::Mla;
  m.mla = MlaSpec{1536, 512, 128, 64, 128};
  return m;
}

TrainingPlan cp_plan(int sequence_length, int data_shards) {
  TrainingPlan plan;
  plan.data_axes = {0};
  plan.context_axis = 0;
  plan.sequence_length = sequence_length;
  plan.global_batch_tokens = static_cast<double>(sequence_length) * data_shards;
  plan.checkpointing = Checkpointing::None;
  return plan;
}

// A v5p ring of 8 without hop latency: a send is its bytes over one link.
TopologySpec ring_of_8() {
  auto topo = podsim_test::v5p_mesh({8});
  topo.chip.hop_latency_s = 0;
  return topo;
}

// The sequence (a multiple of 16, for the zig-zag chunks) whose 1/8 per chip is `factor` times
// the crossover t = K C / (N W), where a score step lasts as long as a block's send.
int sequence_at(const TopologySpec& topo, const TransformerSpec& model, double factor) {
  const double C = topo.chip.achieved_bf16_flops_per_s();
  const double W = topo.chip.neighbor_bandwidth_Bps();
  const double crossover = static_cast<double>(model.kv_heads) * C / (model.heads * W);
  return static_cast<int>(std::round(crossover * factor * 8 / 16)) * 16;
}

double op_time(const Program& program, const RunResult& run, const std::string& name) {
  for (size_t i = 0; i < program.size(); ++i) {
    if (program[i].name == name) return run.operations[i].time_s;
  }
  FAIL("no op " << name);
  return 0;
}

}  // namespace

TEST_CASE("ring attention: a K/V block's send against a score step is K C / (N W t)", "[training][context]") {
  // Each step scores the chip's t = S/CP queries against one block of t keys: 4 t^2 N H FLOPs
  // (QK^T and AV) at C; the block is K and V, 2 t K H bf16 values, over one link at W. Their
  // ratio is K C / (N W t) (K/N = 1/4 for LLaMA-3 8B), whatever the sequence.
  auto topo = podsim_test::v5p_mesh({4});
  topo.chip.hop_latency_s = 0;
  const auto model = cp_model();
  for (int sequence : {8192, 32768, 131072}) {
    const auto plan = cp_plan(sequence, 1);
    TrainingLayout layout;
    const auto program = training_program(model, plan, topo, layout);
    const auto run = run_program(topo, {}, program, {});
    const double t = sequence / 4.0;
    const double C = topo.chip.achieved_bf16_flops_per_s();
    const double W = topo.chip.neighbor_bandwidth_Bps();
    const double expected = static_cast<double>(model.kv_heads) * C / (model.heads * W * t);
    const double send = op_time(program, run, "L0.attn.fwd.ring_send1");
    const double step = op_time(program, run, "L0.attn.fwd.ring1");
    INFO("S = " << sequence << ": send " << send << " s, step " << step << " s");
    CHECK(send / step == Approx(expected).epsilon(0.01));
    CHECK(step == Approx(4.0 * t * t * model.heads * model.head_dim / C).epsilon(0.01));
    // The sequence's work is split evenly: each chip's FLOPs are the 1/CP share.
    CHECK(layout.tokens_per_microbatch == t);
    CHECK(layout.strategy == "DP+CP");
  }
}

TEST_CASE("ring attention hides its sends above t = K C / (N W) and exposes them below", "[training][context]") {
  // The ring takes max(step, send) per step: above the crossover the attention forward lasts
  // its compute; below it, CP - 1 sends and the last step.
  const auto topo = ring_of_8();
  const auto model = cp_model();
  for (const double factor : {0.25, 4.0}) {
    const int sequence = sequence_at(topo, model, factor);
    const auto plan = cp_plan(sequence, 1);
    TrainingLayout layout;
    const auto program = training_program(model, plan, topo, layout);
    const auto run = run_program(topo, {}, program, {});
    const double step = op_time(program, run, "L0.attn.fwd.ring1");
    const double send = op_time(program, run, "L0.attn.fwd.ring_send1");
    double first = 1e300, last = 0;
    for (size_t i = 0; i < program.size(); ++i) {
      if (program[i].name.rfind("L0.attn.fwd.ring", 0) != 0 || !program[i].is(ProgramOpKind::Compute)) continue;
      if (program[i].name.find("receive") != std::string::npos) continue;
      first = std::min(first, run.span(static_cast<int>(i), 0, 0).start_s);
      last = std::max(last, run.span(static_cast<int>(i), 0, 0).end_s);
    }
    INFO("t / crossover = " << factor << ": step " << step << " s, send " << send << " s");
    const double expected = factor > 1 ? 8 * step : 7 * send + step;
    CHECK(last - first == Approx(expected).epsilon(0.02));
  }
}

TEST_CASE("ring attention on the memory timeline: two received blocks while the sends hide, one when they do not",
          "[training][context][memory]") {
  // A received block is live until it is scored and sent on. When a step outlasts a send, the
  // next block arrives while the step still reads this one: two blocks of the backward's ring
  // (K, V and their gradients, 2 x 2 t K H bf16 values) are live, which is ring_blocks_bytes.
  // When the sends are exposed, the next block lands as this one's onward send ends: one block.
  const auto topo = ring_of_8();
  const auto model = cp_model();
  for (const double factor : {0.25, 4.0}) {
    const int sequence = sequence_at(topo, model, factor);
    const auto plan = cp_plan(sequence, 1);
    TrainingLayout layout;
    auto program = training_program(model, plan, topo, layout);
    const auto run = run_program(topo, {}, program, {});
    const double t = sequence / 8.0;
    const double backward_block = 2 * (2 * t * model.kv_heads * model.head_dim * 2.0);
    INFO("t / crossover = " << factor);
    CHECK(layout.memory.ring_blocks_bytes == Approx(2 * backward_block));
    const auto whole = training_report(TrainingWorkload{model, plan, false}, layout, program, run);
    CHECK(whole.memory_peak_bytes <= layout.memory.total_bytes * (1 + 1e-12));
    // The timeline of the received blocks alone.
    int receives = 0;
    for (auto& op : program) {
      if (op.role == OpRole::RingReceive) {
        ++receives;
      } else {
        op.holds_bytes = 0;
      }
    }
    REQUIRE(receives == 2 * 7 * model.layers);   // a forward and a backward ring per layer
    const auto rings = training_report(TrainingWorkload{model, plan, false}, layout, program, run);
    const double held = rings.memory_peak_bytes - (layout.memory.params_bytes + layout.memory.grads_bytes +
                                                   layout.memory.optimizer_bytes);
    CHECK(held == Approx(factor > 1 ? 2 * backward_block : backward_block).epsilon(1e-9));
  }
}

TEST_CASE("context parallelism: the reduced replay equals the full one, chip by chip (generated cases, GQA and MLA)",
          "[training][context][generated]") {
  const int cases = podsim_test::env_int("PODSIM_CONTEXT_CASES", 12);
  int reduced_cases = 0, mla_cases = 0;
  for (int c = 0; c < cases; ++c) {
    auto rng = podsim_test::case_rng(0xc0c0, c);
    const int cp = 2 + rng.below(3);
    auto topo = podsim_test::v5p_mesh({cp, 2 + 2 * rng.below(2), 2});
    for (auto& axis : topo.axes) axis.wraparound = rng.chance(0.5);
    TrainingPlan plan = cp_plan(1024 * (1 + rng.below(4)) * 2 * cp / 2, 1);
    plan.data_axes = {0, 1};
    plan.global_batch_tokens = static_cast<double>(plan.sequence_length) * topo.axes[1].size;
    plan.fsdp = rng.chance(0.5);
    if (rng.chance(0.5)) {
      plan.tensor_axes = {2};
      plan.tensor_overlap = rng.chance(0.5);   // collective matmuls around the ring
    } else {
      plan.data_axes.push_back(2), plan.global_batch_tokens *= 2;
    }
    plan.checkpointing = rng.chance(0.5) ? Checkpointing::Book : Checkpointing::None;
    // Or Z carries pipeline stages (two microbatches) instead of data.
    const bool pipeline = plan.tensor_axes.empty() && rng.chance(0.5);
    if (pipeline) {
      plan.data_axes = {0, 1};
      plan.pipeline_axis = 2;
      plan.microbatches = 2;
    }
    // Drawn last, so the cases above stay as they were: MLA, whose ring passes the latent.
    const bool mla = rng.chance(0.5);
    INFO("case " << c << ": CP " << cp << " seq " << plan.sequence_length << " fsdp " << plan.fsdp << " tp "
                 << plan.tensor_axes.size() << " overlap " << plan.tensor_overlap << " pipeline " << pipeline << " mla "
                 << mla);
    TrainingLayout layout;
    const auto program = training_program(mla ? cp_mla_model(4) : cp_model(4), plan, topo, layout);
    const auto reduced = run_program(topo, {}, program, {Fidelity::Auto, false, {}});
    const auto full = run_program(topo, {}, program, {Fidelity::Full, false, {}});
    reduced_cases += reduced.simulated.chip_count() < full.simulated.chip_count();
    mla_cases += mla;
    CHECK(podsim_test::spans_differing(program, reduced, full) == 0);
  }
  CHECK(reduced_cases > 0);
  CHECK(mla_cases > 0);
}

TEST_CASE("impossible context-parallel plans are refused with the reason", "[training][context]") {
  const auto topo = podsim_test::v5p_mesh({4, 2});
  TrainingLayout layout;
  auto plan = cp_plan(1004, 1);
  CHECK_THROWS_WITH(training_program(cp_model(), plan, topo, layout), Catch::Contains("2 x 4 equal chunks"));
  plan = cp_plan(4096, 1);
  plan.context_axis = 1;
  CHECK_THROWS_WITH(training_program(cp_model(), plan, topo, layout), Catch::Contains("whole data axis"));
}

TEST_CASE("context parallelism with collective matmuls: the ring between the block's halves", "[training][context]") {
  // TP over Y with tensor_overlap, CP over X: each attention block runs the first half of its
  // projections beside the gather, the ring, then the second half beside the scatter. With
  // links made ~free, the step is its compute, the same as without the overlap, and the
  // program keeps every FLOP.
  auto topo = podsim_test::v5p_mesh({4, 2});
  topo.chip.ici_bandwidth_Bps *= 1e4;
  topo.chip.hop_latency_s = 0;
  auto plan = cp_plan(8192, 1);
  plan.data_axes = {0};
  plan.tensor_axes = {1};
  TrainingLayout blocking_layout, overlap_layout;
  const auto blocking = training_program(cp_model(), plan, topo, blocking_layout);
  plan.tensor_overlap = true;
  const auto overlap = training_program(cp_model(), plan, topo, overlap_layout);
  double blocking_flops = 0, overlap_flops = 0;
  int rings = 0;
  for (const auto& op : blocking) blocking_flops += op.flops();
  for (const auto& op : overlap) {
    overlap_flops += op.flops();
    rings += op.name.find(".ring_send") != std::string::npos;
  }
  CHECK(overlap_flops == Approx(blocking_flops).epsilon(1e-12));
  CHECK(rings > 0);
  const auto a = run_program(topo, {}, blocking, {});
  const auto b = run_program(topo, {}, overlap, {});
  CHECK(b.total_time_s == Approx(a.total_time_s).epsilon(1e-3));
}
