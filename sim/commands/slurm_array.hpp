#pragma once
// The Slurm job arrays podsim writes (`sweep`, `run --draws`, `plan` with `--emit slurm`): one
// script, OUT/<file>, whose task i runs the shared command with `<task_option> i`; the same
// command with `--collect` merges the tasks' outputs afterwards. Every piece of the command is
// shell-quoted by the caller; nothing here is built from user input otherwise.
#include <string>

namespace podsim {

struct SlurmArray {
  std::string file;          // "sweep.sbatch"
  std::string job_name;      // "podsim-sweep"
  std::string description;   // the script's first comment, e.g. "podsim sweep of 3 points as a Slurm job array."
  std::string collect_note;  // what --collect makes, e.g. "merge the rows into sweep.csv"
  int tasks = 0;
  std::string command;       // what every task and the collect step run (with -o)
  std::string task_option;   // "--point", "--task"
};

// Writes the script whole (executable) and returns its path.
std::string write_slurm_array(const std::string& out_dir, const SlurmArray& array);

// The tasks `--collect` found without a usable output, listed (the first ten) in its refusal.
class MissingTasks {
 public:
  void add(int task);
  // Throws InputError naming `out_dir` when any task was added: "<n> of <total> tasks have no
  // <what> (0, 1, ...); expected <expected> (run the missing ones with --task N)".
  void check(const std::string& out_dir, int total, const std::string& what, const std::string& expected) const;

 private:
  int count_ = 0;
  std::string listed_;
};

}  // namespace podsim
