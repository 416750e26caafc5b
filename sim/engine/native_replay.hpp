#pragma once
// The native replay: the full replay's rules (chip_loop.cpp, docs/modelling.md "The full
// replay") run by podsim's own event loop over a fluid network (fluid_network.hpp) instead of
// SimGrid's actors, mailboxes and simcalls, which set the full replay's speed (a hop costs
// four simcalls there; docs/performance.md). What it keeps of SimGrid, and how:
//  - the network: CM02 as podsim configures it (links without latency), max-min sharing
//    re-solved per changed component once per date, events within 1e-15 s together
//    (fluid_network.hpp);
//  - the rules both replays share (message_rules.hpp): a chain's messages cross one at a time,
//    in the order sent, each from the later of its send and the landing of the one before it
//    (or the chain's start); the floor or the route's latency after landing;
//  - a chip's timers due at a date fire before the messages that land at it.
// Chips act at one date in an order of their own, and need not follow SimGrid's: under these
// rules nothing one chip does at a date changes what another sees at it (rates are solved
// after the date's last event, and a message moves at a date whichever of its send and the
// landing before it comes first). tests/test_native_replay.cpp compares every chip's spans
// with the SimGrid replay on generated programs, full and symmetry-reduced. A message over a
// second route between two chips (a reduced ring of 2 positions, whose +1 and -1 neighbour is
// one chip) is a flow over its own links like any other: the SimGrid replay relays it only
// because its actors' hosts have one route per pair.
//
// AllToAll blocks follow chip_loop.cpp's rules: every block of a chip leaves at once when its
// work starts, a flow over its route; a chip's instance ends when its own blocks have landed
// and every block addressed to it has arrived (its floor or latency after landing), the last
// sender telling it at that date (a notice of no bytes, which takes no time).
//
// Not yet covered (the SimGrid replay runs them): point-to-point sends and their neighbour
// waits.
#include <string>
#include <vector>

#include "sim/engine/replay.hpp"

namespace podsim {

// Why the native replay cannot run `ops`, "" when it can.
std::string native_replay_unsupported(const std::vector<ReplayOp>& ops);

// Replays `ops` in this process (it needs no process of its own, but replay.cpp gives it one
// as it does the SimGrid replay, for progress, memory and isolation alike). Throws
// std::invalid_argument when native_replay_unsupported says why, and std::runtime_error on a
// deadlock.
ReplayResult native_replay_in_process(const Topology& topo, const std::vector<Endpoint>& endpoints,
                                      const std::vector<ReplayOp>& ops, const ReplayOptions& options, int progress_fd);

}  // namespace podsim
