#include "sim/commands/straggler_draws.hpp"
#include "sim/commands/slurm_array.hpp"

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "sim/engine/child_process.hpp"
#include "sim/report/csv_text.hpp"
#include "sim/report/output_files.hpp"
#include "sim/report/quantiles.hpp"
#include "sim/scenario/units.hpp"

namespace podsim {
namespace {

using Json = nlohmann::ordered_json;

constexpr int kMaxDraws = 100000;

// The slowest drawn chip of a draw: the one with the largest factor (the first in ChipId order
// among equals), named as the trace names it.
struct Slowest {
  int slow_chips = 0;
  double factor = 1.0;
  std::string chip;
};

Slowest slowest_chip(const Scenario& drawn, const Topology& names) {
  Slowest out;
  const TopologySpec& spec = drawn.topology;
  for (size_t i = drawn.fixed_perturbations; i < spec.perturbations.size(); ++i) {
    const Perturbation& p = spec.perturbations[i];
    out.slow_chips += static_cast<int>(p.chips.size());   // one box a chip (draw_stragglers)
    // Factors ascend and boxes come in ChipId order within one: the first box of the largest.
    if (p.compute_slowdown > out.factor && !p.chips.empty()) {
      const ChipBox& box = p.chips.front();
      std::vector<int> coords;
      for (const PositionRange& r : box.axes) coords.push_back(r.first);
      out.factor = p.compute_slowdown;
      out.chip = names.chip_name(names.chip_at(box.slices.first, coords));
    }
  }
  return out;
}

// The time a draw is judged by: a training step's, otherwise the run's.
double step_time_of(const std::string& summary) {
  const Json j = Json::parse(summary);
  return j.contains("step_time_s") ? j["step_time_s"].get<double>() : j["total_time_s"].get<double>();
}

void check_draws(const Scenario& scenario, int draws) {
  if (scenario.stragglers.empty())
    throw InputError(scenario.location_of("perturbations"), "perturbations", "",
                     "--draws draws the scenario's random stragglers, and it has none; expected a perturbation "
                     "such as {name: stragglers, stragglers: {probability: 0.001, compute_slowdown: [1.1, 1.5]}}");
  if (draws < 1 || draws > kMaxDraws)
    throw InputError({"--draws", 0, 0}, "--draws", std::to_string(draws),
                     "expected 1 to " + std::to_string(kMaxDraws) + " draws");
}

// The runs of a draws set, in task order: draw 0 to draws-1, then the pod without stragglers.
std::vector<Scenario> draw_runs(const Scenario& scenario, int draws) {
  std::vector<Scenario> runs;
  for (int d = 0; d < draws; ++d) runs.push_back(with_straggler_draw(scenario, static_cast<uint64_t>(d)));
  Scenario uniform = scenario;
  uniform.topology.perturbations.resize(scenario.fixed_perturbations);
  uniform.stragglers.clear();
  runs.push_back(std::move(uniform));
  return runs;
}

// Whether a task's summary is the run's: the scenario's name and the run's drawn perturbations
// (names and factors, as summary.json lists them).
bool summary_of(const std::string& text, const Scenario& scenario, const Scenario& run) {
  const Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded() || j.value("scenario", std::string()) != scenario.name) return false;
  const Json none = Json::array();
  const Json& listed = j.contains("topology") && j["topology"].contains("perturbations") ? j["topology"]["perturbations"] : none;
  const auto& expected = run.topology.perturbations;
  if (listed.size() != expected.size()) return false;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (listed[i].value("name", std::string()) != expected[i].name) return false;
    if (expected[i].kind == PerturbationKind::SlowChips && listed[i].value("compute_slowdown", 0.0) != expected[i].compute_slowdown)
      return false;
  }
  return true;
}

// draws.csv and draws.json from the runs' summaries (task order).
DrawsOutputs write_draws(const Scenario& scenario, const std::vector<Scenario>& runs,
                         const std::vector<std::string>& summaries, const std::string& out_dir) {
  const int draws = static_cast<int>(runs.size()) - 1;
  const double uniform_s = step_time_of(summaries.back());
  const Topology names(runs.back().topology);
  Quantiles times;
  int with_stragglers = 0;
  std::string csv = "draw,seed_offset,slow_chips,max_compute_slowdown,slowest_chip,step_time_s,over_uniform\n";
  for (int d = 0; d < draws; ++d) {
    const double t = step_time_of(summaries[static_cast<size_t>(d)]);
    times.add(t);
    const Slowest s = slowest_chip(runs[static_cast<size_t>(d)], names);
    with_stragglers += s.slow_chips > 0 ? 1 : 0;
    csv += std::to_string(d) + "," + std::to_string(d) + "," + std::to_string(s.slow_chips) + "," +
           csv_number(s.factor) + "," + csv_field(s.chip) + "," + csv_number(t) + "," + csv_number(t / uniform_s) + "\n";
  }
  const Distribution dist = times.summarize({50, 90, 99});
  Json j;
  j["scenario"] = scenario.name;
  j["draws"] = draws;
  j["metric"] = scenario.kind() == WorkloadKind::Training ? "step_time_s" : "total_time_s";
  j["uniform_s"] = uniform_s;
  j["mean_s"] = dist.mean;
  j["std_s"] = dist.std;
  j["p50_s"] = dist.at(50);
  j["p90_s"] = dist.at(90);
  j["p99_s"] = dist.at(99);
  j["max_s"] = dist.max;
  j["mean_over_uniform"] = dist.mean / uniform_s;
  j["draws_with_stragglers"] = with_stragglers;

  ensure_directory(out_dir, "-o");
  OutputFiles files(out_dir, "-o");
  files.add("draws.csv", csv);
  files.add("draws.json", j.dump(2) + "\n");
  files.commit();
  DrawsOutputs out;
  out.files = {files.path("draws.csv"), files.path("draws.json")};
  char ratio[32];
  std::snprintf(ratio, sizeof ratio, "%.4f", dist.mean / uniform_s);
  out.table = std::to_string(draws) + " draws of " + scenario.name + "'s stragglers (" + std::to_string(with_stragglers) +
              " with any): " + human_time(uniform_s) + " without them\n  mean " + human_time(dist.mean) + " (x" + ratio +
              "), p50 " + human_time(dist.at(50)) + ", p90 " + human_time(dist.at(90)) + ", p99 " +
              human_time(dist.at(99)) + ", max " + human_time(dist.max) + "\n";
  return out;
}

}  // namespace

DrawsOutputs run_straggler_draws(const Scenario& scenario, int draws, const std::string& out_dir,
                                 const RunCommandOptions& options, int jobs) {
  check_draws(scenario, draws);
  const std::vector<Scenario> runs = draw_runs(scenario, draws);
  return write_draws(scenario, runs, simulate_summaries_json(runs, options, jobs), out_dir);
}

DrawsOutputs emit_draws_slurm(const Scenario& scenario, int draws, const std::string& out_dir,
                              const std::string& command) {
  check_draws(scenario, draws);
  const std::string out = std::filesystem::absolute(out_dir).string();
  const std::string base = command + " --draws " + std::to_string(draws) + " -o " + shell_quote(out);
  const std::string path = write_slurm_array(
      out_dir, {"draws.sbatch", "podsim-draws",
                "podsim run --draws " + std::to_string(draws) + " as a Slurm job array: a task a draw, and task " +
                    std::to_string(draws) + " for the pod without stragglers.",
                "merge the tasks into draws.csv and draws.json", draws + 1, base, "--task"});
  DrawsOutputs result;
  result.table = "wrote a job array of " + std::to_string(draws + 1) + " tasks; after it: " + base + " --collect\n";
  result.files = {path};
  return result;
}

DrawsOutputs run_draws_task(const Scenario& scenario, int draws, int task, const std::string& out_dir,
                            const RunCommandOptions& options) {
  check_draws(scenario, draws);
  if (task < 0 || task > draws)
    throw InputError({"--task", 0, 0}, "--task", std::to_string(task),
                     "expected a task from 0 to " + std::to_string(draws) + " (the draws, then the pod without stragglers)");
  std::vector<Scenario> runs = draw_runs(scenario, draws);
  const std::string summary = simulate_summary_json(std::move(runs[static_cast<size_t>(task)]), options);
  const std::string dir = (std::filesystem::path(out_dir) / array_task_dir(task)).string();
  ensure_directory(dir, "-o");
  OutputFiles files(dir, "-o");
  files.add("summary.json", summary);
  files.commit();
  DrawsOutputs out;
  out.files = {files.path("summary.json")};
  return out;
}

DrawsOutputs collect_draws(const Scenario& scenario, int draws, const std::string& out_dir) {
  check_draws(scenario, draws);
  const std::vector<Scenario> runs = draw_runs(scenario, draws);
  std::vector<std::string> summaries;
  MissingTasks missing;
  for (int task = 0; task <= draws; ++task) {
    const std::string path = (std::filesystem::path(out_dir) / array_task_dir(task) / "summary.json").string();
    std::string text = read_text_file(path);
    // A task's summary is whole or absent (written by rename); one of another scenario, or of
    // another draw (a seed or probability changed since), is not this set's.
    if (text.empty() || !summary_of(text, scenario, runs[static_cast<size_t>(task)])) {
      missing.add(task);
      text.clear();
    }
    summaries.push_back(std::move(text));
  }
  missing.check(out_dir, draws + 1, "summary", "the job array's tasks done");
  return write_draws(scenario, runs, summaries, out_dir);
}

}  // namespace podsim
