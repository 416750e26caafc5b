#pragma once
// A run whose plan does not fit HBM (issue 42): an error by default (`podsim run` exits 1), its
// message the per-chip breakdown against HBM less the chip's headroom and what would make it
// fit; --allow-oom (RunCommandOptions::allow_oom) or workload.strict_memory: false simulates it
// anyway, reported as fits_hbm: false.
#include <stdexcept>
#include <string>

#include "sim/scenario/scenario.hpp"
#include "workloads/inference.hpp"
#include "workloads/training.hpp"

namespace podsim {

// Not bad input (exit status 2) but a plan the machine cannot hold: main() exits 1.
class DoesNotFitHbm : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throw DoesNotFitHbm when the plan does not fit and neither allow_oom nor
// workload.strict_memory: false lets it run.
void check_training_fits(const Scenario& scenario, const TrainingLayout& layout, bool allow_oom);
void check_inference_fits(const Scenario& scenario, const InferenceLayout& layout, bool allow_oom);

// The messages those throw (for a plan that does not fit).
std::string training_does_not_fit(const Scenario& scenario, const TrainingLayout& layout);
std::string inference_does_not_fit(const Scenario& scenario, const InferenceLayout& layout);

}  // namespace podsim
