#include "sim/bench.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>

#include "sim/run.hpp"
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
  if (include_full) {
    rows.push_back(bench_case("allreduce XYZ 8x8x8 full", "v4p", {8, 8, 8}, CollectiveKind::AllReduce, {0, 1, 2}, Fidelity::Full));
  }
  return rows;
}

}  // namespace podsim
