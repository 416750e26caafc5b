#pragma once
// Where an op runs: on every chip, or on chips at some positions along its position_axis only
// (ProgramOp::present_at_position: a pipeline slot holding a layer on some stages).
#include "topology/topology.hpp"
#include "workloads/program.hpp"

namespace podsim {

// Whether `op` runs on chips at `position` along its position_axis.
inline bool present_at(const ProgramOp& op, int position) {
  return op.present_at_position.empty() || op.present_at_position.at(position) != 0;
}

// Whether `op` runs on `chip` of `topo` (the real or the symmetry-reduced topology: the
// position axis is never reduced, so a chip's position on it is the same in both).
inline bool present_on(const ProgramOp& op, const Topology& topo, ChipId chip) {
  return op.present_at_position.empty() || present_at(op, topo.position_along(chip, op.position_axis));
}

// Throws std::logic_error naming the op when its mask cannot be replayed: not one entry per
// position along its position_axis of `topo`, or a collective or send whose group spans
// positions where presence differs (its absent members would leave the others waiting).
void check_presence(const ProgramOp& op, const Topology& topo);

}  // namespace podsim
