// The planner's pieces on their own: how many candidates it enumerates (counted from the
// enumeration's rules), the ranking's order and ties, the book's X_opt, and the simulation
// order. The planner end to end is tests/test_planner.cpp.
#include <catch2/catch.hpp>

#include <cmath>
#include <set>

#include "sim/commands/plan_candidates.hpp"
#include "sim/commands/plan_ranking.hpp"
#include "sim/commands/plan_schedule.hpp"
#include "workloads/program_builder.hpp"
#include "planner_pods.hpp"

using namespace podsim;

namespace {

Scenario pod(const std::vector<MeshAxis>& axes) { return podsim_test::planner_pod("plan-pieces", axes); }

int count_with(const std::vector<PlanCandidate>& candidates, const std::string& text) {
  int n = 0;
  for (const auto& c : candidates) n += c.label.find(text) != std::string::npos;
  return n;
}

void check_labels_unique(const std::vector<PlanCandidate>& candidates) {
  std::set<std::string> labels;
  for (const auto& c : candidates) labels.insert(c.label);
  CHECK(labels.size() == candidates.size());
}

}  // namespace

TEST_CASE("axis splits on n unwrapped axes: 2^(n+1) - 1 data/tensor splits and n (2^(n+1) - 2) pipelines",
          "[planner]") {
  // Each of the 2^n assignments of axes to data or tensor, DP or FSDP where there is a data
  // axis (2^(n+1) - 1); per pipeline axis, the same over the other n - 1 axes (2^n - 1), each as
  // 1F1B and interleaved (x2). No wraparound: no blocks.
  const std::vector<std::vector<MeshAxis>> meshes = {
      {{"X", 4, false}}, {{"X", 4, false}, {"Y", 2, false}}, {{"X", 2, false}, {"Y", 2, false}, {"Z", 4, false}}};
  for (const auto& axes : meshes) {
    const int n = static_cast<int>(axes.size());
    INFO(n << " axes");
    const auto splits = axis_splits(pod(axes));
    const int plain = (1 << (n + 1)) - 1, pipelines = n * ((1 << (n + 1)) - 2);
    CHECK(static_cast<int>(splits.size()) == plain + pipelines);
    CHECK(count_with(splits, "PP(") == pipelines);
    CHECK(count_with(splits, "block") == 0);
    check_labels_unique(splits);
  }
}

TEST_CASE("axis splits: blocks of k on a wrapped axis where 2k divides it, 2x2 blocks where 4 divides both",
          "[planner]") {
  // 8x4, both wrapped: X has blocks of 2 and 4 (8 is no two blocks of 8), Y of 2; one pair for
  // a 2x2 block; each block layout as DP and as FSDP.
  const auto splits = axis_splits(pod({{"X", 8, true}, {"Y", 4, true}}));
  const int n = 2, plain = (1 << (n + 1)) - 1, pipelines = n * ((1 << (n + 1)) - 2);
  const int blocks = 2 * (2 + 1), pairs = 2 * 1;
  CHECK(static_cast<int>(splits.size()) == plain + pipelines + blocks + pairs);
  CHECK(count_with(splits, "X block of ") == 4);
  CHECK(count_with(splits, "Y block of ") == 2);
  CHECK(count_with(splits, "2x2 block") == 2);
  check_labels_unique(splits);
}

TEST_CASE("axis splits of an MoE model with dense layers: pipelines as without them, each split also with EP",
          "[planner][moe]") {
  // 8 experts on a 4x2 mesh (unwrapped): both axes divide them. Dense first layers change
  // nothing the search offers (their pipelines run with unequal stages: pipeline.cpp).
  Scenario s = pod({{"X", 4, false}, {"Y", 2, false}});
  s.training().model = *find_model_preset("mixtral-8x7b");
  s.training().model.layers = 4;
  s.training().model.moe->dense_layers = 0;
  REQUIRE(s.training().model.moe->experts == 8);
  std::vector<std::string> all_moe;
  for (const auto& c : axis_splits(s)) all_moe.push_back(c.label);
  s.training().model.moe->dense_layers = 1;
  const auto splits = axis_splits(s);
  std::vector<std::string> labels;
  for (const auto& c : splits) labels.push_back(c.label);
  CHECK(labels == all_moe);
  // Without pipelines, over the subsets D of the axes as data axes, a split (x2 for DP/FSDP
  // where D is not empty) and one more per axis of D: 1 + 2 * (2 * 2) + 1 * (2 * 3) = 15; the
  // pipelines: over each axis (2), the other as DP, FSDP or TP, 1F1B or interleaved (6), EP
  // over the data axis of the 4 with one: 2 x (6 + 4) = 20.
  CHECK(splits.size() == 15 + 20);
  CHECK(count_with(splits, "PP(") == 20);
  CHECK(count_with(splits, "EP(") == 8 + 8);
  for (const auto& c : splits) CHECK(c.plan.expert_axes.size() == (c.label.find("EP(") != std::string::npos ? 1u : 0u));
  check_labels_unique(splits);
}

TEST_CASE("mirrors: splits swapping axes of one size and wraparound count on the first, none under perturbations",
          "[planner]") {
  Scenario s = pod({{"X", 4, true}, {"Y", 4, true}});
  const auto all = with_memory_search(s, axis_splits(s));
  const auto unique = without_mirrors(s.topology, all);
  int mirrors = 0;
  for (const auto& c : unique) mirrors += c.mirrors;
  CHECK(unique.size() + mirrors == all.size());
  CHECK(mirrors > 0);
  // DP(X) + TP(Y) and DP(Y) + TP(X) are one class.
  TrainingPlan a = s.training().plan, b = a;
  a.data_axes = {0};
  a.tensor_axes = {1};
  b.data_axes = {1};
  b.tensor_axes = {0};
  CHECK(symmetry_key(s.topology, a) == symmetry_key(s.topology, b));
  s.topology.axes[1].size = 8;   // no longer the same size
  CHECK(symmetry_key(s.topology, a) != symmetry_key(s.topology, b));
  s.topology.axes[1].size = 4;
  s.topology.perturbations.push_back({});
  CHECK(without_mirrors(s.topology, all).size() == all.size());
}

TEST_CASE("ranking: feasible, fitting, simulated by step, the rest by bound, ties in their order", "[planner]") {
  auto candidate = [](const std::string& label, bool feasible, bool fits, bool simulated, double step_s, double bound_s) {
    PlanCandidate c;
    c.label = label;
    c.feasible = feasible;
    c.report.fits_hbm = fits;
    c.simulated = simulated;
    c.report.step_time_s = step_s;
    c.lower_bound_s = bound_s;
    return c;
  };
  std::vector<PlanCandidate> candidates = {
      candidate("impossible", false, true, false, 0, 0),  candidate("bounded 3 first", true, true, false, 0, 3),
      candidate("step 2", true, true, true, 2, 0.1),      candidate("step 1 first", true, true, true, 1, 0.9),
      candidate("too large", true, false, false, 0, 0),   candidate("step 1 second", true, true, true, 1, 0.2),
      candidate("bounded 3 second", true, true, false, 0, 3), candidate("bounded 0.5", true, true, false, 0, 0.5)};
  rank(candidates);
  std::vector<std::string> order;
  for (const auto& c : candidates) order.push_back(c.label);
  // Equal steps (and equal bounds) stay in the order they were committed in, whatever their bounds.
  CHECK(order == std::vector<std::string>{"step 1 first", "step 1 second", "step 2", "bounded 0.5", "bounded 3 first",
                                          "bounded 3 second", "too large", "impossible"});
}

TEST_CASE("the book's X_opt: sqrt(B/F * M_X/M_Y * N), M_X = 2 on a 3D mesh", "[planner]") {
  // The book's LLaMA-2 13B case (README): B = 3145728 tokens, F = 13824, 16x16x16 = 4096 chips.
  Scenario s = pod({{"X", 16, true}, {"Y", 16, true}, {"Z", 16, true}});
  s.training().model = *find_model_preset("llama2-13b");
  s.training().plan.global_batch_tokens = 3145728;
  const BookFsdpDegree book = book_fsdp_degree(s);
  CHECK(book.x_opt == Approx(std::sqrt(3145728.0 / 13824 * 2 * 4096)));
  CHECK(std::lround(book.x_opt) == 1365);
  CHECK(book.note == "sqrt(B/F * M_X/M_Y * N) with B = 3145728, F = 13824, M_X/M_Y = 2, N = 4096");
  // Two axes: M_X = 1; slices multiply N.
  Scenario flat = pod({{"X", 4, true}, {"Y", 4, true}});
  flat.topology.slices = 2;
  const double b = flat.training().plan.global_batch_tokens, f = flat.training().model.d_ff;
  CHECK(book_fsdp_degree(flat).x_opt == Approx(std::sqrt(b / f * 1 * 32)));
}

TEST_CASE("simulation order: the fitting plans by lower bound (compute alone), ties in their order", "[planner]") {
  const Scenario s = pod({{"X", 4, true}, {"Y", 4, true}});
  std::vector<PlanCandidate> candidates = with_memory_search(s, axis_splits(s));
  size_t fitting = 0;
  for (const auto& c : candidates) fitting += c.feasible && c.report.fits_hbm;
  const std::vector<PlanCandidate*> order = simulation_order(s, candidates, 0);
  CHECK(order.size() == fitting);   // every fitting plan of this pod builds
  for (size_t i = 0; i < order.size(); ++i) {
    CHECK(order[i]->lower_bound_s > 0);
    CHECK(order[i]->estimated_wall_s == 0);   // no budget: no estimate
    if (i == 0) continue;
    CHECK(order[i - 1]->lower_bound_s <= order[i]->lower_bound_s);
    if (order[i - 1]->lower_bound_s == order[i]->lower_bound_s) CHECK(order[i - 1] < order[i]);   // their order in `candidates`
  }
}

TEST_CASE("compute lower bound: the busiest pipeline position's compute, an op absent elsewhere counted where it runs",
          "[planner]") {
  ProgramBuilder b;
  b.compute("everywhere", 1.0, 0, {}, 0, OpRole::Forward);
  const int first = b.compute("first stage", 3.0, 0, {}, 0, OpRole::Forward);
  const int rest = b.compute("other stages", 2.0, 0, {}, 0, OpRole::Forward);
  const int experts = b.compute("experts", 5.0, 0, {}, 0, OpRole::Experts);
  b.op(first).position_axis = b.op(rest).position_axis = 0;
  b.op(first).present_at_position = {1, 0, 0, 0};
  b.op(rest).present_at_position = {0, 1, 1, 1};
  b.op(experts).compute().vary_axes = {1};
  b.op(experts).compute().compute_s_by_position = {5.0, 4.0};   // the shortest counts: 4
  b.op(experts).repeat = 2;
  // Position 0: 1 + 3 + 2 x 4 = 12; the others 1 + 2 + 8 = 11.
  CHECK(compute_lower_bound_s(b.take()) == 12.0);
}
