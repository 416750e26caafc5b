#include "sim/commands/plan_schedule.hpp"

#include <algorithm>
#include <memory>
#include <spdlog/spdlog.h>
#include <stdexcept>
#include <string>

#include "sim/commands/scenario_run.hpp"
#include "sim/engine/child_process.hpp"
#include "sim/engine/preflight.hpp"
#include "sim/engine/run.hpp"

namespace podsim {
namespace {

// Up to `jobs` simulations run side by side, each in its own child process, started and waited
// on from this one thread (a fork from a threaded process copies locks other threads hold: the
// -j that forked from worker threads deadlocked a child under ASan). They start ahead of the
// order but are committed in it: whether a plan is bounded out is decided as one at a time
// would decide it, from the plans before it, so the output is the same for any `jobs` (a
// speculative simulation that turns out bounded is discarded). A plan is not started if the
// plans committed so far bound it already, which the commit then confirms (the fastest steps
// only improve down the order).
class Schedule {
 public:
  Schedule(const Scenario& scenario, const std::vector<PlanCandidate*>& order, int keep, int jobs,
           const std::function<void(PlanCandidate&, bool)>& commit)
      : scenario_(scenario),
        order_(order),
        // A slow chip (perturbations) changes a chip's compute: no bound then.
        bounding_(keep > 0 && scenario.topology.perturbations.empty()),
        keep_(keep),
        jobs_(std::max(1, jobs)),
        commit_(commit),
        outcomes_(order.size()),
        settings_(simulation_settings(scenario)) {}

  void run() {
    while (next_commit_ < order_.size()) {
      start_more();
      commit_done();
      if (!running_.empty()) collect_ready();
    }
  }

 private:
  struct Outcome {
    bool done = false, ok = false;
    TrainingReport report;
    std::string error;
  };
  struct Running {
    size_t index = 0;
    Program program;
    TrainingLayout layout;
    PendingRun pending;
    ~Running() { cancel_replay(pending.child); }   // only if never finished (an exception)
  };

  bool surely_bounded(const PlanCandidate& c) const {
    return bounding_ && static_cast<int>(fastest_.size()) >= keep_ && c.lower_bound_s >= fastest_[keep_ - 1];
  }

  // Starts simulations down the order until `jobs` run; a plan over the budget or already
  // bounded is done at once (the commit lists it).
  void start_more() {
    while (static_cast<int>(running_.size()) < jobs_ && next_start_ < order_.size()) {
      const size_t i = next_start_++;
      const PlanCandidate& c = *order_[i];
      if (c.over_budget || surely_bounded(c)) {
        outcomes_[i].done = true;
        continue;
      }
      spdlog::debug("simulating plan {}", c.label);
      auto r = std::make_unique<Running>();
      r->index = i;
      try {
        r->program = training_program(scenario_.training().model, c.plan, scenario_.topology, r->layout);
        r->pending = start_program(scenario_.topology, settings_, r->program, {});
        running_.push_back(std::move(r));
      } catch (const std::invalid_argument& e) {
        outcomes_[i].done = true;
        outcomes_[i].error = e.what();
      }
    }
  }

  // Commits the done plans at the head of the order, each as one at a time would.
  void commit_done() {
    while (next_commit_ < order_.size() && outcomes_[next_commit_].done) {
      PlanCandidate& c = *order_[next_commit_];
      Outcome& o = outcomes_[next_commit_];
      ++next_commit_;
      const bool listed = c.over_budget || surely_bounded(c);
      if (c.over_budget) {
        // listed with its estimate
      } else if (surely_bounded(c)) {
        // Every later plan's bound is at least this one's: none can enter the first `keep`.
        c.bounded = true;
      } else if (o.ok) {
        c.report = std::move(o.report);
        c.simulated = true;
        fastest_.insert(std::upper_bound(fastest_.begin(), fastest_.end(), c.report.step_time_s), c.report.step_time_s);
      } else {
        c.feasible = false;
        c.error = std::move(o.error);
      }
      o.report = TrainingReport{};   // committed: its memory is not kept twice
      commit_(c, listed);
    }
  }

  // Waits for any simulation's result (or its end), then reads every one that is ready.
  void collect_ready() {
    std::vector<int> results;
    for (const auto& r : running_) results.push_back(r->pending.child.result_fd);
    std::vector<bool> ready;
    do {
      ready = wait_readable(results);
    } while (std::find(ready.begin(), ready.end(), true) == ready.end());   // a signal interrupted it
    std::vector<std::unique_ptr<Running>> still;
    for (size_t k = 0; k < running_.size(); ++k) {
      if (!ready[k]) {
        still.push_back(std::move(running_[k]));
        continue;
      }
      Running& r = *running_[k];
      Outcome& o = outcomes_[r.index];
      const PlanCandidate& c = *order_[r.index];
      const TrainingWorkload& w = scenario_.training();
      try {
        const RunResult run = finish_program(r.pending);
        o.report = training_report({w.model, c.plan, false, w.token_budget}, r.layout, r.program, run);
        o.ok = true;
      } catch (const std::invalid_argument& e) {
        o.error = e.what();
      }
      o.done = true;
    }
    running_ = std::move(still);
  }

  const Scenario& scenario_;
  const std::vector<PlanCandidate*>& order_;
  const bool bounding_;
  const int keep_;
  const int jobs_;
  const std::function<void(PlanCandidate&, bool)>& commit_;
  std::vector<Outcome> outcomes_;
  std::vector<std::unique_ptr<Running>> running_;
  size_t next_start_ = 0, next_commit_ = 0;
  std::vector<double> fastest_;   // committed simulated steps, ascending
  const SimulationSettings settings_;
};

}  // namespace

double compute_lower_bound_s(const Program& program) {
  size_t positions = 1;
  for (const auto& op : program) positions = std::max(positions, op.present_at_position.size());
  std::vector<double> sum(positions, 0.0);
  for (const auto& op : program) {
    if (!op.is(ProgramOpKind::Compute)) continue;
    const ComputeWork& work = op.compute();
    double t = work.compute_s;
    for (double v : work.compute_s_by_position) t = std::min(t, v);
    for (size_t p = 0; p < positions; ++p)
      if (op.present_at_position.empty() || op.present_at_position.at(p)) sum[p] += t * op.repeat;
  }
  return *std::max_element(sum.begin(), sum.end());
}

// Lower bounds first (each program built, not simulated), then the simulations in their order,
// so the fastest plans are found early and the rest can be bounded out.
std::vector<PlanCandidate*> simulation_order(const Scenario& scenario, std::vector<PlanCandidate>& candidates,
                                             double budget_s) {
  std::vector<PlanCandidate*> order;
  for (auto& c : candidates) {
    if (!c.feasible || !c.report.fits_hbm) continue;
    try {
      TrainingLayout layout;
      const auto program = training_program(scenario.training().model, c.plan, scenario.topology, layout);
      c.lower_bound_s = compute_lower_bound_s(program);
      if (budget_s > 0) {
        c.estimated_wall_s =
            estimate_simulation(scenario.topology, simulation_settings(scenario), program, Fidelity::Auto).wall_s;
        c.over_budget = c.estimated_wall_s > budget_s;
      }
    } catch (const std::invalid_argument& e) {
      c.feasible = false;
      c.error = e.what();
      continue;
    }
    order.push_back(&c);
  }
  std::stable_sort(order.begin(), order.end(),
                   [](const PlanCandidate* a, const PlanCandidate* b) { return a->lower_bound_s < b->lower_bound_s; });
  return order;
}

void simulate_in_order(const Scenario& scenario, const std::vector<PlanCandidate*>& order, int keep, int jobs,
                       const std::function<void(PlanCandidate& candidate, bool listed)>& commit) {
  Schedule(scenario, order, keep, jobs, commit).run();
}

}  // namespace podsim
