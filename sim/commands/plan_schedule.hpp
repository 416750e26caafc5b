#pragma once
// The planner's simulations (`podsim plan`): which candidates are simulated, in which order,
// and how several run side by side, each in a child process, started and waited on from the
// calling thread.
#include <functional>
#include <vector>

#include "sim/commands/plan_candidates.hpp"
#include "workloads/program.hpp"

namespace podsim {

// A lower bound on the step from compute alone: a chip's compute ops run one after another, so
// the step lasts at least the compute of the busiest position along the ops' position axis
// (pipeline stages: an op present at some positions only counts there), an op whose time
// varies by expert position counting its shortest.
double compute_lower_bound_s(const Program& program);

// The candidates that fit HBM, each with its program's lower bound (and with `budget_s` > 0,
// the preflight's estimate of its simulation's wall time, `over_budget` above it), ascending by
// bound, ties in their order: the order they are simulated and committed in. A plan whose
// program cannot be built is marked infeasible and left out.
std::vector<PlanCandidate*> simulation_order(const Scenario& scenario, std::vector<PlanCandidate>& candidates,
                                             double budget_s);

// Simulates the candidates of `order` and commits each, in the order, to `commit` with `listed`
// true when it was not simulated (over the budget, or bounded: with keep > 0, once `keep` plans
// are simulated, a plan whose bound is at least the keep-th fastest step cannot enter the first
// `keep`). A committed candidate holds its report (`simulated`) or its error (`feasible`
// false); `commit` may move it. Up to `jobs` simulations run at once; whether a plan is bounded
// is decided from the plans committed before it, so the commits are the same for any `jobs`.
void simulate_in_order(const Scenario& scenario, const std::vector<PlanCandidate*>& order, int keep, int jobs,
                       const std::function<void(PlanCandidate& candidate, bool listed)>& commit);

}  // namespace podsim
