#pragma once
// Every child process podsim starts goes through here: a simulation forked to run a function
// (SimGrid's engine is a process-wide singleton, so each simulation needs a process of its own),
// a program spawned from an argument vector (sweep points, scripts), and the waiting, polling,
// killing and exit-status decoding their callers share. Programs start without a shell: an
// argument vector goes to posix_spawn as it is, so no byte of a scenario's name, a path or an
// override is ever parsed as shell syntax. No SimGrid here: the commands use it as well.
#include <sys/resource.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace podsim {

// --- What a wait status (waitpid's) means ---

bool exited_cleanly(int status);        // exited, with status 0
int exit_code(int status);              // its exit status; -1 when a signal ended it
int terminating_signal(int status);     // the signal that ended it; 0 when it exited
// "exit status 1" or "killed by signal 9 (Killed)".
std::string describe_exit_status(int status);

// --- Waiting for, signalling and reaping children ---

// Reaps `pid` (retrying when a signal interrupts the wait) and returns its wait status; with
// `usage`, fills in its resource use (peak RSS, ...).
int wait_for_child(int pid, rusage* usage = nullptr);
// Reaps whichever child ends first: its pid, with its wait status in `status`; -1 with errno
// set when interrupted by a signal (EINTR: the caller may want to stop) or when none is left.
int wait_for_any_child(int& status);
void signal_child(int pid, int signal);

// Waits up to `timeout_ms` (-1: for ever) until one of `fds` is readable or closed at the other
// end (negative ones are skipped). Which are, by index; none when the time ran out or a
// signal interrupted the wait. Throws std::runtime_error if poll() itself fails.
std::vector<bool> wait_readable(const std::vector<int>& fds, int timeout_ms = -1);

// --- A command killed while its simulation runs ---

// For a command line program (not a library host such as Python): a SIGTERM (a sweep stopping
// its points, a job scheduler) kills the simulation child fork_function made and reaps it before
// this process dies of the signal, so nothing of a stopped `podsim run` is still running once
// its parent has reaped it (the child's own parent-death signal arrives a moment later).
void forward_termination_to_simulations();

// --- A function in a forked child, its result over a pipe ---

struct ForkedChild {
  int pid = -1;
  int result_fd = -1;     // the read end of the child's result pipe
  int progress_fd = -1;   // the read end of its progress pipe; -1 unless asked for
};

// Forks; the child runs body(result_fd, progress_fd) and exits with what it returns. The child
// dies with the process that forked it, runs with the default handlers for fatal signals and
// SIGINT/SIGTERM (not a test framework's, say) and ignores SIGPIPE (a reader gone is noticed at
// the next write). Its progress pipe, when asked for, does not block: a report that does not
// fit is dropped. Call it from a process with one thread only: a fork copies the locks other
// threads hold. Throws std::runtime_error when no pipe or process can be made.
ForkedChild fork_function(const std::function<int(int result_fd, int progress_fd)>& body, bool progress_pipe);

// In a forked child: writes all of `data`, or ends the process with status 3 (the reader gone).
void write_or_exit(int fd, const void* data, size_t size);
// Reads exactly `size` bytes; false at the writer's end or on an error.
bool read_exactly(int fd, void* data, size_t size);

template <typename T>
void write_vector_or_exit(int fd, const std::vector<T>& v) {
  const uint64_t count = v.size();
  write_or_exit(fd, &count, sizeof count);
  write_or_exit(fd, v.data(), count * sizeof(T));
}

template <typename T>
bool read_vector(int fd, std::vector<T>& v) {
  uint64_t count = 0;
  if (!read_exactly(fd, &count, sizeof count)) return false;
  v.resize(count);
  return read_exactly(fd, v.data(), count * sizeof(T));
}

// --- Programs, from an argument vector ---

// Starts argv (argv[0] a path, not searched on PATH) with its stdout and stderr written to
// these files (created or truncated) and returns its pid. Throws std::runtime_error("cannot
// start <argv[0]>: <reason>").
int spawn_program(const std::vector<std::string>& argv, const std::string& stdout_path, const std::string& stderr_path);

struct ChildResult {
  bool started = false;      // false: the program could not be run (not found, not executable)
  int status = 0;            // waitpid's status once started
  std::string output;        // the captured stream (its last 64 KiB at most)
  std::string error;         // why it could not start, or its stderr's last line
  bool succeeded() const;
  std::string describe() const;   // "exit status 1: <last line>", "killed by signal 9", ...
};

// Which stream of a child is captured; the other goes to /dev/null.
enum class Captured { Stderr, Stdout };

// Runs argv (argv[0] searched on PATH when it has no '/') to its end, capturing one stream:
// stderr by default (its last line is kept for the message), or stdout for a program that
// prints its result there.
ChildResult run_child(const std::vector<std::string>& argv, Captured captured = Captured::Stderr);

// A script shipped with podsim (scripts/NAME): beside the running binary (the build copies
// scripts/ there) or in ../share/podsim/scripts when installed. Empty when neither has it.
std::string find_script(const std::string& name);

// `s` as one POSIX shell word, in single quotes ('\'' for a quote inside): for the commands
// podsim writes into job scripts or prints for the user to paste.
std::string shell_quote(const std::string& s);

// The running binary's path (/proc/self/exe).
std::string self_binary();

}  // namespace podsim
