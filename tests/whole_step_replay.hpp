#pragma once
// A whole inference step replayed on SimGrid: the reference the serving step-cost tests
// (test_serving_costs.cpp, test_serving_whole_steps.cpp) compare their prices with.
#include <cmath>

#include "sim/engine/run.hpp"
#include "sim/engine/serving_costs.hpp"

namespace podsim_test {

// SimGrid's timing precision (surf/precision: events closer than that are merged) can move each
// collective's end by up to that much; otherwise replays of one schedule agree to float rounding.
constexpr double kExact = 1e-9;
constexpr double kSimGridPrecision_s = 1e-9;

struct Replayed {
  double time_s = 0;
  int collectives = 0;
};

inline Replayed whole_step(const podsim::TransformerSpec& model, const podsim::ServerRole& role,
                           const podsim::StepShape& shape) {
  const podsim::Program program = podsim::inference_step_program(model, role.plan, role.topology, shape);
  Replayed r;
  r.time_s = podsim::run_program(role.topology, {}, program, {}).total_time_s;
  for (const auto& op : program) r.collectives += op.is(podsim::ProgramOpKind::Collective);
  return r;
}

inline double relative(double a, double b) { return std::fabs(a - b) / std::fabs(b); }

}  // namespace podsim_test
