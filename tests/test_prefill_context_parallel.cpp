// Context-parallel prefill (parallelism.context in kind: inference): every chip prefills 1/CP
// of each prompt's tokens and attends over the whole prompt by ring attention. Checked against
// FLOP counts, the ring's closed form in both regimes, and its refusals.
#include <catch2/catch.hpp>

#include "meshes.hpp"
#include "replay_equality.hpp"
#include "scenario_errors.hpp"

#include "sim/engine/run.hpp"
#include "workloads/inference.hpp"

using namespace podsim;
using namespace podsim_test;

namespace {

TransformerSpec prefill_model(int layers = 2) {
  TransformerSpec m = *find_model_preset("llama3-8b");   // 8 KV heads of 128
  m.name = "test-model";
  m.layers = layers;
  m.max_sequence_length = 1 << 17;
  return m;
}

InferencePlan prefill_plan(int prompt, int context_axis) {
  InferencePlan plan;
  plan.phase = InferencePhase::Prefill;
  plan.batch = 1;
  plan.prompt_length = prompt;
  plan.model_axes = {1};
  plan.context_axis = context_axis;
  return plan;
}

struct Ring {
  double duration_s = 0;   // layer 0's attention: its first score step's start to its last's end, chip 0
  double step_s = 0;       // one score step
};
Ring layer0_ring(const Program& program, const RunResult& run, int steps) {
  Ring r;
  double start = -1, end = -1;
  for (size_t i = 0; i < program.size(); ++i) {
    if (program[i].name == "L0.attn.ring0") {
      start = run.span(static_cast<int>(i), 0, 0).start_s;
      r.step_s = program[i].compute().compute_s;
    }
    if (program[i].name == "L0.attn.ring" + std::to_string(steps - 1)) end = run.span(static_cast<int>(i), 0, 0).end_s;
  }
  REQUIRE(start >= 0);
  REQUIRE(end >= 0);
  r.duration_s = end - start;
  return r;
}

}  // namespace

TEST_CASE("context-parallel prefill: each chip does 1/CP of the work, the FLOPs and cache add up", "[inference][context]") {
  // X: 4 context chips, Y: 2 model shards, against Y alone: the same FLOPs in all, split 4 ways.
  const auto model = prefill_model();
  const auto topo = v5p_mesh({4, 2});
  auto single = topo;
  single.axes = {{"X", 1, false}, {"Y", 2, true}};
  InferenceLayout cp_layout, one_layout;
  const auto cp = inference_program(model, prefill_plan(8192, 0), topo, cp_layout);
  const auto one = inference_program(model, prefill_plan(8192, -1), single, one_layout);
  CHECK(cp_layout.flops == Approx(one_layout.flops).epsilon(1e-12));
  double cp_flops = 0, one_flops = 0;
  for (const auto& op : cp) cp_flops += op.flops();
  for (const auto& op : one) one_flops += op.flops();
  CHECK(cp_flops == Approx(one_flops / 4).epsilon(1e-12));
  // The weights on every chip of the ring, the cache split over it.
  const double kv = 8192 * kv_cache_bytes_per_token(model, 2);
  CHECK(cp_layout.memory_per_chip_bytes == Approx((cp_layout.param_bytes + kv / 4) / 2));
  CHECK(cp_layout.tokens == 8192);
  // A decode step cannot split its one token a sequence.
  auto decode = prefill_plan(8192, 0);
  decode.phase = InferencePhase::Decode;
  InferenceLayout layout;
  CHECK_THROWS_WITH(inference_program(model, decode, topo, layout), Catch::Contains("decode step"));
  CHECK_THROWS_WITH(inference_program(model, prefill_plan(8196, 0), topo, layout), Catch::Contains("2 x 4 equal chunks"));
}

TEST_CASE("context-parallel prefill: the ring takes step + (CP-1) max(step, send)", "[inference][context]") {
  // A chip's K/V block: its 1/CP of the tokens x 2 (K, V) x 8 heads x 128 x 2 B, over the 2
  // model shards (8 KV heads split 2 ways), one hop round the ring (X wraps). Long prompts:
  // the score steps outlast the sends, which hide; short prompts on fast matmuls: the sends
  // set the pace.
  const auto model = prefill_model();
  for (const int prompt : {65536, 1024}) {
    for (const bool overlap : {false, true}) {   // collective matmuls: the ring between the halves
      INFO(prompt << "-token prompt, collective matmuls " << overlap);
      auto topo = v5p_mesh({4, 2});
      if (prompt == 1024) topo.chip.bf16_flops_per_s *= 1000;   // score steps far shorter than a send
      InferenceLayout layout;
      auto plan = prefill_plan(prompt, 0);
      plan.collective_matmul = overlap;
      const auto program = inference_program(model, plan, topo, layout);
      const auto run = run_program(topo, {}, program, {});
      const double block_bytes = prompt / 4.0 * 2 * 8 * 128 * 2 / 2;
      // The default hop model: a hop takes its bytes' time on the link, at least the hop latency.
      const double send_s = std::max(block_bytes / topo.chip.ici_bandwidth_Bps, topo.chip.hop_latency_s);
      const Ring ring = layer0_ring(program, run, 4);
      CHECK(ring.duration_s == Approx(ring.step_s + 3 * std::max(ring.step_s, send_s)).epsilon(0.01));
      if (prompt == 65536) CHECK(ring.step_s > send_s);
      else CHECK(send_s > 5 * ring.step_s);
    }
  }
}

TEST_CASE("context-parallel prefill: located errors", "[inference][context][scenario]") {
  const std::string base = R"(version: 1
hardware: {preset: v5p}
topology: {mesh: {X: 4, Y: 4}}
workload:
  kind: inference
  model: llama3-8b
  phase: prefill
  batch: 1
  prompt_length: 8192
  parallelism: {model: [Y], context: X}
)";
  const Scenario s = load_scenario_text(base, kScenarioFile);
  CHECK(s.inference().plan.context_axis == 0);
  require_error(replaced_in(base, "prompt_length: 8192", "prompt_length: 8196"), "workload.prompt_length", "8196",
                "prompt_length:");
  require_error(replaced_in(replaced_in(base, "phase: prefill", "phase: decode"), "prompt_length", "context_length"),
                "workload.parallelism.context", "X", "context: X");
  require_error(replaced_in(base, "context: X}", "context: Y}"), "workload.parallelism.context", "Y", "context: Y");
  // With collective matmuls the ring runs between the two halves of the attention block.
  const Scenario overlapped = load_scenario_text(replaced_in(base, "context: X}", "context: X}\n  collective_matmul: true"),
                                                 kScenarioFile);
  CHECK(overlapped.inference().plan.collective_matmul);
  require_error(replaced_in(base, "context: X}", "context: [X, Y]}"), "workload.parallelism.context", "[X, Y]",
                "context: [X, Y]");
  // Serving prices a server's prefill steps once for all: no context axis there yet.
  const std::string serving = R"(version: 1
hardware: {preset: v5p}
topology: {mesh: {X: 4, Y: 4}}
workload:
  kind: serving
  model: llama3-8b
  parallelism: {model: [Y], context: X}
  requests:
    poisson: {rate: "1 /s", count: 10, prompt_tokens: 512, output_tokens: 16}
)";
  require_error(serving, "workload.parallelism.context", "X", "context: X");
}

TEST_CASE("context-parallel prefill of an MoE model: the ring beside the experts, the same FLOPs", "[inference][context][moe]") {
  // X: 4 context chips, Y: 2 model shards, Z: 2 expert groups, against X of 1: every chip
  // routes its 1/CP of each prompt's tokens to the experts (the dispatch per chip shrinks 4
  // times with its tokens) and the step does the same FLOPs in all.
  TransformerSpec model = prefill_model();
  model.moe = MoeSpec{8, 2, 0, 2048, 0};   // 8 experts of d_ff 2048, top-2, every layer MoE
  const auto topo = v5p_mesh({4, 2, 2});
  auto single = topo;
  single.axes[0].size = 1;
  auto plan = prefill_plan(8192, 0);
  plan.batch = 2;
  plan.expert_axes = {2};
  auto plain = plan;
  plain.context_axis = -1;
  InferenceLayout cp_layout, one_layout;
  const auto cp = inference_program(model, plan, topo, cp_layout);
  const auto one = inference_program(model, plain, single, one_layout);
  CHECK(cp_layout.flops == Approx(one_layout.flops).epsilon(1e-12));
  double cp_dispatch = 0, one_dispatch = 0;
  int ring_sends = 0;
  for (const auto& op : cp) {
    if (op.role == OpRole::MoeDispatch) cp_dispatch += op.collective().bytes;
    ring_sends += op.role == OpRole::RingSend;
  }
  for (const auto& op : one) {
    if (op.role == OpRole::MoeDispatch) one_dispatch += op.collective().bytes;
  }
  CHECK(ring_sends > 0);
  CHECK(cp_dispatch == Approx(one_dispatch / 4).epsilon(1e-12));
  const auto reduced = run_program(topo, {}, cp, {Fidelity::Auto, false, {}});
  const auto full = run_program(topo, {}, cp, {Fidelity::Full, false, {}});
  CHECK(podsim_test::spans_differing(cp, reduced, full) == 0);
}
