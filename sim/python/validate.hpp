#pragma once
// podsim.validate: `podsim validate` (sim/commands/validate), simulated collectives against the
// book's formulas, rows as validate's CSV has them.
#include <pybind11/pybind11.h>

namespace podsim::python {

void bind_validate(pybind11::module_& m);

}  // namespace podsim::python
