#pragma once
// The planner's candidates (`podsim plan`): the splits of the mesh axes it searches, each under
// the checkpointing policies and microbatch counts whose memory fits, and the mirror images a
// symmetric mesh makes of one another.
#include <string>
#include <vector>

#include "sim/report/training_report.hpp"
#include "sim/scenario/scenario.hpp"

namespace podsim {

struct PlanCandidate {
  std::string label;            // e.g. "FSDP(X,Y) + TP(Z), 4 mb, book remat"
  TrainingPlan plan;
  bool feasible = true;         // false: the plan cannot be built (the reason in `error`)
  std::string error;
  bool simulated = false;       // false: pruned before simulating (does not fit HBM: `report.memory` only)
  int mirrors = 0;              // plans symmetry makes identical to this one (not simulated again)
  // Chip 0's compute alone: a lower bound on the step, since a chip's compute ops run one
  // after another (each waits for the one before it in every training program). A plan whose
  // bound is no better than the K-th fastest simulated step is not simulated (`bounded`).
  double lower_bound_s = 0;
  bool bounded = false;
  // The preflight's estimate of its simulation's wall time; a plan over the planner's budget is
  // listed, not simulated (`over_budget`), unless the planner is exhaustive.
  double estimated_wall_s = 0;
  bool over_budget = false;
  TrainingReport report;
};

// Every split of a training scenario's mesh axes the planner searches, before the memory search:
// each assignment of the axes to data (DP or FSDP) and tensor parallelism; tensor parallelism
// over blocks of 2, 4 or 8 neighbours of a wrapped axis, and over 2x2 blocks of two wrapped
// axes; a pipeline over each axis (1F1B and interleaved x2) with the other axes split into data
// and tensor axes, unless an MoE model has dense layers; for an MoE model, each split also with
// expert parallelism over each whole data axis the experts divide. The scenario's own plan is
// the base of each (its batch, dtypes, efficiencies) with every field the planner searches at
// its default (planner_base, plan_inputs.hpp).
std::vector<PlanCandidate> axis_splits(const Scenario& scenario);

// Each split under each checkpointing policy (none, book, block) with the fewest microbatches
// (its own, doubling) whose memory fits, trying ZeRO-1 and ZeRO-2 for plain data parallelism at
// each count; a split that fits under no policy is kept once, not to be simulated, with its
// leanest memory (or its error, when no plan of it can be built).
std::vector<PlanCandidate> with_memory_search(const Scenario& scenario, std::vector<PlanCandidate> splits);

// A plan's class under the mesh's symmetries: axes of the same size and wraparound swapped
// (and, across slices, of the same extent in a host's block, since hosts share a NIC).
std::string symmetry_key(const TopologySpec& topology, const TrainingPlan& plan);

// The candidates with each fitting plan's mirror images counted on the first of its symmetry
// class (`mirrors`) instead of listed; all of them where the mesh's axes cannot be swapped
// (perturbations or named axis splits).
std::vector<PlanCandidate> without_mirrors(const TopologySpec& topology, std::vector<PlanCandidate> candidates);

}  // namespace podsim
