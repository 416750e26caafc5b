#include "sim/scenario/scenario.hpp"

#include <stdexcept>

namespace podsim {

const char* workload_kind_name(WorkloadKind kind) {
  switch (kind) {
    case WorkloadKind::Collectives: return "collectives";
    case WorkloadKind::Training: return "training";
    case WorkloadKind::Inference: return "inference";
    case WorkloadKind::Serving: return "serving";
  }
  return "unknown";   // not a WorkloadKind: unreachable from a Workload's index
}

namespace {

// The scenario's workload as `Kind`, or a logic_error: a caller asked for a kind it did not check.
template <typename Kind, typename Held>
auto& workload_as(Held& workload, WorkloadKind asked) {
  if (auto* held = std::get_if<Kind>(&workload)) return *held;
  throw std::logic_error(std::string("the scenario's workload is ") +
                         workload_kind_name(static_cast<WorkloadKind>(workload.index())) + ", not " +
                         workload_kind_name(asked));
}

}  // namespace

const CollectivesWorkload& Scenario::collectives() const {
  return workload_as<CollectivesWorkload>(workload, WorkloadKind::Collectives);
}
CollectivesWorkload& Scenario::collectives() {
  return workload_as<CollectivesWorkload>(workload, WorkloadKind::Collectives);
}
const TrainingWorkload& Scenario::training() const {
  return workload_as<TrainingWorkload>(workload, WorkloadKind::Training);
}
TrainingWorkload& Scenario::training() { return workload_as<TrainingWorkload>(workload, WorkloadKind::Training); }
const InferenceWorkload& Scenario::inference() const {
  return workload_as<InferenceWorkload>(workload, WorkloadKind::Inference);
}
InferenceWorkload& Scenario::inference() { return workload_as<InferenceWorkload>(workload, WorkloadKind::Inference); }
const ServingWorkload& Scenario::serving() const {
  return workload_as<ServingWorkload>(workload, WorkloadKind::Serving);
}
ServingWorkload& Scenario::serving() { return workload_as<ServingWorkload>(workload, WorkloadKind::Serving); }

SourceLocation Scenario::location_of(const std::string& key) const {
  for (std::string k = key;;) {
    if (auto it = locations.find(k); it != locations.end()) return it->second;
    const size_t dot = k.rfind('.');
    if (dot == std::string::npos) return {path, 0, 0};
    k.resize(dot);
  }
}

}  // namespace podsim

namespace podsim {

Scenario with_straggler_draw(Scenario scenario, uint64_t draw) {
  auto& perturbations = scenario.topology.perturbations;
  perturbations.resize(scenario.fixed_perturbations);
  for (const auto& spec : scenario.stragglers)
    for (auto& p : draw_stragglers(scenario.topology, spec, draw)) perturbations.push_back(std::move(p));
  return scenario;
}

bool routes_experts(const Scenario& scenario) {
  switch (scenario.kind()) {
    case WorkloadKind::Collectives: return false;
    case WorkloadKind::Training: return scenario.training().model.moe.has_value();
    case WorkloadKind::Inference: return scenario.inference().model.moe.has_value();
    case WorkloadKind::Serving: return scenario.serving().model.moe.has_value();
  }
  return false;
}

}  // namespace podsim
