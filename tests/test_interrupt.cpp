// Ctrl-C on `podsim sweep` and `podsim compare`: the running points are stopped and marked
// interrupted, the CSV is written for this grid (never left describing an older one), and the
// exit status is 128 + the signal.
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "cli_helpers.hpp"

namespace fs = std::filesystem;
using podsim_test::read_file;
using podsim_test::source_path;

extern char** environ;

namespace {

// Starts podsim with `args` (no shell), output to files in `dir`; waits until `started` exists,
// sends `signal`, and returns the exit status.
int interrupted_run(const std::vector<std::string>& args, const fs::path& dir, const fs::path& started, int signal) {
  std::vector<std::string> argv_text = {PODSIM_BINARY};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, (dir / "stdout").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, (dir / "stderr").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = -1;
  REQUIRE(posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ) == 0);
  posix_spawn_file_actions_destroy(&actions);
  for (int i = 0; i < 6000 && !fs::exists(started); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));   // the point is running
  ::kill(pid, signal);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  size_t begin = 0;
  for (size_t end; (end = text.find('\n', begin)) != std::string::npos; begin = end + 1) out.push_back(text.substr(begin, end - begin));
  return out;
}

// A training step of tens of seconds: long enough to be under way when the signal comes (one
// slow chip keeps every chip simulated; the uniform steps of scenarios/ take a second or less
// natively).
const char* kSlowScenario = "tests/fixtures/slow_step_llama2_13b_slow_chip_16x16x8.yaml";

}  // namespace

TEST_CASE("Ctrl-C on a sweep marks its running point interrupted and writes this grid's sweep.csv",
          "[interrupt][adversarial][cli]") {
  const auto dir = podsim_test::made_dir("interrupt-sweep");
  const auto out = dir / "sweep";
  fs::create_directories(out);
  // An older grid's table: it must not survive beside the new points.
  std::ofstream(out / "sweep.csv") << "point,workload.operations.0.bytes,status,error\n0,4096,ok,\n";
  const int status = interrupted_run({"sweep", source_path(kSlowScenario), "--set", "workload.matmul_efficiency=0.5,0.6", "-j", "1",
                                      "-o", out.string()},
                                     dir, out / "points" / "00000" / "inputs.txt", SIGINT);
  CHECK(status == 128 + SIGINT);
  const auto rows = lines(read_file(out / "sweep.csv"));
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].rfind("point,workload.matmul_efficiency,status,error", 0) == 0);
  // Point 0 was stopped under way (or, on a very fast machine, had just finished); point 1 never ran.
  CHECK((rows[1].find(",interrupted,") != std::string::npos || rows[1].find(",ok,") != std::string::npos));
  CHECK(rows[2].find(",missing,") != std::string::npos);
  const std::string err = read_file(dir / "stderr");
  CHECK(err.find("interrupted by SIGINT") != std::string::npos);
  // Running it again finishes what was stopped.
}

TEST_CASE("SIGTERM on a compare stops it with this grid's compare.csv", "[interrupt][adversarial][cli]") {
  const auto dir = podsim_test::made_dir("interrupt-compare");
  const auto out = dir / "compare";
  const int status = interrupted_run({"compare", source_path(kSlowScenario), "--topologies", "16x16x16,16x16x16", "-j", "1",
                                      "-o", out.string()},
                                     dir, out / "points" / "00000" / "inputs.txt", SIGTERM);
  CHECK(status == 128 + SIGTERM);
  const auto rows = lines(read_file(out / "compare.csv"));
  CHECK(rows.size() == 3);
  CHECK(read_file(dir / "stderr").find("interrupted by SIGTERM") != std::string::npos);
}
