#pragma once
// podsim.sweep: `podsim sweep` (sim/commands/sweep) over a grid given as a dict, each point run
// by the podsim executable in parallel; the points come back with their parameters, status and
// summary.json.
#include <pybind11/pybind11.h>

namespace podsim::python {

void bind_sweep(pybind11::module_& m);

}  // namespace podsim::python
