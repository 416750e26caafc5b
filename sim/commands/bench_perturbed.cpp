// `podsim bench --suite perturbed`: issue 27's pods whose chips differ. Each row is a shipped
// scenario with --set overrides (perturbed_bench_commands() prints them as `podsim run` lines),
// simulated as `podsim run` would (Fidelity::Auto, ReplayEngine::Auto: every chip simulated
// when the perturbation breaks the symmetry, natively where the replay covers the program).
#include <sys/resource.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include <unistd.h>

#include "sim/commands/bench.hpp"
#include "sim/commands/run_command.hpp"
#include "sim/commands/straggler_draws.hpp"
#include "sim/engine/child_process.hpp"

namespace podsim {
namespace {

struct PerturbedCase {
  std::string name;
  std::string scenario;                  // in scenarios/
  std::vector<ScenarioOverride> sets;
  bool draws = false;                    // run BenchOptions::draws straggler draws
};

const char* const k13B = "training_llama2_13b_fsdp1024_tp4.yaml";
const char* const kSlowChip = "[{chips: [3, 5, 7], compute_slowdown: 1.2}]";

// The 13B step over `slices` v5p 16x16x16 slices, data parallel across them over DCN (one
// sequence of 3072 tokens a chip, as in one slice).
std::vector<ScenarioOverride> sliced_13b(int slices) {
  return {{"topology.slices", std::to_string(slices)},
          {"workload.parallelism.dcn_data", "true"},
          {"workload.batch_tokens", std::to_string(3145728LL * slices)}};
}

std::vector<PerturbedCase> perturbed_cases() {
  std::vector<PerturbedCase> cases;
  cases.push_back({"13B 16^3 one slow chip", k13B, {{"perturbations", kSlowChip}}});
  cases.push_back({"13B 16^3 one link at half", k13B,
                   {{"perturbations", "[{links: {chip: [3, 5, 7], direction: \"+X\"}, bandwidth_scale: 0.5}]"}}});
  cases.push_back({"70B 16x20x28 one slow chip", "training_llama3_70b_fsdp_v5p_16x20x28.yaml",
                   {{"perturbations", kSlowChip}}});
  auto four = sliced_13b(4);
  four.push_back({"perturbations", "[{nics: {slice: 0, host: 0}, bandwidth_scale: 0.5}]"});
  cases.push_back({"13B 4 slices one NIC at half", k13B, four});
  cases.push_back({"13B 64 slices uniform", k13B, sliced_13b(64)});
  cases.push_back({"DeepSeek-V3 16^3 Zipf s=1", "training_deepseek_v3_v5p_16x16x16_ep.yaml",
                   {{"workload.routing", "{distribution: zipf, zipf_s: 1.0}"}}});
  cases.push_back({"13B straggler draws", k13B,
                   {{"perturbations", "[{stragglers: {probability: 0.001, compute_slowdown: [1.1, 1.5], seed: 1}}]"}},
                   true});
  return cases;
}

std::string scenario_path(const std::string& file) { return std::string(PODSIM_SCENARIOS_DIR) + "/" + file; }

Scenario load_case(const PerturbedCase& c) {
  std::vector<ScenarioOverride> sets = c.sets;
  sets.push_back({"expect", "[]"});   // a bench times; the tests check the shipped expectations
  return load_scenario(scenario_path(c.scenario), sets);
}

double children_peak_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_CHILDREN, &usage);
  return static_cast<double>(usage.ru_maxrss) * 1024.0;
}

// `first`: no simulation ran in this process before, so its children's peak RSS is the draws'.
BenchRow run_case(const PerturbedCase& c, int draws, bool first) {
  const Scenario scenario = load_case(c);
  RunCommandOptions options;
  options.limits.max_wall_s = 1e9;   // the bench knows its cases are large
  BenchRow row;
  row.name = c.name;
  row.chips = Topology(scenario.topology).chip_count();
  const auto start = std::chrono::steady_clock::now();
  if (c.draws) {
    // The draws run two at a time (the machine's cores); each writes a summary the draws'
    // table comes from, in a directory removed afterwards.
    const auto dir = std::filesystem::temp_directory_path() / ("podsim-bench-draws-" + std::to_string(getpid()));
    run_straggler_draws(scenario, draws, dir.string(), options, 2);
    std::filesystem::remove_all(dir);
    row.name += " (" + std::to_string(draws) + ")";
    row.mode = "full";
    row.simulated_chips = row.chips;
    if (first) row.peak_rss_bytes = children_peak_rss_bytes();
  } else {
    const RunResult run = simulate_run(scenario, options);
    row.mode = run.simulated.chip_count() == run.topology.chip_count() ? "full" : "reduced";
    row.simulated_chips = run.simulated.chip_count();
    row.messages = run.replay.messages;
    row.simulated_time_s = run.total_time_s;
    row.simulation_wall_s = run.replay.simulation_wall_s;
    row.peak_rss_bytes = run.replay.peak_rss_bytes;
  }
  row.wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return row;
}

}  // namespace

std::vector<std::string> perturbed_bench_commands() {
  std::vector<std::string> lines;
  for (const auto& c : perturbed_cases()) {
    std::string line = c.name + ":  build/podsim run " + shell_quote("scenarios/" + c.scenario);
    for (const auto& s : c.sets) line += " --set " + shell_quote(s.key + "=" + s.value);
    if (c.draws) line += " --draws N";
    lines.push_back(line);
  }
  return lines;
}

std::vector<BenchRow> run_perturbed_bench(const BenchOptions& options) {
  std::optional<double> naive;
  if (options.compare_naive) naive = run_naive_ring(16, 16, 16, 1024.0 * 1024);
  std::vector<BenchRow> rows;
  for (const auto& c : perturbed_cases()) {
    if (!options.only.empty() && c.name.find(options.only) == std::string::npos) continue;
    BenchRow row = run_case(c, options.draws, rows.empty() && !naive);
    if (row.messages > 0) row.naive_messages_per_s = naive;
    if (options.on_row) options.on_row(row);
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace podsim
