#pragma once
// Running the podsim binary from tests, as a user would.
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

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

// Runs `podsim <args>` with stdout and stderr captured in files under a fresh temp dir.
inline CommandResult run_podsim(const std::string& args) {
  static int counter = 0;
  const auto dir = std::filesystem::temp_directory_path() / ("podsim-cli-" + std::to_string(::getpid()) + "-" +
                                                             std::to_string(counter++));
  std::filesystem::create_directories(dir);
  const std::string command = std::string(PODSIM_BINARY) + " " + args + " >" + (dir / "out").string() + " 2>" +
                              (dir / "err").string() + " </dev/null";
  const int status = std::system(command.c_str());
  CommandResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = read_file(dir / "out");
  result.err = read_file(dir / "err");
  std::filesystem::remove_all(dir);
  return result;
}

inline std::filesystem::path fresh_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("podsim-test-" + std::to_string(::getpid())) / name;
  std::filesystem::remove_all(dir);
  return dir;
}

inline std::string source_path(const std::string& relative) { return std::string(PODSIM_SOURCE_DIR) + "/" + relative; }

}  // namespace podsim_test
