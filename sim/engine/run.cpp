#include "sim/engine/run.hpp"

#include "sim/engine/native_replay.hpp"
#include "sim/engine/chip_times.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>
#include <spdlog/spdlog.h>

#include "workloads/op_presence.hpp"

namespace podsim {

// The rings a collective runs over, as the formulas see them: a whole axis, or a slice of it
// (a ring only where it spans a wrapped axis).
std::vector<AxisInfo> collective_axes(const Topology& topo, const CollectiveSpec& spec) {
  std::vector<AxisInfo> axes;
  for (size_t i = 0; i < spec.axes.size(); ++i) {
    const int a = spec.axes[i];
    if (!spec.slices.empty() && spec.slices[i].size != 0) {
      const auto& slice = spec.slices[i];
      axes.push_back({slice.size, topo.wraps(a) && slice.stride * slice.size == topo.axis_size(a)});
    } else {
      axes.push_back({topo.axis_size(a), topo.wraps(a)});
    }
  }
  return axes;
}

bool analytic_time(const Topology& topo, const CollectiveSpec& spec, double link_bandwidth_Bps,
                   double hop_latency_s, FormulaResult& out) {
  FormulaInputs inputs;
  inputs.kind = spec.kind;
  inputs.bytes = spec.bytes;
  inputs.bidirectional = spec.bidirectional;
  inputs.link_bandwidth_Bps = link_bandwidth_Bps;
  inputs.hop_latency_s = hop_latency_s;
  inputs.axes = collective_axes(topo, spec);
  if (spec.over_dcn && topo.slice_count() > 1) {
    if (spec.kind != CollectiveKind::AllReduce) return false;
    // Hierarchical: the ICI AllReduce's two halves around the DCN AllReduce of each chip's share.
    // An oversubscribed DCN core gives each NIC 1/oversubscription of its bandwidth when all
    // hosts send at once, as they do here.
    const auto& chip = topo.spec().chip;
    const double oversubscription = topo.spec().dcn_oversubscription;
    const double dcn_per_chip = chip.dcn_bandwidth_per_host_Bps / chip.chips_per_host / oversubscription;
    int ici_chips = 1;
    for (const auto& axis : inputs.axes) ici_chips *= axis.size;
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

int collective_group_size(const Topology& topo, const CollectiveSpec& spec) {
  return collective_group_size(topo.spec(), spec);
}

const SpanRecord& RunResult::span(int op, int repetition, ChipId real_chip) const {
  const ChipId sim_chip = reduction.representative(topology, simulated, real_chip);
  // spans are sorted by (op, repetition, chip) and hold every simulated chip.
  return replay.spans.at(first_span.at(op) + static_cast<size_t>(repetition) * simulated.chip_count() + sim_chip);
}

std::pair<double, ChipId> RunResult::last_entry(int op, int repetition, ChipId real_chip) const {
  const ChipId sim_chip = reduction.representative(topology, simulated, real_chip);
  double entered = 0;
  ChipId last = 0;
  if (peers.latest_entry(op, repetition, sim_chip, entered, last) && last >= 0) return {entered, real_of_simulated.at(last)};
  return {span(op, repetition, real_chip).start_s, real_chip};
}

double RunResult::wait_for_peers_s(int op, int repetition, ChipId real_chip) const {
  const SpanRecord& s = span(op, repetition, real_chip);
  const double entered = last_entry(op, repetition, real_chip).first;
  return std::clamp(entered - s.start_s, 0.0, s.end_s - s.start_s);
}

bool RunResult::present(int op, ChipId real_chip) const {
  const OperationResult& o = operations.at(op);
  return o.present_at_position.empty() ||
         o.present_at_position.at(topology.position_along(real_chip, o.position_axis)) != 0;
}

namespace {

// The longest sequence of link hops a chip's messages take one after another: ring phases in
// order (each as long as its longest chain: receives x links per message), or the longest
// AllToAll route.
int critical_hops(const OpPlan& plan) {
  int most = 0;
  for (const auto& chip : plan.chips) {
    for (const auto& part : chip.parts) {
      int total = 0;
      for (const auto& phase : part) {
        int longest = 0;
        for (const auto& chain : phase) longest = std::max(longest, chain.shape.receives * chain.shape.hops);
        total += longest;
      }
      most = std::max(most, total);
    }
    for (const auto& flow : chip.flows) most = std::max(most, flow.hops);
  }
  return most;
}

// The reason recorded in summary.json's symmetry list for an axis a perturbation keeps whole.
std::string differing_reason(const PerturbationDifference& d) {
  const std::string what = d.kind == PerturbationKind::SlowChips ? "chips"
                           : d.kind == PerturbationKind::Links   ? "links"
                                                                 : "hosts' NICs";
  return "perturbation '" + d.perturbation + "' makes " + what +
         (d.axis == Topology::kSliceAxis ? " differ from slice to slice" : " differ along it");
}

// Per simulated chip, the compute time of an op that differs by position (ProgramOp::vary_axes).
// Those axes are never reduced, so a simulated chip's coordinates on them are its real ones.
std::vector<double> compute_by_chip(const Topology& sim, const ProgramOp& op) {
  const ComputeWork& work = op.compute();
  long long positions = 1;
  for (int a : work.vary_axes) positions *= sim.axis_size(a);
  if (static_cast<long long>(work.compute_s_by_position.size()) != positions)
    throw std::invalid_argument("op '" + op.name + "': " + std::to_string(work.compute_s_by_position.size()) +
                                " compute times for " + std::to_string(positions) + " positions");
  std::vector<double> out(sim.chip_count());
  for (ChipId chip = 0; chip < sim.chip_count(); ++chip) {
    const auto c = sim.coords(chip);
    long long index = 0;
    for (size_t k = work.vary_axes.size(); k-- > 0;) index = index * sim.axis_size(work.vary_axes[k]) + c[work.vary_axes[k]];
    out[chip] = work.compute_s_by_position[index];
  }
  return out;
}

// An op present at some positions only (ProgramOp::present_at_position) sends nothing from
// the chips where it is absent: their plans emptied, so their messages are never counted or
// awaited. check_presence has made sure no present chip expects anything from them.
void drop_absent_chips(OpPlan& plan, const Topology& sim, const ProgramOp& op) {
  if (op.present_at_position.empty()) return;
  for (ChipId chip = 0; chip < sim.chip_count(); ++chip) {
    if (present_on(op, sim, chip)) continue;
    ChipOpPlan& chip_plan = plan.chips[chip];
    for (const auto& part : chip_plan.parts) {
      for (const auto& phase : part) {
        for (const auto& chain : phase) plan.messages -= chain.shape.sends();
      }
    }
    plan.messages -= static_cast<int>(chip_plan.flows.size());
    chip_plan = ChipOpPlan{};
  }
}

long long message_count(const std::vector<ReplayOp>& ops) {
  long long n = 0;
  for (const auto& op : ops) n += op.plan != nullptr ? op.plan->messages : 0;
  return n;
}

// What a collective's plan depends on besides the mesh: two ops with the same key get the same
// plan (the same messages between the same endpoints), planned once. A training step repeats
// each layer's collectives (40 layers of LLaMA-2 13B: 892 ops, 20 distinct plans), and a
// full 16x16x16 plan of every chip takes about 1.7 MB and 10 ms.
std::string plan_key(const ProgramOp& op) {
  const CollectiveSpec& c = op.collective();
  std::string key;
  const auto put = [&key](const auto& value) { key.append(reinterpret_cast<const char*>(&value), sizeof value); };
  put(c.kind);
  put(c.axes.size());
  for (int a : c.axes) put(a);
  put(c.slices.size());
  for (const auto& slice : c.slices) {
    put(slice.stride);
    put(slice.size);
  }
  put(c.over_dcn);
  put(c.dcn_algorithm);
  put(c.bytes);
  put(c.bidirectional);
  put(c.pair_bytes.size());
  for (double b : c.pair_bytes) put(b);
  put(op.position_axis);
  key.append(op.present_at_position.begin(), op.present_at_position.end());
  return key;
}

}  // namespace

SymmetryReduction reduce_program(const TopologySpec& topology, const SimulationSettings& settings,
                                 const Program& program, Fidelity fidelity) {
  std::vector<CollectiveSpec> specs;
  std::vector<std::string> spec_names;
  std::vector<DifferingAxis> differing;   // axes whose chips differ by position (pipelines)
  for (const auto& op : program) {
    if (op.is(ProgramOpKind::Collective)) {
      specs.push_back(op.collective());
      spec_names.push_back(op.name);
    }
    // Axes (or the slices: Topology::kSliceAxis) along which chips differ stay whole.
    if (op.is(ProgramOpKind::Send)) {
      differing.push_back({op.send().axis, "op '" + op.name + "' sends point to point along it (pipeline stages)"});
    }
    if (op.position_axis >= 0) {
      differing.push_back({op.position_axis, "op '" + op.name + "' runs in an order that depends on the position"});
    }
    if (op.is(ProgramOpKind::Compute))
      for (int a : op.compute().vary_axes) differing.push_back({a, "op '" + op.name + "' computes more on some chips than others"});
  }
  const Topology real(topology);
  for (const auto& d : perturbation_differences(real)) differing.push_back({d.axis, differing_reason(d)});
  return reduce_by_symmetry(topology, specs, fidelity == Fidelity::Full, differing, spec_names,
                            settings.hop_model == HopModel::Floor);
}

PendingRun start_program(const TopologySpec& topology, const SimulationSettings& settings, const Program& program,
                         const RunOptions& options) {
  PendingRun pending;
  pending.topology = &topology;
  pending.settings = settings;
  pending.program = &program;
  pending.wall_start = std::chrono::steady_clock::now();
  auto reduction = reduce_program(topology, settings, program, options.fidelity);
  Topology real(topology);
  pending.run.emplace(RunResult{std::move(real), Topology(reduction.reduced), reduction, {}, {}, 0, 0,
                                 reduction.identity ? "full" : "reduced", {}});
  RunResult& run = *pending.run;
  const Topology& sim = run.simulated;
  spdlog::info("simulating {} of {} chips ({} fidelity)", sim.chip_count(), run.topology.chip_count(), run.fidelity);

  EndpointRegistry registry;
  for (ChipId chip = 0; chip < sim.chip_count(); ++chip) registry.get(chip, Channel::of(Channel::Kind::Chip), {});  // endpoint == chip
  std::vector<OpPlan>& plans = pending.plans;
  plans.reserve(program.size());   // ops point into it: never reallocated
  std::vector<ReplayOp>& ops = pending.ops;
  std::vector<int> plan_of(program.size(), -1);
  std::unordered_map<std::string, int> planned;   // by plan_key
  for (size_t i = 0; i < program.size(); ++i) {
    const ProgramOp& op = program[i];
    check_presence(op, run.topology);
    if (op.is(ProgramOpKind::Compute) || op.is(ProgramOpKind::HostTransfer)) continue;
    std::string key;
    if (op.is(ProgramOpKind::Collective)) {
      key = plan_key(op);
      if (auto it = planned.find(key); it != planned.end()) {
        plan_of[i] = it->second;
        continue;
      }
      plans.push_back(plan_collective(sim, reduction.real, op.collective(), registry));
    } else {
      const SendWork& send = op.send();
      plans.push_back(plan_send(sim, send.axis, send.direction, send.bytes, registry, send.round_the_end));
    }
    drop_absent_chips(plans.back(), sim, op);
    plan_of[i] = static_cast<int>(plans.size() - 1);
    if (!key.empty()) planned.emplace(std::move(key), plan_of[i]);
  }
  for (size_t i = 0; i < program.size(); ++i) {
    const ProgramOp& op = program[i];
    const ComputeWork* compute = std::get_if<ComputeWork>(&op.work);
    const HostTransferWork* host = std::get_if<HostTransferWork>(&op.work);
    const OpPlan* plan = compute || host ? nullptr : &plans[plan_of[i]];
    const double busy_s = compute ? compute->compute_s : host ? host_transfer_s(*host, topology.chip) : 0.0;
    ops.push_back({plan, busy_s, {}, op.repeat, op.after, op.position_axis, op.after_at_position, op.after_neighbour,
                   op.release_s, op.present_at_position, host != nullptr});
    if (compute && !compute->compute_s_by_position.empty()) ops.back().compute_s_by_chip = compute_by_chip(sim, op);
  }
  ReplayOptions& replay_options = pending.replay_options;
  replay_options.platform = {settings.hop_model, topology.chip.hop_latency_s, settings.link_efficiency};
  replay_options.launch_overhead_s = settings.launch_overhead_s;
  replay_options.record_hops = options.record_hops;
  replay_options.progress = options.progress;
  replay_options.progress_interval_s = options.progress_interval_s;
  for (ChipId chip = 0; chip < sim.chip_count(); ++chip) {
    if (sim.compute_slowdown(chip) != 1.0) {
      for (ChipId c = 0; c < sim.chip_count(); ++c) replay_options.chip_compute_scale.push_back(sim.compute_slowdown(c));
      break;
    }
  }
  spdlog::info("{} ops, {} endpoints, {} messages per repetition on {} simulated chips", program.size(),
               registry.endpoints().size(), message_count(ops), sim.chip_count());
  replay_options.engine = options.engine;
  if (options.engine != ReplayEngine::SimGrid) {
    const std::string why = native_replay_unsupported(ops);
    if (options.engine == ReplayEngine::Native && !why.empty())
      throw std::invalid_argument("the native replay does not cover " + why + ": use the SimGrid replay");
    replay_options.engine = why.empty() ? ReplayEngine::Native : ReplayEngine::SimGrid;
  }
  run.engine = replay_options.engine == ReplayEngine::Native ? "native" : "simgrid";
  for (const Endpoint& e : registry.endpoints()) pending.endpoint_chip.push_back(e.chip);
  pending.child = start_replay(sim, registry.endpoints(), ops, replay_options);
  return pending;
}

namespace {

// A send's figures: who receives it, its transfer time, nccl-tests' sendrecv bandwidths.
SendResult describe_send(const OperationResult& result, const Program& program, int i, const TopologySpec& topology,
                         const RunResult& run) {
  const ProgramOp& op = program[i];
  const SendWork& send = op.send();
  SendResult out;
  out.axis = send.axis;
  out.direction = send.direction;
  for (size_t j = 0; j < program.size(); ++j) {
    for (const auto& dep : program[j].after_neighbour) {
      if (dep.op == i && dep.axis == send.axis && dep.direction == send.direction) {
        (dep.round_the_end ? out.received_round_the_end_by : out.received_by).push_back(static_cast<int>(j));
      }
    }
  }
  out.axes.push_back(send.axis == Topology::kSliceAxis ? "DCN" : topology.axes[send.axis].name);
  out.over_dcn = send.axis == Topology::kSliceAxis;
  out.bytes = send.bytes;
  out.size_bytes = send.bytes;
  out.group_size = 2;
  if (result.time_s > 0) {
    out.algbw_Bps = algbw_Bps(out.size_bytes, result.time_s);
    out.busbw_Bps = out.algbw_Bps;   // nccl-tests sendrecv: busbw = algbw
  }
  return out;
}

// A send's time is its transfer, the longest on any chip (send to delivery), not the span
// from the first stage's send to the last's, which is the pipeline's skew.
double send_time_s(const RunResult& run, const ProgramOp& op, int i) {
  double longest = 0;
  for (int rep = 0; rep < op.repeat; ++rep) {
    double rep_longest = 0;
    for (ChipId chip = 0; chip < run.topology.chip_count(); ++chip) {
      if (!present_on(op, run.topology, chip)) continue;
      const auto& span = run.span(i, rep, chip);
      rep_longest = std::max(rep_longest, span.end_s - span.start_s);
    }
    longest += rep_longest;
  }
  return longest / op.repeat;
}

// A collective's figures: group, hops, nccl-tests' sizes and bandwidths, the book's closed form.
CollectiveResult describe_collective(double time_s, const CollectiveSpec& collective, const OpPlan& plan,
                                     const TopologySpec& topology, const RunResult& run, double w_uni) {
  CollectiveResult out;
  out.kind = collective.kind;
  for (int a : collective.axes) out.axes.push_back(topology.axes[a].name);
  out.over_dcn = collective.over_dcn;
  out.bytes = collective.bytes;
  out.group_size = collective_group_size(run.topology, collective);
  out.hops = critical_hops(plan);
  out.size_bytes = nccl_size_bytes(out.kind, out.bytes, out.group_size);
  if (time_s > 0) {
    out.algbw_Bps = algbw_Bps(out.size_bytes, time_s);
    out.busbw_Bps = busbw_Bps(out.kind, out.size_bytes, time_s, out.group_size);
  }
  if (FormulaResult f; analytic_time(run.topology, collective, w_uni, topology.chip.hop_latency_s, f)) out.analytic = f;
  return out;
}

// Each op's first start and last end per repetition, in one pass over the spans, over the
// chips where it is present (all of them for an op absent everywhere: its instants).
std::vector<std::vector<std::pair<double, double>>> op_extents(const Program& program, const RunResult& run) {
  std::vector<std::vector<std::pair<double, double>>> extent(program.size());
  for (size_t i = 0; i < program.size(); ++i) extent[i].assign(program[i].repeat, {1e300, 0.0});
  std::vector<char> anywhere(program.size());
  for (size_t i = 0; i < program.size(); ++i) {
    const auto& mask = program[i].present_at_position;
    anywhere[i] = mask.empty() || std::any_of(mask.begin(), mask.end(), [](char p) { return p != 0; });
  }
  for (const auto& s : run.replay.spans) {
    if (anywhere[s.op] && !present_on(program[s.op], run.simulated, s.chip)) continue;
    auto& e = extent[s.op][s.repetition];
    e.first = std::min(e.first, s.start_s);
    e.second = std::max(e.second, s.end_s);
  }
  return extent;
}

// Which real chips each simulated chip stands for: the lowest, and how many.
void map_simulated_chips(RunResult& run) {
  run.real_of_simulated.assign(run.simulated.chip_count(), -1);
  run.chips_of_simulated.assign(run.simulated.chip_count(), 0);
  for (ChipId chip = 0; chip < run.topology.chip_count(); ++chip) {
    const ChipId sim = run.reduction.representative(run.topology, run.simulated, chip);
    if (run.real_of_simulated[sim] < 0) run.real_of_simulated[sim] = chip;
    run.chips_of_simulated[sim] += 1;
  }
}

}  // namespace

RunResult finish_program(PendingRun& pending) {
  RunResult run = std::move(*pending.run);
  const TopologySpec& topology = *pending.topology;
  const SimulationSettings& settings = pending.settings;
  const Program& program = *pending.program;
  const std::vector<ReplayOp>& ops = pending.ops;
  const Topology& sim = run.simulated;
  run.replay = finish_replay(pending.child, pending.replay_options);
  // Hops in an order of their own, not the order a replay handled them in (which differs
  // between the two replays at equal instants): by arrival, then send, op, repetition, chips.
  std::sort(run.replay.hops.begin(), run.replay.hops.end(), [](const HopRecord& a, const HopRecord& b) {
    return std::tie(a.end_s, a.start_s, a.op, a.repetition, a.src_chip, a.dst_chip, a.bytes) <
           std::tie(b.end_s, b.start_s, b.op, b.repetition, b.src_chip, b.dst_chip, b.bytes);
  });
  size_t offset = 0;
  for (const auto& op : program) {
    run.first_span.push_back(offset);
    offset += static_cast<size_t>(op.repeat) * sim.chip_count();
  }

  map_simulated_chips(run);
  std::vector<const OpPlan*> plan_of_op;
  for (const ReplayOp& op : ops) plan_of_op.push_back(op.plan);
  run.peers = peer_entries(program, plan_of_op, pending.endpoint_chip, sim, run.replay.spans);

  const double w_uni = topology.chip.neighbor_bandwidth_Bps() * settings.link_efficiency;
  const auto extent = op_extents(program, run);
  for (size_t i = 0; i < program.size(); ++i) {
    const auto& op = program[i];
    OperationResult result;
    result.name = op.name;
    result.role = op.role;
    result.category = category_name(op);
    result.layer = op.layer;
    result.repeat = op.repeat;
    result.position_axis = op.position_axis;
    result.present_at_position = op.present_at_position;
    result.start_s = 1e300;
    for (const auto& [first, last] : extent[i]) {
      result.start_s = std::min(result.start_s, first);
      result.end_s = std::max(result.end_s, last);
    }
    const ChipTimes times = chip_times(program, run, static_cast<int>(i));
    result.time_s = times.time_s;
    result.chip_time_median_s = times.median_s;
    result.chip_time_max_s = times.max_s;
    result.chip_time_max_chip = times.max_chip;
    result.wait_for_peers_median_s = times.wait_median_s;
    result.wait_for_peers_max_s = times.wait_max_s;
    result.wait_for_peers_max_chip = times.wait_max_chip;
    if (op.is(ProgramOpKind::Send)) {
      result.time_s = send_time_s(run, op, static_cast<int>(i));
      result.work = describe_send(result, program, static_cast<int>(i), topology, run);
    } else if (op.is(ProgramOpKind::Collective)) {
      result.work = describe_collective(result.time_s, op.collective(), *ops[i].plan, topology, run, w_uni);
    } else if (op.is(ProgramOpKind::HostTransfer)) {
      HostTransferResult host;
      host.axes = {"host"};
      host.bytes = host.size_bytes = op.host_transfer().bytes;
      host.to_host = op.host_transfer().to_host;
      host.hops = 1;
      host.algbw_Bps = host.busbw_Bps = result.time_s > 0 ? host.bytes / result.time_s : 0.0;
      result.work = host;
    } else {
      result.work = ComputeResult{};
    }
    run.total_time_s = std::max(run.total_time_s, result.end_s);
    run.operations.push_back(std::move(result));
  }
  run.wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - pending.wall_start).count();
  spdlog::info("simulated {} messages in {:.3f} s of wall time", run.replay.messages, run.wall_time_s);
  return run;
}

RunResult run_program(const TopologySpec& topology, const SimulationSettings& settings, const Program& program,
                      const RunOptions& options) {
  PendingRun pending = start_program(topology, settings, program, options);
  return finish_program(pending);
}

}  // namespace podsim
