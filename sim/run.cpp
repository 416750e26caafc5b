#include "sim/run.hpp"

#include <algorithm>
#include <chrono>
#include <spdlog/spdlog.h>

namespace podsim {

bool analytic_time(const Topology& topo, const CollectiveSpec& spec, double link_bandwidth_Bps,
                   double hop_latency_s, FormulaResult& out) {
  FormulaInputs inputs;
  inputs.kind = spec.kind;
  inputs.bytes = spec.bytes;
  inputs.bidirectional = spec.bidirectional;
  inputs.link_bandwidth_Bps = link_bandwidth_Bps;
  inputs.hop_latency_s = hop_latency_s;
  for (int a : spec.axes) inputs.axes.push_back({topo.axis_size(a), topo.wraps(a)});
  if (spec.over_dcn && topo.slice_count() > 1) {
    if (spec.kind != CollectiveKind::AllReduce) return false;
    // Hierarchical: the ICI AllReduce's two halves around the DCN AllReduce of each chip's share.
    // An oversubscribed DCN core gives each NIC 1/oversubscription of its bandwidth when all
    // hosts send at once, as they do here.
    const auto& chip = topo.spec().chip;
    const double oversubscription = topo.spec().dcn_oversubscription;
    const double dcn_per_chip = chip.dcn_bandwidth_per_host_Bps / chip.chips_per_host / oversubscription;
    int ici_chips = 1;
    for (int a : spec.axes) ici_chips *= topo.axis_size(a);
    if (spec.dcn_algorithm == DcnAlgorithm::FlatRing) {
      out = FormulaResult{};
      // One chip's traffic crosses each slice boundary: its PCIe link or its host's NIC,
      // whichever is slower, bounds the ring (the core carries just these few flows).
      const double w = std::min(chip.dcn_bandwidth_per_host_Bps, chip.pcie_bandwidth_Bps);
      out.time_s = out.bandwidth_time_s =
          dcn_flat_ring_allreduce_time_s(spec.bytes, topo.chip_count(), topo.slice_count(), w);
      out.regime = "bandwidth-bound";
      out.formula = "2V(N-1)/N / min(W_dcn_host, W_pcie)";
      out.source = "training.md:L572-L592";
      return true;
    }
    out = inputs.axes.empty() ? FormulaResult{} : book_collective_time(inputs);
    const double dcn_s = dcn_hierarchical_allreduce_time_s(spec.bytes, ici_chips, topo.slice_count(), dcn_per_chip);
    out.time_s += dcn_s;
    out.bandwidth_time_s += dcn_s;
    out.formula = (out.formula.empty() ? "" : out.formula + " + ") + "2(V/N_ici)(S-1)/S / W_dcn_chip";
    out.source = (out.source.empty() ? "" : out.source + "; ") + "training.md:L572-L592";
    if (out.regime.empty()) out.regime = "bandwidth-bound";
    return true;
  }
  out = book_collective_time(inputs);
  return true;
}

const SpanRecord& RunResult::span(int op, int repetition, ChipId real_chip) const {
  const ChipId sim_chip = reduction.representative(topology, simulated, real_chip);
  // spans are sorted by (op, repetition, chip) and hold every simulated chip.
  size_t index = 0;
  for (int o = 0; o < op; ++o) index += static_cast<size_t>(operations[o].repeat) * simulated.chip_count();
  index += static_cast<size_t>(repetition) * simulated.chip_count() + sim_chip;
  return replay.spans.at(index);
}

namespace {

int group_size(const Topology& topo, const CollectiveSpec& spec) {
  int n = 1;
  for (int a : spec.axes) n *= topo.axis_size(a);
  if (spec.over_dcn) n *= topo.slice_count();
  return n;
}

std::vector<CollectiveSpec> collective_specs(const Scenario& scenario) {
  std::vector<CollectiveSpec> specs;
  for (const auto& op : scenario.operations) specs.push_back(op.collective);
  return specs;
}

long long message_count(const std::vector<OpPlan>& plans) {
  long long n = 0;
  for (const auto& p : plans) n += p.messages;
  return n;
}

std::vector<int> dependency_indices(const Scenario& scenario, size_t op) {
  std::vector<int> out;
  for (const auto& name : scenario.operations[op].after) {
    for (size_t j = 0; j < scenario.operations.size(); ++j) {
      if (scenario.operations[j].name == name) out.push_back(static_cast<int>(j));
    }
  }
  return out;
}

}  // namespace

RunResult run_scenario(const Scenario& scenario, const RunOptions& options) {
  const auto wall_start = std::chrono::steady_clock::now();
  const auto specs = collective_specs(scenario);
  auto reduction = reduce_by_symmetry(scenario.topology, specs, options.fidelity == Fidelity::Full);
  RunResult run{Topology(scenario.topology), Topology(reduction.reduced), reduction, {}, {}, 0, 0,
                reduction.identity ? "full" : "reduced"};
  const Topology& sim = run.simulated;
  spdlog::info("simulating {} of {} chips ({} fidelity)", sim.chip_count(), run.topology.chip_count(), run.fidelity);

  EndpointRegistry registry;
  for (ChipId chip = 0; chip < sim.chip_count(); ++chip) registry.get(chip, "chip", {});  // endpoint == chip
  std::vector<OpPlan> plans;
  plans.reserve(specs.size());
  for (const auto& spec : specs) plans.push_back(plan_collective(sim, reduction.real_sizes, spec, registry));
  std::vector<ReplayOp> ops;
  for (size_t i = 0; i < plans.size(); ++i) {
    ops.push_back({&plans[i], scenario.operations[i].repeat, dependency_indices(scenario, i)});
  }
  ReplayOptions replay_options;
  replay_options.platform = {scenario.hop_model, scenario.topology.chip.hop_latency_s, scenario.link_efficiency};
  replay_options.launch_overhead_s = scenario.launch_overhead_s;
  replay_options.record_hops = options.record_hops;
  replay_options.progress = options.progress;
  spdlog::info("{}: {} operations, {} endpoints, {} messages per repetition on {} simulated chips", scenario.name,
               plans.size(), registry.endpoints().size(), message_count(plans), sim.chip_count());
  run.replay = replay(sim, registry.endpoints(), ops, replay_options);

  const double w_uni = scenario.topology.chip.neighbor_bandwidth_Bps() * scenario.link_efficiency;
  for (size_t i = 0; i < specs.size(); ++i) {
    const auto& op = scenario.operations[i];
    OperationResult result;
    result.name = op.name;
    result.kind = op.collective.kind;
    for (int a : op.collective.axes) result.axes.push_back(scenario.topology.axes[a].name);
    result.over_dcn = op.collective.over_dcn;
    result.bytes = op.collective.bytes;
    result.repeat = op.repeat;
    result.group_size = group_size(run.topology, op.collective);
    double sum = 0;
    result.start_s = 1e300;
    for (int rep = 0; rep < op.repeat; ++rep) {
      double first = 1e300, last = 0;
      for (const auto& s : run.replay.spans) {
        if (s.op != static_cast<int>(i) || s.repetition != rep) continue;
        first = std::min(first, s.start_s);
        last = std::max(last, s.end_s);
      }
      sum += last - first;
      result.start_s = std::min(result.start_s, first);
      result.end_s = std::max(result.end_s, last);
    }
    result.time_s = sum / op.repeat;
    if (result.time_s > 0) {
      result.algbw_Bps = algbw_Bps(result.bytes, result.time_s);
      result.busbw_Bps = busbw_Bps(result.kind, result.bytes, result.time_s, result.group_size);
    }
    result.has_analytic = analytic_time(run.topology, op.collective, w_uni, scenario.topology.chip.hop_latency_s,
                                        result.analytic);
    run.total_time_s = std::max(run.total_time_s, result.end_s);
    run.operations.push_back(std::move(result));
  }
  run.wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  spdlog::info("simulated {} messages in {:.3f} s of wall time", run.replay.messages, run.wall_time_s);
  return run;
}

}  // namespace podsim
