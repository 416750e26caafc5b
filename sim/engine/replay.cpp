#include "sim/engine/replay.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "sim/engine/child_process.hpp"
#include "sim/engine/chip_loop.hpp"
#include "sim/engine/native_replay.hpp"

namespace podsim {

// A child process per simulation: SimGrid's engine is a process-wide singleton. The child
// runs the chip loop (chip_loop.hpp) and writes its result to a pipe, field by field.

namespace {

// The simulation process: its exit status 4 means a failure it has printed.
int simulate_and_send(const Topology& topo, const std::vector<Endpoint>& endpoints, const std::vector<ReplayOp>& ops,
                      const ReplayOptions& options, int result_fd, int progress_fd) {
  ReplayResult result;
  try {
    result = options.engine == ReplayEngine::Native ? native_replay_in_process(topo, endpoints, ops, options, progress_fd)
                                                    : replay_in_process(topo, endpoints, ops, options, progress_fd);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "podsim: simulation failed: %s\n", e.what());
    return 4;
  }
  write_vector_or_exit(result_fd, result.spans);
  write_vector_or_exit(result_fd, result.hops);
  write_or_exit(result_fd, &result.messages, sizeof result.messages);
  write_or_exit(result_fd, &result.end_time_s, sizeof result.end_time_s);
  write_or_exit(result_fd, &result.simulation_wall_s, sizeof result.simulation_wall_s);
  return 0;
}

bool receive_result(int fd, ReplayResult& result) {
  return read_vector(fd, result.spans) && read_vector(fd, result.hops) &&
         read_exactly(fd, &result.messages, sizeof result.messages) &&
         read_exactly(fd, &result.end_time_s, sizeof result.end_time_s) &&
         read_exactly(fd, &result.simulation_wall_s, sizeof result.simulation_wall_s);
}

// Until the first byte of the result: the simulation's progress reports as they come, and the
// wall time between them, at most once per interval. Closes `progress_fd`.
void relay_progress(int result_fd, int progress_fd, const ReplayOptions& options, SimulationProgress& progress,
                    std::chrono::steady_clock::time_point start) {
  const int timeout_ms = std::clamp(static_cast<int>(options.progress_interval_s * 1000), 10, 250);
  std::vector<int> fds = {result_fd, progress_fd};
  double reported_s = -1;
  while (true) {
    const std::vector<bool> ready = wait_readable(fds, timeout_ms);
    if (ready[1]) {
      uint64_t reports[512];   // whole reports: each was written whole, 8 bytes
      const ssize_t n = ::read(progress_fd, reports, sizeof reports);
      if (n >= static_cast<ssize_t>(sizeof(uint64_t))) {
        progress.done = std::max(progress.done, reports[n / sizeof(uint64_t) - 1]);
      } else if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
        fds[1] = -1;   // the simulation closed it (skipped from now on)
      }
    }
    if (ready[0]) break;
    progress.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (progress.wall_s - reported_s >= options.progress_interval_s) {
      options.progress(progress);
      reported_s = progress.wall_s;
    }
  }
  ::close(progress_fd);
}

}  // namespace

ReplayChild start_replay(const Topology& topo, const std::vector<Endpoint>& endpoints,
                         const std::vector<ReplayOp>& ops, const ReplayOptions& options) {
  // Progress comes from where the work happens, the simulation process, on a pipe of its own.
  const ForkedChild forked = fork_function(
      [&](int result_fd, int progress_fd) {
        return simulate_and_send(topo, endpoints, ops, options, result_fd, progress_fd);
      },
      static_cast<bool>(options.progress));
  ReplayChild child;
  child.pid = forked.pid;
  child.result_fd = forked.result_fd;
  child.progress_fd = forked.progress_fd;
  child.started = std::chrono::steady_clock::now();
  if (options.progress) {
    for (const auto& op : ops) {
      child.progress_total += static_cast<uint64_t>(op.repeat) *
                              (static_cast<uint64_t>(topo.chip_count()) + (op.plan ? static_cast<uint64_t>(op.plan->messages) : 0));
    }
  }
  return child;
}

ReplayResult finish_replay(ReplayChild& child, const ReplayOptions& options) {
  const int result_fd = child.result_fd, progress_fd = child.progress_fd;
  const int pid = child.pid;
  SimulationProgress progress;
  progress.total = child.progress_total;
  const auto start = child.started;
  child = ReplayChild{};   // finished once, whatever happens below
  if (progress_fd >= 0) relay_progress(result_fd, progress_fd, options, progress, start);
  ReplayResult result;
  const bool ok = receive_result(result_fd, result);
  ::close(result_fd);
  rusage usage{};
  const int status = wait_for_child(pid, &usage);
  result.peak_rss_bytes = 1024.0 * static_cast<double>(usage.ru_maxrss);   // KiB on Linux
  if (!ok || !exited_cleanly(status)) throw std::runtime_error(describe_simulation_exit(status, result.peak_rss_bytes));
  if (options.progress) {
    progress.done = result.spans.size() + result.messages;   // all of it: the total, if the plans counted right
    progress.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    options.progress(progress);
  }
  return result;
}

void cancel_replay(ReplayChild& child) {
  if (child.pid <= 0) return;
  signal_child(child.pid, SIGKILL);
  for (int fd : {child.result_fd, child.progress_fd}) {
    if (fd >= 0) ::close(fd);
  }
  wait_for_child(child.pid);
  child = ReplayChild{};
}

ReplayResult replay(const Topology& topo, const std::vector<Endpoint>& endpoints, const std::vector<ReplayOp>& ops,
                    const ReplayOptions& options) {
  ReplayChild child = start_replay(topo, endpoints, ops, options);
  return finish_replay(child, options);
}

std::string describe_simulation_exit(int status, double peak_rss_bytes) {
  char memory[64];
  std::snprintf(memory, sizeof memory, "%.1f GB", peak_rss_bytes / 1e9);
  if (const int signal = terminating_signal(status); signal != 0) {
    const std::string name = std::string(strsignal(signal)) + ", signal " + std::to_string(signal);
    if (signal == SIGKILL) {
      return "the simulation was killed (" + name + ") after reaching " + memory +
             ": most often the out-of-memory killer. Try the default fidelity (symmetry-reduced) instead of "
             "--fidelity full, fewer repetitions or microbatches, or a smaller mesh";
    }
    if (signal == SIGSEGV || signal == SIGABRT || signal == SIGBUS || signal == SIGFPE || signal == SIGILL) {
      return "the simulation crashed (" + name + "): a bug in podsim; please report it with the scenario";
    }
    return "the simulation was stopped (" + name + ")";
  }
  if (exit_code(status) == 4) return "the simulation failed (its message is above)";
  if (exit_code(status) == 0) return "the simulation ended without its result";
  return "the simulation exited with status " + std::to_string(exit_code(status) >= 0 ? exit_code(status) : status);
}

}  // namespace podsim
