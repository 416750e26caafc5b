#include "sim/commands/bench.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>

#include "sim/commands/scenario_run.hpp"
#include "sim/engine/run.hpp"
#include "sim/report/serving_report.hpp"
#include "workloads/training.hpp"

namespace podsim {
namespace {

BenchRow row_of(const std::string& name, const RunResult& run, std::chrono::steady_clock::time_point start) {
  BenchRow row;
  row.name = name;
  row.chips = run.topology.chip_count();
  row.simulated_chips = run.simulated.chip_count();
  row.messages = run.replay.messages;
  row.simulated_time_s = run.total_time_s;
  row.wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return row;
}

BenchRow bench_case(const std::string& name, const std::string& preset, std::vector<int> sizes, CollectiveKind kind,
                    std::vector<int> axes, Fidelity fidelity) {
  Scenario scenario;
  scenario.path = "<bench>";
  scenario.name = name;
  scenario.topology.chip = *find_chip_preset(preset);
  const auto wraps = default_wraparound(scenario.topology.chip, sizes);
  const char* names[] = {"X", "Y", "Z"};
  for (size_t a = 0; a < sizes.size(); ++a) scenario.topology.axes.push_back({names[a], sizes[a], static_cast<bool>(wraps[a])});
  OperationSpec op;
  op.name = name;
  op.collective.kind = kind;
  op.collective.axes = std::move(axes);
  op.collective.bytes = 1024.0 * 1024 * 1024;
  scenario.operations.push_back(op);
  const auto start = std::chrono::steady_clock::now();
  return row_of(name, run_scenario(scenario, {fidelity, false, {}}), start);
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
  return row_of("llama3-70b step FSDP+TP", run_program(topology, {}, program, {}), start);
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
  row.chips = run.total_chips;
  row.simulated_chips = run.generate_chips;
  row.messages = static_cast<unsigned long long>(run.result.decode_steps + run.result.prefill_steps);
  row.simulated_time_s = run.result.end_s;
  row.wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return row;
}

}  // namespace

double peak_rss_bytes() {
  rusage self{}, children{};
  getrusage(RUSAGE_SELF, &self);
  getrusage(RUSAGE_CHILDREN, &children);
  return 1024.0 * std::max(self.ru_maxrss, children.ru_maxrss);  // ru_maxrss is in KiB on Linux
}

std::vector<BenchRow> run_bench(bool include_full) {
  std::vector<BenchRow> rows;
  rows.push_back(bench_case("allreduce XYZ 16x16x16", "v4p", {16, 16, 16}, CollectiveKind::AllReduce, {0, 1, 2}, Fidelity::Auto));
  rows.push_back(bench_case("allreduce XYZ 16x20x28", "v5p", {16, 20, 28}, CollectiveKind::AllReduce, {0, 1, 2}, Fidelity::Auto));
  rows.push_back(bench_case("allgather X 16x16x16", "v4p", {16, 16, 16}, CollectiveKind::AllGather, {0}, Fidelity::Auto));
  rows.push_back(bench_case("allgather X 16x20x28", "v5p", {16, 20, 28}, CollectiveKind::AllGather, {0}, Fidelity::Auto));
  rows.push_back(bench_training_step());
  rows.push_back(bench_serving());
  if (include_full) {
    rows.push_back(bench_case("allreduce XYZ 8x8x8 full", "v4p", {8, 8, 8}, CollectiveKind::AllReduce, {0, 1, 2}, Fidelity::Full));
  }
  return rows;
}

}  // namespace podsim
