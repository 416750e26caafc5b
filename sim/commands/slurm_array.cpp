#include "sim/commands/slurm_array.hpp"

#include <filesystem>

#include "sim/engine/child_process.hpp"
#include "sim/report/output_files.hpp"
#include "sim/scenario/input_error.hpp"

namespace podsim {

std::string write_slurm_array(const std::string& out_dir, const SlurmArray& array) {
  namespace fs = std::filesystem;
  const std::string out = fs::absolute(out_dir).string();
  std::string script = "#!/bin/bash\n";
  script += "# " + array.description + "\n";
  script += "# Submit:  sbatch " + shell_quote(out + "/" + array.file) + "\n";
  script += "# Then, when the array is done, " + array.collect_note + ":\n";
  script += "#   " + array.command + " --collect\n";
  // #SBATCH lines must come before the first command (comments may precede them).
  script += "#SBATCH --job-name=" + array.job_name + "\n";
  script += "#SBATCH --array=0-" + std::to_string(array.tasks - 1) + "\n";
  script += "#SBATCH --ntasks=1\n#SBATCH --cpus-per-task=1\n";
  script += "#SBATCH --output=" + out + "/slurm-%A_%a.out\n";
  script += "set -eu\n";
  script += "exec " + array.command + " " + array.task_option + " \"$SLURM_ARRAY_TASK_ID\"\n";
  ensure_directory(out_dir, "-o");
  OutputFiles files(out_dir, "-o");
  files.add(array.file, script);
  files.commit();
  const fs::path path = fs::path(out_dir) / array.file;
  fs::permissions(path, fs::perms::owner_exec | fs::perms::group_exec, fs::perm_options::add);
  return path.string();
}

void MissingTasks::add(int task) {
  if (++count_ <= 10) listed_ += (listed_.empty() ? "" : ", ") + std::to_string(task);
}

void MissingTasks::check(const std::string& out_dir, int total, const std::string& what,
                         const std::string& expected) const {
  if (count_ == 0) return;
  throw InputError({out_dir, 0, 0}, "--collect", out_dir,
                   std::to_string(count_) + " of " + std::to_string(total) + " tasks have no " + what + " (" + listed_ +
                       (count_ > 10 ? ", ..." : "") + "); expected " + expected + " (run the missing ones with --task N)");
}

}  // namespace podsim
