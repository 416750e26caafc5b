#include "sim/python/cli_binary.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <pybind11/pybind11.h>

namespace py = pybind11;
namespace fs = std::filesystem;

namespace podsim::python {

namespace {

std::string module_file() {
  Dl_info info{};
  // Any function of this shared object names it.
  if (::dladdr(reinterpret_cast<void*>(&module_file), &info) == 0 || info.dli_fname == nullptr) return {};
  return info.dli_fname;
}

bool executable(const std::string& path) { return !path.empty() && fs::is_regular_file(path) && ::access(path.c_str(), X_OK) == 0; }

}  // namespace

std::string cli_binary(const std::string& explicit_path) {
  std::string tried;
  auto found = [&](const std::string& path, const char* from) {
    if (executable(path)) return true;
    tried += (tried.empty() ? "" : ", ") + path + " (" + from + ")";
    return false;
  };
  if (!explicit_path.empty()) {
    if (found(explicit_path, "podsim_binary")) return explicit_path;
  } else if (const char* env = std::getenv("PODSIM_BINARY"); env != nullptr && *env != '\0') {
    if (found(env, "$PODSIM_BINARY")) return env;
  } else {
    const std::string module = module_file();
    const std::string beside = module.empty() ? "" : (fs::path(module).parent_path().parent_path() / "podsim").string();
    if (found(beside, "beside the module")) return beside;
  }
  PyErr_SetString(PyExc_FileNotFoundError,
                  ("podsim: sweep and compare run each point with the podsim executable; none at " + tried +
                   ". Build it (cmake --build build) or name it with podsim_binary= or $PODSIM_BINARY")
                      .c_str());
  throw py::error_already_set();
}

}  // namespace podsim::python
