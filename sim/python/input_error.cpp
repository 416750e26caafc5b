#include "sim/python/input_error.hpp"

#include "sim/scenario/input_error.hpp"

namespace py = pybind11;

namespace podsim::python {

namespace {

// Never released: the type must outlive every exception raised with it, and a static
// py::object would be destroyed after the interpreter is gone.
PyObject* input_error_type = nullptr;

}  // namespace

void register_input_error(py::module_& m) {
  auto* type = new py::exception<InputError>(m, "InputError", PyExc_ValueError);
  type->doc() =
      "Bad input, located as the command line reports it. str(error) is podsim's message, "
      "'<file>:<line>:<column>: key '<key>': value '<value>': <expected>'. Attributes: file, "
      "line and column (0 when unknown), key, value, expected.";
  input_error_type = type->ptr();
  // Translators run with the GIL held, after the call has taken it back.
  py::register_exception_translator([](std::exception_ptr raised) {
    try {
      if (raised) std::rethrow_exception(raised);
    } catch (const InputError& e) {
      py::object error = py::reinterpret_borrow<py::object>(input_error_type)(e.what());
      error.attr("file") = e.where().file;
      error.attr("line") = e.where().line;
      error.attr("column") = e.where().column;
      error.attr("key") = e.key();
      error.attr("value") = e.value();
      error.attr("expected") = e.expected();
      PyErr_SetObject(input_error_type, error.ptr());
    }
  });
}

}  // namespace podsim::python
