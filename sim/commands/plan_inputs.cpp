#include "sim/commands/plan_inputs.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>

#include "sim/scenario/schema_keys.hpp"

namespace podsim {

const std::vector<PlannerSearch>& planner_searches() {
  // What each search is: plan_candidates.hpp (axis_splits, with_memory_search).
  static const std::vector<PlannerSearch> searches = {
      {{"parallelism.data", "parallelism.fsdp", "parallelism.tensor", "parallelism.zero", "parallelism.expert"},
       "searched: every split of the mesh axes into data (DP or FSDP) and tensor axes, tensor blocks of 2, 4 "
       "or 8 neighbours and 2x2, ZeRO-1 and ZeRO-2 for plain data parallelism, expert axes for an MoE model"},
      {{"parallelism.pipeline", "parallelism.schedule", "parallelism.virtual_stages"},
       "searched: a pipeline over each mesh axis, 1F1B and interleaved 1F1B with 2 chunks a device"},
      {{"microbatches"}, "searched: the fewest (1, 2, 4, ...; a pipeline from 4 a stage) whose memory fits"},
      {{"checkpointing", "remat_policy", "remat"}, "searched: none, book and block"},
      {{"parallelism.context", "parallelism.dcn_sync"},
       "not searched: every plan is without context parallelism, its DCN gradients synced per block"},
  };
  return searches;
}

std::vector<std::string> planner_ignored_keys() {
  std::vector<std::string> keys;
  for (const auto& search : planner_searches()) keys.insert(keys.end(), search.keys.begin(), search.keys.end());
  return keys;
}

std::vector<std::string> planner_taken_keys() {
  const std::vector<std::string> ignored = planner_ignored_keys();
  std::vector<std::string> taken;
  auto add = [&](const std::string& key) {
    if (std::find(ignored.begin(), ignored.end(), key) == ignored.end()) taken.push_back(key);
  };
  for (const auto& key : key_table(SchemaMap::WorkloadTraining).keys) {
    if (key != "kind" && key != "parallelism") add(key);
  }
  for (const auto& key : key_table(SchemaMap::TrainingParallelism).keys) add("parallelism." + key);
  return taken;
}

namespace {

// `words` after `indent`, wrapped before 100 columns.
std::string wrapped(const std::vector<std::string>& words, const std::string& indent) {
  std::string out = indent;
  size_t column = indent.size();
  for (const auto& word : words) {
    if (column > indent.size() && column + 1 + word.size() > 100) {
      out += "\n" + indent;
      column = indent.size();
    }
    out += (column > indent.size() ? " " : "") + word;
    column += (column > indent.size() ? 1 : 0) + word.size();
  }
  return out + "\n";
}

std::vector<std::string> words_of(const std::string& text) {
  std::vector<std::string> words;
  for (size_t begin = 0; begin < text.size();) {
    const size_t end = std::min(text.find(' ', begin), text.size());
    words.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return words;
}

}  // namespace

std::string planner_keys_help() {
  std::string out = "The planner takes the hardware, topology and simulation from the scenario, and these workload keys:\n";
  out += wrapped(planner_taken_keys(), "  ");
  out += "It ignores these workload keys (and --set values of them):\n";
  for (const auto& search : planner_searches()) {
    std::string keys;
    for (const auto& key : search.keys) keys += (keys.empty() ? "" : ", ") + key;
    out += "  " + keys + ":\n" + wrapped(words_of(search.instead), "      ");
  }
  return out;
}

TrainingPlan planner_base(const TrainingPlan& scenario_plan) {
  // The fields of planner_searches()'s keys, at a default TrainingPlan's values.
  const TrainingPlan defaults;
  TrainingPlan base = scenario_plan;
  base.data_axes = defaults.data_axes;
  base.data_slices = defaults.data_slices;
  base.fsdp = defaults.fsdp;
  base.tensor_axes = defaults.tensor_axes;
  base.tensor_slices = defaults.tensor_slices;
  base.zero_stage = defaults.zero_stage;
  base.expert_axes = defaults.expert_axes;
  base.pipeline_axis = defaults.pipeline_axis;
  base.schedule = defaults.schedule;
  base.virtual_stages = defaults.virtual_stages;
  base.microbatches = defaults.microbatches;
  base.checkpointing = defaults.checkpointing;
  base.remat = defaults.remat;
  base.context_axis = defaults.context_axis;
  base.dcn_sync = defaults.dcn_sync;
  return base;
}

std::vector<ScenarioOverride> planner_overrides(const std::string& text, std::vector<ScenarioOverride> overrides) {
  YAML::Node document;
  try {
    document = YAML::Load(text);
  } catch (const YAML::Exception&) {
    return overrides;   // the loader reports it, located
  }
  const YAML::Node& root = document;
  const YAML::Node workload = root.IsMap() ? root["workload"] : YAML::Node();
  if (!workload.IsDefined() || !workload.IsMap()) return overrides;
  const YAML::Node kind = workload["kind"];
  if (!kind.IsDefined() || !kind.IsScalar() || kind.Scalar() != "training") return overrides;
  for (const auto& key : planner_ignored_keys()) {
    // Only keys the document or an override holds: a removal makes the mappings on its way,
    // which must not add an empty parallelism mapping to a workload without one.
    const size_t dot = key.find('.');
    const YAML::Node parent = dot == std::string::npos ? workload : YAML::Node(workload[key.substr(0, dot)]);
    const std::string leaf = dot == std::string::npos ? key : key.substr(dot + 1);
    const std::string path = "workload." + key;
    const bool overridden = std::any_of(overrides.begin(), overrides.end(), [&](const ScenarioOverride& o) {
      return o.key == path || o.key.rfind(path + ".", 0) == 0;
    });
    // A missing key's node is invalid: IsDefined first (IsMap would throw).
    if ((parent.IsDefined() && parent.IsMap() && parent[leaf].IsDefined()) || overridden)
      overrides.push_back({path, "null"});
  }
  return overrides;
}

Scenario load_planner_scenario(const std::string& path, const std::vector<ScenarioOverride>& overrides) {
  return load_scenario(path, planner_overrides(resolve_scenario(path, overrides).text, overrides));
}

}  // namespace podsim
