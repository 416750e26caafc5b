// Progress of long commands: the engine reports work done of the run's total from the process
// that simulates, never decreasing and ending with all of it; the CLI draws it on a terminal
// only.
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "cli_helpers.hpp"
#include "sim/commands/planner.hpp"
#include "sim/commands/scenario_run.hpp"
#include "workloads/training.hpp"

using namespace podsim;
using namespace podsim_test;
namespace fs = std::filesystem;

namespace {

// Every report of one run, as the callback hears them, and what the run did.
struct Observed {
  std::vector<SimulationProgress> reports;
  uint64_t work = 0;       // spans + messages of the replay
  uint64_t messages = 0;
  double first_time_s = 0;
};
Observed progress_of(const TopologySpec& topology, const SimulationSettings& settings, const Program& program,
                     Fidelity fidelity) {
  Observed seen;
  RunOptions options;
  options.fidelity = fidelity;
  options.progress_interval_s = 0;   // every report the simulation writes
  options.progress = [&](const SimulationProgress& p) { seen.reports.push_back(p); };
  const RunResult run = run_program(topology, settings, program, options);
  seen.work = run.replay.spans.size() + run.replay.messages;
  seen.messages = run.replay.messages;
  seen.first_time_s = run.operations.at(0).time_s;
  return seen;
}

void check_reports(const std::vector<SimulationProgress>& reports) {
  REQUIRE_FALSE(reports.empty());
  for (size_t i = 1; i < reports.size(); ++i) {
    CHECK(reports[i].total == reports[0].total);
    CHECK(reports[i].done >= reports[i - 1].done);
    CHECK(reports[i].fraction() >= reports[i - 1].fraction());
    CHECK(reports[i].wall_s >= reports[i - 1].wall_s);
  }
  // The last says all of it, and the plans' count of messages was the replay's.
  CHECK(reports.back().done == reports.back().total);
  CHECK(reports.back().fraction() == 1.0);
}

// Runs `podsim args` with stderr on a pseudo-terminal; returns what the terminal received.
std::string stderr_on_terminal(const std::vector<std::string>& args, int* exit_code) {
  int master = -1, slave = -1;
  REQUIRE(::openpty(&master, &slave, nullptr, nullptr, nullptr) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(master);
    const int null = ::open("/dev/null", O_RDWR);
    ::dup2(null, STDIN_FILENO);
    ::dup2(null, STDOUT_FILENO);
    ::dup2(slave, STDERR_FILENO);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>("podsim"));
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(PODSIM_BINARY, argv.data());
    _exit(127);
  }
  ::close(slave);
  std::string seen;
  char buf[4096];
  while (true) {
    const ssize_t n = ::read(master, buf, sizeof buf);
    if (n > 0) seen.append(buf, static_cast<size_t>(n));
    else if (n < 0 && errno == EINTR) continue;
    else break;   // EIO once the program (the last holder of the terminal) has exited
  }
  ::close(master);
  int status = 0;
  ::waitpid(pid, &status, 0);
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  // The terminal turns "\n" into "\r\n"; undone, so that the sanitizer job's one warning about
  // SimGrid's stacks (cli_helpers.hpp) is recognised and left out here too.
  for (size_t at = seen.find("\r\n"); at != std::string::npos; at = seen.find("\r\n", at)) seen.erase(at, 1);
  return podsim_test::without_asan_stack_warning(seen);
}

}  // namespace

TEST_CASE("the engine reports work done, never less, ending with all of it", "[progress]") {
  SECTION("collectives: rings (a reduced ring relays over a second route) and an AllToAll") {
    for (const char* file : {"scenarios/v5e_8x16_allgather_wraparound.yaml", "scenarios/v5e_16_alltoall.yaml",
                             "scenarios/v5p_two_slices_hierarchical_allreduce.yaml"}) {
      INFO(file);
      const Scenario s = load_scenario(source_path(file));
      for (Fidelity fidelity : {Fidelity::Auto, Fidelity::Full}) {
        const Observed seen = progress_of(s.topology, simulation_settings(s), collectives_program(s), fidelity);
        check_reports(seen.reports);
        CHECK(seen.reports.back().total == seen.work);
      }
    }
  }
  SECTION("training steps: compute, collectives and pipeline sends") {
    for (const char* file : {"scenarios/training_pipeline_bubble.yaml", "scenarios/training_llama2_7b_fsdp_compute_bound.yaml"}) {
      INFO(file);
      const Scenario s = load_scenario(source_path(file));
      TrainingLayout layout;
      const Program program = training_program(s.training().model, s.training().plan, s.topology, layout);
      const Observed seen = progress_of(s.topology, simulation_settings(s), program, Fidelity::Auto);
      check_reports(seen.reports);
      CHECK(seen.reports.back().total == seen.work);
      // The 7B step simulates for about half a second: reports come on the way, not only at the end.
      if (std::string(file).find("7b") != std::string::npos) {
        CHECK(seen.reports.size() > 5);
        CHECK(seen.reports[seen.reports.size() / 2].fraction() > 0);
        CHECK(seen.reports[seen.reports.size() / 2].fraction() < 1);
      }
    }
  }
  SECTION("no callback, no reports (and the same result)") {
    const Scenario s = load_scenario(source_path("scenarios/v5e_16_alltoall.yaml"));
    const RunResult quiet = run_scenario(s, {});
    const Observed reported = progress_of(s.topology, simulation_settings(s), collectives_program(s), Fidelity::Auto);
    CHECK(quiet.operations[0].time_s == reported.first_time_s);
    CHECK(quiet.replay.messages == reported.messages);
  }
}

TEST_CASE("serving reports requests done of all", "[progress]") {
  Scenario s = load_scenario(source_path("scenarios/serving_llama3_70b_continuous_v5e_4x4.yaml"),
                             {{"workload.requests.poisson.count", "40"}});
  std::vector<SimulationProgress> reports;
  run_serving(s, nullptr, [&](const SimulationProgress& p) { reports.push_back(p); }, 0);
  REQUIRE(reports.size() >= 2);
  CHECK(reports.front().done == 0);
  CHECK(reports.back().done == 40);
  CHECK(reports.back().total == 40);
  for (size_t i = 1; i < reports.size(); ++i) CHECK(reports[i].done >= reports[i - 1].done);
}

TEST_CASE("progress is drawn on a terminal only, and -q silences it", "[progress][cli]") {
  const std::string scenario = source_path("scenarios/v5e_8x4_allgather_y.yaml");
  const auto out = fresh_dir("progress-out");
  // Off a terminal (the tests' files): nothing on stderr, and the same results as with -q
  // (the table's wall time aside).
  auto without_wall_time = [](std::string text) {
    const size_t at = text.find(", wall time ");
    return at == std::string::npos ? text : text.substr(0, at) + text.substr(text.find('\n', at));
  };
  const std::string args = "run " + scenario + " -o " + out.string() + " --reproducible";
  const auto plain = run_podsim(args);
  REQUIRE(plain.exit_code == 0);
  CHECK(plain.err.empty());
  std::vector<std::string> files;
  for (const char* file : {"summary.json", "trace.json", "operations.csv"}) files.push_back(read_file(out / file));
  const auto quiet = run_podsim("-q " + args);
  CHECK(without_wall_time(plain.out).find("wall time") == std::string::npos);
  CHECK(without_wall_time(plain.out) == without_wall_time(quiet.out));
  size_t k = 0;
  for (const char* file : {"summary.json", "trace.json", "operations.csv"}) CHECK(read_file(out / file) == files[k++]);
  // On a terminal: the percentage of the work, then the line cleared.
  int code = -1;
  const std::string seen = stderr_on_terminal({"run", scenario, "-o", out.string()}, &code);
  CHECK(code == 0);
  CHECK(seen.find("simulating v5e-8x4-allgather-y: 100% of the work") != std::string::npos);
  CHECK(seen.find("\33[2K\r") != std::string::npos);
  CHECK(stderr_on_terminal({"-q", "run", scenario, "-o", out.string()}, &code).empty());
  CHECK(code == 0);
}

TEST_CASE("plan reports k of N plans as they finish", "[progress][planner]") {
  Scenario s;
  s.path = "<test>";
  s.name = "planner-progress";
  s.workload = TrainingWorkload{};
  s.topology.chip = *find_chip_preset("v5p");
  s.topology.axes = {{"X", 2, true}, {"Y", 2, true}};
  s.training().model = *find_model_preset("llama2-7b");
  s.training().model.layers = 2;
  s.training().plan.sequence_length = 1024;
  s.training().plan.global_batch_tokens = 1024.0 * 16;
  s.training().plan.attention_flops = false;
  std::vector<std::pair<int, double>> seen;
  int total = 0;
  const auto result = plan_training(s, [&](int finished, int n, double eta_s) {
    seen.emplace_back(finished, eta_s);
    total = n;
  });
  // Every plan that can be built is counted (interleaved pipelines of 2 x 2 chunks cannot hold
  // 2 layers, and are listed as impossible without a simulation).
  int buildable = 0;
  for (const auto& c : result.candidates) buildable += c.feasible;
  REQUIRE(total == buildable);
  REQUIRE(static_cast<int>(seen.size()) == buildable + 1);
  CHECK(seen.front() == std::pair<int, double>{0, -1.0});
  for (size_t k = 1; k < seen.size(); ++k) {
    CHECK(seen[k].first == static_cast<int>(k));
    CHECK(seen[k].second >= 0);
  }
  CHECK(seen.back().second == 0);
}
