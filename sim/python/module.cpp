// The Python module `podsim` (`import podsim`): loading scenarios (from files or dicts, with
// overrides), running them, sweeps, comparisons, validation and planning, with results as
// Python values. Like the CLI (sim/commands/main.cpp) it is a client of sim/commands: each
// function calls the library function its command calls, so results are the CLI's.
#include <pybind11/pybind11.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "sim/python/compare.hpp"
#include "sim/python/input_error.hpp"
#include "sim/python/plan.hpp"
#include "sim/python/run.hpp"
#include "sim/python/scenario_object.hpp"
#include "sim/python/sweep.hpp"
#include "sim/python/validate.hpp"

namespace py = pybind11;

PYBIND11_MODULE(podsim, m) {
  m.doc() = R"(podsim: a discrete-event simulator of TPU-style accelerator pods.

    scenario = podsim.load("scenarios/v5e_8x4_allgather_y.yaml")
    result = podsim.run(scenario)              # result.summary, result.operations, result.table
    points = podsim.sweep("scenarios/inference_llama3_70b_decode_v5e_4x2.yaml",
                          {"workload.batch": [1, 8, 32]})

Functions: load, load_dict, run, sweep, compare, validate, plan. Bad input raises
podsim.InputError (a ValueError) with the command line's located message.)";
  m.attr("__version__") = PODSIM_VERSION;
  // As the CLI: warnings and errors on stderr (stdout is the caller's), unless the host
  // program has already set up a logger of this name.
  if (!spdlog::get("podsim")) {
    auto logger = spdlog::stderr_color_mt("podsim");
    logger->set_pattern("podsim: %l: %v");
    logger->set_level(spdlog::level::warn);
    spdlog::set_default_logger(logger);
  }
  podsim::python::register_input_error(m);
  podsim::python::bind_scenario(m);
  podsim::python::bind_run(m);
  podsim::python::bind_sweep(m);
  podsim::python::bind_compare(m);
  podsim::python::bind_validate(m);
  podsim::python::bind_plan(m);
}
