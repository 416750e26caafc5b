#pragma once
// The SimGrid platform of a planned run. All platform-building calls of podsim live in
// platform.cpp (they are deprecated in SimGrid 4.x: an upgrade is a one-file change).
#include <vector>

#include "collectives/collective.hpp"
#include "collectives/hop_plan.hpp"
#include "topology/topology.hpp"

namespace simgrid::s4u {
class Engine;
class Host;
}  // namespace simgrid::s4u

namespace podsim {

struct PlatformOptions {
  HopModel hop_model = HopModel::Floor;
  double hop_latency_s = 1e-6;
  double link_efficiency = 1.0;
};

// Sets the network model so a message of b bytes over a route takes exactly
// sum(latency) + b / min(bandwidth) (field notes: CM02, no cross-traffic, huge TCP-gamma).
// `max_actors` bounds the actors alive at once (it decides how stacks are allocated).
void configure_engine(simgrid::s4u::Engine& engine, size_t max_actors);

// One star zone: each endpoint is a host whose outgoing route is its out_route and incoming
// route its in_route, so the message s -> d takes s.out_route + d.in_route. Links are
// split-duplex (each direction its own bandwidth), with efficiency applied. Under the
// additive hop model each ICI link carries T_min of latency (a DCN path T_min in all);
// under the floor model links have none and the receiver enforces the floor.
//
// When some route takes a link more than once (a star zone would drop the repeats), pass the
// (source, destination) endpoint pairs that exchange messages: a full zone then declares each
// pair's route explicitly, repeats included.
std::vector<simgrid::s4u::Host*> build_platform(const Topology& topo, const std::vector<Endpoint>& endpoints,
                                                const PlatformOptions& options,
                                                const std::vector<std::pair<int, int>>* explicit_pairs = nullptr);

}  // namespace podsim
