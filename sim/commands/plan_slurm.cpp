#include "sim/commands/plan_slurm.hpp"
#include "sim/commands/slurm_array.hpp"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "sim/commands/plan_schedule.hpp"
#include "sim/engine/child_process.hpp"
#include "sim/report/csv_text.hpp"
#include "sim/report/output_files.hpp"
#include "sim/scenario/input_error.hpp"

namespace podsim {
namespace {

using Json = nlohmann::ordered_json;

// Every fitting plan, as --exhaustive simulates them (no budget: the array is for long ones).
PlannerCandidates array_candidates(const Scenario& scenario) {
  require_training(scenario);
  return planner_candidates(scenario, 0.0);
}

std::string task_file(const std::string& out_dir, int task) {
  return (std::filesystem::path(out_dir) / array_task_dir(task) / "plan.json").string();
}

// What the ranking, plan.csv and the table read of a simulated plan (planner.cpp), and its
// provenance. JSON numbers round-trip doubles exactly, so the collected ranking is the local one.
Json task_json(const PlanCandidate& c, const std::string& inputs) {
  const TrainingReport& r = c.report;
  return Json{{"plan", c.label},
              {"inputs", inputs},
              {"simulated", c.simulated},
              {"error", c.error},
              {"step_time_s", r.step_time_s},
              {"mfu", r.mfu},
              {"hfu", r.hfu},
              {"tokens_per_s_per_chip", r.tokens_per_s_per_chip},
              {"exposed_comm_s", r.exposed_comm_s},
              {"memory_per_chip_bytes", r.memory.total_bytes},
              {"fits_hbm", r.fits_hbm},
              {"steps_to_train", r.steps_to_train},
              {"time_to_train_s", r.time_to_train_s},
              {"training_cost_usd", r.training_cost_usd}};
}

// Fills `c` from its task's file; false when the file is absent, unreadable, or of another plan
// or other inputs.
bool read_task(const std::string& path, const std::string& inputs, PlanCandidate& c) {
  const Json j = Json::parse(read_text_file(path), nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.value("plan", std::string()) != c.label ||
      j.value("inputs", std::string()) != inputs)
    return false;
  try {
    if (!j.at("simulated").get<bool>()) {
      c.feasible = false;
      c.error = j.at("error").get<std::string>();
      return true;
    }
    TrainingReport& r = c.report;
    r.step_time_s = j.at("step_time_s").get<double>();
    r.mfu = j.at("mfu").get<double>();
    r.hfu = j.at("hfu").get<double>();
    r.tokens_per_s_per_chip = j.at("tokens_per_s_per_chip").get<double>();
    r.exposed_comm_s = j.at("exposed_comm_s").get<double>();
    r.memory.total_bytes = j.at("memory_per_chip_bytes").get<double>();
    r.fits_hbm = j.at("fits_hbm").get<bool>();
    r.steps_to_train = j.at("steps_to_train").get<double>();
    r.time_to_train_s = j.at("time_to_train_s").get<double>();
    r.training_cost_usd = j.at("training_cost_usd").get<double>();
  } catch (const nlohmann::json::exception&) {
    return false;   // a file of another layout: not this array's
  }
  c.simulated = true;
  return true;
}

}  // namespace

PlanArrayOutputs emit_plan_slurm(const Scenario& scenario, const std::string& out_dir, const std::string& command) {
  const PlannerCandidates candidates = array_candidates(scenario);
  const int tasks = static_cast<int>(candidates.order.size());
  if (tasks == 0)
    throw InputError({scenario.path, 0, 0}, "workload.model", scenario.training().model.name,
                     "no plan fits on this pod, so there is nothing to simulate; expected a model some plan holds");
  const std::string out = std::filesystem::absolute(out_dir).string();
  const std::string base = command + " -o " + shell_quote(out);
  const std::string path = write_slurm_array(
      out_dir, {"plan.sbatch", "podsim-plan",
                "podsim plan as a Slurm job array: a task per plan (" + std::to_string(tasks) +
                    "), each simulated as podsim plan --exhaustive would.",
                "rank the plans into plan.csv", tasks, base, "--task"});
  PlanArrayOutputs result;
  result.text = "wrote a job array of " + std::to_string(tasks) + " tasks (one a plan); after it: " + base + " --collect\n";
  result.files = {path};
  return result;
}

PlanArrayOutputs run_plan_task(const Scenario& scenario, const std::string& inputs, int task, const std::string& out_dir) {
  PlannerCandidates candidates = array_candidates(scenario);
  const int tasks = static_cast<int>(candidates.order.size());
  if (task < 0 || task >= tasks)
    throw InputError({"--task", 0, 0}, "--task", std::to_string(task),
                     tasks == 0 ? std::string("no task: no plan fits on this pod")
                                : "expected a task from 0 to " + std::to_string(tasks - 1) + " (one a plan)");
  PlanCandidate& c = *candidates.order[static_cast<size_t>(task)];
  simulate_in_order(scenario, {&c}, 0, 1, [](PlanCandidate&, bool) {});
  const std::string dir = (std::filesystem::path(out_dir) / array_task_dir(task)).string();
  ensure_directory(dir, "-o");
  OutputFiles files(dir, "-o");
  files.add("plan.json", task_json(c, inputs).dump(2) + "\n");
  files.commit();
  PlanArrayOutputs out;
  out.text = c.label + ": " + (c.simulated ? "simulated" : "impossible: " + c.error) + "\n";
  out.files = {files.path("plan.json")};
  return out;
}

PlannerResult collect_plan(const Scenario& scenario, const std::string& inputs, const std::string& out_dir) {
  PlannerCandidates candidates = array_candidates(scenario);
  const size_t tasks = candidates.order.size();
  MissingTasks missing;
  PlannerResult result = plan_from_outcomes(scenario, candidates, [&](size_t i, PlanCandidate& c) {
    if (!read_task(task_file(out_dir, static_cast<int>(i)), inputs, c)) missing.add(static_cast<int>(i));
  });
  missing.check(out_dir, static_cast<int>(tasks), "result for these inputs", "the job array's tasks done on this scenario");
  return result;
}

}  // namespace podsim
