#pragma once
// Where tests write files: one directory per test process, /tmp/podsim-test-<pid>, removed when
// the process exits. ctest runs every test case as its own process, and each left its traces,
// plots and sweeps behind (about 335 MB); 5,000 runs filled the disk CI builds on.
// PODSIM_KEEP_TEST_DIRS=1 keeps them, to look at a failing test's files.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace podsim_test {

inline const std::filesystem::path& scratch_root() {
  struct Root {
    std::filesystem::path path;
    pid_t owner;
    ~Root() {
      // A forked simulation child leaves with _exit, but a child that did return through exit()
      // must not delete its parent's files.
      const char* keep = std::getenv("PODSIM_KEEP_TEST_DIRS");
      if (::getpid() != owner || (keep != nullptr && std::string(keep) == "1")) return;
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  };
  static const Root root{std::filesystem::temp_directory_path() / ("podsim-test-" + std::to_string(::getpid())),
                         ::getpid()};
  return root.path;
}

// An empty (not yet created) directory `name` under the process's scratch root.
inline std::filesystem::path fresh_dir(const std::string& name) {
  const auto dir = scratch_root() / name;
  std::filesystem::remove_all(dir);
  return dir;
}

// fresh_dir, created.
inline std::filesystem::path made_dir(const std::string& name) {
  const auto dir = fresh_dir(name);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace podsim_test
