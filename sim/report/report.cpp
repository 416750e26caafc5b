#include "sim/report/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "sim/report/price.hpp"
#include "sim/report/summary_writer.hpp"

#include "sim/report/trace_counters.hpp"
#include "sim/report/trace_time.hpp"
#include "sim/scenario/units.hpp"

namespace podsim {

namespace {

using Json = nlohmann::ordered_json;

std::string format(const char* fmt, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, value);
  return buf;
}

double relative_error(double simulated, double analytic) {
  if (analytic == 0) return simulated == 0 ? 0.0 : 1.0;
  return (simulated - analytic) / analytic;
}

Json topology_json(const Scenario& scenario, const RunResult& run) {
  const Topology& topo = run.topology;
  Json t;
  t["chip"] = scenario.topology.chip.name;
  Json axes = Json::array();
  for (const auto& a : scenario.topology.axes) {
    axes.push_back({{"name", a.name}, {"size", a.size}, {"wraparound", topo.wraps(&a - &scenario.topology.axes[0])}});
  }
  t["axes"] = axes;
  t["slices"] = topo.slice_count();
  t["chips"] = topo.chip_count();
  t["hosts"] = topo.host_count();
  t["diameter_hops"] = topo.diameter();
  t["bisection_links"] = topo.bisection_links();
  t["ici_link_bandwidth_Bps"] = scenario.topology.chip.neighbor_bandwidth_Bps();
  t["hop_latency_s"] = scenario.topology.chip.hop_latency_s;
  t["dcn_bandwidth_per_host_Bps"] = scenario.topology.chip.dcn_bandwidth_per_host_Bps;
  t["dcn_oversubscription"] = scenario.topology.dcn_oversubscription;
  // What differs (topology/perturbation.hpp), with how many chips, directed links or NICs
  // each perturbation selected on the real pod.
  if (!topo.spec().perturbations.empty()) {
    Json list = Json::array();
    for (size_t i = 0; i < topo.spec().perturbations.size(); ++i) {
      const Perturbation& p = topo.spec().perturbations[i];
      Json e;
      e["name"] = p.name;
      e["kind"] = to_string(p.kind);
      e["targets"] = perturbation_target_count(topo, i);
      if (p.kind == PerturbationKind::SlowChips) {
        e["compute_slowdown"] = p.compute_slowdown;
      } else {
        if (p.kind == PerturbationKind::Links) {
          e["axis"] = topo.spec().axes[p.axis].name;
          e["direction"] = p.direction == 0 ? "both ways" : p.direction > 0 ? "+" : "-";
        }
        e["bandwidth_scale"] = p.bandwidth_scale;
        e["extra_latency_s"] = p.extra_latency_s;
      }
      list.push_back(e);
    }
    t["perturbations"] = list;
  }
  return t;
}

}  // namespace

std::string summary_json(const Scenario& scenario, const RunResult& run, const ReportOptions& options,
                         const TrainingReport* training, const InferenceReport* inference) {
  return write_summary({scenario, options, &run, training, inference});
}

// The step summaries' parts the field table's getters call (summary_field_table.hpp).
namespace summary_parts {

std::string podsim_version(const SummaryInputs&) { return PODSIM_VERSION; }

// What the symmetry reduction simulated of each axis and the proof it rests on
// (collectives/symmetry.hpp).
Json symmetry(const SummaryInputs& in) {
  const RunResult& run = *in.run;
  Json reduction = Json::array();
  for (const auto& axis : run.reduction.axes) {
    reduction.push_back({{"axis", axis.axis},
                         {"real_size", axis.real_size},
                         {"simulated_size", axis.simulated_size},
                         {"period", axis.period},
                         {"reason", axis.reason}});
  }
  if (run.reduction.slices.real_size > 1) {
    const auto& s = run.reduction.slices;
    reduction.push_back({{"axis", s.axis},
                         {"real_size", s.real_size},
                         {"simulated_size", s.simulated_size},
                         {"period", s.period},
                         {"reason", s.reason}});
  }
  return reduction;
}

Json step_topology(const SummaryInputs& in) { return topology_json(in.scenario, *in.run); }

Json training_workload(const SummaryInputs& in) {
  const auto& plan = in.scenario.training().plan;
  Json t;
  t["model"] = in.scenario.training().model.name;
  t["strategy"] = in.training->strategy;
  t["global_batch_tokens"] = plan.global_batch_tokens;
  t["sequence_length"] = plan.sequence_length;
  t["microbatches"] = plan.microbatches;
  t["matmul_efficiency"] = plan.matmul_efficiency;
  return t;
}

// Keyed by block ("attn", "mlp"), so an expectation can name per_layer.mlp.t_comms_s.
Json per_layer(const SummaryInputs& in) {
  Json layers = Json::object();
  for (const auto& l : in.training->per_layer) {
    layers[l.block] = {{"t_math_s", l.t_math_s},
                       {"t_comms_s", l.t_comms_s},
                       {"t_math_forward_s", l.t_math_forward_s},
                       {"t_comms_forward_s", l.t_comms_forward_s},
                       {"book_t_math_s", l.book_t_math_s},
                       {"book_t_comms_s", l.book_t_comms_s}};
  }
  return layers;
}

Json inference_workload(const SummaryInputs& in) {
  const auto& plan = in.scenario.inference().plan;
  const InferenceReport& r = *in.inference;
  return {{"model", in.scenario.inference().model.name},
          {"phase", r.decode ? "decode" : "prefill"},
          {"batch", plan.batch},
          {"context_length", r.decode ? plan.context_length : plan.prompt_length},
          {"weight_bytes", plan.weight_bytes},
          {"kv_bytes", plan.kv_bytes},
          {"model_parallelism", r.layout.model_degree},
          {"expert_parallelism", r.layout.expert_degree}};
}

Json operations(const SummaryInputs& in) {
  Json ops = Json::array();
  for (const auto& op : in.run->operations) {
    Json o;
    o["name"] = op.name;
    o["kind"] = op.kind_name();
    if (!op.category.empty()) o["category"] = op.category;
    if (op.layer >= 0) o["layer"] = op.layer;
    o["repeat"] = op.repeat;
    o["time_s"] = op.time_s;
    o["start_s"] = op.start_s;
    o["end_s"] = op.end_s;
    if (op.compute) {
      ops.push_back(o);
      continue;
    }
    o["axes"] = op.axes;
    o["dcn"] = op.over_dcn;
    o["bytes"] = op.bytes;
    o["size_bytes"] = op.size_bytes;
    o["group_size"] = op.group_size;
    o["hops"] = op.hops;
    o["algbw_Bps"] = op.algbw_Bps;
    o["busbw_Bps"] = op.busbw_Bps;
    if (op.has_analytic) {
      o["analytic_s"] = op.analytic.time_s;
      o["rel_error"] = relative_error(op.time_s, op.analytic.time_s);
      o["regime"] = op.analytic.regime;
      o["formula"] = op.analytic.formula;
      o["formula_source"] = op.analytic.source;
    } else {
      o["analytic_s"] = nullptr;
    }
    ops.push_back(o);
  }
  return ops;
}

}  // namespace summary_parts

std::string operations_csv(const RunResult& run) {
  std::string out =
      "name,kind,axes,dcn,bytes,size_bytes,repeat,group_size,time_s,algbw_Bps,busbw_Bps,analytic_s,rel_error\n";
  for (const auto& op : run.operations) {
    if (op.compute) {
      out += op.name + ",compute,,false,0,0," + std::to_string(op.repeat) + ",1," + format("%.17g", op.time_s) + ",,,,\n";
      continue;
    }
    std::string axes;
    for (const auto& a : op.axes) axes += (axes.empty() ? "" : "+") + a;
    out += op.name + "," + op.kind_name() + "," + axes + "," + (op.over_dcn ? "true" : "false") + "," +
           format("%.17g", op.bytes) + "," + format("%.17g", op.size_bytes) + "," + std::to_string(op.repeat) + "," + std::to_string(op.group_size) + "," +
           format("%.17g", op.time_s) + "," + format("%.17g", op.algbw_Bps) + "," + format("%.17g", op.busbw_Bps) + ",";
    if (op.has_analytic) {
      out += format("%.17g", op.analytic.time_s) + "," + format("%.17g", relative_error(op.time_s, op.analytic.time_s));
    } else {
      out += ",";
    }
    out += "\n";
  }
  return out;
}

namespace {

// Greedy lanes so X events on one track nest: a span goes on the first lane that is free.
class Lanes {
 public:
  int place(double start, double end) {
    for (size_t i = 0; i < ends_.size(); ++i) {
      if (ends_[i] <= start) {
        ends_[i] = end;
        return static_cast<int>(i);
      }
    }
    ends_.push_back(end);
    return static_cast<int>(ends_.size() - 1);
  }
  int count() const { return static_cast<int>(ends_.size()); }

 private:
  std::vector<double> ends_;
};

// "ts":..,"dur":.. from the span's endpoints rounded to the nanosecond (trace_time.hpp), as
// nlohmann-json writes doubles: the shortest text that reads back the same (1.001, not 1.000999...).
std::string ts_dur(double start_s, double end_s) {
  const TraceTime t = trace_time(start_s, end_s);
  return "\"ts\":" + nlohmann::json(t.ts_us).dump() + ",\"dur\":" + nlohmann::json(t.dur_us).dump();
}

}  // namespace

namespace {

// A whole-nanosecond time strictly inside a span as the trace writes it (trace_time.hpp), as
// near `want_s` as allowed: Perfetto binds a flow event to the slice open on its track at its
// time ("s" always, "f" with bp "e"), and at a span's first or last nanosecond a neighbour
// touching it may be the one open. Spans of 1 ns or less give their start.
long long inside_ns(double start_s, double end_s, double want_s) {
  const long long start_ns = std::llround(start_s * 1e9);
  const long long end_ns = std::max(start_ns, std::llround(end_s * 1e9));
  const long long lo = end_ns - start_ns >= 2 ? start_ns + 1 : start_ns;
  const long long hi = std::max(lo, end_ns - 1);
  return std::clamp(std::llround(want_s * 1e9), lo, hi);
}

std::string ns_as_us(long long ns) { return nlohmann::json(static_cast<double>(ns) / 1e3).dump(); }

// The tracks of one traced chip: a lane per (op, repetition) and per hop it receives.
struct ChipTracks {
  std::vector<int> span_lane;   // by flat (op, repetition) index
  int collective_lanes = 0;     // compute (if any) and communication lanes
  std::vector<int> hop_lane;    // by position in the receiving chip's hop list
  int hop_lanes = 0;
};

}  // namespace

std::string trace_json(const RunResult& run, TraceDetail detail, const TraceOptions& options, TraceStats* stats) {
  const Topology& topo = run.topology;
  const Topology& sim = run.simulated;
  constexpr int kLaneStride = 1000;
  TraceStats counts;
  std::string out = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  bool first = true;
  auto emit = [&](const std::string& event) {
    if (!first) out += ",\n";
    first = false;
    out += event;
  };
  for (int s = 0; s < topo.slice_count(); ++s) {
    emit("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" + std::to_string(s) + ",\"args\":{\"name\":\"slice " +
         std::to_string(s) + "\"}}");
  }
  // Which chips to draw: all, or on a large pod the first chip of each symmetry class.
  std::vector<bool> traced(topo.chip_count(), true);
  if (topo.chip_count() > kMaxTracedChips) {
    std::vector<bool> seen(sim.chip_count(), false);
    for (ChipId chip = 0; chip < topo.chip_count(); ++chip) {
      const ChipId rep = run.reduction.representative(topo, sim, chip);
      traced[chip] = !seen[rep];
      seen[rep] = true;
    }
  }
  // The traced real chips of each simulated chip: hops are recorded on the simulated mesh and
  // drawn on every traced chip that repeats their receiver.
  std::vector<std::vector<ChipId>> drawn_as(sim.chip_count());
  for (ChipId chip = 0; chip < topo.chip_count(); ++chip) {
    if (traced[chip]) drawn_as[run.reduction.representative(topo, sim, chip)].push_back(chip);
  }
  // Hops per receiving simulated chip, in time order.
  std::vector<std::vector<size_t>> hops_by_chip(sim.chip_count());
  if (detail == TraceDetail::Hops) {
    for (size_t i = 0; i < run.replay.hops.size(); ++i) hops_by_chip[run.replay.hops[i].dst_chip].push_back(i);
  }
  const bool has_compute = std::any_of(run.operations.begin(), run.operations.end(),
                                       [](const OperationResult& op) { return op.compute; });
  std::vector<size_t> op_base(run.operations.size() + 1, 0);   // flat (op, repetition) index
  for (size_t op = 0; op < run.operations.size(); ++op) op_base[op + 1] = op_base[op] + run.operations[op].repeat;
  // Lanes first, for every traced chip, so flows can name the track of a span on another chip.
  // Lane 0 is the compute units (a program chains its compute ops, so they never overlap);
  // communication takes the next lanes, hops the ones after.
  const int comm_base = has_compute ? 1 : 0;
  std::vector<ChipTracks> tracks(topo.chip_count());
  for (ChipId chip = 0; chip < topo.chip_count(); ++chip) {
    if (!traced[chip]) continue;
    ChipTracks& t = tracks[chip];
    t.span_lane.resize(op_base.back());
    Lanes comm_lanes;
    for (size_t op = 0; op < run.operations.size(); ++op) {
      for (int rep = 0; rep < run.operations[op].repeat; ++rep) {
        const auto& span = run.span(static_cast<int>(op), rep, chip);
        t.span_lane[op_base[op] + rep] =
            run.operations[op].compute ? 0 : comm_base + comm_lanes.place(span.start_s, span.end_s);
      }
    }
    t.collective_lanes = comm_base + comm_lanes.count();
    Lanes hop_lanes;
    for (size_t i : hops_by_chip[run.reduction.representative(topo, sim, chip)]) {
      const HopRecord& h = run.replay.hops[i];
      t.hop_lane.push_back(t.collective_lanes + hop_lanes.place(h.start_s, h.end_s));
    }
    t.hop_lanes = hop_lanes.count();
  }
  auto tid_of = [&](ChipId chip, int lane) {
    const int local = chip - topo.slice_of(chip) * topo.chips_per_slice();
    return local * kLaneStride + lane;
  };
  for (ChipId chip = 0; chip < topo.chip_count(); ++chip) {
    if (!traced[chip]) continue;
    const ChipTracks& t = tracks[chip];
    const int pid = topo.slice_of(chip);
    const std::string name = topo.chip_name(chip);
    for (size_t op = 0; op < run.operations.size(); ++op) {
      const OperationResult& o = run.operations[op];
      for (int rep = 0; rep < o.repeat; ++rep) {
        const auto& span = run.span(static_cast<int>(op), rep, chip);
        std::string args = "\"repetition\":" + std::to_string(rep);
        if (!o.compute) args += ",\"bytes\":" + format("%.17g", o.bytes);
        const std::string cat = o.compute ? o.category : o.kind_name();
        emit("{\"name\":\"" + o.name + "\",\"cat\":\"" + cat + "\",\"ph\":\"X\"," + ts_dur(span.start_s, span.end_s) +
             ",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid_of(chip, t.span_lane[op_base[op] + rep])) +
             ",\"args\":{" + args + "}}");
      }
    }
    const auto& hops = hops_by_chip[run.reduction.representative(topo, sim, chip)];
    for (size_t k = 0; k < hops.size(); ++k) {
      const HopRecord& h = run.replay.hops[hops[k]];
      emit("{\"name\":\"hop\",\"cat\":\"hop\",\"ph\":\"X\"," + ts_dur(h.start_s, h.end_s) + ",\"pid\":" +
           std::to_string(pid) + ",\"tid\":" + std::to_string(tid_of(chip, t.hop_lane[k])) + ",\"args\":{\"op\":\"" +
           run.operations[h.op].name + "\",\"bytes\":" + format("%.17g", h.bytes) + "}}");
    }
    const int total_lanes = std::max(1, t.collective_lanes + t.hop_lanes);
    for (int lane = 0; lane < total_lanes; ++lane) {
      const int tid = tid_of(chip, lane);
      std::string label = name;
      if (has_compute && lane == 0) label += " compute";
      else if (lane < t.collective_lanes) label += has_compute ? " comm" : "";
      else label += " hops";
      const int index_in_group =
          lane < comm_base ? 0 : lane < t.collective_lanes ? lane - comm_base : lane - t.collective_lanes;
      if (index_in_group > 0) label += " #" + std::to_string(index_in_group + 1);
      emit("{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) +
           ",\"args\":{\"name\":\"" + label + "\"}}");
      emit("{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":" + std::to_string(pid) + ",\"tid\":" +
           std::to_string(tid) + ",\"args\":{\"sort_index\":" + std::to_string(tid) + "}}");
    }
  }

  // Flows. Perfetto pairs "s" and "f" by (id, cat, name) (json_trace_parser: flow v1); ids
  // count up from 1 in the order written, so they are unique and the same on every run.
  unsigned long long next_flow_id = 1;
  auto flow = [&](const std::string& cat, const std::string& name, ChipId from, int from_lane, long long from_ns,
                  ChipId to, int to_lane, long long to_ns) {
    const std::string id = std::to_string(next_flow_id++);
    emit("{\"name\":\"" + name + "\",\"cat\":\"" + cat + "\",\"ph\":\"s\",\"id\":" + id + ",\"ts\":" + ns_as_us(from_ns) +
         ",\"pid\":" + std::to_string(topo.slice_of(from)) + ",\"tid\":" + std::to_string(tid_of(from, from_lane)) + "}");
    // bp "e": bind to the slice enclosing ts, not the next slice to begin on the track.
    emit("{\"name\":\"" + name + "\",\"cat\":\"" + cat + "\",\"ph\":\"f\",\"bp\":\"e\",\"id\":" + id + ",\"ts\":" +
         ns_as_us(to_ns) + ",\"pid\":" + std::to_string(topo.slice_of(to)) + ",\"tid\":" +
         std::to_string(tid_of(to, to_lane)) + "}");
  };
  // Pipeline sends: from the end of the sender's span to the start of the span of the op on
  // the receiving chip that waited for it (ProgramOp::after_neighbour).
  for (size_t op = 0; op < run.operations.size(); ++op) {
    const OperationResult& o = run.operations[op];
    if (!o.send) continue;
    for (int rep = 0; rep < o.repeat; ++rep) {
      for (ChipId chip = 0; chip < topo.chip_count(); ++chip) {
        if (!traced[chip]) continue;
        auto to = topo.step_along(chip, o.send_axis, o.send_direction);
        const bool round = !to && !o.received_round_the_end_by.empty();
        if (round) to = topo.round_the_end(chip, o.send_axis, o.send_direction);
        if (!to || !traced[*to]) continue;
        const auto& from_span = run.span(static_cast<int>(op), rep, chip);
        const long long from_ns = inside_ns(from_span.start_s, from_span.end_s, from_span.end_s);
        for (int dependent : round ? o.received_round_the_end_by : o.received_by) {
          if (rep >= run.operations[dependent].repeat) continue;
          const auto& to_span = run.span(dependent, rep, *to);
          const long long to_ns = inside_ns(to_span.start_s, to_span.end_s, to_span.start_s);
          if (to_ns < from_ns) continue;   // an arrow back in time would not be a dependency
          flow("send_flow", o.name, chip, tracks[chip].span_lane[op_base[op] + rep], from_ns, *to,
               tracks[*to].span_lane[op_base[dependent] + rep], to_ns);
          counts.send_flows += 1;
        }
      }
    }
  }
  // Hops: from the source chip's span of the op at the hop's start to the hop on the
  // destination's hop track.
  if (detail == TraceDetail::Hops) {
    std::vector<size_t> position(run.replay.hops.size(), 0);   // in its receiver's hop list
    for (const auto& list : hops_by_chip) {
      for (size_t k = 0; k < list.size(); ++k) position[list[k]] = k;
    }
    for (size_t i = 0; i < run.replay.hops.size(); ++i) {
      const HopRecord& h = run.replay.hops[i];
      // The step the hop takes on the simulated mesh, if it is one link of an axis: each real
      // receiver's sender is then its real neighbour the other way (a real chip of the same
      // class as the simulated sender). Other hops join the first traced chips of their classes.
      int axis = -1, direction = 0;
      for (int a = 0; a < sim.axis_count() && axis < 0; ++a) {
        for (int d : {+1, -1}) {
          if (sim.neighbor(h.src_chip, a, d) == std::optional<ChipId>(h.dst_chip)) {
            axis = a;
            direction = d;
            break;
          }
        }
      }
      for (ChipId to : drawn_as[h.dst_chip]) {
        ChipId from = -1;
        if (axis >= 0) {
          const auto n = topo.neighbor(to, axis, -direction);
          if (n && traced[*n] && run.reduction.representative(topo, sim, *n) == h.src_chip) from = *n;
        } else if (to == drawn_as[h.dst_chip].front() && !drawn_as[h.src_chip].empty()) {
          from = drawn_as[h.src_chip].front();
        }
        if (from < 0 || counts.hop_flows >= options.max_hop_flows) {
          counts.hop_flows_omitted += 1;
          continue;
        }
        const auto& from_span = run.span(h.op, h.repetition, from);
        const long long from_ns = inside_ns(from_span.start_s, from_span.end_s, h.start_s);
        const long long to_ns = inside_ns(h.start_s, h.end_s, h.start_s);
        if (to_ns < from_ns) {
          counts.hop_flows_omitted += 1;
          continue;
        }
        flow("hop_flow", "hop", from, tracks[from].span_lane[op_base[h.op] + h.repetition], from_ns, to,
             tracks[to].hop_lane[position[i]], to_ns);
        counts.hop_flows += 1;
      }
    }
  }

  // Counters, on a process of their own after the slices.
  const std::string pod_pid = std::to_string(topo.slice_count());
  emit("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" + pod_pid + ",\"args\":{\"name\":\"pod counters\"}}");
  auto counter = [&](const std::string& name, const std::string& pid, long long ns, const std::string& args) {
    emit("{\"name\":\"" + name + "\",\"ph\":\"C\",\"ts\":" + ns_as_us(ns) + ",\"pid\":" + pid + ",\"args\":{" + args +
         "}}");
  };
  auto number = [](double v) { return nlohmann::json(v).dump(); };
  if (detail == TraceDetail::Hops) {
    const LinkUse use = link_use_from_hops(run);
    if (!use.axes.empty() && use.bucket_s > 0) {
      const size_t buckets = use.bytes[0].size();
      for (size_t b = 0; b <= buckets; ++b) {   // the last one returns to 0 at the end
        std::string args;
        for (size_t a = 0; a < use.axes.size(); ++a) {
          args += (a ? ",\"" : "\"") + use.axes[a] + "\":" + number(b < buckets ? use.utilisation(a, b) : 0.0);
        }
        counter("link utilisation (fraction of capacity)", pod_pid, std::llround(b * use.bucket_s * 1e9), args);
      }
    }
  } else {
    for (const AxisActivity& activity : collective_activity(run, traced)) {
      const std::string name = "collective activity " + activity.axis + " (fraction of traced chips)";
      // One step per whole nanosecond: where rounding merges two, the later value holds.
      for (size_t k = 0; k < activity.steps.size(); ++k) {
        const long long ns = std::llround(activity.steps[k].time_s * 1e9);
        if (k + 1 < activity.steps.size() && std::llround(activity.steps[k + 1].time_s * 1e9) == ns) continue;
        counter(name, pod_pid, ns, "\"value\":" + number(activity.steps[k].fraction));
      }
    }
  }
  if (options.hbm_used_bytes >= 0) {
    // The memory report's static figure: the same on every chip (every chip runs the same program).
    for (int s = 0; s < topo.slice_count(); ++s) {
      for (long long ns : {0LL, std::llround(run.total_time_s * 1e9)}) {
        counter("HBM used (bytes)", std::to_string(s), ns, "\"per chip\":" + number(options.hbm_used_bytes));
      }
    }
  }
  out += "\n],\"otherData\":{\"send_flows\":" + std::to_string(counts.send_flows) +
         ",\"hop_flows\":" + std::to_string(counts.hop_flows) +
         ",\"hop_flows_omitted\":" + std::to_string(counts.hop_flows_omitted) +
         ",\"max_hop_flows\":" + std::to_string(options.max_hop_flows) + "}}\n";
  if (stats != nullptr) *stats = counts;
  return out;
}

namespace {

// One line naming what differs, when something does; the book's formulas describe the pod
// without it.
std::string perturbations_line(const RunResult& run) {
  const Topology& topo = run.topology;
  const auto& list = topo.spec().perturbations;
  if (list.empty()) return "";
  std::string out = "perturbations (the book columns are for the pod without them):";
  for (size_t i = 0; i < list.size(); ++i) {
    const Perturbation& p = list[i];
    const int n = perturbation_target_count(topo, i);
    out += (i ? "; " : " ") + p.name + ": " + std::to_string(n);
    if (p.kind == PerturbationKind::SlowChips) {
      out += n == 1 ? " chip" : " chips";
      out += format(", compute x%g", p.compute_slowdown);
      continue;
    }
    out += p.kind == PerturbationKind::Nics ? (n == 1 ? " NIC" : " NICs")
                                            : " directed " + topo.spec().axes[p.axis].name + (n == 1 ? " link" : " links");
    if (p.bandwidth_scale != 1.0) out += format(", bandwidth x%g", p.bandwidth_scale);
    if (p.extra_latency_s > 0) out += ", latency +" + human_time(p.extra_latency_s);
  }
  return out + "\n";
}

}  // namespace

std::string summary_table(const Scenario& scenario, const RunResult& run) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%s: %d chips (%s), hop model %s, simulated %d chips (%s)\n",
                scenario.name.c_str(), run.topology.chip_count(), scenario.topology.chip.name.c_str(),
                std::string(to_string(scenario.hop_model)).c_str(), run.simulated.chip_count(), run.fidelity.c_str());
  out += line;
  out += perturbations_line(run);
  std::snprintf(line, sizeof line, "%-16s %-15s %-6s %11s %11s %12s %12s %11s %8s\n", "operation", "kind", "axes",
                "bytes", "time", "algbw", "busbw", "book", "error");
  out += line;
  for (const auto& op : run.operations) {
    std::string axes;
    for (const auto& a : op.axes) axes += a;
    if (op.over_dcn) axes += axes.empty() ? "DCN" : "+DCN";
    const std::string book = op.has_analytic ? human_time(op.analytic.time_s) : "-";
    const double rel = op.has_analytic ? relative_error(op.time_s, op.analytic.time_s) : 0.0;
    const std::string err = op.has_analytic ? format("%+.2f%%", std::fabs(rel) < 5e-7 ? 0.0 : 100 * rel) : "-";
    std::snprintf(line, sizeof line, "%-16s %-15s %-6s %11s %11s %12s %12s %11s %8s\n", op.name.c_str(),
                  op.kind_name().c_str(), axes.c_str(), human_bytes(op.bytes).c_str(),
                  human_time(op.time_s).c_str(), human_bandwidth(op.algbw_Bps).c_str(),
                  human_bandwidth(op.busbw_Bps).c_str(), book.c_str(), err.c_str());
    out += line;
  }
  std::snprintf(line, sizeof line, "total simulated time %s, wall time %s\n", human_time(run.total_time_s).c_str(),
                human_time(run.wall_time_s).c_str());
  out += line;
  return out;
}

}  // namespace podsim

namespace podsim {

std::string training_table(const Scenario& scenario, const RunResult& run, const TrainingReport& r) {
  std::string out;
  char line[512];
  const auto& plan = scenario.training().plan;
  std::snprintf(line, sizeof line, "%s: %s on %d chips (%s), %s, batch %.0f tokens x %d, simulated %d chips (%s)\n",
                scenario.name.c_str(), scenario.training().model.name.c_str(), run.topology.chip_count(),
                scenario.topology.chip.name.c_str(), r.strategy.c_str(), plan.global_batch_tokens, plan.sequence_length,
                run.simulated.chip_count(), run.fidelity.c_str());
  out += line;
  out += perturbations_line(run);
  std::snprintf(line, sizeof line,
                "step time %s, MFU %.1f%% (HFU %.1f%%), %.1f TFLOP/s/chip, %.0f tokens/s/chip, %.3g B parameters\n",
                human_time(r.step_time_s).c_str(), 100 * r.mfu, 100 * r.hfu, r.tflops_per_s_per_chip,
                r.tokens_per_s_per_chip, r.parameters / 1e9);
  out += line;
  if (r.steps_to_train > 0) {
    const auto& chip = scenario.topology.chip;
    out += "time to train: " + time_to_train_text(r, chip.chip_hour_price_usd, price_origin(chip)) + "\n";
  }
  if (r.pipeline_bubble_fraction > 0) {
    std::snprintf(line, sizeof line, "pipeline bubble %.1f%% of the first stage's span (waiting on other stages)\n", 100 * r.pipeline_bubble_fraction);
    out += line;
  }
  std::string by_axis;
  for (const auto& [axis, seconds] : r.exposed_comm_by_axis_s) by_axis += " " + axis + " " + human_time(seconds);
  std::snprintf(line, sizeof line, "compute %s, exposed communication %s", human_time(r.compute_time_s).c_str(),
                human_time(r.exposed_comm_s).c_str());
  out += line;
  out += by_axis.empty() ? "\n" : " (by axis:" + by_axis + ")\n";
  if (r.moe) {
    const auto& m = r.moe_stats;
    std::snprintf(line, sizeof line,
                  "MoE: %d-way expert parallel (%d experts per chip); AllToAll %s, %s exposed; %.2f%% of tokens "
                  "dropped; busiest expert %.2fx the mean, busiest chip %.2fx (worst layer %.2fx)\n",
                  m.expert_degree, m.experts_per_chip, human_time(r.all_to_all_time_s).c_str(),
                  human_time(r.exposed_all_to_all_s).c_str(), 100 * m.dropped_fraction, m.busiest_expert_over_mean,
                  m.busiest_chip_over_mean, m.max_busiest_chip_over_mean);
    out += line;
  }
  std::string in_flight;
  if (r.memory.gathered_weights_bytes > 0) in_flight += ", gathered weights " + human_bytes(r.memory.gathered_weights_bytes);
  if (r.memory.ring_blocks_bytes > 0) in_flight += ", ring blocks " + human_bytes(r.memory.ring_blocks_bytes);
  std::snprintf(line, sizeof line,
                "memory per chip %s of %s HBM (%s): params %s, grads %s, optimizer %s, activations %s, logits %s%s\n",
                human_bytes(r.memory.total_bytes).c_str(), human_bytes(scenario.topology.chip.hbm_bytes).c_str(),
                r.fits_hbm ? "fits" : "DOES NOT FIT", human_bytes(r.memory.params_bytes).c_str(),
                human_bytes(r.memory.grads_bytes).c_str(), human_bytes(r.memory.optimizer_bytes).c_str(),
                human_bytes(r.memory.activations_bytes).c_str(), human_bytes(r.memory.logits_bytes).c_str(),
                in_flight.c_str());
  out += line;
  std::snprintf(line, sizeof line, "memory peak on the timeline %s at %s (chip 0)\n",
                human_bytes(r.memory_peak_bytes).c_str(), human_time(r.memory_peak_at_s).c_str());
  out += line;
  std::snprintf(line, sizeof line, "layer %d (fwd+bwd)  %10s %10s %12s %12s\n", scenario.training().model.layers / 2,
                "T_math", "T_comms", "book T_math", "book T_comms");
  out += line;
  for (const auto& l : r.per_layer) {
    if (l.t_math_s == 0 && l.t_comms_s == 0) continue;   // pipelines run stages, not layers
    std::snprintf(line, sizeof line, "  %-16s %10s %10s %12s %12s\n", l.block.c_str(), human_time(l.t_math_s).c_str(),
                  human_time(l.t_comms_s).c_str(), human_time(l.book_t_math_s).c_str(),
                  human_time(l.book_t_comms_s).c_str());
    out += line;
  }
  std::snprintf(line, sizeof line, "wall time %s\n", human_time(run.wall_time_s).c_str());
  out += line;
  return out;
}

}  // namespace podsim

namespace podsim {

std::string inference_table(const Scenario& scenario, const RunResult& run, const InferenceReport& r) {
  std::string out;
  char line[512];
  const auto& plan = scenario.inference().plan;
  // 2D weight-stationary: D split X ways, F (heads) the rest (inference.md Question 7).
  int d_ways = 1;
  for (int a : plan.d_axes) d_ways *= run.topology.axis_size(a);
  const std::string sharding = plan.d_axes.empty()
                                   ? std::to_string(r.layout.model_degree) + "-way model parallel"
                                   : "2D weight-stationary, D " + std::to_string(d_ways) + "-way x F " +
                                         std::to_string(r.layout.model_degree / d_ways) + "-way";
  std::snprintf(line, sizeof line, "%s: %s %s on %d chips (%s), batch %d, %d-token %s, %s\n",
                scenario.name.c_str(), scenario.inference().model.name.c_str(), r.decode ? "decode step" : "prefill",
                run.topology.chip_count(), scenario.topology.chip.name.c_str(), plan.batch,
                r.decode ? plan.context_length : plan.prompt_length, r.decode ? "context" : "prompts",
                sharding.c_str());
  out += line;
  out += perturbations_line(run);
  std::snprintf(line, sizeof line, "%s %s (rule of thumb %s): rooflines %s, collectives on the critical path %s\n",
                r.decode ? "step" : "prefill", human_time(r.step_time_s).c_str(),
                human_time(r.layout.rule_of_thumb_s).c_str(), human_time(r.compute_time_s).c_str(),
                human_time(r.exposed_comm_s).c_str());
  out += line;
  std::snprintf(line, sizeof line, "%.0f tokens/s, %.1f tokens/s/chip; KV cache %s per token; max batch %d\n",
                r.tokens_per_s, r.tokens_per_s_per_chip, human_bytes(r.layout.kv_cache_bytes_per_token).c_str(),
                r.layout.max_batch);
  out += line;
  // No power-of-two slice up to 8192 chips holds the weights: say so rather than "0 chips".
  char smallest[96] = "no slice of up to 8192 chips holds the weights";
  if (r.layout.smallest_slice_chips > 0)
    std::snprintf(smallest, sizeof smallest, "smallest slice %d chips with room for %d caches",
                  r.layout.smallest_slice_chips, r.layout.smallest_slice_kv_caches);
  std::snprintf(line, sizeof line, "memory per chip %s of %s HBM (%s); %s\n",
                human_bytes(r.layout.memory_per_chip_bytes).c_str(), human_bytes(scenario.topology.chip.hbm_bytes).c_str(),
                r.layout.fits_hbm ? "fits" : "DOES NOT FIT", smallest);
  out += line;
  return out;
}

}  // namespace podsim
