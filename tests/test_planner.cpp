// The planner simulates every plan and ranks them: fitting plans first, fastest first.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>

#include "sim/commands/plan_inputs.hpp"
#include "sim/commands/planner.hpp"
#include "sim/scenario/schema_keys.hpp"
#include "cli_helpers.hpp"
#include "planner_pods.hpp"
#include "scratch.hpp"
#include "seeded_rng.hpp"

using namespace podsim;

namespace {

// The planner's pod on a v5p 4x4, both axes wrapped.
Scenario small_pod(const std::string& name) {
  return podsim_test::planner_pod(name, {{"X", 4, true}, {"Y", 4, true}});
}

}  // namespace

TEST_CASE("planner ranks every axis split by simulated step time", "[planner]") {
  const Scenario s = small_pod("planner-test");
  const auto result = plan_training(s, nullptr);
  // 2 axes: 4 data/tensor splits, DP or FSDP where there is a data axis (7), TP over a block
  // of 2 on either axis with DP or FSDP over the rest (4), and TP over the 2x2 block of X and Y
  // with DP or FSDP over the rings of blocks (2): 13 splits, each fitting at 1 microbatch under
  // each of the 3 checkpointing policies: 39 plans, those that swap X and Y (both 4, wrapped)
  // simulated once. Pipelines over either axis (1F1B and interleaved, with
  // the other axis DP, FSDP or TP: 12) cannot hold 2 layers in 4 stages.
  int impossible = 0, plans = 0, simulated = 0;
  for (const auto& c : result.candidates) {
    if (!c.feasible) {
      INFO(c.label << ": " << c.error);
      CHECK_FALSE(c.error.empty());
      CHECK(c.label.find("PP(") == 0);
      ++impossible;
      continue;
    }
    CHECK(c.simulated);
    CHECK(c.plan.microbatches == 1);
    plans += 1 + c.mirrors;
    ++simulated;
  }
  CHECK(impossible == 12);
  CHECK(plans == 39);
  CHECK(simulated < plans);
  for (size_t i = 1; i < result.candidates.size(); ++i) {
    if (!result.candidates[i].feasible) continue;
    REQUIRE(result.candidates[i - 1].feasible);
    CHECK(result.candidates[i - 1].report.step_time_s <= result.candidates[i].report.step_time_s);
  }
  // A mirror image simulates as its representative does: DP(Y) + TP(X) against DP(X) + TP(Y).
  const PlanCandidate* dp_x = nullptr;
  for (const auto& c : result.candidates)
    if (c.label.rfind("DP(X) + TP(Y), 1 mb, book", 0) == 0 || c.label.rfind("DP(Y) + TP(X), 1 mb, book", 0) == 0) dp_x = &c;
  REQUIRE(dp_x != nullptr);
  CHECK(dp_x->mirrors == 1);
  TrainingPlan mirror = dp_x->plan;
  std::swap(mirror.data_axes, mirror.tensor_axes);
  TrainingLayout layout;
  const auto program = training_program(s.training().model, mirror, s.topology, layout);
  CHECK(run_program(s.topology, {}, program, {}).total_time_s == Approx(dp_x->report.step_time_s).epsilon(1e-9));
  // X_opt = sqrt(B/F * M_X/M_Y * N) with M_X/M_Y = 1 on a 2D mesh.
  CHECK(result.x_opt == Approx(std::sqrt(65536.0 / 11008 * 16)));
  CHECK_FALSE(planner_csv(result).empty());
}

TEST_CASE("planner: data parallelism that does not fit tries ZeRO-1 and ZeRO-2 before more microbatches",
          "[planner][zero]") {
  // HBM less its headroom set between the two: plain DP over all 16 chips holds 12 B a parameter (bf16 weights
  // and gradients, Adam's two fp32 moments); ZeRO-1 splits the 8 B of moments 16 ways, saving
  // 8 P x 15/16, of which half is taken away here.
  Scenario s = small_pod("planner-zero");
  TrainingPlan dp = s.training().plan;
  dp.data_axes = {0, 1};
  dp.checkpointing = Checkpointing::None;
  const TrainingLayout plain = training_layout(s.training().model, dp, s.topology);
  const double P = param_count(s.training().model);
  REQUIRE(plain.memory.optimizer_bytes == Approx(8 * P));
  s.topology.chip.hbm_bytes = (plain.memory.total_bytes - 4 * P * 15 / 16) / (1 - s.topology.chip.hbm_headroom);
  const auto result = plan_training(s, nullptr);
  const PlanCandidate* zero = nullptr;
  for (const auto& c : result.candidates) {
    INFO(c.label);
    // Plain DP over both axes fits at no microbatch count: 1 mb is what the batch allows
    // before ZeRO-1, and ZeRO-1 fits there.
    CHECK_FALSE((c.label.rfind("DP(X,Y), ", 0) == 0 && c.report.fits_hbm));
    if (c.label == "DP(X,Y) + ZeRO-1, 1 mb, no remat") zero = &c;
  }
  REQUIRE(zero != nullptr);
  CHECK(zero->simulated);
  CHECK(zero->report.fits_hbm);
  CHECK(zero->plan.zero_stage == 1);
  CHECK(zero->report.memory.optimizer_bytes == Approx(8 * P / 16));
  CHECK(zero->report.step_time_s >= zero->lower_bound_s);
  // FSDP is ZeRO-3 already: never combined.
  for (const auto& c : result.candidates) {
    if (c.plan.fsdp) CHECK(c.plan.zero_stage == 0);
  }
}

TEST_CASE("planner tries expert parallelism for an MoE model, with pipelines, dense first layers or not",
          "[planner][moe]") {
  Scenario s;
  s.path = "<test>";
  s.name = "planner-moe";
  s.workload = TrainingWorkload{};
  s.topology.chip = *find_chip_preset("v5p");
  s.topology.axes = {{"X", 4, true}, {"Y", 2, true}};
  s.training().model = *find_model_preset("mixtral-8x7b");
  s.training().model.layers = 8;
  s.training().model.moe->dense_layers = 0;
  s.training().plan.sequence_length = 1024;
  s.training().plan.global_batch_tokens = 1024.0 * 32;
  // 7 axis splits (DP or FSDP where there is a data axis), 2 with TP over a block of 2 of X
  // (Y's 2 chips hold no two blocks), pipelines over X or Y with the other axis DP, FSDP or
  // TP; each also with EP over every whole data axis the 8 experts divide: X (4) and Y (2).
  const auto result = plan_training(s, nullptr);
  int with_ep = 0, feasible_ep = 0, pipelined_ep = 0;
  for (const auto& c : result.candidates) {
    if (c.label.find("EP(") == std::string::npos) continue;
    ++with_ep;
    CHECK(c.plan.expert_axes.size() == 1);
    INFO(c.label << ": " << c.error);
    CHECK(c.feasible);
    feasible_ep += c.feasible;
    pipelined_ep += c.label.find("PP(") != std::string::npos && c.simulated;
  }
  CHECK(with_ep > 0);
  CHECK(feasible_ep == with_ep);
  CHECK(pipelined_ep > 0);
  // Dense layers first: pipelines with unequal stages, searched and simulated as the others.
  s.training().model.moe->dense_layers = 2;
  int pipelined_dense_first = 0;
  for (const auto& c : plan_training(s, nullptr).candidates) {
    if (c.label.find("PP(") == std::string::npos || !c.simulated) continue;
    INFO(c.label << ": " << c.error);
    CHECK(c.feasible);
    ++pipelined_dense_first;
  }
  CHECK(pipelined_dense_first > 0);
}

TEST_CASE("planner: no mirror images where a perturbation breaks the mesh's symmetry", "[planner]") {
  Scenario s = small_pod("planner-perturbed");
  // One slow chip at (0, 1): swapping X and Y moves it to (1, 0), another pod.
  Perturbation slow;
  slow.name = "slow";
  slow.compute_slowdown = 2.0;
  ChipBox box;
  box.axes = {{0, 0}, {1, 1}};
  box.slices = {0, 0};
  slow.chips = {box};
  s.topology.perturbations = {slow};
  const auto result = plan_training(s, nullptr);
  int simulated = 0;
  for (const auto& c : result.candidates) {
    CHECK(c.mirrors == 0);
    simulated += c.simulated;
  }
  CHECK(simulated == 39);   // every fitting plan of the unperturbed case's 39, each simulated
}

TEST_CASE("bounding by compute alone: the first K are the exhaustive run's, and no step beats its bound",
          "[planner]") {
  // A plan's compute on chip 0 is a lower bound on its step (compute ops run one after another
  // on a chip). Pruning by it must leave the top K exactly as simulating everything does.
  int bounded_total = 0;
  for (const double tokens : {1024.0 * 16, 1024.0 * 64, 1024.0 * 256}) {
    Scenario s = small_pod("planner-bound");
    s.training().plan.global_batch_tokens = tokens;
    const auto all = plan_training(s, nullptr, {}, 0);
    for (const auto& c : all.candidates) {
      if (!c.simulated) continue;
      INFO(c.label);
      CHECK(c.report.step_time_s >= c.lower_bound_s * (1 - 1e-12));
      CHECK(c.lower_bound_s > 0);
    }
    for (const int keep : {1, 3, 5}) {
      const auto bounded = plan_training(s, nullptr, {}, keep);
      INFO(tokens << " tokens, keep " << keep);
      for (int i = 0; i < keep; ++i) {
        REQUIRE(bounded.candidates[i].simulated);
        CHECK(bounded.candidates[i].report.step_time_s == all.candidates[i].report.step_time_s);
      }
      int simulated = 0, bounded_out = 0;
      for (const auto& c : bounded.candidates) {
        simulated += c.simulated;
        bounded_out += c.bounded;
      }
      CHECK(simulated + bounded_out >= keep);
      bounded_total += bounded_out;
    }
  }
  CHECK(bounded_total > 0);   // the bound did prune somewhere
}

TEST_CASE("a plan over the simulation budget is listed with its estimate, not simulated", "[planner]") {
  const Scenario s = small_pod("planner-budget");
  const auto tight = plan_training(s, nullptr, {}, 0, 1e-12);
  int over = 0;
  for (const auto& c : tight.candidates) {
    if (!c.feasible) continue;
    CHECK_FALSE(c.simulated);
    CHECK(c.over_budget);
    CHECK(c.estimated_wall_s > 0);
    ++over;
  }
  CHECK(over > 0);
  CHECK(planner_table(s, tight).find("not simulated: about") != std::string::npos);
  // A generous budget simulates them all.
  for (const auto& c : plan_training(s, nullptr, {}, 0, 1e6).candidates) CHECK((c.simulated || !c.feasible));
}

namespace {

// A generated pod and model for the planner: 2 or 3 axes of 2 or 4 chips (each wrapped or
// not), v5p or v5e, LLaMA-2 7B cut to 1-4 layers, 256-1024-token sequences, 8-256 of them.
Scenario generated_pod(podsim_test::Rng& rng, int index) {
  Scenario s = small_pod("planner-generated-" + std::to_string(index));
  s.topology.chip = *find_chip_preset(rng.chance(0.5) ? "v5p" : "v5e");
  s.topology.axes.clear();
  const int axes = 2 + rng.below(2);
  const char* names[] = {"X", "Y", "Z"};
  for (int a = 0; a < axes; ++a) {
    const int size = rng.chance(0.5) ? 2 : 4;
    s.topology.axes.push_back({names[a], size, size == 4 && rng.chance(0.7)});
  }
  s.training().model.layers = 1 + rng.below(4);
  s.training().plan.sequence_length = 256 << rng.below(3);
  s.training().plan.global_batch_tokens = static_cast<double>(s.training().plan.sequence_length) * (8 << rng.below(6));
  return s;
}

}  // namespace

TEST_CASE("planner on generated pods: the bounded top K is the exhaustive run's, no step beats its bound, and "
          "-j 2 writes the same plan.csv as -j 1",
          "[planner][generated]") {
  // PODSIM_PLANNER_CASES=<n> runs more (about 1 s each); PODSIM_PLANNER_SEED changes the seed.
  const int cases = podsim_test::env_int("PODSIM_PLANNER_CASES", 6);
  const auto seed = static_cast<uint64_t>(podsim_test::env_int("PODSIM_PLANNER_SEED", 20261125));
  int compared = 0;
  for (int index = 0; index < cases; ++index) {
    auto rng = podsim_test::case_rng(seed, index);
    const Scenario s = generated_pod(rng, index);
    const int keep = 1 + rng.below(5);
    INFO("case " << index << ": " << s.topology.axes.size() << " axes, " << s.training().model.layers << " layers, "
                 << s.training().plan.global_batch_tokens << " tokens, keep " << keep);
    const auto all = plan_training(s, nullptr, {}, 0, 0, 2);
    for (const auto& c : all.candidates) {
      if (!c.simulated) continue;
      INFO(c.label);
      CHECK(c.report.step_time_s >= c.lower_bound_s * (1 - 1e-12));
    }
    const auto serial = plan_training(s, nullptr, {}, keep, 0, 1);
    const auto parallel = plan_training(s, nullptr, {}, keep, 0, 2);
    CHECK(planner_csv(parallel) == planner_csv(serial));
    for (int i = 0; i < keep && i < static_cast<int>(all.candidates.size()); ++i) {
      if (!all.candidates[i].simulated) break;   // fewer than K plans fit
      REQUIRE(serial.candidates[i].simulated);
      CHECK(serial.candidates[i].label == all.candidates[i].label);
      CHECK(serial.candidates[i].report.step_time_s == all.candidates[i].report.step_time_s);
      ++compared;
    }
  }
  CHECK(compared > 0);
}

TEST_CASE("planner -j: plans simulated side by side rank exactly as one at a time", "[planner]") {
  // Committed in the serial order (a speculative run past a bound is discarded), so the CSV,
  // bounded and over-budget plans included, is byte for byte the same for any -j.
  Scenario s = small_pod("planner-jobs");
  s.training().plan.global_batch_tokens = 1024.0 * 256;
  for (const int keep : {0, 3}) {
    const auto serial = plan_training(s, nullptr, {}, keep, 0, 1);
    INFO("keep " << keep);
    for (const int jobs : {2, 3}) CHECK(planner_csv(plan_training(s, nullptr, {}, keep, 0, jobs)) == planner_csv(serial));
  }
  // Progress comes once per plan, in order, whatever finishes first.
  std::vector<int> heard;
  plan_training(s, [&](int finished, int, double) { heard.push_back(finished); }, {}, 3, 0, 3);
  for (size_t i = 0; i < heard.size(); ++i) CHECK(heard[i] == static_cast<int>(i));
}

TEST_CASE("planner with a token budget: each simulated plan's days and cost", "[planner]") {
  // days = ceil(budget / batch) x step / 86400; cost = chips x hours x the preset's $4.20.
  Scenario s = small_pod("planner-budget-cost");
  s.training().token_budget = 1e9;
  const auto result = plan_training(s, nullptr, {}, 3);
  const std::string csv = planner_csv(result);
  CHECK(csv.find("time_to_train_days,training_cost_usd") != std::string::npos);
  int checked = 0;
  for (const auto& c : result.candidates) {
    if (!c.simulated) continue;
    const double steps = std::ceil(1e9 / s.training().plan.global_batch_tokens);
    CHECK(c.report.steps_to_train == steps);
    CHECK(c.report.time_to_train_s == Approx(steps * c.report.step_time_s));
    CHECK(c.report.training_cost_usd == Approx(16 * c.report.time_to_train_s / 3600 * 4.20));
    ++checked;
  }
  CHECK(checked >= 3);
  CHECK(planner_table(s, result).find("its run: ") != std::string::npos);
}

TEST_CASE("podsim plan as a Slurm job array: the tasks and --collect give plan --exhaustive's ranking",
          "[planner][cli][slurm]") {
  const auto dir = podsim_test::made_dir("plan-slurm");
  // The planner tests' pod (planner_pods.hpp) as a file: LLaMA-2 7B cut to 2 layers on v5p 4x4.
  const std::string scenario = (dir / "pod.yaml").string();
  {
    std::ofstream out(scenario);
    out << "version: 1\nname: plan-array\nhardware: {preset: v5p}\ntopology: {mesh: {X: 4, Y: 4}}\n"
           "workload:\n  kind: training\n  model: {preset: llama2-7b, layers: 2}\n  batch_tokens: 65536\n"
           "  sequence_length: 1024\n  attention_flops: false\n";
  }
  const std::string array = (dir / "array").string();
  const auto emit = podsim_test::run_podsim("plan " + scenario + " --emit slurm -o " + array);
  REQUIRE(emit.exit_code == 0);
  const std::string script = podsim_test::read_file(dir / "array" / "plan.sbatch");
  // 39 fitting plans, those that swap X and Y simulated once (the planner test above): 15 tasks.
  const auto begin = script.find("#SBATCH --array=0-");
  REQUIRE(begin != std::string::npos);
  const int tasks = std::stoi(script.substr(begin + 18)) + 1;
  CHECK(tasks == 15);
  CHECK(script.find("-o '" + std::filesystem::absolute(array).string() + "' --task \"$SLURM_ARRAY_TASK_ID\"") !=
        std::string::npos);
  // Collecting before the tasks ran names them.
  const auto early = podsim_test::run_podsim("plan " + scenario + " --collect -o " + array);
  CHECK(early.exit_code == 2);
  CHECK(early.err.find("15 of 15 tasks have no result for these inputs (0, 1, 2") != std::string::npos);
  for (int task = 0; task < tasks; ++task)
    REQUIRE(podsim_test::run_podsim("plan " + scenario + " --task " + std::to_string(task) + " -o " + array).exit_code == 0);
  const auto collected = podsim_test::run_podsim("plan " + scenario + " --collect -o " + array);
  REQUIRE(collected.exit_code == 0);
  const auto local = podsim_test::run_podsim("plan " + scenario + " --exhaustive -o " + (dir / "local").string());
  REQUIRE(local.exit_code == 0);
  CHECK(podsim_test::read_file(dir / "array" / "plan.csv") == podsim_test::read_file(dir / "local" / "plan.csv"));
  CHECK(collected.out.substr(0, collected.out.find("wrote")) == local.out.substr(0, local.out.find("wrote")));
  // Other inputs (a longer sequence): every task is stale, and a task beyond the array is refused.
  const auto stale = podsim_test::run_podsim("plan " + scenario + " --set workload.sequence_length=2048 --collect -o " + array);
  CHECK(stale.exit_code == 2);
  CHECK(stale.err.find("tasks have no result for these inputs") != std::string::npos);
  const auto beyond = podsim_test::run_podsim("plan " + scenario + " --task 15 -o " + array);
  CHECK(beyond.exit_code == 2);
  CHECK(beyond.err.find("expected a task from 0 to 14") != std::string::npos);
  const auto no_dir = podsim_test::run_podsim("plan " + scenario + " --emit slurm");
  CHECK(no_dir.exit_code == 2);
  CHECK(no_dir.err.find("expected -o DIR") != std::string::npos);
}

namespace {

// The planner tests' pod (planner_pods.hpp) as a scenario file, with `extra` lines under workload.
std::string pod_file(const std::filesystem::path& dir, const std::string& name, const std::string& extra) {
  const std::string path = (dir / (name + ".yaml")).string();
  std::ofstream out(path);
  out << "version: 1\nname: plan-keys\nhardware: {preset: v5p}\ntopology: {mesh: {X: 4, Y: 4}}\n"
         "workload:\n  kind: training\n  model: {preset: llama2-7b, layers: 2}\n  batch_tokens: 65536\n"
         "  sequence_length: 1024\n  attention_flops: false\n"
      << extra;
  return path;
}

std::vector<std::string> candidate_keys(const Scenario& s) {
  std::vector<std::string> keys;
  for (const auto& c : planner_candidates(s, 0).all)
    keys.push_back(c.label + " " + symmetry_key(s.topology, c.plan) + (c.feasible ? "" : " " + c.error));
  return keys;
}

}  // namespace

TEST_CASE("the planner ignores every key it searches: each alone leaves the candidates as they were", "[planner]") {
  // A value of each ignored key, most of which the loader would refuse beside the others (64
  // sequences do not split 3 ways; zero needs data axes, a schedule a pipeline): ignored, they
  // refuse nothing. A key added to the list needs a value here.
  const std::map<std::string, std::string> values = {
      {"parallelism.data", "[X, Y]"},         {"parallelism.fsdp", "true"},
      {"parallelism.tensor", "[X]"},          {"parallelism.zero", "2"},
      {"parallelism.expert", "[X]"},          {"parallelism.pipeline", "Y"},
      {"parallelism.schedule", "interleaved_1f1b"}, {"parallelism.virtual_stages", "4"},
      {"microbatches", "3"},                  {"checkpointing", "none"},
      {"remat_policy", "minimal"},            {"remat", "{query_proj: offload}"},
      {"parallelism.context", "X"},           {"parallelism.dcn_sync", "after_backward"}};
  const auto dir = podsim_test::made_dir("plan-ignored-keys");
  const std::vector<std::string> base = candidate_keys(load_planner_scenario(pod_file(dir, "base", ""), {}));
  for (const auto& key : planner_ignored_keys()) {
    INFO(key);
    REQUIRE(values.count(key) == 1);
    const size_t dot = key.find('.');
    const std::string yaml = dot == std::string::npos ? "  " + key + ": " + values.at(key) + "\n"
                                                      : "  parallelism:\n    " + key.substr(dot + 1) + ": " + values.at(key) + "\n";
    const Scenario s = load_planner_scenario(pod_file(dir, key, yaml), {});
    CHECK(candidate_keys(s) == base);
    // The same value by --set.
    const Scenario set = load_planner_scenario(pod_file(dir, "set", ""), {{"workload." + key, values.at(key)}});
    CHECK(candidate_keys(set) == base);
  }
  // Every listed key is one a training scenario has; the help lists the others as taken.
  const auto& workload = key_table(SchemaMap::WorkloadTraining).keys;
  const auto& parallelism = key_table(SchemaMap::TrainingParallelism).keys;
  for (const auto& key : planner_ignored_keys()) {
    const bool nested = key.rfind("parallelism.", 0) == 0;
    const auto& keys = nested ? parallelism : workload;
    CHECK(std::find(keys.begin(), keys.end(), nested ? key.substr(12) : key) != keys.end());
  }
  CHECK(planner_taken_keys().size() + planner_ignored_keys().size() == workload.size() - 2 + parallelism.size());
}

TEST_CASE("podsim plan: the scenario's split, microbatches and checkpointing change neither the winner nor plan.csv",
          "[planner][cli]") {
  // Issue 42: microbatches: 4 beside FSDP over X and Y started every search at 4 microbatches
  // (and left out the splits whose data axes 4 x 16 sequences do not divide), so the winner changed.
  const auto dir = podsim_test::made_dir("plan-scenario-keys");
  const auto plan = [&](const std::string& name, const std::string& extra) {
    const auto r = podsim_test::run_podsim("plan " + pod_file(dir, name, extra) + " -o " + (dir / name).string());
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return std::make_pair(r.out.substr(r.out.find("\n")), podsim_test::read_file(dir / name / "plan.csv"));
  };
  const auto base = plan("mb1", "  microbatches: 1\n");
  // plan.png beside plan.csv, drawn as compare draws compare.png (no matplotlib: no PNG, and why).
  if (std::system("/usr/bin/python3 -c 'import matplotlib' >/dev/null 2>&1") == 0) {
    CHECK(base.first.find("wrote " + (dir / "mb1" / "plan.png").string()) != std::string::npos);
    CHECK(podsim_test::read_file(dir / "mb1" / "plan.png").substr(1, 3) == "PNG");
  } else {
    CHECK(base.first.find("python3-matplotlib is not installed") != std::string::npos);
  }
  for (const auto& [name, extra] : std::vector<std::pair<std::string, std::string>>{
           {"mb4-fsdp", "  microbatches: 4\n  parallelism: {data: [X, Y], fsdp: true}\n"},
           {"mb2-tp", "  microbatches: 2\n  checkpointing: none\n  parallelism: {data: [Y], tensor: [X]}\n"},
           {"pipeline", "  microbatches: 8\n  parallelism: {data: [X], pipeline: Y, schedule: gpipe}\n"}}) {
    INFO(name);
    const auto other = plan(name, extra);
    CHECK(other.second == base.second);
    CHECK(other.first.substr(0, other.first.find("wrote")) == base.first.substr(0, base.first.find("wrote")));
  }
}

TEST_CASE("podsim plan --help lists the workload keys the planner takes and those it searches, from the code's list",
          "[planner][cli]") {
  const auto help = podsim_test::run_podsim("plan --help");
  REQUIRE(help.exit_code == 0);
  CHECK(help.out.find("parallelism block is ignored") == std::string::npos);
  const size_t taken_at = help.out.find("The planner takes");
  const size_t ignored_at = help.out.find("It ignores these workload keys");
  REQUIRE(taken_at != std::string::npos);
  REQUIRE(ignored_at > taken_at);
  // Taken: the words of the lines after the heading; ignored: the keys of each line ending in a
  // colon (what the planner does instead is indented below it).
  std::vector<std::string> taken, ignored;
  std::stringstream taken_text(help.out.substr(taken_at, ignored_at - taken_at));
  std::string line;
  std::getline(taken_text, line);
  for (std::string word; taken_text >> word;) taken.push_back(word);
  std::stringstream ignored_text(help.out.substr(ignored_at));
  std::getline(ignored_text, line);
  while (std::getline(ignored_text, line) && line.rfind("  ", 0) == 0) {
    if (line.rfind("   ", 0) == 0) continue;   // what the planner does instead
    std::stringstream keys(line.substr(2, line.rfind(':') - 2));
    for (std::string key; std::getline(keys, key, ',');) ignored.push_back(key.substr(key.find_first_not_of(' ')));
  }
  CHECK(taken == planner_taken_keys());
  CHECK(ignored == planner_ignored_keys());
  for (const std::string key : {"model", "batch_tokens", "sequence_length", "parallelism.tensor_overlap"})
    CHECK(std::find(taken.begin(), taken.end(), key) != taken.end());
  for (const std::string key : {"microbatches", "parallelism.data", "checkpointing"})
    CHECK(std::find(ignored.begin(), ignored.end(), key) != ignored.end());
}

TEST_CASE("plan.csv: no memory for a plan that cannot be built, the real one for a plan that does not fit, no step "
          "for a plan not simulated",
          "[planner]") {
  // 2 layers cannot fill 4 pipeline stages (the first test above): impossible, no layout, no
  // memory. With 1 GiB of HBM, plain data parallelism over 16 chips holds every weight (2 B a
  // parameter of 0.66 B) and fits under no policy or ZeRO stage: its leanest memory is a real layout's.
  Scenario s = small_pod("planner-csv-cells");
  s.topology.chip.hbm_bytes = 1024.0 * 1024 * 1024;
  const auto result = plan_training(s, nullptr, {}, 3);
  const std::string csv = planner_csv(result);
  std::vector<std::vector<std::string>> rows;
  std::stringstream in(csv);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::string cell;
    bool quoted = false;
    for (const char c : line) {
      if (c == '"') quoted = !quoted;
      else if (c == ',' && !quoted) cells.push_back(std::exchange(cell, ""));
      else cell += c;
    }
    cells.push_back(cell);
    rows.push_back(cells);
  }
  const auto& header = rows.front();
  auto column = [&](const std::string& name) {
    return static_cast<size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  };
  const size_t memory = column("memory_per_chip_bytes"), step = column("step_time_s"), error = column("error");
  int impossible = 0, too_big = 0, unsimulated = 0;
  for (size_t r = 1; r < rows.size(); ++r) {
    const auto& row = rows[r];
    INFO("row " << r << ": " << row[1]);
    REQUIRE(row.size() == header.size());
    for (size_t c = 0; c < row.size(); ++c) {
      if (header[c] == "plan" || header[c] == "error") continue;
      INFO(header[c] << " = " << row[c]);
      CHECK(row[c].size() <= 24);   // a number a spreadsheet reads, or a word
      if (row[c].empty() || row[c] == "true" || row[c] == "false" || header[c] == "checkpointing") continue;
      char* end = nullptr;
      std::strtod(row[c].c_str(), &end);
      CHECK(*end == '\0');
    }
    const bool feasible = row[column("feasible")] == "true", simulated = row[column("simulated")] == "true";
    if (!feasible) {
      ++impossible;
      CHECK(row[memory].empty());
      CHECK_FALSE(row[error].empty());
    } else {
      REQUIRE_FALSE(row[memory].empty());
      const double bytes = std::stod(row[memory]);
      CHECK(bytes > 0);
      if (row[column("fits_hbm")] == "false") {
        ++too_big;
        CHECK(bytes > s.topology.chip.hbm_bytes);
      }
    }
    if (!simulated) {
      ++unsimulated;
      CHECK(row[step].empty());
      CHECK(row[column("mfu")].empty());
    } else {
      CHECK(std::stod(row[step]) > 0);
    }
  }
  CHECK(impossible == 12);
  CHECK(too_big > 0);
  CHECK(unsimulated >= impossible + too_big);
}

TEST_CASE("a pod on which no plan can be built is refused with the first plan's reason, not a sentinel size",
          "[planner]") {
  // One sequence, which no data axis divides; 3 heads and an odd d_ff, which no tensor axis of
  // the 4x4 (nor a block of 2) divides; 2 layers, which no 4-stage pipeline holds.
  Scenario s = small_pod("planner-nothing-builds");
  s.training().plan.global_batch_tokens = s.training().plan.sequence_length;
  s.training().model.heads = 3;
  s.training().model.kv_heads = 3;
  s.training().model.d_ff = 11007;
  const auto result = plan_training(s, nullptr);
  for (const auto& c : result.candidates) CHECK_FALSE(c.feasible);
  try {
    require_some_plan_fits(s, result);
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    const std::string message = e.what();
    INFO(message);
    CHECK(message.find("cannot be laid out on this pod by any plan the planner searches (the first: ") != std::string::npos);
    CHECK(message.find(result.candidates.front().error) != std::string::npos);
    CHECK(message.find("e+") == std::string::npos);
  }
}
