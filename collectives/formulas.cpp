#include "collectives/formulas.hpp"

#include "collectives/ring_schedule.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

namespace podsim {
namespace {

void require_non_negative(double value, const char* what) {
  if (!std::isfinite(value) || value < 0) {
    throw std::invalid_argument(std::string("collective formula: ") + what +
                                " must be finite and >= 0, got " + std::to_string(value));
  }
}

void require_positive(double value, const char* what) {
  if (!std::isfinite(value) || value <= 0) {
    throw std::invalid_argument(std::string("collective formula: ") + what +
                                " must be finite and > 0, got " + std::to_string(value));
  }
}

void require_count(int value, int minimum, const char* what) {
  if (value < minimum) {
    throw std::invalid_argument(std::string("collective formula: ") + what + " must be >= " +
                                std::to_string(minimum) + ", got " + std::to_string(value));
  }
}

FormulaResult finish(double bandwidth_s, double latency_s, std::string formula, std::string source) {
  FormulaResult result;
  result.bandwidth_time_s = bandwidth_s;
  result.latency_time_s = latency_s;
  result.time_s = std::max(bandwidth_s, latency_s);
  result.regime = latency_s >= bandwidth_s ? "latency-bound" : "bandwidth-bound";
  result.formula = std::move(formula);
  result.source = std::move(source);
  return result;
}

// Costs of an AllGather (= ReduceScatter) over the non-trivial axes, composed per axis.
struct GatherCost {
  double bandwidth_s = 0;
  double latency_s = 0;
  bool all_bidir_ring = true;  // every axis wraps and both directions are used
  bool any_bidir_ring = false;
  bool any_one_way_ring = false;  // wraps, but only one direction is used
  bool any_no_wrap = false;
};

// Each non-trivial axis carries its share V/N_axes (the book's "bandwidth grows N_axes-fold",
// sharding.md:L358-L362) under its own rule, and the slowest axis sets the bandwidth term:
//  - wraparound, bidirectional: share/W_bidi (sharding.md:L326-L332). With every axis like
//    this the max is exactly the book's V/(N_axes*W_bidi).
//  - wraparound, unidirectional: share/W_uni*(X-1)/X (sharding.md:L566).
//  - no wraparound: the edge shards cross the whole line one way, (X-1)*(share/X)/W_uni
//    (sharding.md:L366-L375, the v5e 4x4 case).
// The per-axis max for mixed or unidirectional multi-axis groups is our extrapolation; the book
// only gives the all-wraparound bidirectional multi-axis form.
// Latency is T_min times the longest path, summed over axes (sharding.md:L346, L362):
// floor(X/2) hops on a bidirectional ring, X-1 hops on a one-way ring or a line.
GatherCost gather_cost(const std::vector<AxisInfo>& axes, double bytes, bool bidirectional,
                       double w_uni, double t_min) {
  GatherCost cost;
  const double share = bytes / static_cast<double>(axes.size());
  for (const AxisInfo& axis : axes) {
    const double x = axis.size;
    const bool bidir_ring = axis.wraparound && bidirectional;
    double axis_bandwidth_s = 0;
    int hops = 0;
    if (bidir_ring) {
      axis_bandwidth_s = share / (2 * w_uni);
      hops = axis.size / 2;
    } else {
      axis_bandwidth_s = share * (x - 1) / x / w_uni;
      hops = axis.size - 1;
    }
    cost.bandwidth_s = std::max(cost.bandwidth_s, axis_bandwidth_s);
    cost.latency_s += t_min * hops;
    cost.all_bidir_ring = cost.all_bidir_ring && bidir_ring;
    cost.any_bidir_ring = cost.any_bidir_ring || bidir_ring;
    cost.any_one_way_ring = cost.any_one_way_ring || (axis.wraparound && !bidirectional);
    cost.any_no_wrap = cost.any_no_wrap || !axis.wraparound;
  }
  return cost;
}

std::string gather_formula(const GatherCost& cost, bool bidirectional, std::size_t n_axes) {
  if (cost.all_bidir_ring) {
    return n_axes == 1 ? "max(T_min*floor(X/2), V/W_bidi)"
                       : "max(T_min*sum_i floor(X_i/2), V/(N_axes*W_bidi))";
  }
  if (!cost.any_no_wrap && !bidirectional) {
    return n_axes == 1 ? "max(T_min*(X-1), V/W_uni*(X-1)/X)"
                       : "max(T_min*sum_i (X_i-1), max_i (V/N_axes)/W_uni*(X_i-1)/X_i) "
                         "[multi-axis: extrapolation]";
  }
  if (n_axes == 1) return "max(T_min*(X-1), (X-1)*(V/X)/W_uni) [no wraparound]";
  return "max(T_min*sum_i hops_i, max_i T_i(V/N_axes)) with T_i = (V/N_axes)/W_bidi on "
         "bidirectional rings, (X_i-1)/X_i*(V/N_axes)/W_uni otherwise [mixed: extrapolation]";
}

// The sharding.md line ranges behind gather_cost's rules, e.g. "L326-L332, L346".
std::string gather_lines(const GatherCost& cost, std::size_t n_axes) {
  std::string lines;
  auto add = [&lines](const char* range) {
    lines += lines.empty() ? "" : ", ";
    lines += range;
  };
  if (cost.any_bidir_ring) add("L326-L332, L346");
  if (cost.any_one_way_ring) add("L566");
  if (cost.any_no_wrap) add("L366-L375");
  if (n_axes > 1) add("L358-L362");
  return lines;
}

}  // namespace

FormulaResult book_collective_time(const FormulaInputs& inputs) {
  require_non_negative(inputs.bytes, "bytes");
  require_non_negative(inputs.hop_latency_s, "hop_latency_s");
  std::vector<AxisInfo> axes;
  for (const AxisInfo& axis : inputs.axes) {
    require_count(axis.size, 1, "axis size");
    if (axis.size > 1) axes.push_back(axis);  // size-1 axes move no data
  }
  if (axes.empty()) return finish(0, 0, "0 (no axis larger than 1)", "");
  require_positive(inputs.link_bandwidth_Bps, "link_bandwidth_Bps");

  const double v = inputs.bytes;
  const double w_uni = inputs.link_bandwidth_Bps;
  const double t_min = inputs.hop_latency_s;
  const bool bidir = inputs.bidirectional;
  const GatherCost gather = gather_cost(axes, v, bidir, w_uni, t_min);

  switch (inputs.kind) {
    case CollectiveKind::AllGather:
    case CollectiveKind::ReduceScatter:
      // ReduceScatter costs the same as AllGather, the reduction aside (sharding.md:L423-L429).
      return finish(gather.bandwidth_s, gather.latency_s, gather_formula(gather, bidir, axes.size()),
                    "sharding.md:" + gather_lines(gather, axes.size()));
    case CollectiveKind::AllReduce:
      // AllReduce = ReduceScatter + AllGather: twice both terms (sharding.md:L423-L429).
      return finish(2 * gather.bandwidth_s, 2 * gather.latency_s,
                    "2 * [" + gather_formula(gather, bidir, axes.size()) + "]",
                    "sharding.md:L423-L429, " + gather_lines(gather, axes.size()));
    case CollectiveKind::AllToAll: {
      if (!bidir) {
        // One-way ring: an AllToAll sends (X-1)+(X-2)+...+1 blocks over a link where an
        // AllGather sends X-1 of them X times, i.e. half (sharding.md Question 10, part 3).
        // Several axes: half of the composed AllGather (extrapolation). The latency is the
        // one-way ring's longest path, X-1 hops per axis, as for that AllGather.
        std::string formula = axes.size() == 1
                                  ? "max(T_min*(X-1), 1/2 * V/W_uni*(X-1)/X)"
                                  : "max(T_min*sum_i (X_i-1), 1/2 * [AllGather bandwidth term]) "
                                    "[multi-axis: extrapolation]";
        return finish(gather.bandwidth_s / 2, gather.latency_s, std::move(formula),
                      "sharding.md:L471-L479 (Question 10), " + gather_lines(gather, axes.size()));
      }
      // T = V*max(A,B,C,...)/(4*N*W_bidi), N = device count; 1D: V/(4*W_bidi)
      // (sharding.md:L471-L479). Latency: the longest path, sum_i floor(X_i/2) hops.
      double n = 1;
      int largest = 1;
      double latency_s = 0;
      for (const AxisInfo& axis : axes) {
        n *= axis.size;
        largest = std::max(largest, axis.size);
        latency_s += t_min * (axis.size / 2);
      }
      const double bandwidth_s = v * largest / (4 * n * 2 * w_uni);
      std::string formula = axes.size() == 1
                                ? "max(T_min*floor(X/2), V/(4*W_bidi))"
                                : "max(T_min*sum_i floor(X_i/2), V*max_i(X_i)/(4*N*W_bidi))";
      if (gather.any_no_wrap) formula += " [assumes wraparound; some axis has none]";
      return finish(bandwidth_s, latency_s, formula, "sharding.md:L471-L479");
    }
  }
  throw std::invalid_argument("collective formula: unknown collective kind");
}

double allgather_bidir_time_s(double bytes, int axis_size, double w_uni, double t_min) {
  FormulaInputs inputs;
  inputs.kind = CollectiveKind::AllGather;
  inputs.axes = {AxisInfo{axis_size, true}};
  inputs.bytes = bytes;
  inputs.bidirectional = true;
  inputs.link_bandwidth_Bps = w_uni;
  inputs.hop_latency_s = t_min;
  return book_collective_time(inputs).time_s;
}

double dcn_hierarchical_allreduce_time_s(double bytes, int chips_per_slice, int slices,
                                         double dcn_bandwidth_per_chip_Bps) {
  require_non_negative(bytes, "bytes");
  require_count(chips_per_slice, 1, "chips_per_slice");
  require_count(slices, 1, "slices");
  require_positive(dcn_bandwidth_per_chip_Bps, "dcn_bandwidth_per_chip_Bps");
  // After the ICI ReduceScatter each chip holds V/N_ici; the S chips that hold the same share
  // (one per slice) ring-AllReduce it over DCN, each at its own per-chip DCN egress, so the
  // ring AllReduce cost 2*share*(S-1)/S/W applies per chip (training.md:L572-L592: DCN as one
  // more data-parallel axis at W_dcn per chip; hardware.md section 4 for W_dcn).
  const double share = bytes / chips_per_slice;
  const double s = slices;
  return 2 * share * (s - 1) / s / dcn_bandwidth_per_chip_Bps;
}

double dcn_flat_ring_allreduce_time_s(double bytes, int total_chips, int slices,
                                      double dcn_bandwidth_per_host_Bps) {
  require_non_negative(bytes, "bytes");
  require_count(slices, 1, "slices");
  require_count(total_chips, slices, "total_chips (at least one chip per slice)");
  require_positive(dcn_bandwidth_per_host_Bps, "dcn_bandwidth_per_host_Bps");
  if (slices == 1) return 0;  // the ring never leaves ICI
  // A unidirectional ring AllReduce (ReduceScatter + AllGather) pushes 2(N-1)/N*V bytes over
  // every ring edge. The S edges that cross slices each go through a single host NIC, which is
  // far slower than ICI, so those edges set the ring's pace: the whole pod's AllReduce runs at
  // one host's DCN bandwidth instead of every chip's. This is why the book treats DCN as a
  // separate, hierarchical axis (training.md:L572-L592).
  const double n = total_chips;
  return 2 * bytes * (n - 1) / n / dcn_bandwidth_per_host_Bps;
}

namespace {

// Axes larger than 1, after the checks book_collective_time makes.
std::vector<AxisInfo> checked_axes(const std::vector<AxisInfo>& axes, double bytes, double w_uni, double t_min) {
  require_non_negative(bytes, "bytes");
  require_non_negative(t_min, "hop_latency_s");
  std::vector<AxisInfo> out;
  for (const AxisInfo& axis : axes) {
    require_count(axis.size, 1, "axis size");
    if (axis.size > 1) out.push_back(axis);
  }
  if (!out.empty()) require_positive(w_uni, "link_bandwidth_Bps");
  return out;
}

// What one message occupies on the wire: the replay sends at least one byte, in whole bytes.
double wire_bytes(double bytes) { return std::max(1.0, std::ceil(bytes)); }

}  // namespace

RingScheduleTime ring_schedule_time(CollectiveKind kind, const std::vector<AxisInfo>& axes, double bytes,
                                    double w_uni, double t_min) {
  if (kind == CollectiveKind::AllToAll) {
    throw std::invalid_argument("ring_schedule_time: an AllToAll is not a ring collective");
  }
  const std::vector<AxisInfo> real = checked_axes(axes, bytes, w_uni, t_min);
  std::vector<RingAxis> ring_axes;
  for (size_t i = 0; i < real.size(); ++i) ring_axes.push_back({static_cast<int>(i), real[i].size, real[i].wraparound});
  RingScheduleTime out;
  const auto parts = ring_parts(kind, ring_axes, bytes);
  if (parts.empty()) return out;
  out.phases = static_cast<int>(parts.front().size());

  // Phase intervals of every part, all chips in step (true on rings; see below for lines).
  struct Interval {
    int axis;
    double start_s, end_s;
  };
  std::vector<std::vector<Interval>> intervals;
  for (const PartSchedule& part : parts) {
    double t = 0, t_bw = 0;
    int floored = 0;
    auto& mine = intervals.emplace_back();
    for (const RingPhase& phase : part) {
      const int steps = phase.axis.wraparound ? phase.axis.size / 2 : phase.axis.size - 1;
      const double transfer_s = wire_bytes(phase.message_bytes) / w_uni;
      floored += transfer_s < t_min ? 1 : 0;
      mine.push_back({phase.axis.axis, t, t + steps * std::max(t_min, transfer_s)});
      t = mine.back().end_s;
      t_bw += steps * transfer_s;
    }
    if (t > out.time_s) {
      out.time_s = t;
      out.floored_phases = floored;
    }
    out.bandwidth_time_s = std::max(out.bandwidth_time_s, t_bw);
  }
  if (parts.size() > 1) {
    // On a line of more than 2 chips the chips finish a phase at different times (the middle
    // first: chip i after max(i, n-1-i) steps), so some start their next phase while the
    // line's other chips still run the previous one, and parts meet on the same links.
    for (const AxisInfo& axis : real) out.parts_overlap = out.parts_overlap || (!axis.wraparound && axis.size > 2);
    // On rings every chip is in step: parts overlap where their phases on one axis do.
    for (size_t p = 0; p < intervals.size(); ++p) {
      for (size_t q = p + 1; q < intervals.size(); ++q) {
        for (const Interval& a : intervals[p]) {
          for (const Interval& b : intervals[q]) {
            const double tolerance = 1e-12 * std::max(a.end_s, b.end_s);
            if (a.axis == b.axis && a.start_s < b.end_s - tolerance && b.start_s < a.end_s - tolerance) {
              out.parts_overlap = true;
            }
          }
        }
      }
    }
  }
  return out;
}

AllToAllRouteTime all_to_all_route_time(const std::vector<AxisInfo>& axes, double bytes, double w_uni,
                                        double t_min) {
  const std::vector<AxisInfo> real = checked_axes(axes, bytes, w_uni, t_min);
  AllToAllRouteTime out;
  double group = 1;
  for (const AxisInfo& axis : real) group *= axis.size;
  if (group <= 1 || bytes <= 0) return out;
  // Blocks of V/N^2; one below a byte still costs a byte on the wire.
  const double block = std::max(1.0, bytes / (group * group));
  int busiest_real = -1;
  for (size_t i = 0; i < real.size(); ++i) {
    const double n = real[i].size;
    const int half_down = real[i].size / 2, half_up = real[i].size - half_down;
    // Blocks one directed link of this axis carries, per combination of the other axes.
    double per_link = 0;
    if (!real[i].wraparound) {
      // The link k -> k+1 carries the blocks from the k+1 chips at or left of k to the
      // n-1-k right of it: (k+1)(n-1-k), largest in the middle.
      per_link = static_cast<double>(half_down) * half_up;
      out.longest_route_hops += real[i].size - 1;
    } else {
      // Every link alike (translation): per source, offsets d < n/2 go d hops this way, and
      // the tie d = n/2 (even n) sends half a block n/2 hops each way; n sources share n links.
      per_link = real[i].size % 2 == 0 ? n * n / 8 : (n * n - 1) / 8;
      out.longest_route_hops += half_down;
    }
    const double blocks = per_link * group / n;
    if (blocks > out.busiest_link_blocks) {
      out.busiest_link_blocks = blocks;
      busiest_real = static_cast<int>(i);
    }
  }
  // Report the busiest axis as an index into the caller's axes (size-1 axes included).
  for (size_t i = 0, seen = 0; i < axes.size(); ++i) {
    if (axes[i].size <= 1) continue;
    if (static_cast<int>(seen++) == busiest_real) out.busiest_axis = static_cast<int>(i);
  }
  out.bandwidth_time_s = out.busiest_link_blocks * block / w_uni;
  out.latency_time_s = t_min * out.longest_route_hops;
  out.time_s = std::max(out.bandwidth_time_s, out.latency_time_s);
  return out;
}

double algbw_Bps(double bytes, double time_s) {
  require_non_negative(bytes, "bytes");
  require_positive(time_s, "time_s");
  return bytes / time_s;
}

double nccl_size_bytes(CollectiveKind kind, double bytes, int group_size) {
  require_count(group_size, 1, "group_size");
  return kind == CollectiveKind::AllToAll ? bytes / group_size : bytes;
}

double bytes_for_nccl_size(CollectiveKind kind, double size_bytes, int group_size) {
  require_count(group_size, 1, "group_size");
  require_non_negative(size_bytes, "size_bytes");
  return kind == CollectiveKind::AllToAll ? size_bytes * group_size : size_bytes;
}

double nccl_count_elements(CollectiveKind kind, double size_bytes, int element_bits, int group_size) {
  require_count(group_size, 1, "group_size");
  require_count(element_bits, 1, "element_bits");
  require_non_negative(size_bytes, "size_bytes");
  const double shares = kind == CollectiveKind::AllReduce ? 1 : group_size;
  return size_bytes * 8 / element_bits / shares;
}

double busbw_Bps(CollectiveKind kind, double bytes, double time_s, int group_size) {
  require_count(group_size, 1, "group_size");
  const double n = group_size;
  // nccl-tests doc/PERFORMANCE.md: busbw = algbw * factor, chosen so that busbw is the
  // per-link bandwidth a ring algorithm needs, comparable across ranks counts.
  const double factor = kind == CollectiveKind::AllReduce ? 2 * (n - 1) / n : (n - 1) / n;
  return algbw_Bps(bytes, time_s) * factor;
}

}  // namespace podsim
