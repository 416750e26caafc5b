#include "sim/commands/scenario_run.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>

#include "topology/sub_mesh.hpp"
#include "workloads/collective_reduction.hpp"

namespace podsim {
namespace {

// Requests whose records are final, of all of them (ServingSink hears each once, in order).
class RequestProgress : public ServingSink {
 public:
  RequestProgress(const std::function<void(const SimulationProgress&)>& report, size_t total, double interval_s)
      : report_(report), interval_s_(interval_s), start_(std::chrono::steady_clock::now()) {
    progress_.total = total;
  }
  void request(const RequestRecord&) override {
    progress_.done += 1;
    const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (wall_s - reported_s_ >= interval_s_) report(wall_s);
  }
  void report(double wall_s) {
    progress_.wall_s = reported_s_ = wall_s;
    report_(progress_);
  }
  double wall_s() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

 private:
  const std::function<void(const SimulationProgress&)>& report_;
  double interval_s_;
  std::chrono::steady_clock::time_point start_;
  SimulationProgress progress_;
  double reported_s_ = 0;
};

// Server `replica` of the first slice (replicas numbered over the replica axes, the first
// fastest, as chips are): its mesh with the slice's perturbations that fall on its chips.
TopologySpec perturbed_server(const Scenario& scenario, int replica) {
  const ServingWorkload& w = scenario.serving();
  const TopologySpec& slice = scenario.topology;
  std::vector<int> kept, position(slice.axes.size(), 0);
  for (int a = 0; a < static_cast<int>(slice.axes.size()); ++a) {
    const bool in_server = std::any_of(w.generate_topology.axes.begin(), w.generate_topology.axes.end(),
                                       [&](const MeshAxis& m) { return m.name == slice.axes[a].name; });
    if (in_server) {
      kept.push_back(a);
    } else {
      position[a] = replica % slice.axes[a].size;
      replica /= slice.axes[a].size;
    }
  }
  TopologySpec server = w.generate_topology;
  server.perturbations = sub_mesh_perturbations(slice, kept, position);
  return server;
}

// The step costs of a server whose chips differ: its own cost models on its perturbed mesh.
StepCosts perturbed_server_costs(const Scenario& scenario, const TopologySpec& server, const ServingConfig& priced,
                                 ServingRun& run) {
  const ServingWorkload& w = scenario.serving();
  auto& model = run.server_costs.emplace_back(std::make_unique<ServingCostModel>(
      w.model, server_role(server, w.prefill), server_role(server, w.generate), simulation_settings(scenario)));
  model->prepare(priced, w.requests, true);
  StepCosts costs = model->costs();
  run.server_draft_costs.emplace_back();
  if (w.draft_model) {
    auto& draft = run.server_draft_costs.back();
    draft = std::make_unique<ServingCostModel>(*w.draft_model, server_role(server, w.generate),
                                               server_role(server, w.generate), simulation_settings(scenario));
    draft->price_draft_passes();
    draft->prepare(priced, w.requests, true);
    costs.draft_s = [d = draft.get(), k = w.config.speculative.num_tokens](const StepShape& step, int sequences,
                                                                            double context) {
      return draft_passes_s(*d, step, sequences, context, k);
    };
  }
  return costs;
}

// Each server of the first slice whose chips the perturbations select gets its own costs; the
// others, and the servers of the other slices (copies of the uniform slice), share `costs`.
void price_perturbed_servers(const Scenario& scenario, const ServingConfig& priced, StepCosts& costs,
                             ServingRun& run) {
  const ServingWorkload& w = scenario.serving();
  if (scenario.topology.perturbations.empty()) return;
  std::vector<StepCosts> per_server(static_cast<size_t>(w.config.servers), costs);
  for (int r = 0; r < std::min(w.replicas_per_slice, w.config.servers); ++r) {
    const TopologySpec server = perturbed_server(scenario, r);
    if (server.perturbations.empty()) {
      run.server_costs.emplace_back();
      run.server_draft_costs.emplace_back();
      continue;
    }
    per_server[static_cast<size_t>(r)] = perturbed_server_costs(scenario, server, priced, run);
  }
  costs.per_server = std::move(per_server);
}

}  // namespace

SimulationSettings simulation_settings(const Scenario& scenario) {
  return {scenario.hop_model, scenario.link_efficiency, scenario.launch_overhead_s};
}

Program collectives_program(const Scenario& scenario) {
  Program program;
  const std::vector<OperationSpec>& operations = scenario.collectives().operations;
  for (const auto& op : operations) {
    ProgramOp p;
    p.name = op.name;
    p.work = op.collective;
    p.repeat = op.repeat;
    p.role = OpRole::ScenarioCollective;
    for (const auto& name : op.after) {
      for (size_t j = 0; j < operations.size(); ++j) {
        if (operations[j].name == name) p.after.push_back(static_cast<int>(j));
      }
    }
    program.push_back(std::move(p));
  }
  // A reducing collective's additions on the TensorCore (workloads/collective_reduction.hpp):
  // each runs right before its collective, which waits for it.
  return with_collective_reductions(std::move(program), scenario.topology);
}

RunResult run_scenario(const Scenario& scenario, const RunOptions& options) {
  return run_program(scenario.topology, simulation_settings(scenario), collectives_program(scenario), options);
}

ServingRun run_serving(const Scenario& scenario, ServingSink* outputs,
                       const std::function<void(const SimulationProgress&)>& progress, double progress_interval_s) {
  const auto wall_start = std::chrono::steady_clock::now();
  const ServingWorkload& w = scenario.serving();
  const bool split = w.config.policy == BatchingPolicy::Disaggregated;
  const ServerRole generate = server_role(w.generate_topology, w.generate);
  const ServerRole prefill = server_role(split ? w.prefill_server_topology : w.generate_topology, w.prefill);
  // 0 done while the step costs are priced (replays of their own), then requests as they end.
  std::optional<RequestProgress> requests_done;
  if (progress) {
    requests_done.emplace(progress, w.requests.size(), progress_interval_s);
    requests_done->report(requests_done->wall_s());
  }
  ServingRun run;
  run.costs = std::make_unique<ServingCostModel>(w.model, prefill, generate, simulation_settings(scenario));
  // A batch never holds more sequences than there are requests, so larger ones are not priced:
  // HBM may allow millions of slots (a small model on a large chip), and each is a row of the
  // decode table (2 requests beside 10,000,000 slots took 6.5 minutes and 1.1 GB).
  ServingConfig priced = w.config;
  priced.slots = static_cast<int>(std::min<size_t>(static_cast<size_t>(priced.slots), w.requests.size()));
  run.costs->prepare(priced, w.requests, !split);
  StepCosts costs = run.costs->costs();
  if (w.draft_model) {
    run.draft_costs = std::make_unique<ServingCostModel>(*w.draft_model, generate, generate, simulation_settings(scenario));
    run.draft_costs->price_draft_passes();
    run.draft_costs->prepare(priced, w.requests, true);
    costs.draft_s = [draft = run.draft_costs.get(), k = w.config.speculative.num_tokens](
                        const StepShape& step, int sequences, double context) {
      return draft_passes_s(*draft, step, sequences, context, k);
    };
  }
  price_perturbed_servers(scenario, priced, costs, run);
  ServingStatsSink stats(w.metric_percentiles, w.slo);
  ServingSinks sinks({&stats, outputs, requests_done ? &*requests_done : nullptr});
  run.totals = simulate_serving(w.requests, w.config, costs, sinks);
  if (requests_done) requests_done->report(requests_done->wall_s());
  run.generate_chips = w.generate_topology.chips_per_slice();
  run.prefill_chips = split ? w.prefill_server_topology.chips_per_slice() : 0;
  run.total_chips = w.config.servers * run.generate_chips + w.config.prefill_servers * run.prefill_chips;
  // Per chip as the Cloud counts chips (a tpu7x chip is two of the simulated devices).
  run.stats = stats.finish(run.totals, static_cast<int>(w.generate_topology.chip.chips_of_devices(run.total_chips)));
  run.wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return run;
}

}  // namespace podsim
