#include "sim/commands/planner.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>

#include "sim/commands/plan_inputs.hpp"
#include "sim/commands/plan_ranking.hpp"
#include "sim/commands/plan_schedule.hpp"
#include "sim/commands/preflight_check.hpp"
#include "sim/scenario/units.hpp"

namespace podsim {

PlannerCandidates planner_candidates(const Scenario& scenario, double budget_s) {
  // A model too long to build even one program of is refused before any candidate is made (at
  // the searches' start: one microbatch, no pipeline).
  Scenario base = scenario;
  base.training().plan = planner_base(scenario.training().plan);
  check_program_size(base, {});
  PlannerCandidates out;
  out.all = without_mirrors(scenario.topology, with_memory_search(scenario, axis_splits(scenario)));
  out.order = simulation_order(scenario, out.all, budget_s);
  return out;
}

namespace {

// The plans never simulated (too large for HBM, or not buildable) are listed first; the
// ranking puts them last.
PlannerResult unsimulated(PlannerCandidates& candidates) {
  PlannerResult result;
  for (auto& c : candidates.all) {
    if (!c.feasible || !c.report.fits_hbm) result.candidates.push_back(std::move(c));
  }
  return result;
}

void rank_and_compare(const Scenario& scenario, PlannerResult& result) {
  rank(result.candidates);
  const BookFsdpDegree book = book_fsdp_degree(scenario);
  result.x_opt = book.x_opt;
  result.x_opt_note = book.note;
}

}  // namespace

PlannerResult plan_from_outcomes(const Scenario& scenario, PlannerCandidates& candidates,
                                 const std::function<void(size_t index, PlanCandidate& candidate)>& outcome) {
  PlannerResult result = unsimulated(candidates);
  for (size_t i = 0; i < candidates.order.size(); ++i) {
    PlanCandidate& c = *candidates.order[i];
    outcome(i, c);
    result.candidates.push_back(std::move(c));
  }
  rank_and_compare(scenario, result);
  return result;
}

PlannerResult plan_training(const Scenario& scenario,
                            const std::function<void(int finished, int total, double eta_s)>& on_progress,
                            const std::function<void(const PlannerResult&)>& on_candidate, int keep,
                            double budget_s, int jobs) {
  PlannerCandidates candidates = planner_candidates(scenario, budget_s);
  const std::vector<PlanCandidate*>& order = candidates.order;
  PlannerResult result = unsimulated(candidates);
  const int total = static_cast<int>(order.size());
  const auto start = std::chrono::steady_clock::now();
  if (on_progress) on_progress(0, total, -1);
  int finished = 0;
  simulate_in_order(scenario, order, keep, jobs, [&](PlanCandidate& c, bool listed) {
    result.candidates.push_back(std::move(c));
    ++finished;
    if (on_progress) {
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      on_progress(finished, total, listed ? 0 : elapsed / finished * (total - finished));
    }
    if (on_candidate && !listed) {
      PlannerResult so_far = result;
      rank(so_far.candidates);
      on_candidate(so_far);
    }
  });
  rank_and_compare(scenario, result);
  return result;
}

std::string planner_table(const Scenario& scenario, const PlannerResult& result, int top) {
  std::string out;
  char line[768];
  int simulated = 0, mirrors = 0, pruned = 0, bounded = 0, over = 0;
  for (const auto& c : result.candidates) {
    simulated += c.simulated;
    mirrors += c.mirrors;
    pruned += c.feasible && !c.simulated && !c.bounded && !c.over_budget;
    bounded += c.bounded;
    over += c.over_budget;
  }
  std::snprintf(line, sizeof line,
                "%s on %s: %d plans simulated (%d more by symmetry, %d pruned as too large for HBM, %d bounded out: "
                "their compute alone is slower than the fastest simulated, %d over the planner's simulation "
                "budget), fastest first\n",
                scenario.training().model.name.c_str(), scenario.name.c_str(), simulated, mirrors, pruned, bounded, over);
  out += line;
  std::snprintf(line, sizeof line, "%-4s %-58s %11s %7s %12s %11s %11s %s\n", "rank", "plan", "step", "MFU",
                "tokens/s/chip", "exposed", "memory", "fits");
  out += line;
  int rank = 0;
  for (const auto& c : result.candidates) {
    if (top > 0 && rank >= top) break;
    ++rank;
    const std::string label = c.label + (c.mirrors > 0 ? " (+" + std::to_string(c.mirrors) + " mirror)" : "");
    if (!c.feasible) {
      std::snprintf(line, sizeof line, "%-4d %-58s impossible: %s\n", rank, label.c_str(), c.error.c_str());
    } else if (c.over_budget) {
      std::snprintf(line, sizeof line, "%-4d %-58s >= %8s (not simulated: about %s to simulate)\n", rank, label.c_str(),
                    human_time(c.lower_bound_s).c_str(), human_time(c.estimated_wall_s).c_str());
    } else if (c.bounded) {
      std::snprintf(line, sizeof line, "%-4d %-58s >= %8s (compute alone; not simulated)\n", rank, label.c_str(),
                    human_time(c.lower_bound_s).c_str());
    } else if (!c.simulated) {
      std::snprintf(line, sizeof line, "%-4d %-58s %11s %7s %12s %11s %11s NO (not simulated)\n", rank, label.c_str(),
                    "-", "-", "-", "-", human_bytes(c.report.memory.total_bytes).c_str());
    } else {
      std::snprintf(line, sizeof line, "%-4d %-58s %11s %6.1f%% %12.0f %11s %11s %s\n", rank, label.c_str(),
                    human_time(c.report.step_time_s).c_str(), 100 * c.report.mfu, c.report.tokens_per_s_per_chip,
                    human_time(c.report.exposed_comm_s).c_str(), human_bytes(c.report.memory.total_bytes).c_str(),
                    c.report.fits_hbm ? "yes" : "NO");
    }
    out += line;
  }
  const ChipSpec& chip = scenario.topology.chip;
  out += "memory: per chip, fits against " + human_hbm(chip.hbm_bytes, chip.hbm_headroom) +
         " (the headroom kept for XLA's temporaries and fragmentation: hardware.overrides.hbm_headroom)\n";
  if (top > 0 && static_cast<int>(result.candidates.size()) > top) {
    std::snprintf(line, sizeof line, "... %zu more (plan.csv with -o lists them all)\n", result.candidates.size() - top);
    out += line;
  }
  std::snprintf(line, sizeof line, "book's optimal FSDP degree X_opt = %.0f (%s)\n", result.x_opt, result.x_opt_note.c_str());
  out += line;
  if (!result.candidates.empty() && result.candidates[0].simulated) {
    const auto& best = result.candidates[0];
    auto degree = [&](const std::vector<int>& axes, const std::vector<AxisSlice>& slices) {
      int d = 1;
      for (size_t i = 0; i < axes.size(); ++i) {
        d *= !slices.empty() && slices[i].size != 0 ? slices[i].size : scenario.topology.axes[axes[i]].size;
      }
      return d;
    };
    const int data = degree(best.plan.data_axes, best.plan.data_slices);
    const int tensor = degree(best.plan.tensor_axes, best.plan.tensor_slices);
    std::snprintf(line, sizeof line, "simulated winner: %s (data degree %d, tensor degree %d)\n", best.label.c_str(), data,
                  tensor);
    out += line;
    if (best.report.steps_to_train > 0) {
      out += "its run: " + time_to_train_text(best.report, scenario.topology.chip.chip_hour_price_usd) + "\n";
    }
  }
  return out;
}

namespace {

// A number, or an empty cell where the plan has none (a spreadsheet reads an empty cell as no
// value, where a 0 would read as a measured one).
std::string number_cell(bool present, const char* format, double value) {
  if (!present) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

// The columns a simulation gives: empty for a plan not simulated. Memory comes from the plan's
// layout, simulated or not; a plan that cannot be built has none (its reason is in `error`).
std::string measured_cells(const PlanCandidate& c) {
  const TrainingReport& r = c.report;
  const bool memory = std::isfinite(r.memory.total_bytes);
  return number_cell(c.simulated, "%.9g", r.step_time_s) + "," + number_cell(c.simulated, "%.6f", r.mfu) + "," +
         number_cell(c.simulated, "%.6f", r.hfu) + "," + number_cell(c.simulated, "%.3f", r.tokens_per_s_per_chip) +
         "," + number_cell(c.simulated, "%.9g", r.exposed_comm_s) + "," +
         number_cell(memory, "%.0f", r.memory.total_bytes) + "," + (r.fits_hbm ? "true" : "false") + ",";
}

}  // namespace

std::string planner_csv(const PlannerResult& result) {
  std::string out =
      "rank,plan,feasible,simulated,mirrors,microbatches,checkpointing,step_time_s,mfu,hfu,tokens_per_s_per_chip,"
      "exposed_comm_s,memory_per_chip_bytes,fits_hbm,lower_bound_s,bounded,estimated_wall_s,over_budget,"
      "time_to_train_days,training_cost_usd,error\n";
  int rank = 0;
  char buf[512];
  for (const auto& c : result.candidates) {
    ++rank;
    const char* policy = c.plan.checkpointing == Checkpointing::None   ? "none"
                         : c.plan.checkpointing == Checkpointing::Book ? "book"
                                                                       : "block";
    std::snprintf(buf, sizeof buf, "%d,\"%s\",%s,%s,%d,%d,%s,", rank, c.label.c_str(), c.feasible ? "true" : "false",
                  c.simulated ? "true" : "false", c.mirrors, c.plan.microbatches, policy);
    out += buf + measured_cells(c);
    std::snprintf(buf, sizeof buf, "%.9g,%s,%.3g,%s,", c.lower_bound_s, c.bounded ? "true" : "false",
                  c.estimated_wall_s, c.over_budget ? "true" : "false");
    out += buf;
    // With workload.token_budget: the run's days and, at the chip-hour price, its cost (empty
    // cells for plans not simulated, or without a budget).
    const bool run = c.simulated && c.report.steps_to_train > 0;
    out += number_cell(run, "%.6g", c.report.time_to_train_s / 86400) + "," +
           number_cell(run && c.report.training_cost_usd > 0, "%.6g", c.report.training_cost_usd) + ",";
    out += "\"" + c.error + "\"\n";
  }
  return out;
}

void require_training(const Scenario& scenario) {
  if (scenario.kind() != WorkloadKind::Training) {
    throw InputError({scenario.path, 0, 0}, "workload.kind", workload_kind_name(scenario.kind()),
                     "podsim plan needs a training workload (kind: training)");
  }
}

void require_some_plan_fits(const Scenario& scenario, const PlannerResult& result) {
  double smallest = std::numeric_limits<double>::infinity();
  bool any_fits = false;
  for (const auto& c : result.candidates) {
    if (!c.feasible) continue;
    any_fits = any_fits || c.report.fits_hbm;
    smallest = std::min(smallest, c.report.memory.total_bytes);
  }
  if (!any_fits && !std::isfinite(smallest)) {
    const std::string reason = result.candidates.empty() ? "no plans" : result.candidates.front().error;
    throw InputError({scenario.path, 0, 0}, "workload.model", scenario.training().model.name,
                     "cannot be laid out on this pod by any plan the planner searches (the first: " + reason + ")");
  }
  if (!any_fits) {
    throw InputError({scenario.path, 0, 0}, "workload.model", scenario.training().model.name,
                     "fits nowhere on this pod: the leanest plan needs " + human_bytes(smallest) +
                         " per chip, more than " +
                         human_hbm(scenario.topology.chip.hbm_bytes, scenario.topology.chip.hbm_headroom));
  }
}

}  // namespace podsim
