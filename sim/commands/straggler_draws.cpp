#include "sim/commands/straggler_draws.hpp"

#include <cstdio>

#include <nlohmann/json.hpp>

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
    for (const ChipBox& box : p.chips) {
      ChipId id = box.slices.first * spec.chips_per_slice();
      int stride = 1;
      for (size_t a = 0; a < spec.axes.size(); ++a) {
        id += box.axes[a].first * stride;
        stride *= spec.axes[a].size;
      }
      const std::string name = names.chip_name(id);
      // Boxes come in ChipId order within a factor, factors ascending: keep the first of the largest.
      if (p.compute_slowdown > out.factor) {
        out.factor = p.compute_slowdown;
        out.chip = name;
      }
    }
  }
  return out;
}

// The time a draw is judged by: a training step's, otherwise the run's.
double step_time_of(const std::string& summary) {
  const Json j = Json::parse(summary);
  return j.contains("step_time_s") ? j["step_time_s"].get<double>() : j["total_time_s"].get<double>();
}

}  // namespace

DrawsOutputs run_straggler_draws(const Scenario& scenario, int draws, const std::string& out_dir,
                                 const RunCommandOptions& options, int jobs) {
  if (scenario.stragglers.empty())
    throw InputError(scenario.location_of("perturbations"), "perturbations", "",
                     "--draws draws the scenario's random stragglers, and it has none; expected a perturbation "
                     "such as {name: stragglers, stragglers: {probability: 0.001, compute_slowdown: [1.1, 1.5]}}");
  if (draws < 1 || draws > kMaxDraws)
    throw InputError({"--draws", 0, 0}, "--draws", std::to_string(draws),
                     "expected 1 to " + std::to_string(kMaxDraws) + " draws");
  // The pod without the random stragglers first, then each draw.
  std::vector<Scenario> runs;
  Scenario uniform = scenario;
  uniform.topology.perturbations.resize(scenario.fixed_perturbations);
  uniform.stragglers.clear();
  runs.push_back(uniform);
  for (int d = 0; d < draws; ++d) runs.push_back(with_straggler_draw(scenario, static_cast<uint64_t>(d)));
  std::vector<Slowest> slowest;
  const Topology names(uniform.topology);
  for (int d = 0; d < draws; ++d) slowest.push_back(slowest_chip(runs[static_cast<size_t>(d) + 1], names));
  const std::vector<std::string> summaries = simulate_summaries_json(std::move(runs), options, jobs);

  const double uniform_s = step_time_of(summaries[0]);
  Quantiles times;
  std::string csv = "draw,seed_offset,slow_chips,max_compute_slowdown,slowest_chip,step_time_s,over_uniform\n";
  for (int d = 0; d < draws; ++d) {
    const double t = step_time_of(summaries[static_cast<size_t>(d) + 1]);
    times.add(t);
    const Slowest& s = slowest[static_cast<size_t>(d)];
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
  int with_stragglers = 0;
  for (const Slowest& s : slowest) with_stragglers += s.slow_chips > 0 ? 1 : 0;
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

}  // namespace podsim
