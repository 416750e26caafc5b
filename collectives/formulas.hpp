#pragma once
// The scaling book's closed-form collective costs ("How to Scale Your Model", part 3,
// sharding.md), as plain functions over plain structs. Every function cites the equation it
// implements; where the book gives no formula (mixed wraparound, several unidirectional axes)
// the composition used is stated as an extrapolation.
//
// Conventions (hardware.md section 2):
//   W_uni  = one-way bandwidth of one ICI link between neighbours (B/s)
//   W_bidi = 2 * W_uni, the book's W_ici ("bidirectional ICI bandwidth")
//   T_min  = per-hop latency (s), ~1 us on TPUs (sharding.md:L338)
//   V      = the book's per-group array size in bytes: the gathered result for AllGather, the
//            unreduced input for ReduceScatter/AllReduce, the whole array for AllToAll.
#include <string>
#include <vector>

#include "collectives/collective.hpp"

namespace podsim {

// One mesh axis the collective runs over.
struct AxisInfo {
  int size = 1;            // devices along the axis (1 = contributes nothing)
  bool wraparound = true;  // the axis is a ring (torus link from last to first chip)
};

struct FormulaInputs {
  CollectiveKind kind = CollectiveKind::AllGather;
  std::vector<AxisInfo> axes;
  double bytes = 0;                 // V, see the conventions above
  bool bidirectional = true;        // rings use both directions of each link
  double link_bandwidth_Bps = 0;    // W_uni
  double hop_latency_s = 0;         // T_min
};

struct FormulaResult {
  double time_s = 0;             // max(latency_time_s, bandwidth_time_s), the book's max form
  double bandwidth_time_s = 0;   // the throughput term
  double latency_time_s = 0;     // T_min times the hop count of the longest path
  std::string regime;            // "latency-bound" (latency term >= bandwidth term) or "bandwidth-bound"
  std::string formula;           // human-readable formula, e.g. "max(T_min*sum_i floor(X_i/2), V/(N_axes*W_bidi))"
  std::string source;            // citation, e.g. "sharding.md:L326-L332"
};

// The book's closed-form time for one ICI collective, as the book writes it. Axes of size 1
// contribute nothing; with no axis larger than 1 the result is 0 s.
// Throws std::invalid_argument if an axis size is < 1, bytes or hop_latency_s is negative or
// not finite, or link_bandwidth_Bps is not positive while some axis has size > 1.
FormulaResult book_collective_time(const FormulaInputs& inputs);

// Bidirectional AllGather of V = bytes over one axis with wraparound, in seconds:
// max(T_min*floor(X/2), V/W_bidi) (sharding.md:L326-L332, L346). 0 for axis_size 1.
// Throws std::invalid_argument on the same bad inputs as book_collective_time.
double allgather_bidir_time_s(double bytes, int axis_size, double w_uni, double t_min);

// DCN part of a hierarchical AllReduce of V = bytes across `slices` slices of
// `chips_per_slice` chips each, in seconds: after the ICI ReduceScatter every chip owns V/N_ici
// and ring-AllReduces it with its peers in the other S slices over its own DCN share:
// 2*(V/N_ici)*(S-1)/S / W_dcn_chip (training.md:L572-L592; hardware.md section 4).
// 0 for one slice. Throws std::invalid_argument on non-positive counts or bandwidth, bytes < 0.
double dcn_hierarchical_allreduce_time_s(double bytes, int chips_per_slice, int slices,
                                         double dcn_bandwidth_per_chip_Bps);

// DCN-bound time of one flat unidirectional ring AllReduce of V = bytes through all
// `total_chips` chips of `slices` slices, in seconds: 2*V*(N-1)/N / W_dcn_host. Every ring
// edge carries 2(N-1)/N*V bytes; at each slice boundary that edge leaves through one host's NIC,
// so the ring runs at one host's DCN bandwidth. 0 for one slice (the ring never leaves ICI).
// Throws std::invalid_argument unless 1 <= slices <= total_chips, bandwidth > 0, bytes >= 0.
double dcn_flat_ring_allreduce_time_s(double bytes, int total_chips, int slices,
                                      double dcn_bandwidth_per_host_Bps);

// ---- podsim's own schedules, in closed form ----
// The book's formulas above describe idealised algorithms. The replay runs concrete hop
// schedules (ring_schedule.hpp for rings, dimension-order routes for AllToAll) under the floor
// hop model, T_hop = max(T_min, b/W_uni) per message. The functions below give the time of
// those schedules, so `podsim validate` can say which effect separates a simulated time from
// the book's and by how much. Derivations: docs/validation.md.

// A ring collective's hop schedule (ring_parts, bidirectional rings). Each part runs its phases
// one after another; a phase over an axis of n chips takes steps * max(T_min, m/W_uni) with m
// the phase's message (wire) size and steps = floor(n/2) on a ring, n-1 on a line: every chip
// forwards one message per step, and the last one comes from steps hops away. The time is the
// slowest part's sum over its phases. That is exact when no two parts use one axis at once
// (rings whose parts' phases line up); otherwise the overlapping phases share the links and
// time_s is a lower bound (parts_overlap).
struct RingScheduleTime {
  double time_s = 0;             // max over parts of sum over phases steps*max(T_min, m/W_uni)
  double bandwidth_time_s = 0;   // the same without the floor: max over parts of sum steps*m/W_uni
  bool parts_overlap = false;    // two parts' phases can share an axis's links at the same time
  int phases = 0;                // phases per part
  int floored_phases = 0;        // phases of the slowest part whose messages are below T_min*W_uni
};

// Bidirectional rings only (the replay's default). Throws std::invalid_argument on the inputs
// book_collective_time rejects, and for AllToAll.
RingScheduleTime ring_schedule_time(CollectiveKind kind, const std::vector<AxisInfo>& axes, double bytes,
                                    double w_uni, double t_min);

// An AllToAll on dimension-order routes (lower axes first; a route exactly half way round a
// ring is split into two half blocks, one each way), every block of b = V/N^2 bytes sent at
// once. The busiest directed link carries max_a L_a blocks, with, for axis a of n chips in a
// group of N:
//   line: L_a = floor(n/2)*ceil(n/2) * N/n   (the middle link; sources on one side, targets
//                                            on the other, the other axes' coordinates free)
//   ring: L_a = n^2/8 * N/n (even n, ties split), (n^2-1)/8 * N/n (odd n)
// and the longest route is sum_a h_a hops, h = n-1 on a line, floor(n/2) on a ring. So
//   T = max(T_min * sum_a h_a, max_a L_a * b / W_uni).
// On rings this is the book's V*max_a(n_a)/(4 N W_bidi); on a line of n it is
// (n/2)^2 b/W = V/(4 W_uni), twice the book's V/(4 W_bidi).
struct AllToAllRouteTime {
  double time_s = 0;
  double bandwidth_time_s = 0;   // max_a L_a * b / W_uni
  double latency_time_s = 0;     // T_min * sum_a h_a
  double busiest_link_blocks = 0;   // max_a L_a
  int busiest_axis = -1;         // index into the axes given (size-1 axes included), -1 if none
  int longest_route_hops = 0;    // sum_a h_a
};

// Throws std::invalid_argument on the inputs book_collective_time rejects.
AllToAllRouteTime all_to_all_route_time(const std::vector<AxisInfo>& axes, double bytes, double w_uni,
                                        double t_min);

// nccl-tests' `size` for podsim's `bytes` (the whole array): the per-rank buffer. An
// AllGather's output, a ReduceScatter's input and an AllReduce's buffer are the whole array on
// each rank; an AllToAll's send buffer is one rank's share of it, bytes / group_size (nccl-tests
// src/alltoall.cu: count/nranks elements to each of nranks peers).
double nccl_size_bytes(CollectiveKind kind, double bytes, int group_size);
// The way back: podsim's `bytes` for an nccl-tests size (`podsim perf` takes sizes as
// nccl-tests' -b/-e do). Throws std::invalid_argument if group_size < 1 or size_bytes < 0.
double bytes_for_nccl_size(CollectiveKind kind, double size_bytes, int group_size);
// nccl-tests' `count` column for a size of elements of `element_bits`: the count nccl-tests
// passes to the collective (src/*.cu GetCollByteCount's paramcount), which is the whole buffer
// for AllReduce, one rank's share for AllGather (its send) and ReduceScatter (its receive),
// and one peer's block for AllToAll: size / element / (1 for AllReduce, else group_size).
// nccl-tests also rounds that share down to 16 bytes; podsim perf takes only sizes that split
// exactly, so the division is exact. Throws std::invalid_argument if group_size < 1,
// element_bits < 1 or size_bytes < 0.
double nccl_count_elements(CollectiveKind kind, double size_bytes, int element_bits, int group_size);

// nccl-tests algorithm bandwidth: size / time_s (B/s), size as nccl_size_bytes gives it. Throws std::invalid_argument if
// time_s <= 0 or bytes < 0.
double algbw_Bps(double bytes, double time_s);

// nccl-tests bus bandwidth (B/s): algbw times 2(n-1)/n for AllReduce and (n-1)/n for
// AllGather, ReduceScatter and AllToAll (nccl-tests doc/PERFORMANCE.md). Throws
// std::invalid_argument if group_size < 1 or on algbw_Bps's bad inputs.
double busbw_Bps(CollectiveKind kind, double bytes, double time_s, int group_size);

}  // namespace podsim
