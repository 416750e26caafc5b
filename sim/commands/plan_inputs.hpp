#pragma once
// What `podsim plan` takes from a training scenario and what it searches itself. The keys it
// searches (or plans without) are listed once, here: the loader drops them before its checks
// (a split or microbatch count that does not divide the batch must not refuse a scenario the
// planner would plan), the candidates start from a plan with their fields at their defaults,
// and `plan --help` prints the list.
#include <string>
#include <vector>

#include "sim/scenario/scenario.hpp"

namespace podsim {

// Workload keys (dotted below `workload`) the planner ignores, with what it does instead.
struct PlannerSearch {
  std::vector<std::string> keys;
  std::string instead;
};
const std::vector<PlannerSearch>& planner_searches();
// Every key of planner_searches(), in its order.
std::vector<std::string> planner_ignored_keys();
// The training workload's keys (the schema registry's, dotted below `workload`) the planner
// takes from the scenario: every one but `kind`, the `parallelism` mapping itself and the
// ignored ones.
std::vector<std::string> planner_taken_keys();
// The two lists as `plan --help` prints them.
std::string planner_keys_help();

// `scenario_plan` with every field of an ignored key at its default: what each candidate starts from.
TrainingPlan planner_base(const TrainingPlan& scenario_plan);

// The scenario as the planner reads it: loaded with each ignored key that the training
// workload or an override holds removed, after `overrides`, so that the loader's checks of
// them (a split or microbatch count that does not divide the batch) refuse nothing. A document
// that is not a training one loads as it is (require_training says why it cannot be planned).
// `text`: the document, before or after the overrides.
std::vector<ScenarioOverride> planner_overrides(const std::string& text, std::vector<ScenarioOverride> overrides);
Scenario load_planner_scenario(const std::string& path, const std::vector<ScenarioOverride>& overrides);

}  // namespace podsim
