#pragma once
// podsim.compare: `podsim compare` (sim/commands/compare): one workload on several mesh shapes
// and chips, each a point run by the podsim executable; the rows of compare.csv come back.
#include <pybind11/pybind11.h>

namespace podsim::python {

void bind_compare(pybind11::module_& m);

}  // namespace podsim::python
