// Random stragglers (topology/stragglers.hpp) and `podsim run --draws` (sim/commands/
// straggler_draws.hpp): the draws follow their distribution and repeat, they reduce exactly,
// and every draw of a synchronous FSDP step takes what the slowest chip makes it take.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_helpers.hpp"
#include "meshes.hpp"
#include "replay_equality.hpp"
#include "sim/commands/straggler_draws.hpp"
#include "sim/engine/run.hpp"
#include "topology/stragglers.hpp"
#include "workloads/training.hpp"

using namespace podsim;

namespace {

TopologySpec pod(std::vector<int> sizes, int slices = 1) {
  TopologySpec spec = podsim_test::v5p_mesh(std::move(sizes));
  spec.slices = slices;
  return spec;
}

int drawn_chips(const std::vector<Perturbation>& drawn) {
  int n = 0;
  for (const auto& p : drawn) n += static_cast<int>(p.chips.size());
  return n;
}

std::vector<std::map<std::string, std::string>> csv_rows(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  std::vector<std::string> header;
  std::stringstream h(line);
  for (std::string cell; std::getline(h, cell, ',');) header.push_back(cell);
  std::vector<std::map<std::string, std::string>> rows;
  while (std::getline(in, line)) {
    std::map<std::string, std::string> row;
    std::vector<std::string> cells;
    std::string cell;
    bool quoted = false;
    for (char c : line) {
      if (c == '"') quoted = !quoted;
      else if (c == ',' && !quoted) cells.push_back(std::exchange(cell, ""));
      else cell += c;
    }
    cells.push_back(cell);
    for (size_t i = 0; i < header.size() && i < cells.size(); ++i) row[header[i]] = cells[i];
    rows.push_back(row);
  }
  return rows;
}

}  // namespace

TEST_CASE("straggler draws: each chip slow with the probability, its factor in the range, the same every time",
          "[stragglers]") {
  const TopologySpec spec = pod({16, 16, 16}, 2);   // 8,192 chips
  StragglerSpec s;
  s.name = "s";
  s.probability = 0.01;
  s.factor_low = 1.1;
  s.factor_high = 1.5;
  s.seed = 3;
  int slow = 0, draws = 20;
  double factors = 0;
  for (int d = 0; d < draws; ++d) {
    const auto drawn = draw_stragglers(spec, s, d);
    CHECK(drawn == draw_stragglers(spec, s, d));
    for (size_t i = 0; i < drawn.size(); ++i) {
      INFO(drawn[i].name);
      CHECK(drawn[i].name == "s." + std::to_string(i));
      CHECK(drawn[i].compute_slowdown >= 1.1);
      CHECK(drawn[i].compute_slowdown < 1.5);
      if (i > 0) CHECK(drawn[i].compute_slowdown > drawn[i - 1].compute_slowdown);
      for (const auto& box : drawn[i].chips) {
        CHECK(box.slices.first == box.slices.last);
        for (const auto& r : box.axes) CHECK(r.first == r.last);   // one chip a box
        factors += drawn[i].compute_slowdown;
      }
    }
    slow += drawn_chips(drawn);
  }
  // 163,840 chip draws: the count is binomial, sd sqrt(n p (1-p)) = 40.3.
  const double n = 8192.0 * draws, expected = n * 0.01, sd = std::sqrt(n * 0.01 * 0.99);
  CHECK(std::abs(slow - expected) < 4 * sd);
  // Uniform factors: mean 1.3, sd of the mean 0.4 / sqrt(12 slow).
  CHECK(std::abs(factors / slow - 1.3) < 4 * 0.4 / std::sqrt(12.0 * slow));
  // Other seeds, other chips.
  s.seed = 4;
  CHECK(draw_stragglers(spec, s, 0) != draw_stragglers(spec, s, 1));
  // The ends: nobody, everybody, one factor.
  s.probability = 0;
  CHECK(draw_stragglers(spec, s).empty());
  s.probability = 1;
  s.factor_low = s.factor_high = 1.25;
  const auto all = draw_stragglers(spec, s);
  REQUIRE(all.size() == 1);
  CHECK(drawn_chips(all) == 8192);
  CHECK(all[0].compute_slowdown == 1.25);
}

TEST_CASE("straggler draws: a histogram gives each factor its share of the chips", "[stragglers]") {
  const TopologySpec spec = pod({16, 16, 16});
  StragglerSpec s;
  s.name = "h";
  s.histogram = {{1.0, 90}, {1.2, 8}, {1.5, 2}};
  std::map<double, int> count;
  const int draws = 10;
  for (int d = 0; d < draws; ++d)
    for (const auto& p : draw_stragglers(spec, s, d)) count[p.compute_slowdown] += static_cast<int>(p.chips.size());
  CHECK(count.size() == 2);   // factor 1 leaves a chip as it is
  const double n = 4096.0 * draws;
  for (const auto& [factor, share] : std::map<double, double>{{1.2, 0.08}, {1.5, 0.02}}) {
    INFO(factor);
    CHECK(std::abs(count[factor] - n * share) < 4 * std::sqrt(n * share * (1 - share)));
  }
}

TEST_CASE("straggler draws: reduced runs equal the full replay", "[stragglers][symmetry]") {
  TransformerSpec model;
  model.name = "small";
  model.layers = 2;
  model.d_model = 512;
  model.d_ff = 2048;
  model.heads = 4;
  model.kv_heads = 4;
  model.head_dim = 128;
  model.vocab = 1000;
  model.max_sequence_length = 2048;
  TrainingPlan plan;
  plan.data_axes = {0, 1, 2};
  plan.fsdp = true;
  plan.global_batch_tokens = 16 * 2048.0;
  plan.sequence_length = 2048;
  StragglerSpec s;
  s.name = "s";
  s.probability = 0.15;
  s.factor_low = 1.1;
  s.factor_high = 1.5;
  for (int d = 0; d < 6; ++d) {
    TopologySpec spec = pod({2, 2, 4});
    spec.perturbations = draw_stragglers(spec, s, d);
    TrainingLayout layout;
    const Program program = training_program(model, plan, spec, layout);
    const auto reduced = run_program(spec, {}, program, {Fidelity::Auto, false, {}});
    const auto full = run_program(spec, {}, program, {Fidelity::Full, false, {}});
    INFO("draw " << d << ": " << spec.perturbations.size() << " factors, " << reduced.simulated.chip_count()
                 << " chips simulated");
    CHECK(podsim_test::spans_differing(program, reduced, full) == 0);
  }
}

TEST_CASE("podsim run --draws: every draw of a synchronous FSDP step takes E + f_max C", "[stragglers][cli]") {
  const std::string scenario = podsim_test::source_path("scenarios/perturbation_stragglers_fsdp_v5p_4x4x4.yaml");
  const auto dir = podsim_test::made_dir("draws");
  const auto r = podsim_test::run_podsim("run " + scenario + " --draws 12 -j 2 -o " + (dir / "d2").string());
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("12 draws of perturbation-stragglers-fsdp-v5p-4x4x4's stragglers") != std::string::npos);
  const auto j = nlohmann::json::parse(podsim_test::read_file(dir / "d2" / "draws.json"));
  const double uniform = j["uniform_s"];
  // The pod without stragglers: T0 = E + C, C its compute (chip 0 computes at full speed).
  const auto u = podsim_test::run_podsim("run " + scenario + " --set perturbations=[] -o " + (dir / "u").string());
  REQUIRE(u.exit_code == 0);
  const auto us = nlohmann::json::parse(podsim_test::read_file(dir / "u" / "summary.json"));
  CHECK(us["step_time_s"].get<double>() == uniform);
  const double c = us["compute_time_s"];
  const auto rows = csv_rows((dir / "d2" / "draws.csv").string());
  REQUIRE(rows.size() == 12);
  std::vector<double> times;
  for (const auto& row : rows) {
    INFO("draw " << row.at("draw") << ": slowest " << row.at("slowest_chip") << " x" << row.at("max_compute_slowdown"));
    const double f = std::stod(row.at("max_compute_slowdown"));
    const double t = std::stod(row.at("step_time_s"));
    // The slowest chip sets every gather's pace: T = E + f_max C (csv cells carry 9 digits).
    CHECK(t == Approx(uniform + (f - 1) * c).epsilon(1e-7));
    times.push_back(t);
  }
  double mean = 0;
  for (double t : times) mean += t / times.size();
  CHECK(j["mean_s"].get<double>() == Approx(mean).epsilon(1e-8));
  CHECK(j["max_s"].get<double>() == Approx(*std::max_element(times.begin(), times.end())).epsilon(1e-8));
  // The same files for any number of jobs.
  REQUIRE(podsim_test::run_podsim("run " + scenario + " --draws 12 -j 1 -o " + (dir / "d1").string()).exit_code == 0);
  CHECK(podsim_test::read_file(dir / "d1" / "draws.csv") == podsim_test::read_file(dir / "d2" / "draws.csv"));
  CHECK(podsim_test::read_file(dir / "d1" / "draws.json") == podsim_test::read_file(dir / "d2" / "draws.json"));
}

TEST_CASE("podsim run --draws: a scenario without stragglers, too many draws", "[stragglers][cli]") {
  const auto dir = podsim_test::made_dir("draws-bad");
  const std::string plain = podsim_test::source_path("scenarios/perturbation_slow_chip_fsdp_v5p_4x4x4.yaml");
  const auto none = podsim_test::run_podsim("run " + plain + " --draws 3 -o " + dir.string());
  CHECK(none.exit_code == 2);
  CHECK(none.err.find("perturbation_slow_chip_fsdp_v5p_4x4x4.yaml") != std::string::npos);
  CHECK(none.err.find("--draws draws the scenario's random stragglers, and it has none") != std::string::npos);
  const std::string drawn = podsim_test::source_path("scenarios/perturbation_stragglers_fsdp_v5p_4x4x4.yaml");
  const auto many = podsim_test::run_podsim("run " + drawn + " --draws 100001 -o " + dir.string());
  CHECK(many.exit_code == 2);
  CHECK(many.err.find("expected 1 to 100000 draws") != std::string::npos);
  CHECK(!std::filesystem::exists(dir / "draws.csv"));
}

TEST_CASE("podsim run --draws as a Slurm job array: the tasks and --collect give the local run's files",
          "[stragglers][cli][slurm]") {
  const std::string scenario = podsim_test::source_path("scenarios/perturbation_stragglers_fsdp_v5p_4x4x4.yaml");
  const auto dir = podsim_test::made_dir("draws-slurm");
  const std::string array = (dir / "array").string();
  const auto emit = podsim_test::run_podsim("run " + scenario + " --draws 4 --emit slurm -o " + array);
  REQUIRE(emit.exit_code == 0);
  const std::string script = podsim_test::read_file(dir / "array" / "draws.sbatch");
  CHECK(script.find("#SBATCH --array=0-4\n") != std::string::npos);   // 4 draws and the pod without them
  CHECK(script.find("--draws 4 -o '" + std::filesystem::absolute(array).string() + "' --task \"$SLURM_ARRAY_TASK_ID\"") !=
        std::string::npos);
  CHECK(script.find("--collect") != std::string::npos);
  // The array's tasks, as Slurm would run them, then the merge.
  for (int task = 0; task <= 4; ++task)
    REQUIRE(podsim_test::run_podsim("run " + scenario + " --draws 4 --task " + std::to_string(task) + " -o " + array)
                .exit_code == 0);
  REQUIRE(podsim_test::run_podsim("run " + scenario + " --draws 4 --collect -o " + array).exit_code == 0);
  REQUIRE(podsim_test::run_podsim("run " + scenario + " --draws 4 -o " + (dir / "local").string()).exit_code == 0);
  CHECK(podsim_test::read_file(dir / "array" / "draws.csv") == podsim_test::read_file(dir / "local" / "draws.csv"));
  CHECK(podsim_test::read_file(dir / "array" / "draws.json") == podsim_test::read_file(dir / "local" / "draws.json"));
  // Another seed: the draws' tasks are stale (the pod without stragglers is not), and say so.
  const auto stale = podsim_test::run_podsim("run " + scenario + " --set perturbations.0.stragglers.seed=8 --draws 4 --collect -o " + array);
  CHECK(stale.exit_code == 2);
  CHECK(stale.err.find("4 of 5 tasks have no summary (0, 1, 2, 3)") != std::string::npos);
  // A task beyond the array, and the array's options without --draws.
  const auto beyond = podsim_test::run_podsim("run " + scenario + " --draws 4 --task 5 -o " + array);
  CHECK(beyond.exit_code == 2);
  CHECK(beyond.err.find("expected a task from 0 to 4") != std::string::npos);
  const auto alone = podsim_test::run_podsim("run " + scenario + " --collect -o " + array);
  CHECK(alone.exit_code == 2);
  CHECK(alone.err.find("applies to --draws N") != std::string::npos);
}
