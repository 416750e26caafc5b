#pragma once
// The chip loop: one SimGrid actor per chip, each an event loop over its own ops, messages and
// timers (docs/modelling.md, "The full replay"). SimGrid's engine is a process-wide singleton,
// so this runs once per process: replay.cpp gives every simulation a child process of its own.
#include <vector>

#include "sim/engine/replay.hpp"

namespace podsim {

// Replays `ops` in this process and returns what SimGrid's clock says; progress reports go to
// `progress_fd` (-1: none), as ReplayOptions::progress describes. Throws on a deadlock or
// on ops the platform cannot carry.
ReplayResult replay_in_process(const Topology& topo, const std::vector<Endpoint>& endpoints,
                               const std::vector<ReplayOp>& ops, const ReplayOptions& options, int progress_fd);

}  // namespace podsim
