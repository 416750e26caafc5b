#pragma once
// podsim.plan: `podsim plan` (sim/commands/planner), parallelism plans for a training scenario
// ranked by simulated step time.
#include <pybind11/pybind11.h>

namespace podsim::python {

void bind_plan(pybind11::module_& m);

}  // namespace podsim::python
