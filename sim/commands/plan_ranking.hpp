#pragma once
// The planner's ranking (`podsim plan`): the order its table and plan.csv list candidates in,
// and the book's FSDP degree printed beside the winner.
#include <string>
#include <vector>

#include "sim/commands/plan_candidates.hpp"

namespace podsim {

// Feasible plans first, then those that fit HBM, then the simulated ones by step time, then
// the plans not simulated (bounded or over the budget) by their lower bound; ties keep their
// order (a stable sort: the commit order, so the same for any -j).
void rank(std::vector<PlanCandidate>& candidates);

// training.md, FSDP + TP: X_opt = sqrt(B/F * M_X/M_Y * N), with M_X = 2, M_Y = 1 on a 3D mesh
// (two axes of FSDP, one of TP), as the book takes them (book-cases.md row 46); M_X = 1 on
// fewer axes. N counts every chip of every slice.
struct BookFsdpDegree {
  double x_opt = 0;
  std::string note;   // the formula with its values, as the table prints it
};
BookFsdpDegree book_fsdp_degree(const Scenario& scenario);

}  // namespace podsim
