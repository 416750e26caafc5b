#pragma once
// Child processes without a shell: an argument vector goes to posix_spawnp as it is, so no
// byte of a scenario's name, a path or an override is ever parsed as shell syntax.
#include <string>
#include <vector>

namespace podsim {

struct ChildResult {
  bool started = false;      // false: the program could not be run (not found, not executable)
  int status = 0;            // waitpid's status once started
  std::string error;         // why it could not start, or its stderr's last line
  bool succeeded() const;
  std::string describe() const;   // "exit status 1: <last line>", "killed by signal 9", ...
};

// Runs argv (argv[0] searched on PATH when it has no '/'), its stdout to /dev/null and its
// stderr captured (the last line is kept for the message).
ChildResult run_child(const std::vector<std::string>& argv);

// A script shipped with podsim (scripts/NAME): beside the running binary (the build copies
// scripts/ there) or in ../share/podsim/scripts when installed. Empty when neither has it.
std::string find_script(const std::string& name);

// The running binary's path (/proc/self/exe).
std::string self_binary();

}  // namespace podsim
