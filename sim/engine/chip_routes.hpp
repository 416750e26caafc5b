#pragma once
// Route derivation for a replay: from the ops' plans, which chip pairs exchange messages and
// over which links, as the platform builder (platform.hpp) declares them to SimGrid.
#include <utility>
#include <vector>

#include "sim/engine/platform.hpp"
#include "sim/engine/replay.hpp"

namespace podsim {

// The route of every message between two chips, once per ordered pair; a message whose route
// differs from its pair's first (a ring of 2 positions, whose +1 and -1 neighbour is one chip)
// goes into `alternates`, one per endpoint pair.
std::vector<ChipRoute> chip_routes(const Topology& topo, const std::vector<Endpoint>& endpoints,
                                   const std::vector<ReplayOp>& ops, std::vector<ChipRoute>& alternates);

// AllToAll endpoints and, where a route takes a link twice, the pairs to declare explicitly.
void flow_endpoints(const std::vector<Endpoint>& endpoints, const std::vector<ReplayOp>& ops,
                    std::vector<bool>& used, std::vector<std::pair<int, int>>& pairs, bool& explicit_routes);

}  // namespace podsim
