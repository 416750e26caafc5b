#pragma once
// A per-chip program: the ops every chip runs, with their dependencies. Every chip runs the
// same ops; collectives name mesh axes, not chips. Where chips differ by position (pipeline
// stages, uneven MoE work) the op says along which axes, and the symmetry reduction keeps them.
#include <string>
#include <vector>

#include "collectives/collective.hpp"
#include "workloads/op_role.hpp"

namespace podsim {

enum class ProgramOpKind {
  Collective,
  Compute,
  Send,   // point to point: each chip sends `collective.bytes` to its neighbour one step along
          // `send_axis` in `send_direction`, within the line (never round a wraparound); with
          // `send_round_the_end` the line's last chip also sends to its first
};

// A dependency on an op of another chip: the neighbour one step against `direction` along
// `axis` (the chip a Send arrives from). No dependency where that neighbour does not exist.
// With round_the_end, only the line's first chip in `direction` has it, on the last one (what
// a send round the end delivers); every other chip has none. A send is received by one op on
// a chip: two ops depending on the same send would leave one waiting forever.
struct NeighbourDependency {
  int op = -1;
  int axis = 0;
  int direction = +1;
  bool round_the_end = false;
};

struct ProgramOp {
  std::string name;
  ProgramOpKind kind = ProgramOpKind::Collective;
  CollectiveSpec collective;   // for Collective
  double compute_s = 0;        // for Compute: time on the chip's compute units (a roofline)
  double flops = 0;            // for Compute: the useful FLOPs it performs (MFU accounting)
  int repeat = 1;
  // Ops (indices into the program, all earlier) that must finish on a chip before this
  // starts there. Ops with no dependency start at time 0.
  std::vector<int> after;
  // Earliest start on every chip, in simulated seconds (0: as soon as `after` allows). Lets
  // independent measurements share one simulation without overlapping.
  double release_s = 0;
  // Where chips run their ops in an order that depends on their position along one axis
  // (pipeline stages under 1F1B): after_at_position[p] replaces `after` on chips at position p.
  int position_axis = -1;
  std::vector<std::vector<int>> after_at_position;
  // Where an op runs on chips at some positions along `position_axis` only (a pipeline slot
  // holding a layer on some stages): present_at_position[p] != 0 on chips at position p; empty:
  // everywhere. Where absent the op ends as soon as its dependencies allow, taking no time and
  // sending nothing, so the ops after it keep their order (workloads/op_presence.hpp).
  std::vector<char> present_at_position;
  std::vector<NeighbourDependency> after_neighbour;
  int send_axis = -1;          // for Send
  int send_direction = +1;     // for Send
  bool send_round_the_end = false;   // for Send: the line's last chip sends to its first too
  // Compute that differs from chip to chip by position along `vary_axes` (an MoE layer's
  // experts compute the tokens routed to them): compute_s_by_position[i] on the chip whose
  // coordinates on vary_axes read i in mixed radix, the first axis fastest; `compute_s` and
  // `flops` are then the mean over positions. Chips differ along these axes, so the symmetry
  // reduction keeps them whole.
  std::vector<int> vary_axes;
  std::vector<double> compute_s_by_position;
  OpRole role = OpRole::Unassigned;   // what the op is for: reports group and branch on it
  // Memory the op makes live on its chip when it starts (saved activations, gathered weights,
  // logits, ring-attention blocks), until the last of the ops `released_by` ends there (none:
  // the step's end): what the report's timeline peak adds up. The engine ignores it.
  double holds_bytes = 0;
  std::vector<int> released_by;
  int layer = -1;              // the model layer it belongs to, -1 for none
};

using Program = std::vector<ProgramOp>;

}  // namespace podsim
