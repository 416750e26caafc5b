#include "sim/python/work_dir.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include "sim/python/scenario_object.hpp"
#include "sim/report/output_files.hpp"

namespace fs = std::filesystem;

namespace podsim::python {

WorkDir::WorkDir(const std::string& output_dir) {
  if (!output_dir.empty()) {
    ensure_directory(output_dir);
    path_ = output_dir;
    return;
  }
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = (fs::path(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") / "podsim-XXXXXX").string();
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  if (::mkdtemp(name.data()) == nullptr)
    throw std::runtime_error("cannot create a temporary directory " + pattern + ": " + std::strerror(errno));
  path_ = name.data();
  temporary_ = true;
}

WorkDir::~WorkDir() {
  if (!temporary_) return;
  std::error_code ignored;   // a destructor must not throw; a leftover in $TMPDIR is harmless
  fs::remove_all(path_, ignored);
}

std::string optional_path(const pybind11::object& path) {
  return path.is_none() ? std::string()
                        : utf8_text(pybind11::module_::import("os").attr("fspath")(path), "output_dir");
}

}  // namespace podsim::python
