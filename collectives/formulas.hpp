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

// nccl-tests algorithm bandwidth: bytes / time_s (B/s). Throws std::invalid_argument if
// time_s <= 0 or bytes < 0.
double algbw_Bps(double bytes, double time_s);

// nccl-tests bus bandwidth (B/s): algbw times 2(n-1)/n for AllReduce and (n-1)/n for
// AllGather, ReduceScatter and AllToAll (nccl-tests doc/PERFORMANCE.md). Throws
// std::invalid_argument if group_size < 1 or on algbw_Bps's bad inputs.
double busbw_Bps(CollectiveKind kind, double bytes, double time_s, int group_size);

}  // namespace podsim
