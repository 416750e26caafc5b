// The child-process module every caller shares (replay, run, plan -j, sweep, bench): a forked
// function's result over its pipe, programs from an argument vector, polling and exit statuses.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/engine/child_process.hpp"

using namespace podsim;
namespace fs = std::filesystem;

TEST_CASE("A forked function's result comes back over its pipe, with its exit status", "[child_process]") {
  const std::vector<double> sent = {1.5, 2.5, 4.0};
  ForkedChild child = fork_function(
      [&](int result_fd, int) {
        write_vector_or_exit(result_fd, sent);
        return 7;
      },
      false);
  REQUIRE(child.pid > 0);
  CHECK(child.progress_fd == -1);
  CHECK(wait_readable({child.result_fd})[0]);
  std::vector<double> received;
  CHECK(read_vector(child.result_fd, received));
  CHECK(received == sent);
  double more = 0;
  CHECK_FALSE(read_exactly(child.result_fd, &more, sizeof more));   // the child closed its end
  ::close(child.result_fd);
  const int status = wait_for_child(child.pid);
  CHECK_FALSE(exited_cleanly(status));
  CHECK(exit_code(status) == 7);
  CHECK(terminating_signal(status) == 0);
  CHECK(describe_exit_status(status) == "exit status 7");
}

TEST_CASE("A forked function's progress pipe and a signal's wait status", "[child_process]") {
  ForkedChild child = fork_function(
      [](int, int progress_fd) {
        const uint64_t done = 42;
        write_or_exit(progress_fd, &done, sizeof done);
        ::pause();   // until killed
        return 0;
      },
      true);
  REQUIRE(child.progress_fd >= 0);
  uint64_t done = 0;
  CHECK(read_exactly(child.progress_fd, &done, sizeof done));
  CHECK(done == 42);
  CHECK_FALSE(wait_readable({child.result_fd}, 0)[0]);   // nothing written, nothing closed
  signal_child(child.pid, SIGKILL);
  const int status = wait_for_child(child.pid);
  ::close(child.result_fd);
  ::close(child.progress_fd);
  CHECK(terminating_signal(status) == SIGKILL);
  CHECK(exit_code(status) == -1);
  CHECK(describe_exit_status(status).rfind("killed by signal 9 (", 0) == 0);
}

TEST_CASE("A spawned program writes its streams to files, one that cannot start throws", "[child_process]") {
  const fs::path dir = fs::temp_directory_path() / ("podsim_child_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const int pid = spawn_program({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}, (dir / "o").string(),
                                (dir / "e").string());
  const int status = wait_for_child(pid);
  CHECK(exit_code(status) == 3);
  auto read = [](const fs::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  CHECK(read(dir / "o") == "out\n");
  CHECK(read(dir / "e") == "err\n");
  CHECK_THROWS_WITH(spawn_program({(dir / "missing").string()}, (dir / "o").string(), (dir / "e").string()),
                    Catch::Contains("cannot start"));
  fs::remove_all(dir);
}
