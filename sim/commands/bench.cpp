#include "sim/commands/bench.hpp"

#include <cstdio>
#include <cstdlib>

#include <algorithm>
#include <chrono>

#include "sim/engine/child_process.hpp"
#include "sim/commands/scenario_run.hpp"
#include "sim/engine/run.hpp"
#include "sim/report/serving_report.hpp"
#include "workloads/training.hpp"

namespace podsim {
namespace {

BenchRow row_of(const std::string& name, const std::string& mode, const RunResult& run,
                std::chrono::steady_clock::time_point start) {
  BenchRow row;
  row.name = name;
  row.mode = mode;
  row.chips = run.topology.chip_count();
  row.simulated_chips = run.simulated.chip_count();
  row.messages = run.replay.messages;
  row.simulated_time_s = run.total_time_s;
  row.wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  row.simulation_wall_s = run.replay.simulation_wall_s;
  row.peak_rss_bytes = run.replay.peak_rss_bytes;
  return row;
}

struct CollectiveCase {
  std::string name;
  std::string preset;
  std::vector<int> sizes;
  CollectiveKind kind;
  std::vector<int> axes;
  double bytes;
  bool bidirectional;
};

BenchRow bench_case(const CollectiveCase& c, Fidelity fidelity) {
  Scenario scenario;
  scenario.path = "<bench>";
  scenario.name = c.name;
  scenario.topology.chip = *find_chip_preset(c.preset);
  const auto wraps = default_wraparound(scenario.topology.chip, c.sizes);
  const char* names[] = {"X", "Y", "Z"};
  for (size_t a = 0; a < c.sizes.size(); ++a) {
    scenario.topology.axes.push_back({names[a], c.sizes[a], static_cast<bool>(wraps[a])});
  }
  OperationSpec op;
  op.name = c.name;
  op.collective.kind = c.kind;
  op.collective.axes = c.axes;
  op.collective.bytes = c.bytes;
  op.collective.bidirectional = c.bidirectional;
  scenario.collectives().operations.push_back(op);
  const auto start = std::chrono::steady_clock::now();
  return row_of(c.name, fidelity == Fidelity::Full ? "full" : "reduced", run_scenario(scenario, {fidelity, false, {}}),
                start);
}

// One training step of LLaMA-3 70B, FSDP over X and Y, tensor parallelism over Z, on a
// v5p 16x16x16 (the training issue's speed case).
BenchRow bench_training_step() {
  TopologySpec topology;
  topology.chip = *find_chip_preset("v5p");
  topology.axes = {{"X", 16, true}, {"Y", 16, true}, {"Z", 16, true}};
  TrainingPlan plan;
  plan.data_axes = {0, 1};
  plan.fsdp = true;
  plan.tensor_axes = {2};
  plan.sequence_length = 8192;
  plan.global_batch_tokens = 2048.0 * 8192;   // 16M tokens
  plan.matmul_efficiency = 0.5;
  const auto start = std::chrono::steady_clock::now();
  TrainingLayout layout;
  const auto program = training_program(*find_model_preset("llama3-70b"), plan, topology, layout);
  return row_of("llama3-70b step FSDP+TP", "reduced", run_program(topology, {}, program, {}), start);
}

// One DeepSeek-V3 training step on a v5p n x n x n: FSDP over all axes, 16- or 8-way expert
// parallelism over Z, one 4096-token sequence per chip (the MoE issue's speed cases: 16x16x16 at
// uniform routing, and 8x8x8 at Zipf s = 1, whose expert axis stays whole).
BenchRow bench_moe_step(int n, double zipf_s, Fidelity fidelity) {
  TopologySpec topology;
  topology.chip = *find_chip_preset("v5p");
  topology.axes = {{"X", n, true}, {"Y", n, true}, {"Z", n, true}};
  TrainingPlan plan;
  plan.data_axes = {0, 1, 2};
  plan.fsdp = true;
  plan.expert_axes = {2};
  plan.sequence_length = 4096;
  plan.global_batch_tokens = static_cast<double>(n) * n * n * 4096;
  plan.matmul_efficiency = 0.5;
  if (zipf_s > 0) {
    plan.routing.spec.kind = RoutingKind::Zipf;
    plan.routing.spec.zipf_s = zipf_s;
  }
  const auto start = std::chrono::steady_clock::now();
  TrainingLayout layout;
  const auto program = training_program(*find_model_preset("deepseek-v3"), plan, topology, layout);
  const std::string name = "deepseek-v3 step EP " + std::to_string(n) + "^3 " +
                           (zipf_s > 0 ? "zipf s=" + std::to_string(zipf_s).substr(0, 3) : std::string("uniform"));
  return row_of(name, fidelity == Fidelity::Full ? "full" : "reduced",
                run_program(topology, {}, program, {fidelity, false, {}}), start);
}

// Serving 10,000 requests of LLaMA-3 70B on a v5e 4x4 with continuous batching (the inference
// issue's speed case): scenarios/serving_llama3_70b_continuous_v5e_4x4.yaml with 10x the requests.
BenchRow bench_serving() {
  const std::string text = R"(version: 1
name: bench-serving
hardware: {preset: v5e}
topology: {mesh: {X: 4, Y: 4}}
workload:
  kind: serving
  model: llama3-70b
  weights: int8
  kv_cache: int8
  collective_matmul: true
  prefill_efficiency: 0.6
  policy: continuous
  prefill_batch: 8
  requests:
    poisson: {rate: "3 /s", count: 10000, prompt_tokens: [256, 4096], output_tokens: [64, 512], seed: 7}
)";
  const auto start = std::chrono::steady_clock::now();
  const Scenario scenario = load_scenario_text(text, "<bench>");
  const ServingRun run = run_serving(scenario);
  BenchRow row;
  row.name = "serve 10k requests 4x4";
  row.mode = "reduced";
  row.chips = run.total_chips;
  row.simulated_chips = run.generate_chips;
  row.messages = static_cast<unsigned long long>(run.totals.decode_steps + run.totals.prefill_steps);
  row.simulated_time_s = run.totals.end_s;
  row.wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return row;
}

}  // namespace

std::optional<double> run_naive_ring(int x, int y, int z, double bytes_per_hop) {
  // Its result is a line of stdout; SimGrid's configuration chatter on stderr is dropped.
  const ChildResult child = run_child({PODSIM_NAIVE_RING, std::to_string(x), std::to_string(y), std::to_string(z),
                                       std::to_string(static_cast<long long>(bytes_per_hop))},
                                      Captured::Stdout);
  const auto at = child.output.find("messages_per_s=");
  if (!child.succeeded() || at == std::string::npos) return std::nullopt;
  return std::strtod(child.output.c_str() + at + 15, nullptr);
}

std::vector<BenchRow> run_bench(const BenchOptions& options) {
  std::vector<BenchRow> rows;
  auto add = [&](BenchRow row) {
    if (options.on_row) options.on_row(row);
    rows.push_back(std::move(row));
  };
  const double GiB = 1024.0 * 1024 * 1024;
  // The plain replay's case: 16 MiB gathered one way over X, 1 MiB per hop, 61,440 messages.
  const CollectiveCase allgather{"allgather X 16x16x16 one-way", "v4p", {16, 16, 16}, CollectiveKind::AllGather, {0},
                                 16.0 * 1024 * 1024, false};
  const CollectiveCase allreduce{"allreduce XYZ 16x16x16", "v4p", {16, 16, 16}, CollectiveKind::AllReduce, {0, 1, 2},
                                 GiB, true};
  for (const auto& c : {allgather, allreduce}) {
    add(bench_case(c, Fidelity::Auto));
    std::vector<BenchRow> runs;
    std::vector<double> naive;
    for (int k = 0; k < std::max(1, options.repeat); ++k) {
      if (options.compare_naive) {
        if (auto rate = run_naive_ring(16, 16, 16, 1024.0 * 1024)) naive.push_back(*rate);
      }
      runs.push_back(bench_case(c, Fidelity::Full));
    }
    // The median run by run-loop time (the lower middle of an even count), and the median rate.
    std::sort(runs.begin(), runs.end(),
              [](const BenchRow& a, const BenchRow& b) { return a.simulation_wall_s < b.simulation_wall_s; });
    BenchRow full = runs[(runs.size() - 1) / 2];
    full.runs = static_cast<int>(runs.size());
    if (!naive.empty()) {
      std::sort(naive.begin(), naive.end());
      full.naive_messages_per_s = naive[(naive.size() - 1) / 2];
    }
    add(std::move(full));
  }
  // Reduced only: their full replays are beyond this machine (hours, or 9,000 actors' worth).
  add(bench_case({"allreduce XYZ 16x20x28", "v5p", {16, 20, 28}, CollectiveKind::AllReduce, {0, 1, 2}, GiB, true},
                 Fidelity::Auto));
  add(bench_case({"allgather X 16x20x28", "v5p", {16, 20, 28}, CollectiveKind::AllGather, {0}, GiB, true},
                 Fidelity::Auto));
  add(bench_training_step());
  add(bench_serving());
  add(bench_moe_step(16, 0, Fidelity::Auto));
  add(bench_moe_step(8, 1.0, Fidelity::Auto));
  add(bench_moe_step(8, 1.0, Fidelity::Full));   // about 100 s: every chip of 512
  return rows;
}

}  // namespace podsim
