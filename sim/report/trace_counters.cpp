#include "sim/report/trace_counters.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace podsim {

namespace {

constexpr int kDcn = -2;   // index for DCN in per-axis tables, beside the mesh axes

}  // namespace

LinkUse link_use_from_hops(const RunResult& run, int buckets) {
  const Topology& sim = run.simulated;
  LinkUse use;
  // Capacity per axis: every ICI link of the axis both ways; DCN: every NIC both ways (a
  // message leaves through one NIC and enters through another).
  std::map<int, double> capacity;
  for (const auto& link : sim.links()) {
    if (link.kind == LinkKind::Ici) capacity[link.axis] += link.directed_bandwidth_Bps(true) + link.directed_bandwidth_Bps(false);
    if (link.kind == LinkKind::Nic && run.topology.slice_count() > 1) capacity[kDcn] += link.directed_bandwidth_Bps(true) + link.directed_bandwidth_Bps(false);
  }
  std::vector<int> keys;   // mesh axes in order, DCN last
  for (int axis = 0; axis < sim.axis_count(); ++axis) {
    if (capacity.count(axis)) keys.push_back(axis);
  }
  if (capacity.count(kDcn)) keys.push_back(kDcn);
  std::map<int, size_t> index;
  for (int key : keys) {
    index[key] = use.axes.size();
    use.axes.push_back(key == kDcn ? "DCN" : sim.spec().axes[key].name);
    use.capacity_Bps.push_back(capacity[key]);
  }
  double end_s = run.total_time_s;
  for (const auto& h : run.replay.hops) end_s = std::max(end_s, h.end_s);
  if (buckets <= 0 || end_s <= 0) return use;
  use.bucket_s = end_s / buckets;
  use.bytes.assign(use.axes.size(), std::vector<double>(buckets, 0.0));
  std::vector<int> crossings(use.axes.size());
  for (const auto& h : run.replay.hops) {
    // Links of each axis the message crosses, on the route the replay plans (hop_plan.cpp).
    std::fill(crossings.begin(), crossings.end(), 0);
    const bool same_slice = sim.slice_of(h.src_chip) == sim.slice_of(h.dst_chip);
    const auto route = same_slice ? sim.dimension_order_route(h.src_chip, h.dst_chip) : sim.dcn_route(h.src_chip, h.dst_chip);
    for (const auto& step : route) {
      const LinkInfo& link = sim.links()[step.link];
      if (link.kind == LinkKind::Ici) crossings[index.at(link.axis)] += 1;
      else if (link.kind == LinkKind::Nic && index.count(kDcn)) crossings[index.at(kDcn)] += 1;
    }
    const int first = std::min(buckets - 1, static_cast<int>(std::floor(h.start_s / use.bucket_s)));
    const int last = std::min(buckets - 1, static_cast<int>(std::floor(h.end_s / use.bucket_s)));
    const double duration = h.end_s - h.start_s;
    for (int b = first; b <= last; ++b) {
      // The share of the hop's time in this bucket (all of it for an instantaneous hop).
      double share = 1.0;
      if (duration > 0) {
        const double lo = std::max(h.start_s, b * use.bucket_s);
        const double hi = b == buckets - 1 ? h.end_s : std::min(h.end_s, (b + 1) * use.bucket_s);
        share = std::max(0.0, hi - lo) / duration;
      } else if (b != first) {
        share = 0.0;
      }
      for (size_t a = 0; a < crossings.size(); ++a) {
        if (crossings[a] > 0) use.bytes[a][b] += h.bytes * crossings[a] * share;
      }
    }
  }
  return use;
}

std::vector<AxisActivity> collective_activity(const RunResult& run, const std::vector<bool>& traced) {
  const Topology& topo = run.topology;
  int traced_count = 0;
  for (bool t : traced) traced_count += t;
  // Axis names in the order the mesh declares them, DCN last.
  std::vector<std::string> names;
  for (const auto& a : topo.spec().axes) names.push_back(a.name);
  names.push_back("DCN");
  std::vector<AxisActivity> result;
  if (traced_count == 0) return result;
  for (const auto& name : names) {
    // (time, chip, +1 start / -1 end) of every traced chip's spans of ops on this axis.
    struct Edge {
      double time_s;
      int delta;
      ChipId chip;
    };
    std::vector<Edge> edges;
    for (size_t op = 0; op < run.operations.size(); ++op) {
      const auto& o = run.operations[op];
      const TrafficResult* traffic = o.traffic();
      if (!traffic) continue;
      const bool on_axis = name == "DCN" ? traffic->over_dcn
                                         : std::find(traffic->axes.begin(), traffic->axes.end(), name) != traffic->axes.end();
      if (!on_axis) continue;
      for (int rep = 0; rep < o.repeat; ++rep) {
        for (ChipId chip = 0; chip < topo.chip_count(); ++chip) {
          if (!traced[chip]) continue;
          const auto& span = run.span(static_cast<int>(op), rep, chip);
          if (span.end_s <= span.start_s) continue;
          edges.push_back({span.start_s, +1, chip});
          edges.push_back({span.end_s, -1, chip});
        }
      }
    }
    if (edges.empty()) continue;
    // Ends before starts at the same time, so touching spans do not count a chip twice.
    std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) {
      return a.time_s != b.time_s ? a.time_s < b.time_s : a.delta != b.delta ? a.delta < b.delta : a.chip < b.chip;
    });
    AxisActivity activity{name, {}};
    std::vector<int> open(topo.chip_count(), 0);
    int busy = 0;
    for (size_t i = 0; i < edges.size(); ++i) {
      const Edge& e = edges[i];
      if (e.delta > 0 && open[e.chip]++ == 0) ++busy;
      if (e.delta < 0 && --open[e.chip] == 0) --busy;
      // One step per distinct time, after every edge at that time.
      if (i + 1 < edges.size() && edges[i + 1].time_s == e.time_s) continue;
      const double fraction = static_cast<double>(busy) / traced_count;
      if (!activity.steps.empty() && activity.steps.back().fraction == fraction) continue;
      activity.steps.push_back({e.time_s, fraction});
    }
    result.push_back(std::move(activity));
  }
  return result;
}

}  // namespace podsim
