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

// The route of every message between two chips (ring hops, point-to-point sends, AllToAll
// completion notices): one per ordered pair, since a message between actors goes from the
// sender's host to the receiver's.
struct ChipRoute {
  ChipId src = 0;
  ChipId dst = 0;
  std::vector<DirectedLink> links;   // empty: a notice of 0 bytes over a link of its own
  int src_endpoint = -1;             // for a second route: the endpoints whose messages take it
  int dst_endpoint = -1;
};

struct ChipPlatform {
  std::vector<simgrid::s4u::Host*> chips;   // by simulated ChipId, one actor each
  std::vector<simgrid::s4u::Host*> flows;   // by endpoint index (AllToAll blocks), may be empty
  // Per second route between two chips: a host pair of its own joined by it.
  std::vector<std::pair<simgrid::s4u::Host*, simgrid::s4u::Host*>> alternates;
};

// The bandwidth the network gives one direction of a link: its own (perturbations included)
// times the link efficiency; a DCN core is one link both directions share.
double link_bandwidth_Bps(const LinkInfo& link, bool forward, const PlatformOptions& options);

// The latency a message over `route` takes under the additive hop model, after it lands (0
// under the floor model): T_min per ICI link, T_min / 2 per NIC (a DCN path T_min in all), and
// the extra latency of perturbed links in the direction taken (message_rules.hpp says why links
// themselves carry none).
double route_latency_s(const Topology& topo, const std::vector<DirectedLink>& route, const PlatformOptions& options);

// Two zones under one root: the chips, whose routes are declared per pair (a full zone; each
// second route between two chips joins a host pair of its own), and the endpoints of AllToAll
// blocks (a star zone where the block s -> d takes s.out_route + d.in_route, or a full zone of
// `flow_pairs` when some route takes a link more than once, which a star zone would drop).
// Messages never cross between the two. Links are split-duplex (each direction its own
// bandwidth, perturbations included), with efficiency applied, created once when a route
// first uses them. Links carry no latency: the receiver adds it (message_rules.hpp).
ChipPlatform build_chip_platform(const Topology& topo, int chips, const std::vector<ChipRoute>& routes,
                                 const std::vector<ChipRoute>& alternates,
                                 const std::vector<Endpoint>& flow_endpoints,
                                 const std::vector<std::pair<int, int>>* flow_pairs, const PlatformOptions& options);

}  // namespace podsim
