#pragma once
// podsim.InputError: the CLI's located message for bad input (file, line, key, value, what was
// expected; sim/scenario/input_error.hpp) as a Python exception, a subclass of ValueError with
// the parts as attributes.
#include <pybind11/pybind11.h>

namespace podsim::python {

void register_input_error(pybind11::module_& m);

}  // namespace podsim::python
