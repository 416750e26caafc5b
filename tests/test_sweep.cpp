// podsim sweep, compare and run --set through the CLI, and the plot scripts.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_helpers.hpp"
#include "scenario_errors.hpp"
#include "sim/commands/sweep.hpp"

using namespace podsim_test;
namespace fs = std::filesystem;

namespace {

size_t lines(const std::string& text) { return static_cast<size_t>(std::count(text.begin(), text.end(), '\n')); }

// The plot scripts need Debian's python3-matplotlib (scripts/install-deps.sh installs it).
bool have_matplotlib() { return std::system("/usr/bin/python3 -c 'import matplotlib' >/dev/null 2>&1") == 0; }

void require_png(const fs::path& png) {
  REQUIRE(fs::exists(png));
  CHECK(fs::file_size(png) > 10000);
  const auto bytes = read_file(png);
  CHECK(bytes.substr(1, 3) == "PNG");
}

int run_script(const std::string& args) {
  return std::system(("python3 " + source_path("scripts/") + args + " >/dev/null 2>&1").c_str());
}

// `python3 <args>`'s exit status and what it printed.
CommandResult run_python(const std::string& args) {
  const auto dir = made_dir("python-output");
  const int status =
      std::system(("python3 " + args + " >" + (dir / "out").string() + " 2>" + (dir / "err").string()).c_str());
  CommandResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = read_file(dir / "out");
  result.err = read_file(dir / "err");
  fs::remove_all(dir);
  return result;
}

CommandResult run_script_output(const std::string& args) { return run_python(source_path("scripts/") + args); }

}  // namespace

TEST_CASE("sweep values split on commas outside brackets, the grid's last axis varies fastest", "[sweep]") {
  const auto a = podsim::parse_set_option("workload.parallelism.model=[X, Y],[X],Y");
  CHECK(a.key == "workload.parallelism.model");
  CHECK(a.values == std::vector<std::string>{"[X, Y]", "[X]", "Y"});
  CHECK_THROWS_AS(podsim::parse_set_option("workload.batch"), podsim::InputError);
  CHECK_THROWS_AS(podsim::parse_set_option("workload.batch=1,,2"), podsim::InputError);
  const auto grid = podsim::sweep_grid({{"a", {"1", "2"}}, {"b", {"x", "y", "z"}}});
  REQUIRE(grid.size() == 6);
  CHECK(grid[1].overrides[0].value == "1");
  CHECK(grid[1].overrides[1].value == "y");
  CHECK(grid[3].overrides[0].value == "2");
}

TEST_CASE("a sweep runs every point, records failures, and resumes", "[sweep]") {
  const auto out = fresh_dir("sweep");
  const std::string args = "sweep " + source_path("scenarios/v5e_8x4_allgather_y.yaml") +
                           " --set topology.mesh.X=2,8,0 --set topology.mesh.Y=4,8 -o " + out.string();
  const auto first = run_podsim(args);
  INFO(first.err);
  // A sweep with failed points exits 1 and names the first (issue 42: it exited 0 saying "2 failed").
  REQUIRE(first.exit_code == 1);
  CHECK(first.out.find("6 points: 0 already done, 6 run (2 failed") != std::string::npos);
  CHECK(first.err.find("2 of 6 points failed") != std::string::npos);
  CHECK(first.err.find("the first, point 4 (topology.mesh.X=0 topology.mesh.Y=4): ") != std::string::npos);
  CHECK(first.err.find("expected a whole number from 1 to 4096") != std::string::npos);
  const auto csv = read_file(out / "sweep.csv");
  CHECK(lines(csv) == 7);
  CHECK(csv.find("topology.mesh.X,topology.mesh.Y,status,error") != std::string::npos);
  CHECK(csv.find("4,0,4,error,") != std::string::npos);
  CHECK(csv.find("expected a whole number from 1 to 4096") != std::string::npos);
  // Y=8 doubles the ring: 7 hops instead of 3 (the first row's time is the book's 559.2 us).
  CHECK(csv.find("0,2,4,ok,,") != std::string::npos);
  const auto summary_time = fs::last_write_time(out / "points" / "00000" / "summary.json");
  const auto again = run_podsim(args);
  CHECK(again.out.find("6 points: 6 already done, 0 run") != std::string::npos);
  CHECK(again.exit_code == 1);   // the failures found done are still failures
  CHECK(fs::last_write_time(out / "points" / "00000" / "summary.json") == summary_time);
  fs::remove_all(out / "points" / "00003");
  CHECK(run_podsim(args).out.find("5 already done, 1 run") != std::string::npos);
  CHECK(read_file(out / "sweep.csv") == csv);
}

TEST_CASE("a sweep re-runs a point whose inputs changed: scenario, grid, trace", "[sweep][resume]") {
  const auto out = fresh_dir("sweep-stale");
  fs::create_directories(out);
  const auto scenario = out / "s.yaml";
  const std::string base = read_file(source_path("scenarios/v5e_8x4_allgather_y.yaml"));
  std::ofstream(scenario) << base;
  auto time_of = [&](int point) {
    return nlohmann::json::parse(read_file(out / "run" / "points" / ("0000" + std::to_string(point)) / "summary.json"))
        .at("operations")[0]
        .at("time_s")
        .get<double>();
  };
  const std::string args = "sweep " + scenario.string() + " --set topology.mesh.X=2,8 -o " + (out / "run").string();
  REQUIRE(run_podsim(args).exit_code == 0);
  const double slow = time_of(0);
  // The ICI bandwidth goes from the preset's 45 GB/s to 450: every point runs again.
  std::string faster = base;
  faster.replace(faster.find("  preset: v5e"), 13, "  preset: v5e\n  overrides: {ici_bandwidth: \"450 GB/s\"}");
  std::ofstream(scenario) << faster;
  const auto rerun = run_podsim(args);
  INFO(rerun.out << rerun.err);
  CHECK(rerun.out.find("2 points: 0 already done, 2 run") != std::string::npos);
  CHECK(time_of(0) == Approx(slow / 10).epsilon(1e-9));
  CHECK(run_podsim(args).out.find("2 points: 2 already done") != std::string::npos);
  // Another grid into the same directory: point 0 is now X=8, not X=2's outputs relabelled.
  const auto regrid = run_podsim("sweep " + scenario.string() + " --set topology.mesh.X=8,2 -o " + (out / "run").string());
  CHECK(regrid.out.find("2 points: 0 already done, 2 run") != std::string::npos);
  const auto csv = read_file(out / "run" / "sweep.csv");
  CHECK(csv.find("0,8,ok,") != std::string::npos);
  CHECK(csv.find("1,2,ok,") != std::string::npos);
  // The swept key is one column, not also the summary's copy of it.
  const std::string header = csv.substr(0, csv.find('\n'));
  CHECK(header.find("topology.mesh.X") == header.rfind("topology.mesh.X"));

  // A serving sweep re-runs when its request trace changes, and not otherwise.
  const auto serving = out / "serving";
  fs::create_directories(serving);
  std::ofstream(serving / "trace.csv") << "arrival_s,prompt_tokens,output_tokens\n0.0,100,4\n0.01,200,4\n";
  std::ofstream(serving / "s.yaml") << "version: 1\nhardware: {preset: v5e}\ntopology: {mesh: {X: 4, Y: 4}}\n"
                                       "workload:\n  kind: serving\n  model: llama3-70b\n  weights: int8\n"
                                       "  kv_cache: int8\n  requests:\n    trace: trace.csv\n";
  const std::string serve = "sweep " + (serving / "s.yaml").string() + " --set workload.max_batch=4 -o " +
                            (serving / "run").string();
  const auto first = run_podsim(serve);
  INFO(first.err);
  REQUIRE(first.exit_code == 0);
  CHECK(run_podsim(serve).out.find("1 point: 1 already done") != std::string::npos);
  std::ofstream(serving / "trace.csv") << "arrival_s,prompt_tokens,output_tokens\n0.0,100,4\n0.01,200,8\n";
  CHECK(run_podsim(serve).out.find("1 point: 0 already done, 1 run") != std::string::npos);
  CHECK(read_file(serving / "run" / "points" / "00000" / "inputs.txt").find("trace.csv") != std::string::npos);
}

TEST_CASE("a sweep re-runs a point whose calibration profile changed, and only then", "[sweep][resume]") {
  const auto out = fresh_dir("sweep-profile");
  fs::create_directories(out / "profiles");
  auto write_profile = [&](const std::string& hop_latency) {
    std::ofstream(out / "profiles" / "p.yaml") << "version: 1\nname: p\nchip: v5e\nhop_model: additive\n"
                                                  "parameters: {hop_latency: \"" << hop_latency << "\"}\n";
  };
  write_profile("1 us");
  std::ofstream(out / "s.yaml") << "version: 1\nhardware: {preset: v5e, profile: profiles/p.yaml}\n"
                                   "topology: {mesh: {X: 8}}\nworkload:\n  kind: collectives\n  operations:\n"
                                   "    - {name: ag, kind: all_gather, axes: [X], bytes: \"1 KiB\"}\n";
  const std::string args = "sweep " + (out / "s.yaml").string() + " --set topology.mesh.X=4,8 -o " + (out / "run").string();
  auto time_of = [&](int point) {
    return nlohmann::json::parse(read_file(out / "run" / "points" / ("0000" + std::to_string(point)) / "summary.json"))
        .at("operations")[0]
        .at("time_s")
        .get<double>();
  };
  const auto first = run_podsim(args);
  INFO(first.out << first.err);
  REQUIRE(first.exit_code == 0);
  CHECK(first.out.find("2 points: 0 already done, 2 run") != std::string::npos);
  const double before = time_of(1);
  CHECK(read_file(out / "run" / "points" / "00000" / "inputs.txt").find("p.yaml") != std::string::npos);
  CHECK(run_podsim(args).out.find("2 points: 2 already done, 0 run") != std::string::npos);
  // A slower hop in the profile: every point runs again, and takes longer (a 1 KiB gather's
  // time is mostly hop latency).
  write_profile("5 us");
  const auto rerun = run_podsim(args);
  INFO(rerun.out << rerun.err);
  CHECK(rerun.out.find("2 points: 0 already done, 2 run") != std::string::npos);
  CHECK(time_of(1) > before);
  CHECK(run_podsim(args).out.find("2 points: 2 already done, 0 run") != std::string::npos);
}

TEST_CASE("a point killed by a signal is not finished, a sweep of failures exits non-zero", "[sweep][resume]") {
  const auto out = fresh_dir("sweep-killed");
  fs::create_directories(out);
  // A stand-in for podsim run that the kernel kills, as the out-of-memory killer would.
  const auto killer = out / "killed.sh";
  std::ofstream(killer) << "#!/bin/sh\nkill -9 $$\n";
  fs::permissions(killer, fs::perms::owner_all);
  podsim::SweepOptions options;
  options.scenario_path = source_path("scenarios/v5e_8x4_allgather_y.yaml");
  options.out_dir = (out / "run").string();
  options.axes = {podsim::parse_set_option("topology.mesh.X=2")};
  options.podsim_binary = killer.string();
  const auto killed = podsim::run_sweep(options);
  CHECK(killed.interrupted == 1);
  CHECK(killed.failed == 0);
  CHECK(killed.succeeded == 0);
  CHECK_FALSE(fs::exists(out / "run" / "points" / "00000" / "error.txt"));
  CHECK(read_file(out / "run" / "points" / "00000" / "interrupted.txt").find("signal 9") != std::string::npos);
  CHECK(read_file(out / "run" / "sweep.csv").find(",interrupted,") != std::string::npos);
  options.podsim_binary = PODSIM_BINARY;
  const auto rerun = podsim::run_sweep(options);
  CHECK(rerun.already_done == 0);
  CHECK(rerun.ran == 1);
  CHECK(rerun.succeeded == 1);
  // Every point failing is a failed sweep.
  const auto all_bad = run_podsim("sweep " + source_path("scenarios/v5e_8x4_allgather_y.yaml") +
                                  " --set topology.mesh.X=0,-1 -o " + (out / "bad").string());
  CHECK(all_bad.exit_code == 1);
  CHECK(all_bad.err.find("no point of the sweep succeeded") != std::string::npos);
}

TEST_CASE("a sweep and a compare report k of N points as they finish", "[sweep]") {
  const auto out = fresh_dir("sweep-progress");
  const auto r = run_podsim("-v sweep " + source_path("scenarios/v5e_8x4_allgather_y.yaml") +
                            " --set topology.mesh.X=2,4,8 -j 1 -o " + out.string());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("sweep: 0 of 3 points") != std::string::npos);
  CHECK(r.err.find("sweep: 1 of 3 points, about ") != std::string::npos);
  CHECK(r.err.find("sweep: 3 of 3 points") != std::string::npos);
  const auto c = run_podsim("-v compare " + source_path("scenarios/compare_alltoall_64_chips.yaml") +
                            " --topologies 4x4x4,8x8 -o " + (out / "cmp").string());
  CHECK(c.err.find("compare: 2 of 2 points") != std::string::npos);
}

TEST_CASE("a sweep for Slurm: a job-array script, one point per task, then collect", "[sweep]") {
  const auto out = fresh_dir("sweep-slurm");
  const std::string args = "sweep " + source_path("scenarios/v5e_8x4_allgather_y.yaml") +
                           " --set topology.mesh.Y=2,4,8 -o " + out.string();
  const auto emit = run_podsim(args + " --emit slurm");
  INFO(emit.err);
  REQUIRE(emit.exit_code == 0);
  const auto script = read_file(out / "sweep.sbatch");
  CHECK(script.find("#SBATCH --array=0-2") != std::string::npos);
  CHECK(script.find("--point \"$SLURM_ARRAY_TASK_ID\"") != std::string::npos);
  CHECK(run_podsim(args + " --collect").exit_code == 1);   // nothing run yet
  for (int task = 0; task < 3; ++task) REQUIRE(run_podsim(args + " --point " + std::to_string(task)).exit_code == 0);
  const auto collect = run_podsim(args + " --collect");
  CHECK(collect.exit_code == 0);
  CHECK(collect.out.find("3 of 3 points") != std::string::npos);
  CHECK(lines(read_file(out / "sweep.csv")) == 4);
}

TEST_CASE("run --set overrides one value, a bad override names the --set", "[sweep]") {
  const auto out = fresh_dir("run-set");
  const auto file = source_path("scenarios/v5e_8x4_allgather_y.yaml");
  const auto ok = run_podsim("run " + file + " --set topology.mesh=8x8 -o " + out.string() + " --reproducible");
  REQUIRE(ok.exit_code == 0);
  const auto summary = nlohmann::json::parse(read_file(out / "summary.json"));
  CHECK(summary.at("topology").at("chips") == 64);
  const auto bad = run_podsim("run " + file + " --set topology.mesh=8y8 -o " + out.string());
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("--set topology.mesh=8y8") != std::string::npos);
  const auto not_map = run_podsim("run " + file + " --set version.x=1 -o " + out.string());
  CHECK(not_map.exit_code == 2);
  CHECK(not_map.err.find("not a mapping") != std::string::npos);
  // null removes a key: a serving scenario's prefill_batch, which policy: static rules out.
  const auto serving = source_path("scenarios/serving_llama3_70b_continuous_v5e_4x4.yaml");
  const auto kept = run_podsim("run " + serving + " --set workload.policy=static --set workload.requests.poisson.count=20 -o " +
                               (out / "s1").string());
  CHECK(kept.exit_code == 2);
  CHECK(kept.err.find("workload.prefill_batch") != std::string::npos);
  const auto dropped = run_podsim("run " + serving + " --set workload.policy=static --set workload.prefill_batch=null "
                                  "--set workload.requests.poisson.count=20 -o " + (out / "s2").string());
  CHECK(dropped.exit_code == 0);
  const auto two = run_podsim("run " + file + " --set workload.x=1,2 -o " + out.string());
  CHECK(two.exit_code == 2);
  CHECK(two.err.find("podsim sweep") != std::string::npos);
}

TEST_CASE("compare runs the workload on each mesh and draws bars", "[sweep]") {
  const auto out = fresh_dir("compare");
  const auto r = run_podsim("compare " + source_path("scenarios/compare_alltoall_64_chips.yaml") + " -o " + out.string());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto csv = read_file(out / "compare.csv");
  CHECK(lines(csv) == 6);
  // The wrapped cube beats every unwrapped shape of the same 64 chips.
  // AllToAll hops: 2+2+2 on the wrapped cube, 63 along the 64-line.
  CHECK(csv.find("4x4x4,v5p,ok,,64,X Y Z,6,32,6,total_time_s,2.33016889e-05") != std::string::npos);
  CHECK(csv.find("64,v5p,ok,,64,-,63,1,63,") != std::string::npos);
  CHECK(r.out.find("diameter") != std::string::npos);
  if (have_matplotlib()) require_png(out / "compare.png");
  // A shape the workload cannot use is a row with its error, and the others still run.
  const auto mixed = run_podsim("compare " + source_path("scenarios/v4p_4x4x4_book_question2.yaml") +
                                " --topologies 4x4x4,8x8 -o " + (out / "mixed").string());
  REQUIRE(mixed.exit_code == 0);
  const auto mixed_csv = read_file(out / "mixed" / "compare.csv");
  CHECK(mixed_csv.find("8x8,v4p,error,") != std::string::npos);
  CHECK(mixed_csv.find("not a mesh axis") != std::string::npos);
  const auto none = run_podsim("compare " + source_path("scenarios/v5e_8x4_allgather_y.yaml") + " -o " +
                               (out / "none").string());
  CHECK(none.exit_code == 2);
  CHECK(none.err.find("--topologies") != std::string::npos);
}

TEST_CASE("compare runs its plot script without a shell, from beside the binary", "[sweep][security]") {
  const auto out = fresh_dir("compare-quoting");
  fs::create_directories(out);
  // A name that a shell string built with single quotes would run as a command.
  const auto marker = out / "injected";
  const std::string name = "a'; touch " + marker.string() + "; echo 'b";
  std::string text = read_file(source_path("scenarios/compare_alltoall_64_chips.yaml"));
  text.replace(text.find("name: compare-alltoall-64-chips"), std::string("name: compare-alltoall-64-chips").size(),
               "name: \"" + name + "\"");
  std::ofstream(out / "quoted.yaml") << text;
  const auto r = run_podsim("compare " + (out / "quoted.yaml").string() + " --topologies 4x4x4,8x8 -o " +
                            (out / "cmp").string());
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_FALSE(fs::exists(marker));
  // The script is the copy beside the binary, not the source tree's.
  CHECK(fs::exists(fs::path(PODSIM_BINARY).parent_path() / "scripts" / "plot_compare.py"));
  if (have_matplotlib()) {
    require_png(out / "cmp" / "compare.png");
  } else {
    CHECK(r.out.find("python3-matplotlib is not installed") != std::string::npos);
  }
}

TEST_CASE("plot labels drop a unit suffix only at the end, times take a unit by magnitude", "[sweep][plots]") {
  // plot_compare.py once labelled decode_step_time_s "decodetep_time (ms)".
  const std::string check =
      "import sys; sys.path.insert(0, '" + source_path("scripts") + "'); import plotting as p; "
      "assert p.metric_label('decode_step_time_s') == 'decode step time'; "
      "assert p.metric_label('latency_s.mean') == 'latency (mean)'; "
      "assert p.time_unit([2.33e-5, 9.3e-5]) == (1e6, 'us'); "
      "assert p.time_unit([0.0194]) == (1e3, 'ms'); assert p.time_unit([12.4]) == (1, 's'); "
      "assert p.time_unit([3e-10]) == (1e9, 'ns')";
  CHECK(std::system(("python3 -c \"" + check + "\"").c_str()) == 0);
}

TEST_CASE("every plot script writes a non-empty PNG", "[sweep][plots]") {
  if (!have_matplotlib()) {
    WARN("python3-matplotlib is not installed (scripts/install-deps.sh installs it): plot scripts not tested");
    return;
  }
  const auto out = fresh_dir("plots");
  fs::create_directories(out);
  // Collective validation.
  REQUIRE(run_podsim("validate --quick --csv " + (out / "validate.csv").string()).exit_code == 0);
  CHECK(run_script("plot_validation.py " + (out / "validate.csv").string() + " -o " + (out / "v.png").string()) == 0);
  require_png(out / "v.png");
  // Training: T_math vs T_comms over the batch.
  REQUIRE(run_podsim("sweep " + source_path("scenarios/training_fsdp_critical_batch.yaml") +
                     " --set workload.batch_tokens=40800,81600 -o " + (out / "train").string())
              .exit_code == 0);
  CHECK(run_script("plot_training.py " + (out / "train" / "sweep.csv").string() + " -o " + (out / "t.png").string()) == 0);
  require_png(out / "t.png");
  // The serving latency/throughput Pareto over the batch.
  REQUIRE(run_podsim("sweep " + source_path("scenarios/inference_llama3_70b_pareto_v5e_4x4.yaml") +
                     " --set workload.batch=1,32 --set workload.collective_matmul=true -o " + (out / "pareto").string())
              .exit_code == 0);
  CHECK(run_script("plot_pareto.py " + (out / "pareto" / "sweep.csv").string() + " -o " + (out / "p.png").string()) == 0);
  require_png(out / "p.png");
  // MoE step time against routing skew (DeepSeek-V3 shrunk to a 4x4x4).
  REQUIRE(run_podsim("sweep " + source_path("scenarios/training_deepseek_v3_v5p_16x16x16_ep.yaml") +
                     " --set workload.routing.distribution=zipf --set workload.routing.zipf_s=0,1"
                     " --set topology.mesh.X=4 --set topology.mesh.Y=4 --set topology.mesh.Z=4"
                     " --set workload.batch_tokens=262144 -o " + (out / "skew").string())
              .exit_code == 0);
  CHECK(run_script("plot_moe_skew.py " + (out / "skew" / "sweep.csv").string() + " -o " + (out / "s.png").string()) == 0);
  require_png(out / "s.png");
  // Random stragglers: the step-time distribution of `run --draws`.
  REQUIRE(run_podsim("run " + source_path("scenarios/perturbation_stragglers_fsdp_v5p_4x4x4.yaml") + " --draws 8 -o " +
                     (out / "draws").string())
              .exit_code == 0);
  CHECK(run_script("plot_draws.py " + (out / "draws" / "draws.csv").string() + " -o " + (out / "d.png").string()) == 0);
  require_png(out / "d.png");
  // Topology comparison (compare draws it itself; the script also runs alone).
  REQUIRE(run_podsim("compare " + source_path("scenarios/compare_alltoall_64_chips.yaml") + " --topologies 4x4x4,8x8 -o " +
                     (out / "cmp").string())
              .exit_code == 0);
  CHECK(run_script("plot_compare.py " + (out / "cmp" / "compare.csv").string() + " -o " + (out / "c.png").string()) == 0);
  require_png(out / "c.png");
  // A trace as Perfetto would show it.
  REQUIRE(run_podsim("run " + source_path("scenarios/training_pipeline_bubble.yaml") + " -o " + (out / "run").string())
              .exit_code == 0);
  CHECK(run_script("plot_trace.py " + (out / "run" / "trace.json").string() + " -o " + (out / "trace.png").string()) == 0);
  require_png(out / "trace.png");
  // A CSV of the wrong kind is a message, not a traceback.
  CHECK(run_script("plot_pareto.py " + (out / "validate.csv").string() + " -o " + (out / "x.png").string()) != 0);
}

TEST_CASE("plot_pareto: points that do not fit stand apart from the lines, a rule line per distinct curve, labels "
          "apart", "[sweep][plots]") {
  if (!have_matplotlib()) {
    WARN("python3-matplotlib is not installed (scripts/install-deps.sh installs it): plot scripts not tested");
    return;
  }
  // README's tour, step 6, with fewer batches: at 8192 tokens of context a batch of 240 does
  // not fit a v5e 4x4's HBM; the rule of thumb depends on the context, not on collective matmuls.
  const auto out = fresh_dir("pareto-plot");
  REQUIRE(run_podsim("sweep " + source_path("scenarios/inference_llama3_70b_pareto_v5e_4x4.yaml") +
                     " --set workload.context_length=2048,8192 --set workload.collective_matmul=false,true"
                     " --set workload.batch=1,4,16,240 -q -o " + out.string())
              .exit_code == 0);
  const std::string csv = (out / "sweep.csv").string();
  const std::string check =
      "import csv, sys; sys.path.insert(0, '" + source_path("scripts") + "'); import plotting, plot_pareto as p\n"
      "rows = plotting.ok_rows('" + csv + "')\n"
      "assert any(not p.fits(r) for r in rows), 'expected a point that does not fit'\n"
      "fig = p.draw(plotting.pyplot(), rows)\n"
      "ax = fig.axes[0]\n"
      "for line in ax.get_lines():\n"
      "    label = line.get_label()\n"
      "    if not label.startswith('simulated, '): continue\n"
      "    group = dict(kv.split('=') for kv in label[len('simulated, '):].split(', '))\n"
      "    fitting = [r for r in rows if p.fits(r) and all(r['workload.' + k] == v for k, v in group.items())]\n"
      "    assert len(line.get_xdata()) == len(fitting), (label, len(line.get_xdata()), len(fitting))\n"
      "rules = [l for l in ax.get_legend().get_lines() if 'rule of thumb' in str(l.get_label())]\n"
      "texts = [t.get_text() for t in ax.get_legend().get_texts() if t.get_text().startswith('rule of thumb')]\n"
      "assert texts == ['rule of thumb, context_length=2048', 'rule of thumb, context_length=8192'], texts\n"
      "styles = [str(l.get_linestyle()) for l in ax.get_lines() if l.get_label().startswith('rule of thumb')]\n"
      "assert len(set(styles)) == 2, styles\n"
      "assert plotting.overlapping_labels(fig) == [], plotting.overlapping_labels(fig)\n"
      "assert sorted(t.get_text() for t in ax.texts) == ['B=1', 'B=16', 'B=240', 'B=4'], [t.get_text() for t in ax.texts]\n";
  std::ofstream(out / "check.py") << check;
  const auto checked = run_python((out / "check.py").string());
  INFO(checked.err);
  CHECK(checked.exit_code == 0);
  const auto drawn = run_script_output("plot_pareto.py " + csv + " -o " + (out / "pareto.png").string());
  CHECK(drawn.exit_code == 0);
  CHECK(drawn.err.find("overlap") == std::string::npos);
  require_png(out / "pareto.png");
}

TEST_CASE("plot_trace --chips draws the chips named, and names a chip the trace lacks with the chips it has",
          "[sweep][plots]") {
  if (!have_matplotlib()) {
    WARN("python3-matplotlib is not installed (scripts/install-deps.sh installs it): plot scripts not tested");
    return;
  }
  // The slow chip (1, 2, 3) of a 4x4x4 is chip 1 + 4 x 2 + 16 x 3 = 57 (X varies fastest).
  const auto out = fresh_dir("trace-chips");
  REQUIRE(run_podsim("run " + source_path("scenarios/perturbation_slow_chip_fsdp_v5p_4x4x4.yaml") + " -q -o " +
                     (out / "run").string())
              .exit_code == 0);
  const std::string trace = (out / "run" / "trace.json").string();
  const auto drawn = run_script_output("plot_trace.py " + trace + " --chips 57,0 -o " + (out / "slow.png").string());
  INFO(drawn.err);
  CHECK(drawn.exit_code == 0);
  require_png(out / "slow.png");
  // Every track of chip 57, then of chip 0 (tids chip x 1000 + lane: sim/report/run_trace.cpp).
  std::ofstream(out / "check.py")
      << "import json, sys; sys.path.insert(0, '" + source_path("scripts") + "'); import plot_trace as p\n"
         "events = json.load(open('" + trace + "'))['traceEvents']\n"
         "names = {(e['pid'], e['tid']): e['args']['name'] for e in events if e.get('name') == 'thread_name'}\n"
         "spans = [e for e in events if e.get('ph') == 'X']\n"
         "tracks = p.drawn_tracks(spans, names, 0, 1e18, '57,0')\n"
         "assert [k[1] // 1000 for k in tracks] == sorted([k[1] // 1000 for k in tracks], reverse=True), tracks\n"
         "assert {k[1] // 1000 for k in tracks} == {0, 57}, tracks\n"
         "assert len(tracks) == len({k for k in names if k[1] // 1000 in (0, 57)}), tracks\n";
  const auto checked = run_python((out / "check.py").string());
  INFO(checked.err);
  CHECK(checked.exit_code == 0);
  const auto missing = run_script_output("plot_trace.py " + trace + " --chips 0,64 -o " + (out / "x.png").string());
  CHECK(missing.exit_code == 2);
  CHECK(missing.err.find("chip 64 is not in the trace; its chips: 0-63") != std::string::npos);
  CHECK_FALSE(fs::exists(out / "x.png"));
  const auto malformed = run_script_output("plot_trace.py " + trace + " --chips 0,slow -o " + (out / "x.png").string());
  CHECK(malformed.exit_code == 2);
  CHECK(malformed.err.find("'slow' is not a chip") != std::string::npos);
}

TEST_CASE("sweep and compare mark a point whose plan does not fit HBM does_not_fit, with its figures", "[sweep]") {
  const auto out = fresh_dir("sweep-oom");
  fs::create_directories(out);
  // llama2-13b on 4 v5p chips: replicated, 12 B a parameter (156 GB) does not fit 96 GB less the
  // headroom; with FSDP a quarter of it and one sequence's activations a chip do.
  std::ofstream(out / "s.yaml") << R"(version: 1
hardware: {preset: v5p}
topology: {mesh: {X: 4}}
workload:
  kind: training
  model: llama2-13b
  batch_tokens: 16384
  sequence_length: 4096
  parallelism: {data: [X], fsdp: true}
)";
  const auto r = run_podsim("sweep " + (out / "s.yaml").string() + " --set workload.parallelism.fsdp=true,false -o " +
                            (out / "run").string());
  INFO(r.err);
  CHECK(r.exit_code == 0);   // not a failure: simulated, and marked
  CHECK(r.out.find("1 do not fit HBM") != std::string::npos);
  const auto csv = read_file(out / "run" / "sweep.csv");
  CHECK(csv.find("\n0,true,ok,,") != std::string::npos);
  CHECK(csv.find("\n1,false,does_not_fit,,") != std::string::npos);
  CHECK(lines(csv) == 3);
  // compare runs its points the same way: the row has its figures and says it does not fit.
  std::ofstream(out / "replicated.yaml") << podsim_test::replaced_in(read_file(out / "s.yaml"), "fsdp: true", "fsdp: false");
  const auto c = run_podsim("compare " + (out / "replicated.yaml").string() + " --topologies 4 -o " + (out / "cmp").string());
  INFO(c.err);
  CHECK(c.exit_code == 0);
  const auto compare_csv = read_file(out / "cmp" / "compare.csv");
  INFO(compare_csv);
  CHECK(compare_csv.find("4,v5p,does_not_fit,,4,") != std::string::npos);
  CHECK(c.out.find("(does not fit HBM)") != std::string::npos);
}
