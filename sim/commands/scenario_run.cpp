#include "sim/commands/scenario_run.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>

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
  return program;
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
  ServingStatsSink stats(w.metric_percentiles, w.slo);
  ServingSinks sinks({&stats, outputs, requests_done ? &*requests_done : nullptr});
  run.totals = simulate_serving(w.requests, w.config, costs, sinks);
  if (requests_done) requests_done->report(requests_done->wall_s());
  run.generate_chips = w.generate_topology.chips_per_slice();
  run.prefill_chips = split ? w.prefill_server_topology.chips_per_slice() : 0;
  run.total_chips = w.config.servers * run.generate_chips + w.config.prefill_servers * run.prefill_chips;
  run.stats = stats.finish(run.totals, run.total_chips);
  run.wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return run;
}

}  // namespace podsim
