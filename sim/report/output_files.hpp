#pragma once
// Output files appear whole or not at all: each is written to a temporary file beside its
// destination and renamed into place only after every file of the run has been written.
// Temporaries a killed run left behind (".NAME.tmpPID" of a process that no longer exists)
// are removed when the same name is written again.
//
// A rename replaces whatever the name held, so it is used only where the destination is a
// regular file or nothing (a symbolic link is followed: its target is replaced, the link kept).
// A character device or a FIFO (`-o /dev/null`, `-o /dev/stdout`, a named pipe) is written
// through at commit, as a shell's `>` would; a directory, a block device or a socket is
// refused with an InputError naming the option that gave the path (exit status 2).
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace podsim {

class OutputFiles {
 public:
  // `option` names where the destination came from in messages ("-o", "--csv"); empty: "output".
  explicit OutputFiles(std::string directory, std::string option = "");
  ~OutputFiles();   // removes temporaries of an uncommitted set
  // Writes `contents` to a temporary file for `name`; throws std::runtime_error on I/O errors
  // (with the system's reason), InputError when `name`'s destination cannot be written at all.
  void add(const std::string& name, const std::string& contents);
  // A stream to a temporary for `name`, for outputs written as they are produced (a serving run's
  // per-request rows); flushed, checked and renamed with the others at commit.
  std::ostream& stream(const std::string& name);
  // Names a run of this kind may write (a family: summary.json, trace.json, trace.json.gz, ...).
  // At commit, those of them this set did not write are removed, when they are regular files:
  // a directory never holds a trace of one run beside the summary of another.
  void owns(std::vector<std::string> family);
  // Renames every temporary into place (or writes it through), then removes the family's others.
  void commit();
  std::string path(const std::string& name) const;

 private:
  struct Pending {
    std::string temporary;   // where the bytes are until commit
    std::string final_path;  // the name as given
    bool write_through = false;
  };
  std::string directory_;
  std::string option_;
  std::vector<std::string> family_;
  std::vector<Pending> pending_;
  std::vector<std::pair<std::string, std::unique_ptr<std::ofstream>>> streams_;   // temporary, open stream
  Pending prepare(const std::string& name);
};

// Creates the directory (and parents); throws InputError naming `option` ("-o") and the path
// when it is something else (a file, a device), std::runtime_error with the reason otherwise.
void ensure_directory(const std::string& directory, const std::string& option = "");

// Throws InputError naming `option` when `path` cannot be a file's destination at all (a
// directory, "DIR/", a block device): checked before a long computation whose result goes there.
void require_file_destination(const std::string& path, const std::string& option);

// Throws InputError naming `option` when `directory` is empty, is a file, or lies under one:
// checked before any work, which would otherwise meet it as a raw filesystem error mid-run (or,
// for a sweep, after its points were started).
void require_output_directory(const std::string& directory, const std::string& option);

// Where task `task` of a Slurm job array writes, under the array's directory: "tasks/00042"
// (`run --draws` and `plan` arrays).
std::string array_task_dir(int task);

// The reason of the last failed system call, as strerror(errno) gives it.
std::string system_reason();

}  // namespace podsim
