#include "sim/report/run_trace.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "sim/report/perfetto_trace.hpp"
#include "sim/report/trace_counters.hpp"

namespace podsim {

namespace {

// A chip's tracks are tids local * kLaneStride + lane within its slice's process.
constexpr int kLaneStride = 1000;

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

// A whole-nanosecond time strictly inside a span as the trace writes it (perfetto_trace.hpp),
// as near `want_s` as allowed: Perfetto binds a flow event to the slice open on its track at
// its time ("s" always, "f" with bp "e"), and at a span's first or last nanosecond a neighbour
// touching it may be the one open. Spans of 1 ns or less give their start.
long long inside_ns(double start_s, double end_s, double want_s) {
  const long long start_ns = trace_ns(start_s);
  const long long end_ns = std::max(start_ns, trace_ns(end_s));
  const long long lo = end_ns - start_ns >= 2 ? start_ns + 1 : start_ns;
  const long long hi = std::max(lo, end_ns - 1);
  return std::clamp(trace_ns(want_s), lo, hi);
}

// The tracks of one traced chip: a lane per (op, repetition) and per hop it receives.
struct ChipTracks {
  std::vector<int> span_lane;   // by flat (op, repetition) index
  int collective_lanes = 0;     // compute (if any) and communication lanes
  std::vector<int> hop_lane;    // by position in the receiving chip's hop list
  int hop_lanes = 0;
};

// What the trace draws of a run: which chips, and the track of every span and hop on them.
struct TraceLayout {
  const RunResult& run;
  const Topology& topo;
  const Topology& sim;
  std::vector<bool> traced;                       // by real chip
  std::vector<std::vector<ChipId>> drawn_as;      // by simulated chip: the traced real chips repeating it
  std::vector<std::vector<size_t>> hops_by_chip;  // by receiving simulated chip, in time order
  bool has_compute = false;
  int comm_base = 0;                              // the first communication lane
  std::vector<size_t> op_base;                    // flat (op, repetition) index of each op's first
  std::vector<ChipTracks> tracks;                 // by real chip (traced ones only)

  ChipId representative(ChipId chip) const { return run.reduction.representative(topo, sim, chip); }
  const std::vector<size_t>& hops_of(ChipId chip) const { return hops_by_chip[representative(chip)]; }
  int pid(ChipId chip) const { return topo.slice_of(chip); }
  int tid(ChipId chip, int lane) const {
    const int local = chip - topo.slice_of(chip) * topo.chips_per_slice();
    return local * kLaneStride + lane;
  }
  int span_lane(ChipId chip, size_t op, int rep) const { return tracks[chip].span_lane[op_base[op] + rep]; }
};

// The spans one chip draws: every op's repetitions.
size_t spans_per_chip(const RunResult& run) {
  size_t n = 0;
  for (const auto& op : run.operations) n += static_cast<size_t>(op.repeat);
  return std::max<size_t>(n, 1);
}

// Which chips to draw: all; on a large pod the first chip of each symmetry class; and where
// those are too many, the chips asked for, the perturbed ones, then every k-th class up to the
// limits (lowest first, so the choice is the same every run).
std::vector<bool> traced_chips(const RunResult& run, const TraceOptions& options, TraceStats& stats) {
  const Topology& topo = run.topology;
  const Topology& sim = run.simulated;
  const size_t limit = std::min<size_t>(kMaxTracedChips, std::max<size_t>(1, kMaxTracedSpans / spans_per_chip(run)));
  std::vector<bool> traced(topo.chip_count(), true);
  if (static_cast<size_t>(topo.chip_count()) <= limit) {
    stats.chips_traced = topo.chip_count();
    return traced;
  }
  std::vector<ChipId> classes = run.real_of_simulated;   // by simulated chip, the lowest real chip
  std::fill(traced.begin(), traced.end(), false);
  if (classes.size() <= limit) {
    for (ChipId c : classes) traced[c] = true;
    stats.chips_traced = classes.size();
    return traced;
  }
  size_t kept = 0;
  auto keep = [&](ChipId c) {
    if (kept < limit && c >= 0 && c < topo.chip_count() && !traced[c]) {
      traced[c] = true;
      ++kept;
    }
  };
  for (ChipId c : options.keep_chips) keep(run.real_of_simulated[run.reduction.representative(topo, sim, c)]);
  for (ChipId c : classes)
    if (topo.compute_slowdown(c) != 1.0) keep(c);
  std::sort(classes.begin(), classes.end());
  const size_t stride = std::max<size_t>(1, classes.size() / limit);
  for (size_t i = 0; i < classes.size() && kept < limit; i += stride) keep(classes[i]);
  for (size_t i = 0; i < classes.size() && kept < limit; ++i) keep(classes[i]);
  stats.chips_traced = kept;
  stats.chips_left_out = classes.size() - kept;
  return traced;
}

// Lane 0 is the compute units (a program chains its compute ops, so they never overlap);
// communication takes the next lanes, hops the ones after.
ChipTracks chip_tracks(const TraceLayout& layout, ChipId chip) {
  const RunResult& run = layout.run;
  ChipTracks t;
  t.span_lane.resize(layout.op_base.back());
  Lanes comm_lanes;
  for (size_t op = 0; op < run.operations.size(); ++op) {
    if (!run.present(static_cast<int>(op), chip)) continue;   // absent here: no span drawn
    for (int rep = 0; rep < run.operations[op].repeat; ++rep) {
      const auto& span = run.span(static_cast<int>(op), rep, chip);
      t.span_lane[layout.op_base[op] + rep] =
          run.operations[op].is(ProgramOpKind::Compute) ? 0 : layout.comm_base + comm_lanes.place(span.start_s, span.end_s);
    }
  }
  t.collective_lanes = layout.comm_base + comm_lanes.count();
  Lanes hop_lanes;
  for (size_t i : layout.hops_of(chip)) {
    const HopRecord& h = run.replay.hops[i];
    t.hop_lane.push_back(t.collective_lanes + hop_lanes.place(h.start_s, h.end_s));
  }
  t.hop_lanes = hop_lanes.count();
  return t;
}

TraceLayout trace_layout(const RunResult& run, TraceDetail detail, const TraceOptions& options, TraceStats& stats) {
  TraceLayout layout{run, run.topology, run.simulated, traced_chips(run, options, stats), {}, {}, false, 0, {}, {}};
  const Topology& topo = layout.topo;
  const Topology& sim = layout.sim;
  // Hops are recorded on the simulated mesh and drawn on every traced chip that repeats their
  // receiver.
  layout.drawn_as.resize(sim.chip_count());
  for (ChipId chip = 0; chip < topo.chip_count(); ++chip) {
    if (layout.traced[chip]) layout.drawn_as[layout.representative(chip)].push_back(chip);
  }
  layout.hops_by_chip.resize(sim.chip_count());
  if (detail == TraceDetail::Hops) {
    for (size_t i = 0; i < run.replay.hops.size(); ++i) layout.hops_by_chip[run.replay.hops[i].dst_chip].push_back(i);
  }
  layout.has_compute = std::any_of(run.operations.begin(), run.operations.end(),
                                   [](const OperationResult& op) { return op.is(ProgramOpKind::Compute); });
  layout.comm_base = layout.has_compute ? 1 : 0;
  layout.op_base.assign(run.operations.size() + 1, 0);
  for (size_t op = 0; op < run.operations.size(); ++op)
    layout.op_base[op + 1] = layout.op_base[op] + run.operations[op].repeat;
  // Lanes first, for every traced chip, so flows can name the track of a span on another chip.
  layout.tracks.resize(topo.chip_count());
  for (ChipId chip = 0; chip < topo.chip_count(); ++chip) {
    if (layout.traced[chip]) layout.tracks[chip] = chip_tracks(layout, chip);
  }
  return layout;
}

// A chip's tracks named "<chip> compute", "<chip> comm #2", "<chip> hops", ... in tid order.
void write_track_names(PerfettoTrace& trace, const TraceLayout& layout, ChipId chip) {
  const ChipTracks& t = layout.tracks[chip];
  const std::string name = layout.topo.chip_name(chip);
  const int total_lanes = std::max(1, t.collective_lanes + t.hop_lanes);
  for (int lane = 0; lane < total_lanes; ++lane) {
    const int tid = layout.tid(chip, lane);
    std::string label = name;
    if (layout.has_compute && lane == 0) label += " compute";
    else if (lane < t.collective_lanes) label += layout.has_compute ? " comm" : "";
    else label += " hops";
    const int index_in_group = lane < layout.comm_base         ? 0
                               : lane < t.collective_lanes ? lane - layout.comm_base
                                                           : lane - t.collective_lanes;
    if (index_in_group > 0) label += " #" + std::to_string(index_in_group + 1);
    trace.thread_name(layout.pid(chip), tid, label);
    trace.thread_sort_index(layout.pid(chip), tid, tid);
  }
}

// Inside a collective's span, what a late peer added to it: its last wait_for_peers_s (the
// part the collective would have been shorter by had the peer entered with the chip), naming
// the chip that entered last. Below a nanosecond it would not show: none is drawn.
void write_peer_wait(PerfettoTrace& trace, const RunResult& run, int op, int rep, ChipId chip, int pid, int tid) {
  if (!run.operations[op].is(ProgramOpKind::Collective)) return;
  const double wait = run.wait_for_peers_s(op, rep, chip);
  if (wait < 1e-9) return;
  const SpanRecord& span = run.span(op, rep, chip);
  const ChipId last = run.last_entry(op, rep, chip).second;
  trace.span("wait for peers", "wait_for_peers", pid, tid, span.end_s - wait, span.end_s,
             TraceArgs().add("op", run.operations[op].name).add("last_to_enter", run.topology.chip_name(last)));
}

// A span per (op, repetition) on the chip, then the hops it receives, then its track names.
void write_chip(PerfettoTrace& trace, const TraceLayout& layout, ChipId chip) {
  const RunResult& run = layout.run;
  const int pid = layout.pid(chip);
  for (size_t op = 0; op < run.operations.size(); ++op) {
    const OperationResult& o = run.operations[op];
    if (!run.present(static_cast<int>(op), chip)) continue;
    for (int rep = 0; rep < o.repeat; ++rep) {
      const auto& span = run.span(static_cast<int>(op), rep, chip);
      TraceArgs args;
      args.add("repetition", rep);
      if (const TrafficResult* traffic = o.traffic()) args.add_g17("bytes", traffic->bytes);
      const int tid = layout.tid(chip, layout.span_lane(chip, op, rep));
      trace.span(o.name, o.is(ProgramOpKind::Compute) ? o.category : o.kind_name(), pid, tid, span.start_s, span.end_s, args);
      write_peer_wait(trace, run, static_cast<int>(op), rep, chip, pid, tid);
    }
  }
  const auto& hops = layout.hops_of(chip);
  for (size_t k = 0; k < hops.size(); ++k) {
    const HopRecord& h = run.replay.hops[hops[k]];
    trace.span("hop", "hop", pid, layout.tid(chip, layout.tracks[chip].hop_lane[k]), h.start_s, h.end_s,
               TraceArgs().add("op", run.operations[h.op].name).add_g17("bytes", h.bytes));
  }
  write_track_names(trace, layout, chip);
}

FlowEnd flow_end(const TraceLayout& layout, ChipId chip, int lane, long long ns) {
  return {layout.pid(chip), layout.tid(chip, lane), ns};
}

// Pipeline sends: from the end of the sender's span to the start of the span of the op on
// the receiving chip that waited for it (ProgramOp::after_neighbour).
void write_send_flows(PerfettoTrace& trace, const TraceLayout& layout, TraceStats& counts) {
  const RunResult& run = layout.run;
  const Topology& topo = layout.topo;
  for (size_t op = 0; op < run.operations.size(); ++op) {
    const OperationResult& o = run.operations[op];
    if (!o.is(ProgramOpKind::Send)) continue;
    const SendResult& send = o.send();
    for (int rep = 0; rep < o.repeat; ++rep) {
      for (ChipId chip = 0; chip < topo.chip_count(); ++chip) {
        if (!layout.traced[chip]) continue;
        auto to = topo.step_along(chip, send.axis, send.direction);
        const bool round = !to && !send.received_round_the_end_by.empty();
        if (round) to = topo.round_the_end(chip, send.axis, send.direction);
        if (!to || !layout.traced[*to]) continue;
        const auto& from_span = run.span(static_cast<int>(op), rep, chip);
        const long long from_ns = inside_ns(from_span.start_s, from_span.end_s, from_span.end_s);
        for (int dependent : round ? send.received_round_the_end_by : send.received_by) {
          if (rep >= run.operations[dependent].repeat || !run.present(dependent, *to)) continue;
          const auto& to_span = run.span(dependent, rep, *to);
          const long long to_ns = inside_ns(to_span.start_s, to_span.end_s, to_span.start_s);
          if (to_ns < from_ns) continue;   // an arrow back in time would not be a dependency
          trace.flow(o.name, "send_flow", flow_end(layout, chip, layout.span_lane(chip, op, rep), from_ns),
                     flow_end(layout, *to, layout.span_lane(*to, dependent, rep), to_ns));
          counts.send_flows += 1;
        }
      }
    }
  }
}

// The step a hop takes on the simulated mesh when it is one link of an axis: (axis, +1 or -1),
// else (-1, 0).
std::pair<int, int> hop_step(const Topology& sim, const HopRecord& h) {
  for (int a = 0; a < sim.axis_count(); ++a) {
    for (int d : {+1, -1}) {
      if (sim.neighbor(h.src_chip, a, d) == std::optional<ChipId>(h.dst_chip)) return {a, d};
    }
  }
  return {-1, 0};
}

// Hops: from the source chip's span of the op at the hop's start to the hop on the
// destination's hop track.
void write_hop_flows(PerfettoTrace& trace, const TraceLayout& layout, const TraceOptions& options, TraceStats& counts) {
  const RunResult& run = layout.run;
  std::vector<size_t> position(run.replay.hops.size(), 0);   // in its receiver's hop list
  for (const auto& list : layout.hops_by_chip) {
    for (size_t k = 0; k < list.size(); ++k) position[list[k]] = k;
  }
  for (size_t i = 0; i < run.replay.hops.size(); ++i) {
    const HopRecord& h = run.replay.hops[i];
    // One link of an axis: each real receiver's sender is its real neighbour the other way (a
    // real chip of the same class as the simulated sender). Other hops join the first traced
    // chips of their classes.
    const auto [axis, direction] = hop_step(layout.sim, h);
    const auto& receivers = layout.drawn_as[h.dst_chip];
    for (ChipId to : receivers) {
      ChipId from = -1;
      if (axis >= 0) {
        const auto n = layout.topo.neighbor(to, axis, -direction);
        if (n && layout.traced[*n] && layout.representative(*n) == h.src_chip) from = *n;
      } else if (to == receivers.front() && !layout.drawn_as[h.src_chip].empty()) {
        from = layout.drawn_as[h.src_chip].front();
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
      trace.flow("hop", "hop_flow", flow_end(layout, from, layout.span_lane(from, h.op, h.repetition), from_ns),
                 flow_end(layout, to, layout.tracks[to].hop_lane[position[i]], to_ns));
      counts.hop_flows += 1;
    }
  }
}

// Counters, on a process of their own after the slices.
void write_counters(PerfettoTrace& trace, const TraceLayout& layout, TraceDetail detail, const TraceOptions& options) {
  const RunResult& run = layout.run;
  const int pod_pid = layout.topo.slice_count();
  trace.process_name(pod_pid, "pod counters");
  if (detail == TraceDetail::Hops) {
    const LinkUse use = link_use_from_hops(run);
    if (!use.axes.empty() && use.bucket_s > 0) {
      const size_t buckets = use.bytes[0].size();
      for (size_t b = 0; b <= buckets; ++b) {   // the last one returns to 0 at the end
        TraceArgs series;
        for (size_t a = 0; a < use.axes.size(); ++a) series.add(use.axes[a], b < buckets ? use.utilisation(a, b) : 0.0);
        trace.counter("link utilisation (fraction of capacity)", pod_pid, b * use.bucket_s, series);
      }
    }
  } else {
    for (const AxisActivity& activity : collective_activity(run, layout.traced)) {
      const std::string name = "collective activity " + activity.axis + " (fraction of traced chips)";
      // One step per whole nanosecond: where rounding merges two, the later value holds.
      for (size_t k = 0; k < activity.steps.size(); ++k) {
        const double time_s = activity.steps[k].time_s;
        if (k + 1 < activity.steps.size() && trace_ns(activity.steps[k + 1].time_s) == trace_ns(time_s)) continue;
        trace.counter(name, pod_pid, time_s, TraceArgs().add("value", activity.steps[k].fraction));
      }
    }
  }
  if (options.hbm_used_bytes >= 0) {
    // The memory report's static figure: the same on every chip (every chip runs the same program).
    for (int s = 0; s < layout.topo.slice_count(); ++s) {
      for (double time_s : {0.0, run.total_time_s})
        trace.counter("HBM used (bytes)", s, time_s, TraceArgs().add("per chip", options.hbm_used_bytes));
    }
  }
}

}  // namespace

std::string trace_json(const RunResult& run, TraceDetail detail, const TraceOptions& options, TraceStats* stats) {
  TraceStats counts;
  const TraceLayout layout = trace_layout(run, detail, options, counts);
  std::string out;
  PerfettoTrace trace(out, "ns");
  for (int s = 0; s < layout.topo.slice_count(); ++s) trace.process_name(s, "slice " + std::to_string(s));
  for (ChipId chip = 0; chip < layout.topo.chip_count(); ++chip) {
    if (layout.traced[chip]) write_chip(trace, layout, chip);
  }
  write_send_flows(trace, layout, counts);
  if (detail == TraceDetail::Hops) write_hop_flows(trace, layout, options, counts);
  write_counters(trace, layout, detail, options);
  trace.finish(TraceArgs()
                    .add("chips_traced", counts.chips_traced)
                    .add("chips_left_out", counts.chips_left_out)
                    .add("send_flows", counts.send_flows)
                    .add("hop_flows", counts.hop_flows)
                    .add("hop_flows_omitted", counts.hop_flows_omitted)
                    .add("max_hop_flows", options.max_hop_flows));
  if (stats != nullptr) *stats = counts;
  return out;
}

}  // namespace podsim
