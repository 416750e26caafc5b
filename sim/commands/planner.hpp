#pragma once
// `podsim plan`: simulate the sensible parallelism plans for a training scenario's model,
// batch and pod, and rank them by step time, marking which fit in HBM. The command ties three
// pieces: the candidates (plan_candidates), their simulations (plan_schedule) and the ranking
// (plan_ranking).
#include <functional>
#include <string>
#include <vector>

#include "sim/commands/plan_candidates.hpp"
#include "sim/scenario/scenario.hpp"

namespace podsim {

struct PlannerResult {
  std::vector<PlanCandidate> candidates;   // feasible ones by step time (fitting ones first), then the rest
  double x_opt = 0;             // the book's FSDP degree for FSDP+TP: sqrt(B/F * M_X/M_Y * N)
  std::string x_opt_note;
};

// Candidates: every split of the mesh axes into data (DP or FSDP) and tensor axes, and a
// pipeline over each axis with the others as data parallelism. For an MoE model, each
// non-pipeline split also with expert parallelism over each whole data axis the experts divide.
// Each split is tried under each checkpointing policy (none, book, block) with the fewest
// microbatches (1, 2, 4, ...) whose memory fits, found from its layout before simulating
// anything; a split that fits under no policy is listed, not simulated. A split that swaps
// axes of the same size and wraparound with another simulates identically (the same program
// on an isomorphic mesh), so only the first is simulated. `on_progress`, when given, hears
// (0, N, -1) first, then (k, N, seconds left at the pace so far) as each simulation ends;
// `on_candidate`, when given, hears the ranking so far after each (plan -o rewrites plan.csv).
//
// Plans are simulated in order of their lower bound (chip 0's compute alone); once `keep`
// plans are simulated, a plan whose bound is at least the keep-th fastest step cannot enter
// the first `keep` and is listed as bounded, not simulated (keep = 0: simulate every plan).
// `budget_s` > 0: a plan whose simulation the preflight estimates above it is listed with the
// estimate, not simulated (thousands of microbatches through a pipeline take minutes).
// `jobs` simulations run at once (each in a child process, all driven from the calling
// thread); the result is the same for any `jobs`.
PlannerResult plan_training(const Scenario& scenario,
                            const std::function<void(int finished, int total, double eta_s)>& on_progress,
                            const std::function<void(const PlannerResult&)>& on_candidate = {}, int keep = 0,
                            double budget_s = 0, int jobs = 1);
// The candidates and the order their simulations run and commit in (simulation_order, with
// `budget_s` as there); `order` points into `all`, so the pair moves but is never copied.
struct PlannerCandidates {
  std::vector<PlanCandidate> all;
  std::vector<PlanCandidate*> order;
  PlannerCandidates() = default;
  PlannerCandidates(PlannerCandidates&&) = default;
  PlannerCandidates(const PlannerCandidates&) = delete;
  PlannerCandidates& operator=(const PlannerCandidates&) = delete;
};
PlannerCandidates planner_candidates(const Scenario& scenario, double budget_s);

// The ranking when the order's simulations ran elsewhere (a Slurm job array, plan_slurm.hpp):
// `outcome(i, c)` gives order[i] its report (`simulated`) or its error (`feasible` false). The
// same ranking plan_training makes with keep = 0 and no budget from the same outcomes.
PlannerResult plan_from_outcomes(const Scenario& scenario, PlannerCandidates& candidates,
                                 const std::function<void(size_t index, PlanCandidate& candidate)>& outcome);

// `top`: the first `top` rows only (0: all).
std::string planner_table(const Scenario& scenario, const PlannerResult& result, int top = 0);
std::string planner_csv(const PlannerResult& result);

// `podsim plan`'s checks, shared with the Python module: the scenario must be a training one,
// and a model that fits nowhere on the pod is bad input, not a ranking (InputError).
void require_training(const Scenario& scenario);
void require_some_plan_fits(const Scenario& scenario, const PlannerResult& result);

}  // namespace podsim
