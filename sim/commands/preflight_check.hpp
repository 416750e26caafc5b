#pragma once
// Refuses a run the machine cannot finish, before it starts: the preflight estimate
// (sim/engine/preflight.hpp) against limits of memory and wall time, with a located message
// naming the key that makes the run that large (InputError: exit 2).
#include "sim/engine/preflight.hpp"
#include "sim/scenario/scenario.hpp"

namespace podsim {

struct PreflightLimits {
  double max_memory_bytes = 0;   // <= 0: the machine's physical memory
  double max_wall_s = 0;         // <= 0: kDefaultMaxWallS
};

// A day: a run estimated beyond it is almost always a typo (a slice count, a microbatch count)
// rather than a plan; --max-time raises it.
constexpr double kDefaultMaxWallS = 24 * 3600.0;

// The machine's physical memory (sysconf), the default memory limit.
double physical_memory_bytes();

// Before any program is built: the ops it will hold, bounded from the scenario's counts (layers,
// microbatches, pipeline chunks), and the memory and time they alone take. A scenario whose
// program could not even be built within the limits (a million layers: std::bad_alloc before
// the preflight) is refused naming the key that makes it large (InputError: exit 2).
void check_program_size(const Scenario& scenario, const PreflightLimits& limits);

// Estimates the run and throws InputError when it exceeds a limit; returns the estimate.
SimulationEstimate preflight_check(const Scenario& scenario, const Program& program, Fidelity fidelity,
                                   const PreflightLimits& limits, ReplayEngine engine = ReplayEngine::Auto);

}  // namespace podsim
