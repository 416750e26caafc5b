#include "sim/python/validate.hpp"

#include "sim/commands/validate.hpp"
#include "sim/python/call_lock.hpp"
#include "sim/python/records.hpp"

namespace py = pybind11;

namespace podsim::python {

namespace {

py::dict validate(bool quick) {
  ValidationOptions options;
  options.quick = quick;
  ValidationResult result;
  {
    const py::gil_scoped_release release;
    const std::lock_guard<std::mutex> one_at_a_time(call_lock());
    result = run_validation(options);
  }
  int book = 0, explained = 0, unexplained = 0;
  for (const auto& r : result.rows) {
    (r.status == RowStatus::Book ? book : r.status == RowStatus::Explained ? explained : unexplained) += 1;
  }
  py::dict out;
  out["rows"] = csv_records(validation_csv(result.rows));
  py::list skipped;
  for (const auto& s : result.skipped) skipped.append(s);
  out["skipped"] = skipped;
  out["book"] = book;
  out["explained"] = explained;
  out["unexplained"] = unexplained;
  return out;
}

}  // namespace

void bind_validate(py::module_& m) {
  m.def("validate", &validate, py::kw_only(), py::arg("quick") = false,
        R"(Simulate collectives over a grid of axes, meshes and sizes against the book's formulas, as
`podsim validate` does. Returns {'rows': [...], 'skipped': [...], 'book': n, 'explained': n,
'unexplained': n}: rows as `podsim validate --csv` writes them (collective, axes, mesh,
wraparound, bytes, analytic_s, simulated_s, rel_error, predicted_s, predicted_error, method,
regime, status, note). The command fails when a row is unexplained; here, check the count.
quick: the smaller grid the test suite runs.)");
}

}  // namespace podsim::python
