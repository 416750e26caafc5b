#pragma once
// podsim.run and podsim.Result: `podsim run` in-process (sim/commands/run_command), its files
// read back as Python values.
#include <pybind11/pybind11.h>

#include <string>

namespace podsim::python {

// What one run gives Python. The tables not produced by the workload are None (a serving run
// has requests and steps, the others operations).
struct RunResultObject {
  std::string name;
  std::string kind;
  pybind11::object summary;      // summary.json, parsed
  pybind11::object operations;   // operations.csv as records
  pybind11::object requests;     // requests.csv as records
  pybind11::object steps;        // steps.csv as records
  std::string table;             // what `podsim run` prints
  pybind11::object output_dir;   // the directory kept, or None
  pybind11::list files;          // the files written there (empty when nothing was kept)
};

void bind_run(pybind11::module_& m);

}  // namespace podsim::python
