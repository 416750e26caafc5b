#pragma once
// What a run reports per op of its program: the timing every op has and the figures of its
// kind (a collective's traffic and the book's formula, a send's traffic and receivers).
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "collectives/formulas.hpp"
#include "topology/topology.hpp"
#include "workloads/program.hpp"

namespace podsim {

// What a collective or a send moved, as nccl-tests report it.
struct TrafficResult {
  std::vector<std::string> axes;   // mesh axes by name; "DCN" for a send across slices
  bool over_dcn = false;
  double bytes = 0;
  double size_bytes = 0;       // nccl-tests' size (the per-rank buffer): algbw = size / time
  int group_size = 1;          // chips taking part in one instance
  int hops = 0;                // sequential link hops on its longest chain (rings: per phase, summed)
  double algbw_Bps = 0;
  double busbw_Bps = 0;
};

struct CollectiveResult : TrafficResult {
  CollectiveKind kind = CollectiveKind::AllGather;
  std::optional<FormulaResult> analytic;   // the book's closed form, where one exists
};

struct SendResult : TrafficResult {
  int axis = -1;               // the axis (or Topology::kSliceAxis) and direction it goes, one
  int direction = +1;          // step, never round a wraparound (ProgramOp's SendWork)
  std::vector<int> received_by;   // ops that wait for it on the receiving chip (after_neighbour)
  // For a send round the end: the ops that wait for it on the line's first chip (the
  // dependencies marked round_the_end); received_by then holds the other chips' waiting ops.
  std::vector<int> received_round_the_end_by;
};

struct ComputeResult {};

// A host transfer's traffic (axes {"host"}: the chip's PCIe link), and its direction.
struct HostTransferResult : TrafficResult {
  bool to_host = true;
};

// One op of the program as the run measured it: the figures every op has, and those of its
// kind (the variant's alternatives in ProgramOpKind's order).
struct OperationResult {
  std::string name;
  OpRole role = OpRole::Unassigned;
  std::string category;        // the role as outputs name it (category_name)
  int layer = -1;
  int repeat = 1;
  // Per repetition, averaged: compute, the median chip's time; a collective, its slowest
  // instance from the last chip's entry to the last chip's end (its wait for late peers left
  // out); a send, its longest transfer (chip_times.hpp).
  double time_s = 0;
  double start_s = 0;          // first chip's start, first repetition
  double end_s = 0;            // last chip's end, last repetition
  // Over the chips where it runs, each chip's span less its wait for peers, averaged over
  // repetitions: the median chip's, the most and the (lowest real) chip that spent it; and
  // the wait for peers likewise (collectives; 0 otherwise).
  double chip_time_median_s = 0;
  double chip_time_max_s = 0;
  ChipId chip_time_max_chip = 0;
  double wait_for_peers_median_s = 0;
  double wait_for_peers_max_s = 0;
  ChipId wait_for_peers_max_chip = 0;
  // Where the op runs (ProgramOp::present_at_position on position_axis; empty: everywhere).
  // Its figures count those chips only; elsewhere its spans are instants to skip.
  int position_axis = -1;
  std::vector<char> present_at_position;
  std::variant<CollectiveResult, ComputeResult, SendResult, HostTransferResult> work;

  ProgramOpKind kind() const { return static_cast<ProgramOpKind>(work.index()); }
  bool is(ProgramOpKind k) const { return kind() == k; }
  // A collective's, a send's or a host transfer's traffic; nullptr for compute.
  const TrafficResult* traffic() const;
  // The book's closed form of a collective, where one exists; nullptr otherwise.
  const FormulaResult* analytic() const;
  // The figures of the kind the op is; another kind throws std::logic_error naming both.
  const CollectiveResult& collective() const;
  const SendResult& send() const;
  // "compute", "send", or the collective's kind, as outputs name it.
  std::string kind_name() const;
};

}  // namespace podsim
