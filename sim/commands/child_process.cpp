#include "sim/commands/child_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

extern char** environ;

namespace podsim {

namespace fs = std::filesystem;

bool ChildResult::succeeded() const { return started && WIFEXITED(status) && WEXITSTATUS(status) == 0; }

std::string ChildResult::describe() const {
  if (!started) return error;
  std::string what = WIFSIGNALED(status) ? std::string("killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
                                               strsignal(WTERMSIG(status)) + ")"
                                         : "exit status " + std::to_string(WEXITSTATUS(status));
  return error.empty() ? what : what + ": " + error;
}

ChildResult run_child(const std::vector<std::string>& args, Captured captured) {
  ChildResult result;
  std::vector<char*> argv;
  std::vector<std::string> copy = args;
  for (auto& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
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
  while (::waitpid(pid, &result.status, 0) < 0 && errno == EINTR) {
  }
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
