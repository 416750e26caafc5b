#pragma once
// A per-chip program: the ops every chip runs, with their dependencies. Every chip runs the
// same program (the symmetry reduction relies on it); collectives name mesh axes, not chips.
#include <string>
#include <vector>

#include "collectives/collective.hpp"

namespace podsim {

enum class ProgramOpKind { Collective, Compute };

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
  std::string category;        // groups ops in outputs, e.g. "fsdp_allgather", "matmul"
  int layer = -1;              // the model layer it belongs to, -1 for none
};

using Program = std::vector<ProgramOp>;

}  // namespace podsim
