#include "workloads/op_presence.hpp"

#include <algorithm>
#include <stdexcept>

namespace podsim {

void check_presence(const ProgramOp& op, const Topology& topo) {
  const auto& mask = op.present_at_position;
  if (mask.empty()) return;
  if (op.position_axis < 0 || static_cast<int>(mask.size()) != topo.extent_along(op.position_axis)) {
    throw std::logic_error("op '" + op.name + "': " + std::to_string(mask.size()) +
                           " presence entries for position axis " + std::to_string(op.position_axis));
  }
  const bool uniform = std::all_of(mask.begin(), mask.end(), [&](char p) { return (p != 0) == (mask[0] != 0); });
  if (uniform) return;
  bool spans = false;
  if (op.is(ProgramOpKind::Collective)) {
    const auto& axes = op.collective().axes;
    spans = std::find(axes.begin(), axes.end(), op.position_axis) != axes.end() ||
            (op.collective().over_dcn && op.position_axis == Topology::kSliceAxis);
  } else if (op.is(ProgramOpKind::Send)) {
    spans = op.send().axis == op.position_axis;
  }
  if (spans) {
    throw std::logic_error("op '" + op.name + "' runs over its position axis but is present at some positions only: "
                           "its group would wait for absent chips");
  }
}

}  // namespace podsim
