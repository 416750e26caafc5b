#pragma once
// Running the podsim binary from tests, as a user would.
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "scratch.hpp"

namespace podsim_test {

struct CommandResult {
  int exit_code = -1;
  std::string out;   // stdout
  std::string err;   // stderr
};

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Under AddressSanitizer (the sanitizer job), each simulation child prints one warning when
// SimGrid, which is not instrumented, throws on an actor stack it allocated itself
// (`__cxa_throw` is intercepted; ASan cannot unpoison a stack it does not know, and says so
// once per process). It is about SimGrid's stacks, not podsim, and no report ever followed it;
// tests that read stderr see podsim's output without it.
inline std::string without_asan_stack_warning(std::string err) {
  const std::string first = "WARNING: ASan is ignoring requested __asan_handle_no_return";
  const std::string last = "https://github.com/google/sanitizers/issues/189\n";
  for (size_t at = err.find(first); at != std::string::npos; at = err.find(first)) {
    const size_t line = err.rfind('\n', at);   // the line starts "==<pid>==WARNING"
    const size_t begin = line == std::string::npos ? 0 : line + 1;
    const size_t end = err.find(last, at);
    if (end == std::string::npos) break;
    err.erase(begin, end + last.size() - begin);
  }
  return err;
}

// Runs `podsim <args>` with stdout and stderr captured in files under a fresh temp dir.
inline CommandResult run_podsim(const std::string& args) {
  static int counter = 0;
  const auto dir = made_dir("cli-" + std::to_string(counter++));
  const std::string command = std::string(PODSIM_BINARY) + " " + args + " >" + (dir / "out").string() + " 2>" +
                              (dir / "err").string() + " </dev/null";
  const int status = std::system(command.c_str());
  CommandResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = read_file(dir / "out");
  result.err = without_asan_stack_warning(read_file(dir / "err"));
  std::filesystem::remove_all(dir);
  return result;
}

inline std::string source_path(const std::string& relative) { return std::string(PODSIM_SOURCE_DIR) + "/" + relative; }

}  // namespace podsim_test
