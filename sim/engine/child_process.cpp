#include "sim/engine/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <stdexcept>

extern char** environ;

namespace podsim {

namespace fs = std::filesystem;

namespace {
// The simulation child running now (0: none), for forward_termination_to_simulations.
volatile sig_atomic_t g_simulation_child = 0;
}  // namespace

bool exited_cleanly(int status) { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

int exit_code(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : -1; }

int terminating_signal(int status) { return WIFSIGNALED(status) ? WTERMSIG(status) : 0; }

std::string describe_exit_status(int status) {
  if (WIFSIGNALED(status)) {
    return "killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  }
  return "exit status " + std::to_string(WEXITSTATUS(status));
}

int wait_for_child(int pid, rusage* usage) {
  int status = 0;
  while (::wait4(pid, &status, 0, usage) < 0 && errno == EINTR) {
  }
  if (g_simulation_child == pid) g_simulation_child = 0;
  return status;
}

int wait_for_any_child(int& status) { return ::waitpid(-1, &status, 0); }

void signal_child(int pid, int signal) { ::kill(pid, signal); }

std::vector<bool> wait_readable(const std::vector<int>& fds, int timeout_ms) {
  std::vector<pollfd> waiting;
  for (int fd : fds) waiting.push_back({fd, POLLIN, 0});
  std::vector<bool> ready(fds.size(), false);
  if (::poll(waiting.data(), waiting.size(), timeout_ms) < 0) {
    if (errno == EINTR) return ready;
    throw std::runtime_error(std::string("poll failed: ") + std::strerror(errno));
  }
  for (size_t k = 0; k < fds.size(); ++k) ready[k] = waiting[k].revents != 0;
  return ready;
}

namespace {

void close_all(std::initializer_list<int> fds) {
  for (int fd : fds) {
    if (fd >= 0) ::close(fd);
  }
}

void kill_simulation_then_die(int signal) {
  const pid_t child = g_simulation_child;
  if (child > 0) {   // kill, waitpid, signal and raise are async-signal-safe
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
  }
  std::signal(signal, SIG_DFL);
  ::raise(signal);
}

// The forked side of fork_function, up to the body: it never returns.
[[noreturn]] void run_forked(const std::function<int(int, int)>& body, pid_t parent, int result_fd, int progress_fd) {
  if (progress_fd >= 0) ::fcntl(progress_fd, F_SETFL, O_NONBLOCK);
  // The child dies with the process that wants its result (a killed `podsim run` left its
  // simulation running on); if that one died before this line, nobody would send the signal.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) _exit(5);
  // The parent's handlers (a test framework's, say) must not run in the child.
  for (int sig : {SIGABRT, SIGSEGV, SIGFPE, SIGILL, SIGBUS, SIGTERM, SIGINT}) std::signal(sig, SIG_DFL);
  // A caller gone (its pipes closed) is noticed at the next write, not by a signal.
  std::signal(SIGPIPE, SIG_IGN);
  const int code = body(result_fd, progress_fd);
  ::close(result_fd);
  _exit(code);
}

}  // namespace

ForkedChild fork_function(const std::function<int(int result_fd, int progress_fd)>& body, bool progress_pipe) {
  // Unflushed output would be written twice, once by each process.
  std::fflush(nullptr);
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error(std::string("pipe failed: ") + std::strerror(errno));
  int progress_fds[2] = {-1, -1};
  if (progress_pipe && ::pipe(progress_fds) != 0) {
    close_all({fds[0], fds[1]});
    throw std::runtime_error(std::string("pipe failed: ") + std::strerror(errno));
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int error = errno;
    close_all({fds[0], fds[1], progress_fds[0], progress_fds[1]});
    throw std::runtime_error(std::string("fork failed: ") + std::strerror(error));
  }
  if (pid == 0) {
    close_all({fds[0], progress_fds[0]});
    run_forked(body, parent, fds[1], progress_fds[1]);
  }
  close_all({fds[1], progress_fds[1]});
  g_simulation_child = pid;
  return {pid, fds[0], progress_fds[0]};
}

void forward_termination_to_simulations() { std::signal(SIGTERM, kill_simulation_then_die); }

void write_or_exit(int fd, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) _exit(3);
    p += n;
    size -= static_cast<size_t>(n);
  }
}

bool read_exactly(int fd, void* data, size_t size) {
  char* p = static_cast<char*>(data);
  while (size > 0) {
    ssize_t n = ::read(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

namespace {

// argv as execve wants it: pointers into `args`, which must outlive them, and a null.
std::vector<char*> exec_argv(std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  return argv;
}

}  // namespace

int spawn_program(const std::vector<std::string>& args, const std::string& stdout_path, const std::string& stderr_path) {
  std::vector<std::string> copy = args;
  std::vector<char*> argv = exec_argv(copy);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("cannot start " + args[0] + ": " + std::strerror(rc));
  return pid;
}

bool ChildResult::succeeded() const { return started && exited_cleanly(status); }

std::string ChildResult::describe() const {
  if (!started) return error;
  const std::string what = describe_exit_status(status);
  return error.empty() ? what : what + ": " + error;
}

ChildResult run_child(const std::vector<std::string>& args, Captured captured) {
  ChildResult result;
  std::vector<std::string> copy = args;
  std::vector<char*> argv = exec_argv(copy);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    result.error = std::string("cannot create a pipe: ") + std::strerror(errno);
    return result;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  const bool stdout_captured = captured == Captured::Stdout;
  posix_spawn_file_actions_addopen(&actions, stdout_captured ? STDERR_FILENO : STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], stdout_captured ? STDOUT_FILENO : STDERR_FILENO);
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    result.error = args[0] + ": " + std::strerror(rc);
    return result;
  }
  result.started = true;
  std::string& out = result.output;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buffer, static_cast<size_t>(n));
    if (out.size() > 2 * 65536) out.erase(0, out.size() - 65536);   // only the end is kept
  }
  ::close(fds[0]);
  result.status = wait_for_child(pid);
  if (stdout_captured) return result;
  std::string err = out;
  while (!err.empty() && (err.back() == '\n' || err.back() == '\r')) err.pop_back();
  const size_t last = err.rfind('\n');
  result.error = last == std::string::npos ? err : err.substr(last + 1);
  if (result.error.size() > 300) result.error = result.error.substr(0, 300) + "...";
  return result;
}

std::string self_binary() {
  std::error_code error;
  const auto path = fs::read_symlink("/proc/self/exe", error);
  return error ? std::string("podsim") : path.string();
}

std::string find_script(const std::string& name) {
  const fs::path dir = fs::path(self_binary()).parent_path();
  for (const fs::path& candidate : {dir / "scripts" / name, dir / ".." / "share" / "podsim" / "scripts" / name}) {
    std::error_code error;
    if (fs::is_regular_file(candidate, error)) return fs::weakly_canonical(candidate, error).string();
  }
  return {};
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace podsim
