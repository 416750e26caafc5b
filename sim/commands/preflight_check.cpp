#include "sim/commands/preflight_check.hpp"

#include <unistd.h>

#include <spdlog/spdlog.h>

#include "sim/commands/scenario_run.hpp"
#include "sim/report/report.hpp"
#include "sim/scenario/units.hpp"

namespace podsim {

double physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0.0;
}

namespace {

std::string count_text(double n) {
  char buf[32];
  std::snprintf(buf, sizeof buf, n < 1e6 ? "%.0f" : "%.3g", n);
  return buf;
}

// The key a user would change to make the run smaller, and its value: what drives the estimate.
struct Driver {
  std::string key;
  std::string value;
};

Driver driver(const Scenario& scenario, const Program& program, const SimulationEstimate& e) {
  const auto& c = estimate_coefficients();
  const bool spans_dominate = c.seconds_per_span * static_cast<double>(e.spans) > e.wall_s / 2 ||
                              c.bytes_per_span * static_cast<double>(e.spans) > e.memory_bytes / 2;
  if (scenario.workload_kind == WorkloadKind::Training && scenario.training.plan.microbatches > 1 && spans_dominate)
    return {"workload.microbatches", std::to_string(scenario.training.plan.microbatches)};
  if (scenario.workload_kind == WorkloadKind::Collectives && spans_dominate && program.size() > 1)
    return {"workload.operations", std::to_string(program.size()) + " operations"};
  if (e.heaviest_op >= 0) {
    const ProgramOp& op = program[e.heaviest_op];
    if (op.collective.over_dcn && scenario.topology.slices > 1)
      return {"topology.slices", std::to_string(scenario.topology.slices)};
    if (scenario.workload_kind == WorkloadKind::Collectives) {
      for (size_t i = 0; i < scenario.operations.size(); ++i)
        if (scenario.operations[i].name == op.name)
          return {"workload.operations[" + std::to_string(i) + "]", op.name};
    }
  }
  return {"topology.mesh", std::to_string(e.real_chips) + " chips"};
}

}  // namespace

SimulationEstimate preflight_check(const Scenario& scenario, const Program& program, Fidelity fidelity,
                                   const PreflightLimits& limits) {
  SimulationEstimate e;
  try {
    e = estimate_simulation(scenario.topology, simulation_settings(scenario), program, fidelity);
  } catch (const std::invalid_argument&) {
    return e;   // the run itself reports what it cannot plan
  }
  // trace.json: a span per op repetition per traced chip (report.hpp), built as one JSON
  // document: about 190 B and 2.5 us each (20,000 ops on a 16x16 traced whole: 967 MB, 13 s).
  long long repetitions = 0;
  for (const auto& op : program) repetitions += op.repeat;
  const int traced = e.real_chips <= kMaxTracedChips ? e.real_chips : e.simulated_chips;
  const double trace_events = static_cast<double>(repetitions) * traced;
  e.memory_bytes += 190 * trace_events;
  e.wall_s += 2.5e-6 * trace_events;
  const double max_memory = limits.max_memory_bytes > 0 ? limits.max_memory_bytes : physical_memory_bytes();
  const double max_wall = limits.max_wall_s > 0 ? limits.max_wall_s : kDefaultMaxWallS;
  const std::string what = count_text(static_cast<double>(e.messages)) + " messages and " +
                           count_text(static_cast<double>(e.spans)) + " op timings on " +
                           count_text(e.simulated_chips) + " simulated chips (of " + count_text(e.real_chips) + ")";
  spdlog::info("preflight: {}; about {} and {} of memory", what, human_time(e.wall_s), human_bytes(e.memory_bytes));
  const bool too_big = max_memory > 0 && e.memory_bytes > max_memory;
  const bool too_long = e.wall_s > max_wall;
  if (!too_big && !too_long) return e;
  const Driver d = driver(scenario, program, e);
  std::string expected = "the run would need about " + human_bytes(e.memory_bytes) + " of memory and " +
                         human_time(e.wall_s) + " of wall time (" + what + "), beyond ";
  expected += too_big ? "the " + human_bytes(max_memory) + " limit on memory (--max-memory)"
                      : "the " + human_time(max_wall) + " limit on wall time (--max-time)";
  expected += "; expected a smaller value, a symmetric setup the default fidelity can reduce, or a higher limit";
  throw InputError(scenario.location_of(d.key), d.key, d.value, expected);
}

}  // namespace podsim
