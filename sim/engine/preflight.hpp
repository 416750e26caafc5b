#pragma once
// What a run will cost, estimated before anything is planned or simulated: the messages the
// replay will move, the spans it will record, and from them the memory and wall time, so that a
// scenario far beyond the machine is refused with its numbers (sim/commands/main.cpp) instead
// of dying of std::bad_alloc, the out-of-memory killer or a day of simulation.
//
// Counts are exact (count_messages walks the plan's own schedule; the reduction is run_program's
// own). Memory and time are a linear model of those counts whose coefficients were measured on
// this project's reference machine (docs/modelling.md, "Preflight"); they are estimates, within a
// factor of 2 on the cases measured there (not a promise elsewhere); the limits leave room.
#include <cstdint>
#include <string>

#include "sim/engine/run.hpp"

namespace podsim {

struct SimulationEstimate {
  int real_chips = 0;
  int simulated_chips = 0;
  long long ops = 0;               // program ops (one per chip program)
  long long messages = 0;          // every repetition of every op
  long long plan_messages = 0;     // one repetition of every op: the plans held at once
  long long spans = 0;             // op repetitions x simulated chips: the timings recorded
  double flow_hops = 0;            // AllToAll blocks' route links, estimated (memory)
  double memory_bytes = 0;         // peak resident memory of the simulation
  double wall_s = 0;               // wall time of planning, replay and reports
  // The op with the most messages over its repetitions, and how many: what a refusal names.
  int heaviest_op = -1;
  long long heaviest_op_messages = 0;
};

SimulationEstimate estimate_simulation(const TopologySpec& topology, const SimulationSettings& settings,
                                       const Program& program, Fidelity fidelity,
                                       ReplayEngine engine = ReplayEngine::Auto);

// The model's coefficients, measured on this project's 2-core reference machine in CPU time
// (docs/modelling.md, "Preflight"): rings, sends and DCN rings cost 3.6-11 us of CPU per message;
// an AllToAll's blocks all travel at once, and SimGrid's sharing solver makes each cost in
// proportion to how many are in flight (8 ns x flows per flow on 12^3 and 16^3 reduced, 4 ns on
// a full 16x16), so an AllToAll costs flows^2 x 1e-8 s. Memory: 48 KB per simulated chip (a
// full 16^3 AllGather: 235 MB), 0.7 KB per AllToAll block and 0.3 KB per link of its route
// (fit to 12^3 and 20^3 reduced AllToAlls: 94 and 414 MB).
struct EstimateCoefficients {
  double base_bytes = 40e6;                 // the process, SimGrid, the libraries
  double bytes_per_real_chip = 2e3;         // the real pod's graph, built even when reduced
  double bytes_per_simulated_chip = 48e3;   // host, links, actor and its stack, mailboxes, chains
  double bytes_per_flow = 712;              // an AllToAll block's plan, endpoint and comm
  double bytes_per_flow_hop = 294;          // each link of its route, in the plan and in SimGrid
  double bytes_per_dcn_message = 40;        // messages of a ring across slices: held until delivered
                                            // (4x4 slices over DCN: 1,000: 64M messages, 2.5 GB;
                                            // 2,000: 257M, over 9 GB when stopped)
  double bytes_per_span = 200;              // a recorded span, its reports and trace events
  double seconds_per_message = 10e-6;       // ring, send and DCN messages
  // The native replay (native_replay.hpp): a full 16x16x8 13B step, 48.3M messages in 26 s,
  // and a 16x16x16 one with a slow chip, 102.5M in 119 s, planning and reports included.
  double native_seconds_per_message = 1.2e-6;
  double seconds_per_flow_squared = 1e-8;   // an AllToAll repetition: this x flows^2
  double seconds_per_span = 3e-6;           // the engine's op loop and the reports, per span
};
const EstimateCoefficients& estimate_coefficients();

}  // namespace podsim
