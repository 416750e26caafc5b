#include "sim/python/interrupt.hpp"

#include <pybind11/pybind11.h>

namespace py = pybind11;

namespace podsim::python {

bool stop_on_interrupt() {
  const py::gil_scoped_acquire gil;
  return PyErr_CheckSignals() != 0;   // only the main thread runs handlers; elsewhere 0: wait on
}

void raise_if_interrupted() {
  if (PyErr_Occurred()) throw py::error_already_set();
}

}  // namespace podsim::python
