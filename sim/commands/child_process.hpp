#pragma once
// Child processes without a shell: an argument vector goes to posix_spawnp as it is, so no
// byte of a scenario's name, a path or an override is ever parsed as shell syntax.
#include <string>
#include <vector>

namespace podsim {

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
