#pragma once
// Where a call's files go: the output_dir the caller named (kept, as `podsim run -o DIR`), or a
// fresh temporary directory (under $TMPDIR) removed when the call has read what it returns.
// The Python API runs the CLI's own code, which writes files; reading them back is what makes
// its results the CLI's by construction.
#include <string>

#include <pybind11/pybind11.h>

namespace podsim::python {

// A Python path argument (str, pathlib.Path, any os.PathLike) as text; None is "" (not given).
std::string optional_path(const pybind11::object& path);

class WorkDir {
 public:
  explicit WorkDir(const std::string& output_dir);   // empty: a temporary directory
  ~WorkDir();
  WorkDir(const WorkDir&) = delete;
  WorkDir& operator=(const WorkDir&) = delete;
  const std::string& path() const { return path_; }
  bool temporary() const { return temporary_; }

 private:
  std::string path_;
  bool temporary_ = false;
};

}  // namespace podsim::python
