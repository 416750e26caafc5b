#include "sim/engine/preflight.hpp"

namespace podsim {

const EstimateCoefficients& estimate_coefficients() {
  static const EstimateCoefficients coefficients;
  return coefficients;
}

SimulationEstimate estimate_simulation(const TopologySpec& topology, const SimulationSettings& settings,
                                       const Program& program, Fidelity fidelity, ReplayEngine engine) {
  const SymmetryReduction reduction = reduce_program(topology, settings, program, fidelity);
  const Topology simulated(reduction.reduced);
  const auto& c = estimate_coefficients();
  SimulationEstimate e;
  double all_to_all_s = 0;
  long long ring_messages = 0, flows = 0, dcn_messages = 0;
  e.real_chips = topology.chips_per_slice() * topology.slices;
  e.simulated_chips = simulated.chip_count();
  e.ops = static_cast<long long>(program.size());
  for (size_t i = 0; i < program.size(); ++i) {
    const ProgramOp& op = program[i];
    long long messages = 0;
    if (op.is(ProgramOpKind::Collective)) {
      messages = count_messages(simulated, reduction.real, op.collective());
    } else if (op.is(ProgramOpKind::Send)) {
      // plan_send: every chip with a neighbour that way sends one message.
      for (ChipId chip = 0; chip < simulated.chip_count(); ++chip)
        messages += simulated.step_along(chip, op.send().axis, op.send().direction).has_value() ||
                            (op.send().round_the_end && simulated.round_the_end(chip, op.send().axis, op.send().direction))
                        ? 1
                        : 0;
    }
    e.plan_messages += messages;
    const long long all = messages * op.repeat;
    if (op.is(ProgramOpKind::Collective) && op.collective().kind == CollectiveKind::AllToAll) {
      // Every block at once: the solver's cost per block grows with the blocks in flight.
      all_to_all_s += op.repeat * c.seconds_per_flow_squared * static_cast<double>(messages) * static_cast<double>(messages);
      // A block's mean route: a quarter of a wrapped axis, a third of a line, per axis.
      double hops = 0;
      for (int a : op.collective().axes) {
        const int n = reduction.real.axes.at(a);
        hops += simulated.wraps(a) ? n / 4.0 : n / 3.0;
      }
      e.flow_hops += hops * static_cast<double>(messages);
      flows += messages;
    } else {
      ring_messages += all;
      if (op.is(ProgramOpKind::Collective) && op.collective().over_dcn) dcn_messages += messages;
    }
    e.messages += all;
    e.spans += static_cast<long long>(op.repeat) * e.simulated_chips;
    if (all > e.heaviest_op_messages) {
      e.heaviest_op_messages = all;
      e.heaviest_op = static_cast<int>(i);
    }
  }
  e.memory_bytes = c.base_bytes + c.bytes_per_real_chip * e.real_chips + c.bytes_per_simulated_chip * e.simulated_chips +
                   c.bytes_per_flow * static_cast<double>(flows) + c.bytes_per_flow_hop * e.flow_hops +
                   c.bytes_per_dcn_message * static_cast<double>(dcn_messages) +
                   c.bytes_per_span * static_cast<double>(e.spans);
  // Auto runs natively what has no point-to-point send (native_replay.hpp). AllToAll blocks
  // keep SimGrid's quadratic term natively too: every block at once shares links, and each
  // landing re-solves the blocks it shared them with (an overestimate, not measured natively).
  bool native = engine == ReplayEngine::Native;
  if (engine == ReplayEngine::Auto) {
    native = true;
    for (const auto& op : program) native = native && !op.is(ProgramOpKind::Send) && op.after_neighbour.empty();
  }
  const double per_message = native ? c.native_seconds_per_message : c.seconds_per_message;
  e.wall_s = per_message * static_cast<double>(ring_messages) + all_to_all_s +
             c.seconds_per_span * static_cast<double>(e.spans);
  return e;
}

}  // namespace podsim
