#pragma once
// The `podsim` executable that sweep and compare run each point with (as `podsim sweep` does:
// a point per process, in parallel, resumable). Looked up, in order: the podsim_binary
// argument, $PODSIM_BINARY, then ../podsim beside this module's own file (the build puts the
// module in build/python/ and the executable in build/), so the module and the executable
// of one build go together without a path compiled in.
#include <string>

namespace podsim::python {

// Raises FileNotFoundError (through pybind11) when none of them is an executable file.
std::string cli_binary(const std::string& explicit_path);

}  // namespace podsim::python
