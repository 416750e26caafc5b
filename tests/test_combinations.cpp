// The combination table (docs/modelling.md, "Which features combine"): one test per feature x
// path cell no other test runs, each small (well under a second), each building and running the
// program, the reduced replay against the full one, and one physical invariant that can fail.
// The last test keeps the table honest: every test it cites exists.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "meshes.hpp"
#include "replay_equality.hpp"
#include "scenario_errors.hpp"

#include "sim/commands/scenario_run.hpp"
#include "sim/engine/run.hpp"
#include "sim/engine/serving_costs.hpp"
#include "sim/scenario/scenario.hpp"
#include "workloads/inference.hpp"
#include "workloads/training.hpp"

using namespace podsim;

namespace {

// LLaMA-3 8B's layer (8 KV heads of 128) in `layers` layers, a small vocabulary.
TransformerSpec dense_model(int layers) {
  TransformerSpec m = *find_model_preset("llama3-8b");
  m.name = "combo-model";
  m.layers = layers;
  m.vocab = 256;
  m.max_sequence_length = 1 << 16;
  return m;
}

// The same layer with DeepSeek-V3's attention dims (multi-head latent attention), dense MLP.
TransformerSpec mla_model(int layers) {
  TransformerSpec m = dense_model(layers);
  m.name = "combo-mla";
  m.attention = AttentionKind::Mla;
  m.mla = MlaSpec{1536, 512, 128, 64, 128};
  return m;
}

struct Built {
  TrainingLayout layout;
  Program program;
};
Built build(const TransformerSpec& model, const TrainingPlan& plan, const TopologySpec& topo) {
  Built b;
  b.program = training_program(model, plan, topo, b.layout);
  return b;
}

// The reduced (symmetry) replay equals the full one chip by chip, and the step takes time.
void replay_checked(const TopologySpec& topo, const Program& program) {
  const auto reduced = run_program(topo, {}, program, {Fidelity::Auto, false, {}});
  const auto full = run_program(topo, {}, program, {Fidelity::Full, false, {}});
  CHECK(podsim_test::spans_differing(program, reduced, full) == 0);
  CHECK(full.total_time_s > 0);
}

int count_role(const Program& program, OpRole role) {
  int n = 0;
  for (const auto& op : program) n += op.role == role;
  return n;
}

double role_bytes(const Program& program, OpRole role) {
  double bytes = 0;
  for (const auto& op : program) {
    if (op.role == role) bytes += op.collective().bytes;
  }
  return bytes;
}

// Two stages over X, one layer pair each; 2 microbatches of 2048-token sequences, 1F1B.
TrainingPlan two_stage_plan() {
  TrainingPlan plan;
  plan.pipeline_axis = 0;
  plan.schedule = PipelineSchedule::OneFOneB;
  plan.microbatches = 2;
  plan.sequence_length = 2048;
  plan.global_batch_tokens = 2048.0 * 2;
  plan.checkpointing = Checkpointing::None;
  return plan;
}

InferencePlan inference_plan(InferencePhase phase, std::vector<int> model_axes, int batch) {
  InferencePlan plan;
  plan.phase = phase;
  plan.model_axes = std::move(model_axes);
  plan.batch = batch;
  plan.prompt_length = 1024;
  plan.context_length = 1024;
  return plan;
}

// The FLOPs of the compute ops whose names start with `prefix` (a ring's steps: "L0.attn.ring").
double flops_named(const Program& program, const std::string& prefix) {
  double flops = 0;
  for (const auto& op : program) {
    if (op.is(ProgramOpKind::Compute) && op.name.rfind(prefix, 0) == 0) flops += op.flops();
  }
  return flops;
}

double program_flops(const Program& program) { return flops_named(program, ""); }

// The bytes of each ring send whose name starts with `prefix`.
std::vector<double> ring_sends(const Program& program, const std::string& prefix) {
  std::vector<double> bytes;
  for (const auto& op : program) {
    if (op.role == OpRole::RingSend && op.name.rfind(prefix, 0) == 0) bytes.push_back(op.bytes());
  }
  return bytes;
}

// FLOPs to up-project one token's latent to K and V heads: 2 d_c N (d_h + v_head_dim), per layer.
double mla_up_projection_flops(const TransformerSpec& m) {
  return 2.0 * m.mla.kv_lora_rank * m.heads * (m.mla.qk_nope_head_dim + m.mla.v_head_dim);
}

// Every request a serving run records, in the order it records them.
std::vector<RequestRecord> served(const Scenario& s) {
  struct Records : ServingSink {
    std::vector<RequestRecord> requests;
    void request(const RequestRecord& r) override { requests.push_back(r); }
  } records;
  run_serving(s, &records);
  return records.requests;
}

}  // namespace

// --- Pipeline column ---------------------------------------------------------------------------

TEST_CASE("combinations: pipeline with collective matmuls, the same FLOPs and TP bytes as blocking TP",
          "[combinations][training][pipeline]") {
  // Stages over X, TP over Y: tensor_overlap moves the TP gathers and scatters beside the
  // matmuls (a zero-length op receives each pass's send), not what they move or compute.
  const auto topo = podsim_test::v5p_mesh({2, 2});
  auto plan = two_stage_plan();
  plan.tensor_axes = {1};
  auto overlap = plan;
  overlap.tensor_overlap = true;
  const auto blocking = build(dense_model(4), plan, topo);
  const auto cm = build(dense_model(4), overlap, topo);
  CHECK(cm.layout.total_flops == Approx(blocking.layout.total_flops).epsilon(1e-12));
  CHECK(role_bytes(cm.program, OpRole::TensorAllGather) == Approx(role_bytes(blocking.program, OpRole::TensorAllGather)));
  CHECK(role_bytes(cm.program, OpRole::TensorReduceScatter) ==
        Approx(role_bytes(blocking.program, OpRole::TensorReduceScatter)));
  CHECK(role_bytes(cm.program, OpRole::TensorAllGather) > 0);
  CHECK(count_role(cm.program, OpRole::PipelineReceive) == 2 * plan.microbatches);   // one per F and B pass
  CHECK(count_role(blocking.program, OpRole::PipelineReceive) == 0);
  replay_checked(topo, cm.program);
}

TEST_CASE("combinations: pipeline with context parallelism, the same FLOPs as splitting the batch",
          "[combinations][training][pipeline][context]") {
  // Stages over Y; X splits each 2048-token sequence (a ring of 2) or, without context
  // parallelism, the batch: every chip holds the same tokens, the pod does the same FLOPs.
  const auto topo = podsim_test::v5p_mesh({2, 2});
  auto batch = two_stage_plan();
  batch.pipeline_axis = 1;
  batch.data_axes = {0};
  batch.global_batch_tokens = 2048.0 * 4;
  auto context = batch;
  context.context_axis = 0;
  const auto split = build(dense_model(4), batch, topo);
  const auto ring = build(dense_model(4), context, topo);
  CHECK(ring.layout.context_degree == 2);
  CHECK(ring.layout.pipeline_stages == 2);
  CHECK(ring.layout.total_flops == Approx(split.layout.total_flops).epsilon(1e-12));
  CHECK(count_role(ring.program, OpRole::RingSend) > 0);
  CHECK(count_role(split.program, OpRole::RingSend) == 0);
  replay_checked(topo, ring.program);
}

TEST_CASE("combinations: pipeline with rematerialisation, recomputing what the single step recomputes",
          "[combinations][training][pipeline][remat]") {
  // The book's policy reruns attention's forward before its backward. Stages over X, data over
  // Y, against the single-program step with X as a data axis: the same useful FLOPs and the
  // same FLOPs rerun, over the pod.
  const auto topo = podsim_test::v5p_mesh({2, 2});
  auto plan = two_stage_plan();
  plan.data_axes = {1};
  plan.global_batch_tokens = 2048.0 * 4;
  plan.checkpointing = Checkpointing::Book;
  auto single = plan;
  single.pipeline_axis = -1;
  single.data_axes = {0, 1};
  single.global_batch_tokens = 2048.0 * 8;   // the same tokens per chip
  const auto piped = build(dense_model(4), plan, topo);
  const auto flat = build(dense_model(4), single, topo);
  CHECK(piped.layout.recompute_flops > 0);
  CHECK(piped.layout.recompute_flops * 2 == Approx(flat.layout.recompute_flops).epsilon(1e-12));
  CHECK(piped.layout.total_flops * 2 == Approx(flat.layout.total_flops).epsilon(1e-12));
  // Attention's forward rerun in each backward pass: 2 layers a stage x 2 microbatches.
  CHECK(count_role(piped.program, OpRole::Recompute) == 2 * plan.microbatches);
  auto none = plan;
  none.checkpointing = Checkpointing::None;
  CHECK(count_role(build(dense_model(4), none, topo).program, OpRole::Recompute) == 0);
  replay_checked(topo, piped.program);
}

TEST_CASE("combinations: MLA in a pipeline and in the single step, FLOPs as the model counts them",
          "[combinations][training][pipeline][mla]") {
  // A dense model with multi-head latent attention: the single step (FSDP over X, TP over Y)
  // and two stages over X do 3 x forward FLOPs of every token, as model_spec counts them.
  const auto topo = podsim_test::v5p_mesh({2, 2});
  const auto model = mla_model(4);
  auto step = two_stage_plan();
  step.pipeline_axis = -1;
  step.microbatches = 1;
  step.data_axes = {0};
  step.fsdp = true;
  step.tensor_axes = {1};
  auto piped = two_stage_plan();
  piped.data_axes = {1};
  piped.global_batch_tokens = 2048.0 * 4;
  const auto single = build(model, step, topo);
  const auto stages = build(model, piped, topo);
  CHECK(single.layout.total_flops ==
        Approx(training_flops_per_token(model, 2048, true) * step.global_batch_tokens).epsilon(1e-9));
  CHECK(stages.layout.total_flops ==
        Approx(training_flops_per_token(model, 2048, true) * piped.global_batch_tokens).epsilon(1e-9));
  CHECK(count_role(single.program, OpRole::FsdpAllGather) > 0);
  CHECK(count_role(stages.program, OpRole::PipelineSend) > 0);
  replay_checked(topo, single.program);
  replay_checked(topo, stages.program);
}

// --- Prefill and decode columns ---------------------------------------------------------------

TEST_CASE("combinations: collective matmuls in prefill and decode, the same FLOPs and bytes as blocking",
          "[combinations][inference]") {
  const auto topo = podsim_test::v5e_mesh({4});
  for (const auto phase : {InferencePhase::Prefill, InferencePhase::Decode}) {
    INFO((phase == InferencePhase::Prefill ? "prefill" : "decode"));
    const auto plan = inference_plan(phase, {0}, 4);
    auto overlap = plan;
    overlap.collective_matmul = true;
    InferenceLayout blocking_layout, cm_layout;
    const auto blocking = inference_program(dense_model(2), plan, topo, blocking_layout);
    const auto cm = inference_program(dense_model(2), overlap, topo, cm_layout);
    CHECK(cm_layout.flops == Approx(blocking_layout.flops).epsilon(1e-12));
    CHECK(role_bytes(cm, OpRole::TensorAllGather) > 0);
    CHECK(role_bytes(cm, OpRole::TensorAllGather) == Approx(role_bytes(blocking, OpRole::TensorAllGather)));
    CHECK(role_bytes(cm, OpRole::TensorReduceScatter) == Approx(role_bytes(blocking, OpRole::TensorReduceScatter)));
    replay_checked(topo, cm);
  }
}

TEST_CASE("combinations: MLA prefill and decode, the latent cache and the same FLOPs on 1 or 4 chips",
          "[combinations][inference][mla]") {
  // MLA caches the KV latent and the shared rotary key per layer: L (d_c + d_h^R) x kv_bytes a
  // token. Split over 4 model shards the step does the FLOPs of one chip's.
  const auto model = mla_model(2);
  const auto four = podsim_test::v5e_mesh({4});
  const auto one = podsim_test::v5e_mesh({1});
  for (const auto phase : {InferencePhase::Prefill, InferencePhase::Decode}) {
    INFO((phase == InferencePhase::Prefill ? "prefill" : "decode"));
    InferenceLayout split_layout, single_layout;
    const auto split = inference_program(model, inference_plan(phase, {0}, 4), four, split_layout);
    inference_program(model, inference_plan(phase, {}, 4), one, single_layout);
    CHECK(split_layout.kv_cache_bytes_per_token == Approx(2.0 * (512 + 64) * 2));
    CHECK(split_layout.flops == Approx(single_layout.flops).epsilon(1e-12));
    CHECK(split_layout.flops > 0);
    replay_checked(four, split);
  }
}

TEST_CASE("combinations: 2D weight-stationary prefill, the FLOPs of 1D on the same chips",
          "[combinations][inference][2d]") {
  // D over X, F (and heads) over Y and Z, against 1D over all three: the same FLOPs, and the
  // 2D block's reduction over X between its matmuls.
  const auto topo = podsim_test::v5p_mesh({2, 2, 2});
  auto two_d = inference_plan(InferencePhase::Prefill, {1, 2}, 2);
  two_d.d_axes = {0};
  const auto one_d = inference_plan(InferencePhase::Prefill, {0, 1, 2}, 2);
  InferenceLayout two_layout, one_layout;
  const auto program = inference_program(dense_model(2), two_d, topo, two_layout);
  inference_program(dense_model(2), one_d, topo, one_layout);
  CHECK(two_layout.model_degree == 8);
  CHECK(two_layout.flops == Approx(one_layout.flops).epsilon(1e-12));
  CHECK(count_role(program, OpRole::TensorAllReduce) > 0);
  replay_checked(topo, program);
}

TEST_CASE("combinations: MoE prefill, the FLOPs of the same prompts without expert parallelism",
          "[combinations][inference][moe]") {
  // Experts over Y (the prompts split over it outside the experts), model over X, against the
  // same prompts on X alone: the same FLOPs, an AllToAll over Y each way a layer.
  TransformerSpec model = dense_model(2);
  model.moe = MoeSpec{8, 2, 0, 2048, 0};
  const auto topo = podsim_test::v5p_mesh({2, 2});
  const auto alone = podsim_test::v5p_mesh({2});
  auto plan = inference_plan(InferencePhase::Prefill, {0}, 2);
  plan.expert_axes = {1};
  InferenceLayout ep_layout, one_layout;
  const auto program = inference_program(model, plan, topo, ep_layout);
  inference_program(model, inference_plan(InferencePhase::Prefill, {0}, 2), alone, one_layout);
  CHECK(ep_layout.expert_degree == 2);
  CHECK(ep_layout.flops == Approx(one_layout.flops).epsilon(1e-12));
  CHECK(count_role(program, OpRole::MoeDispatch) == model.layers);
  CHECK(count_role(program, OpRole::MoeCombine) == model.layers);
  replay_checked(topo, program);
}

TEST_CASE("combinations: 2D weight-stationary with collective matmuls, the bytes and FLOPs of blocking 2D",
          "[combinations][inference][2d]") {
  // D over X, F and heads over Y and Z: the [T, D/X] input gathered over YZ beside each block's
  // first part, its output scattered over YZ beside the last (block_ops.hpp's two ends); the
  // reductions over X between the parts stay where they were. The same FLOPs and the same
  // bytes per role as blocking 2D, each YZ collective T D 2 / X bytes, and no longer a step.
  const auto topo = podsim_test::v5p_mesh({2, 2, 2});
  const auto model = dense_model(2);
  for (const auto phase : {InferencePhase::Prefill, InferencePhase::Decode}) {
    INFO((phase == InferencePhase::Prefill ? "prefill" : "decode"));
    auto blocking = inference_plan(phase, {1, 2}, 8);
    blocking.d_axes = {0};
    auto overlapped = blocking;
    overlapped.collective_matmul = true;
    InferenceLayout blocking_layout, overlapped_layout;
    const auto plain = inference_program(model, blocking, topo, blocking_layout);
    const auto program = inference_program(model, overlapped, topo, overlapped_layout);
    CHECK(program_flops(program) == Approx(program_flops(plain)).epsilon(1e-12));
    for (const OpRole role : {OpRole::TensorAllGather, OpRole::TensorReduceScatter, OpRole::TensorAllReduce})
      CHECK(role_bytes(program, role) == Approx(role_bytes(plain, role)).epsilon(1e-12));
    const double tokens = phase == InferencePhase::Prefill ? 8.0 * 1024 : 8.0;
    double yz_gathers = 0;
    int gathers = 0;
    for (const auto& op : program) {
      if (op.name.size() > 22 && op.name.compare(op.name.size() - 22, 22, ".allgather_activations") == 0) {
        yz_gathers += op.collective().bytes;
        ++gathers;
        CHECK(op.collective().axes == std::vector<int>{1, 2});
      }
    }
    CHECK(gathers == 2 * model.layers);   // attention and MLP, each layer
    CHECK(yz_gathers == Approx(gathers * tokens * model.d_model * 2.0 / 2).epsilon(1e-12));
    const auto before = run_program(topo, {}, plain, {Fidelity::Full, false, {}});
    const auto after = run_program(topo, {}, program, {Fidelity::Full, false, {}});
    CHECK(after.total_time_s <= before.total_time_s * (1 + 1e-12));
    if (phase == InferencePhase::Prefill) CHECK(after.total_time_s < before.total_time_s);
    replay_checked(topo, program);
  }
  // The loader takes the pair (it refused it before).
  const Scenario loaded = load_scenario_text(R"(
version: 1
name: two-d-overlap
hardware: {preset: v5p}
topology:
  mesh: {X: 2, Y: 2, Z: 2}
workload:
  kind: inference
  model: {preset: llama3-8b, layers: 2}
  phase: decode
  batch: 8
  context_length: 1024
  collective_matmul: true
  parallelism:
    model: [Y, Z]
    model_d: [X]
)",
                                             podsim_test::kScenarioFile);
  CHECK(loaded.inference().plan.collective_matmul);
  CHECK(loaded.inference().plan.d_axes == std::vector<int>{0});
}

// --- Context parallelism with MLA and with 2D weight-stationary ---------------------------------

TEST_CASE("combinations: context parallelism with MLA in training, the latent round the ring",
          "[combinations][training][context][mla]") {
  // X: a ring of 4 over each 8192-token sequence, Y: 2 tensor shards. A hop carries the chip's
  // t = S/4 tokens of latent and rotary key, t (d_c + d_h^R) bf16, whole on each tensor shard
  // (the heads come from it); the backward's twice that (the block and its gradient). Each
  // chip scores 1/4 of the unsplit run's scores and up-projects each of the 3 blocks it
  // receives to its N/Y heads: 3 t d_c (N/Y) (d_h + v) x 2 FLOPs a forward, twice a backward.
  const auto topo = podsim_test::v5p_mesh({4, 2});
  auto single = topo;
  single.axes[0].size = 1;
  const auto model = mla_model(2);
  TrainingPlan plan;
  plan.data_axes = {0};
  plan.context_axis = 0;
  plan.tensor_axes = {1};
  plan.sequence_length = 8192;
  plan.global_batch_tokens = 8192;
  plan.checkpointing = Checkpointing::None;
  auto unsplit_plan = plan;
  unsplit_plan.data_axes = {};
  unsplit_plan.context_axis = -1;
  const auto ring = build(model, plan, topo);
  const auto whole = build(model, unsplit_plan, single);
  const double t = 8192 / 4.0, y = 2;
  const double block_bytes = t * (512 + 64) * 2.0;
  const double unpack = 3 * t * mla_up_projection_flops(model) / y;
  for (int l = 0; l < model.layers; ++l) {
    const std::string layer = "L" + std::to_string(l) + ".attn.";
    INFO(layer);
    const auto forward = ring_sends(ring.program, layer + "fwd.ring_send");
    const auto backward = ring_sends(ring.program, layer + "bwd.ring_send");
    REQUIRE(forward.size() == 3);
    REQUIRE(backward.size() == 3);
    for (double bytes : forward) CHECK(bytes == Approx(block_bytes).epsilon(1e-12));
    for (double bytes : backward) CHECK(bytes == Approx(2 * block_bytes).epsilon(1e-12));
    const double whole_scores = whole.layout.blocks[2 * l].score_flops_per_chip;
    CHECK(whole_scores > 0);
    CHECK(flops_named(ring.program, layer + "fwd.ring") == Approx(whole_scores / 4 + unpack).epsilon(1e-12));
    CHECK(flops_named(ring.program, layer + "bwd.ring") == Approx(2 * (whole_scores / 4 + unpack)).epsilon(1e-12));
  }
  // The pod: the unsplit run's FLOPs plus every chip's up-projections, 3 x forward.
  CHECK(ring.layout.total_flops ==
        Approx(whole.layout.total_flops + 8 * 3 * model.layers * unpack).epsilon(1e-12));
  replay_checked(topo, ring.program);
  // And in a pipeline: two stages over Y instead of the tensor shards, two microbatches;
  // the same latent blocks (t tokens each, whole heads now), each pass's ring inside its stage.
  auto piped = plan;
  piped.tensor_axes = {};
  piped.pipeline_axis = 1;
  piped.schedule = PipelineSchedule::OneFOneB;
  piped.microbatches = 2;
  piped.global_batch_tokens = 8192.0 * 2;
  const auto stages = build(model, piped, topo);
  const auto sends = ring_sends(stages.program, "");
  CHECK(count_role(stages.program, OpRole::PipelineSend) > 0);
  REQUIRE(!sends.empty());
  for (double bytes : sends) CHECK((bytes == Approx(block_bytes) || bytes == Approx(2 * block_bytes)));
  replay_checked(topo, stages.program);
}

TEST_CASE("combinations: context-parallel MLA prefill, the latent round the ring",
          "[combinations][inference][context][mla]") {
  // Two 4096-token prompts, X: a ring of 4, Y: 2 model shards, against X of 1: a hop carries
  // the chip's t = 2 x 4096/4 tokens of latent and rotary key, t (d_c + d_h^R) bf16; each
  // chip scores 1/4 of the unsplit scores and up-projects the 3 blocks it receives.
  const auto topo = podsim_test::v5p_mesh({4, 2});
  auto single = topo;
  single.axes[0].size = 1;
  const auto model = mla_model(2);
  auto plan = inference_plan(InferencePhase::Prefill, {1}, 2);
  plan.prompt_length = 4096;
  auto unsplit_plan = plan;
  plan.context_axis = 0;
  InferenceLayout cp_layout, one_layout;
  const auto cp = inference_program(model, plan, topo, cp_layout);
  const auto one = inference_program(model, unsplit_plan, single, one_layout);
  const double t = 2 * 4096 / 4.0, y = 2;
  const double unpack = 3 * t * mla_up_projection_flops(model) / y;
  const double whole_scores = chip_step_compute(model, unsplit_plan, single, prefill_shape(2, 4096, 0)).score_flops;
  CHECK(whole_scores > 0);
  for (int l = 0; l < model.layers; ++l) {
    const std::string layer = "L" + std::to_string(l) + ".attn.";
    INFO(layer);
    const auto sends = ring_sends(cp, layer + "ring_send");
    REQUIRE(sends.size() == 3);
    for (double bytes : sends) CHECK(bytes == Approx(t * (512 + 64) * 2.0).epsilon(1e-12));
    CHECK(flops_named(cp, layer + "ring") == Approx(whole_scores / 4 + unpack).epsilon(1e-12));
  }
  CHECK(program_flops(cp) == Approx(program_flops(one) / 4 + model.layers * unpack).epsilon(1e-12));
  CHECK(cp_layout.flops == Approx(one_layout.flops + 8 * model.layers * unpack).epsilon(1e-12));
  replay_checked(topo, cp);
}

TEST_CASE("combinations: 2D weight-stationary prefill with context parallelism, 1/CP of the 2D run per chip",
          "[combinations][inference][2d][context]") {
  // D over X (2D attention: the batch split over it), heads and F over Y, a ring of 4 over Z,
  // against the same 2D plan on X and Y alone: each chip holds 1/X of the sequences and 1/4
  // of their tokens, does 1/4 of the 2D run's FLOPs (MLA: plus the up-projection of the 3
  // blocks it receives, over its N/(XY) share), and passes its block round Z: t/X tokens of
  // its K/Y KV heads' K and V (MLA: of latent and rotary key).
  const auto topo = podsim_test::v5p_mesh({2, 2, 4});
  const auto flat = podsim_test::v5p_mesh({2, 2});
  for (const bool mla : {false, true}) {
    INFO((mla ? "MLA" : "GQA"));
    const auto model = mla ? mla_model(2) : dense_model(2);
    auto plan = inference_plan(InferencePhase::Prefill, {1}, 2);
    plan.d_axes = {0};
    plan.prompt_length = 4096;
    auto ring_plan = plan;
    ring_plan.context_axis = 2;
    InferenceLayout ring_layout, flat_layout;
    const auto ring = inference_program(model, ring_plan, topo, ring_layout);
    const auto two_d = inference_program(model, plan, flat, flat_layout);
    const double t = 2 * 4096 / 4.0, x = 2, yz = 2;
    const double block_bytes = mla ? t / x * (512 + 64) * 2.0 : t / x * 2 * 8 * 128 * 2.0 / yz;
    const double unpack = mla ? 3 * t * mla_up_projection_flops(model) / (x * yz) : 0.0;
    const auto sends = ring_sends(ring, "L");
    REQUIRE(sends.size() == 3 * static_cast<size_t>(model.layers));
    for (double bytes : sends) CHECK(bytes == Approx(block_bytes).epsilon(1e-12));
    CHECK(program_flops(ring) == Approx(program_flops(two_d) / 4 + model.layers * unpack).epsilon(1e-12));
    CHECK(count_role(ring, OpRole::TensorAllReduce) == model.layers);   // the 2D MLP's reduction over X
    replay_checked(topo, ring);
  }
}

TEST_CASE("combinations: context parallelism loads with MLA and model_d, and is refused without attention",
          "[combinations][context][scenario]") {
  // A model without attention has nothing for a ring: splitting its sequences is splitting
  // its batch (physics). Refused at the context key in training and prefill, and by the
  // program builders.
  const std::string training = R"(version: 1
hardware: {preset: v5p}
topology: {mesh: {X: 4, Y: 2}}
workload:
  kind: training
  model:
    preset: llama3-8b
    layers: 2
    attention: {kind: mla, q_lora_rank: 1536, kv_lora_rank: 512, qk_nope_head_dim: 128, qk_rope_head_dim: 64, v_head_dim: 128}
  batch_tokens: 8192
  sequence_length: 8192
  parallelism:
    tensor: [Y]
    context: X
)";
  const std::string prefill = R"(version: 1
hardware: {preset: v5p}
topology: {mesh: {X: 2, Y: 2, Z: 4}}
workload:
  kind: inference
  model:
    preset: llama3-8b
    layers: 2
    attention: {kind: mla, q_lora_rank: 1536, kv_lora_rank: 512, qk_nope_head_dim: 128, qk_rope_head_dim: 64, v_head_dim: 128}
  phase: prefill
  batch: 2
  prompt_length: 4096
  parallelism:
    model: [Y]
    model_d: [X]
    context: Z
)";
  const Scenario t = load_scenario_text(training, podsim_test::kScenarioFile);
  CHECK(t.training().plan.context_axis == 0);
  const Scenario p = load_scenario_text(prefill, podsim_test::kScenarioFile);
  CHECK(p.inference().plan.context_axis == 2);
  CHECK(p.inference().plan.d_axes == std::vector<int>{0});
  const std::string mla_line =
      "    attention: {kind: mla, q_lora_rank: 1536, kv_lora_rank: 512, qk_nope_head_dim: 128, qk_rope_head_dim: 64, "
      "v_head_dim: 128}";
  for (const auto& [text, axis] : {std::pair{training, std::string("X")}, std::pair{prefill, std::string("Z")}}) {
    const std::string none = podsim_test::replaced_in(text, mla_line, "    attention: {kind: none}");
    podsim_test::require_error(none, "workload.parallelism.context", axis, "    context: " + axis);
    CHECK(podsim_test::contains(podsim_test::error_from(none).what(), "has no attention"));
  }
  TransformerSpec mlp_only = dense_model(2);
  mlp_only.attention = AttentionKind::None;
  TrainingLayout training_layout;
  CHECK_THROWS_WITH(training_program(mlp_only, t.training().plan, t.topology, training_layout),
                    Catch::Contains("has no attention"));
  InferenceLayout inference_layout;
  CHECK_THROWS_WITH(inference_program(mlp_only, p.inference().plan, p.topology, inference_layout),
                    Catch::Contains("has no attention"));
}

// --- MoE layers with collective matmuls ---------------------------------------------------------

namespace {

// The same FLOPs and tensor-parallel bytes, blocking or overlapped, and the reduced replay of
// the overlapped program equal to the full one.
void same_work_as_blocking(const TopologySpec& topo, const Program& blocking, const Program& cm) {
  double blocking_flops = 0, cm_flops = 0;
  for (const auto& op : blocking) blocking_flops += op.flops();
  for (const auto& op : cm) cm_flops += op.flops();
  CHECK(cm_flops == Approx(blocking_flops).epsilon(1e-12));
  CHECK(role_bytes(cm, OpRole::TensorAllGather) > 0);
  CHECK(role_bytes(cm, OpRole::TensorAllGather) == Approx(role_bytes(blocking, OpRole::TensorAllGather)));
  CHECK(role_bytes(cm, OpRole::TensorReduceScatter) == Approx(role_bytes(blocking, OpRole::TensorReduceScatter)));
  CHECK(count_role(cm, OpRole::MoeDispatch) == count_role(blocking, OpRole::MoeDispatch));
  replay_checked(topo, cm);
}

// LLaMA-3 8B's layer with 8 experts of 2048 (top-2) and one shared expert in every layer.
TransformerSpec shared_expert_model(int layers) {
  TransformerSpec m = dense_model(layers);
  m.moe = MoeSpec{8, 2, 1, 2048, 0};
  return m;
}

}  // namespace

TEST_CASE("combinations: MoE layers with collective matmuls in the step and the pipeline, the work of blocking TP",
          "[combinations][training][pipeline][moe]") {
  // Experts over Y, TP over Z; Zipf routing, so the experts and the AllToAll pairs differ along
  // Y (kept whole by the reduction). The pipeline's stages over X under ZB-H1, whose B passes
  // split the router and shared experts' backward.
  const auto topo = podsim_test::v5p_mesh({2, 2, 2});
  TrainingPlan step;
  step.data_axes = {0, 1};
  step.fsdp = true;
  step.expert_axes = {1};
  step.tensor_axes = {2};
  step.sequence_length = 2048;
  step.global_batch_tokens = 2048.0 * 4;
  step.routing.spec.kind = RoutingKind::Zipf;
  step.routing.spec.zipf_s = 1.2;
  auto pipeline = two_stage_plan();
  pipeline.schedule = PipelineSchedule::ZeroBubbleH1;
  pipeline.data_axes = {1};
  pipeline.expert_axes = {1};
  pipeline.tensor_axes = {2};
  pipeline.global_batch_tokens *= 2;
  pipeline.routing = step.routing;
  for (const auto& [plan, layers] : {std::pair{step, 2}, std::pair{pipeline, 4}}) {
    INFO((plan.pipeline_axis >= 0 ? "pipeline" : "single step"));
    auto overlap = plan;
    overlap.tensor_overlap = true;
    const auto blocking = build(shared_expert_model(layers), plan, topo);
    const auto cm = build(shared_expert_model(layers), overlap, topo);
    CHECK(cm.layout.total_flops == Approx(blocking.layout.total_flops).epsilon(1e-12));
    CHECK(cm.layout.moe.busiest_chip_over_mean > 1.0);
    same_work_as_blocking(topo, blocking.program, cm.program);
  }
}

TEST_CASE("combinations: MoE layers with collective matmuls in prefill and decode, the work of blocking TP",
          "[combinations][inference][moe]") {
  // Model over X, experts over Y (the batch split over Y outside the experts), Zipf routing.
  const auto topo = podsim_test::v5p_mesh({2, 2});
  for (const auto phase : {InferencePhase::Prefill, InferencePhase::Decode}) {
    INFO((phase == InferencePhase::Prefill ? "prefill" : "decode"));
    auto plan = inference_plan(phase, {0}, 8);
    plan.expert_axes = {1};
    plan.routing.spec.kind = RoutingKind::Zipf;
    plan.routing.spec.zipf_s = 1.2;
    auto overlap = plan;
    overlap.collective_matmul = true;
    InferenceLayout blocking_layout, cm_layout;
    const auto blocking = inference_program(shared_expert_model(2), plan, topo, blocking_layout);
    const auto cm = inference_program(shared_expert_model(2), overlap, topo, cm_layout);
    CHECK(cm_layout.flops == Approx(blocking_layout.flops).epsilon(1e-12));
    same_work_as_blocking(topo, blocking, cm);
    // What the overlap leaves exposed is less: the same compute in a step no longer.
    const auto b = run_program(topo, {}, blocking, {});
    const auto c = run_program(topo, {}, cm, {});
    CHECK(c.total_time_s < b.total_time_s);
  }
}

// --- Serving column ---------------------------------------------------------------------------

TEST_CASE("combinations: serving an MLA model, its slots sized by the latent cache", "[combinations][serving][mla]") {
  // A dense MLA model on a v5e 4: every request served, and the slots the KV latent leaves
  // beside the weights (L (d_c + d_h^R) x 2 bytes a token).
  const std::string text = R"(version: 1
hardware: {preset: v5e}
topology: {mesh: {X: 4}}
workload:
  kind: serving
  model:
    preset: llama3-8b
    layers: 4
    attention: {kind: mla, q_lora_rank: 1536, kv_lora_rank: 512, qk_nope_head_dim: 128, qk_rope_head_dim: 64, v_head_dim: 128}
  requests:
    poisson: {rate: "4 /s", count: 8, prompt_tokens: 256, output_tokens: 8, seed: 1}
)";
  const Scenario s = load_scenario_text(text, podsim_test::kScenarioFile);
  REQUIRE(s.serving().model.attention == AttentionKind::Mla);
  const double per_token = kv_cache_bytes_per_token(s.serving().model, s.serving().generate.kv_bytes);
  CHECK(per_token == Approx(4.0 * (512 + 64) * 2));
  // Against the same layers with LLaMA-3 8B's GQA cache (2 L K H x 2 bytes, 3.6 times the
  // latent): at least 3 times the slots, the weights being about the same.
  std::string gqa = text;
  gqa.replace(gqa.find("    attention:"), gqa.find("  requests:") - gqa.find("    attention:"), "");
  const Scenario g = load_scenario_text(gqa, podsim_test::kScenarioFile);
  REQUIRE(g.serving().model.attention == AttentionKind::Gqa);
  CHECK(s.serving().hbm_slots > 3 * g.serving().hbm_slots);
  const std::vector<RequestRecord> requests = served(s);
  REQUIRE(requests.size() == 8);
  for (const auto& r : requests) {
    CHECK(r.first_token_s > r.prefill_start_s);
    CHECK(r.end_s > r.first_token_s);
  }
}

TEST_CASE("combinations: a 2D weight-stationary server prices a step as the inference step at its batch padded to "
          "the D axes",
          "[combinations][serving]") {
  // LLaMA-3 8B cut to 4 layers on a v5e 4x2, D over X (4 chips), heads over Y. A step's batch
  // is padded up to a multiple of 4 (2D attention gives each D shard its quarter of the
  // sequences); a padding row passes through the weights as a real one and attends over no
  // cache. So a prefill of 3 prompts costs kind: inference's prefill of 4, a decode step of 8
  // sequences kind: inference's decode of 8, and one of 5 the decode of 8 at 5 sequences'
  // context.
  const std::string text = R"(version: 1
hardware: {preset: v5e}
topology: {mesh: {X: 4, Y: 2}}
workload:
  kind: serving
  model: {preset: llama3-8b, layers: 4}
  parallelism: {model: [Y], model_d: [X]}
  requests:
    poisson: {rate: "4 /s", count: 6, prompt_tokens: 256, output_tokens: 8, seed: 1}
)";
  const Scenario s = load_scenario_text(text, podsim_test::kScenarioFile);
  const ServingWorkload& w = s.serving();
  REQUIRE(w.generate.d_axes == std::vector<int>{0});
  REQUIRE(w.generate.model_axes == std::vector<int>{1});
  // The slots: a multiple of the 4 D shards, each chip holding weights / 8 and its shard's
  // caches over its half of the heads, within its HBM.
  CHECK(w.hbm_slots % 4 == 0);
  const double kv = kv_cache_bytes_per_token(w.model, w.generate.kv_bytes);
  const double per_chip = param_count(w.model) * w.generate.weight_bytes / 8 + w.hbm_slots / 4.0 * w.max_context * kv / 2;
  CHECK(per_chip <= w.generate_topology.chip.usable_hbm_bytes());
  CHECK(per_chip + 4 / 4.0 * w.max_context * kv / 2 > w.generate_topology.chip.usable_hbm_bytes());   // 4 more do not fit

  const ServerRole role = server_role(w.generate_topology, w.generate);
  ServingCostModel costs(w.model, role, role, {});
  ServingConfig config = w.config;
  config.slots = 8;
  costs.prepare(config, w.requests, true);
  REQUIRE(costs.whole_steps());
  auto inference_s = [&](InferencePhase phase, int batch, int length) {
    InferencePlan plan = w.generate;
    plan.phase = phase;
    plan.batch = batch;
    (phase == InferencePhase::Prefill ? plan.prompt_length : plan.context_length) = length;
    InferenceLayout layout;
    return run_program(role.topology, {}, inference_program(w.model, plan, role.topology, layout), {}).total_time_s;
  };
  const double prefill_4 = inference_s(InferencePhase::Prefill, 4, 256);
  CHECK(costs.prefill_s(3, 256, 0) == Approx(prefill_4).epsilon(1e-9));
  CHECK(costs.prefill_s(4, 256, 0) == Approx(prefill_4).epsilon(1e-9));
  CHECK(costs.prefill_s(5, 256, 0) > prefill_4 * 1.01);   // padded to 8
  const double decode_8 = inference_s(InferencePhase::Decode, 8, 260);
  CHECK(costs.decode_s(8, 8 * 260.0) == Approx(decode_8).epsilon(1e-9));
  CHECK(costs.decode_s(5, 5 * 260.0) == Approx(costs.decode_s(8, 5 * 260.0)).epsilon(1e-12));
  CHECK(costs.decode_s(5, 5 * 260.0) < decode_8);   // the padding attends over nothing
  CHECK(costs.decode_s(4, 5 * 260.0) < costs.decode_s(5, 5 * 260.0));

  const std::vector<RequestRecord> requests = served(s);
  REQUIRE(requests.size() == 6);
  for (const auto& r : requests) CHECK(r.end_s > r.first_token_s);
}

TEST_CASE("combinations: a disaggregated 2D weight-stationary generate server takes each cache over its D shard's "
          "chips",
          "[combinations][serving]") {
  // A request's cache on a 2D server lies on the chips of its D shard (heads over Y, the shard
  // one X position): 4 of the 16 chips of a v5e 4x4, so those 4 receive it, each a quarter,
  // where a 1D server's 16 chips take a sixteenth each: 4 times the bytes a chip, so at least 4
  // times as long. (Measured 10.24 times: 1.342 ms against 0.131 ms. The 4 holders share one
  // host's NIC, 33.5 MB at 25 GB/s, where the 1D transfer's 16 chips move 256 GB/s, above their
  // two hosts' NICs: the DCN model's host accounting is not examined here.)
  const std::string text = R"(version: 1
hardware: {preset: v5e}
topology: {mesh: {X: 4, Y: 4}}
workload:
  kind: serving
  model: {preset: llama3-8b, layers: 4}
  policy: disaggregated
  parallelism: {model: [Y], model_d: [X]}
  prefill: {parallelism: {model: [X, Y]}}
  requests:
    poisson: {rate: "4 /s", count: 6, prompt_tokens: 2048, output_tokens: 8, seed: 1}
)";
  auto transfer_s = [](const std::string& yaml) {
    const Scenario s = load_scenario_text(yaml, podsim_test::kScenarioFile);
    const ServingWorkload& w = s.serving();
    ServingCostModel costs(w.model, server_role(w.prefill_server_topology, w.prefill),
                           server_role(w.generate_topology, w.generate), {});
    costs.prepare(w.config, w.requests, false);
    return costs.kv_transfer_s(2048);
  };
  const double two_d = transfer_s(text);
  std::string one_d = text;
  one_d.replace(one_d.find("{model: [Y], model_d: [X]}"), 26, "{model: [X, Y]}");
  const double flat = transfer_s(one_d);
  INFO("2D " << two_d << " s, 1D " << flat << " s");
  CHECK(two_d >= 4 * flat * (1 - 1e-9));
  const Scenario s = load_scenario_text(text, podsim_test::kScenarioFile);
  const std::vector<RequestRecord> requests = served(s);
  REQUIRE(requests.size() == 6);
  for (const auto& r : requests) CHECK(r.end_s > r.first_token_s);
}

TEST_CASE("combinations: a context-parallel prefill server prices a prefill as kind: inference's context-parallel "
          "prefill",
          "[combinations][serving]") {
  // Disaggregated LLaMA-3 8B (4 layers) on v5e 4x4 slices: the prefill servers split each
  // prompt over X (ring attention, CP = 4) with the weights over Y; the generate servers use
  // both axes for the weights. A prefill step of 2 prompts of 512 tokens costs kind:
  // inference's context-parallel prefill of the same (the same program, replayed whole); every
  // request is served, its cache moved from the 16 chips it is spread over.
  const std::string text = R"(version: 1
hardware: {preset: v5e}
topology: {mesh: {X: 4, Y: 4}}
workload:
  kind: serving
  model: {preset: llama3-8b, layers: 4}
  policy: disaggregated
  prefill: {parallelism: {model: [Y], context: X}}
  prefill_batch: 2
  requests:
    poisson: {rate: "4 /s", count: 6, prompt_tokens: [300, 512], output_tokens: 8, seed: 1}
)";
  const Scenario s = load_scenario_text(text, podsim_test::kScenarioFile);
  const ServingWorkload& w = s.serving();
  REQUIRE(w.prefill.context_axis == 0);
  ServingCostModel costs(w.model, server_role(w.prefill_server_topology, w.prefill),
                         server_role(w.generate_topology, w.generate), {});
  InferencePlan plan = w.prefill;
  plan.phase = InferencePhase::Prefill;
  plan.batch = 2;
  plan.prompt_length = 512;
  InferenceLayout layout;
  const double inference =
      run_program(w.prefill_server_topology, {}, inference_program(w.model, plan, w.prefill_server_topology, layout), {})
          .total_time_s;
  CHECK(costs.prefill_s(2, 512, 0) == Approx(inference).epsilon(1e-9));
  // The ring is there: the same prefill without the context axis (the weights over Y, X idle)
  // does 4 times the work per chip.
  InferencePlan flat = plan;
  flat.context_axis = -1;
  const double flat_s =
      run_program(w.prefill_server_topology, {}, inference_program(w.model, flat, w.prefill_server_topology, layout), {})
          .total_time_s;
  CHECK(inference < flat_s / 2);

  const std::vector<RequestRecord> requests = served(s);
  REQUIRE(requests.size() == 6);
  for (const auto& r : requests) CHECK(r.end_s > r.first_token_s);
}

// --- The table cites what exists --------------------------------------------------------------

TEST_CASE("combinations: every test the docs' combination table cites exists", "[combinations][docs]") {
  namespace fs = std::filesystem;
  const fs::path root = PODSIM_SOURCE_DIR;
  std::ifstream doc(root / "docs" / "modelling.md");
  REQUIRE(doc);
  // Every TEST_CASE title in tests/*.cpp (the first string literal).
  std::set<std::string> titles;
  const std::regex title_re("TEST_CASE\\(\\s*\"([^\"]*)\"");
  for (const auto& entry : fs::directory_iterator(root / "tests")) {
    if (entry.path().extension() != ".cpp") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    const std::string s = text.str();
    for (std::sregex_iterator it(s.begin(), s.end(), title_re), end; it != end; ++it) titles.insert((*it)[1]);
  }
  REQUIRE(titles.size() > 100);
  // The section's table: a header of the five paths, then one row per feature.
  std::string line;
  bool in_section = false;
  int rows = 0, cited = 0;
  const std::regex cite_re("`([^`]+)`");
  const std::vector<std::string> features = {"FSDP", "TP", "collective matmuls", "context parallelism", "experts (MoE)",
                                             "MLA", "2D weight-stationary", "remat policy", "ZeRO"};
  while (std::getline(doc, line)) {
    if (line.rfind("## ", 0) == 0) {
      in_section = line == "## Which features combine";
      continue;
    }
    if (!in_section || line.rfind("| ", 0) != 0 || line.rfind("| ---", 0) == 0 || line.rfind("| feature", 0) == 0)
      continue;
    // "| feature | cell | cell | cell | cell | cell |"
    std::vector<std::string> cells;
    std::stringstream row(line.substr(1));
    for (std::string cell; std::getline(row, cell, '|');) {
      const auto b = cell.find_first_not_of(' '), e = cell.find_last_not_of(' ');
      if (b != std::string::npos) cells.push_back(cell.substr(b, e - b + 1));
    }
    INFO(line);
    REQUIRE(cells.size() == 6);
    REQUIRE(rows < static_cast<int>(features.size()));
    CHECK(cells[0] == features[static_cast<size_t>(rows)]);
    ++rows;
    for (size_t c = 1; c < cells.size(); ++c) {
      const std::string& cell = cells[c];
      const bool stated = cell.rfind("refused:", 0) == 0 || cell.rfind("n/a:", 0) == 0 ||
                          cell.rfind("not modelled:", 0) == 0;
      int names = 0;
      for (std::sregex_iterator it(cell.begin(), cell.end(), cite_re), end; it != end; ++it, ++names) {
        const std::string name = (*it)[1];
        INFO("cited: " << name);
        if (name.size() > 5 && name.compare(name.size() - 5, 5, ".yaml") == 0) {
          CHECK(fs::exists(root / "scenarios" / name));   // run by "every scenario meets its stated expectations"
          continue;
        }
        bool found = false;
        for (const auto& t : titles) found = found || t.find(name) != std::string::npos;
        CHECK(found);
      }
      cited += names;
      INFO("cell: " << cell);
      CHECK((stated || names > 0));   // a test, or a stated reason
    }
  }
  CHECK(rows == static_cast<int>(features.size()));
  CHECK(cited > 20);
}
