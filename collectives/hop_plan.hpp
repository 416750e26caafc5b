#pragma once
// The whole message plan of a list of collectives on one (possibly reduced) topology: where
// each chain of messages lives, which links its messages take, and what each chip sends.
// Plain C++: sim/engine/ turns endpoints into SimGrid hosts and chains into actors.
#include <map>
#include <string>
#include <vector>

#include "collectives/collective.hpp"
#include "collectives/ring_schedule.hpp"
#include "topology/topology.hpp"

namespace podsim {

// A place messages arrive at: one per chip and channel (an ICI direction on an axis, the DCN
// port, an AllToAll source...). A message from endpoint s to endpoint d takes
// s.out_route followed by d.in_route (a star of routes: no N x N table).
// What an endpoint of a chip is for, the key that makes plans share it or not: a ring over the
// whole axis shares its ports with point-to-point sends along it; a ring over a slice of the
// axis has its own; each AllToAll route into a chip is an endpoint of its own.
struct Channel {
  enum class Kind { Chip, Ici, Dcn, FlatDcn, AllToAllOut, AllToAllIn, SendOut };   // Chip: the chip itself (its compute)
  Kind kind = Kind::Ici;
  int axis = -1;           // Ici: the axis and the direction messages travel
  int direction = 0;
  int stride = 0;          // Ici over a slice of the axis: its stride and size (0: the whole axis)
  int size = 0;
  std::vector<DirectedLink> route;   // AllToAllIn: the route the flows arrive by

  static Channel ici(int axis, int direction, int stride = 0, int size = 0) {
    return {Kind::Ici, axis, direction, stride, size, {}};
  }
  static Channel of(Kind kind) { return {kind, -1, 0, 0, 0, {}}; }
  static Channel all_to_all_in(std::vector<DirectedLink> route) {
    return {Kind::AllToAllIn, -1, 0, 0, 0, std::move(route)};
  }
  bool operator<(const Channel& other) const;
};

struct Endpoint {
  ChipId chip = 0;
  Channel channel;
  std::vector<DirectedLink> in_route;
  std::vector<DirectedLink> out_route;
  // Links in_route takes beyond its ring hops, going round failed links (Topology::hop_route):
  // a message's latency floor counts them (ChainPlan::shape.hops, FlowPlan::hops).
  int in_detour_links = 0;
};

// The links a message from endpoint `from` to endpoint `to` crosses: from.out_route, then
// to.in_route.
std::vector<DirectedLink> route_between(const std::vector<Endpoint>& endpoints, int from, int to);

struct ChainPlan {
  int endpoint = -1;        // where this chain receives (and from where it sends)
  int peer_endpoint = -1;   // where its messages go; -1 when it only receives
  ChainShape shape;
  double message_bytes = 0;
  double extra_latency_s = 0;   // perturbed links' extra latency along a message's route
};

// One AllToAll block: a flow along its dimension-order route.
struct FlowPlan {
  int src_endpoint = -1;
  int dst_endpoint = -1;
  ChipId dst_chip = 0;
  double bytes = 0;
  int hops = 0;
  double extra_latency_s = 0;   // perturbed links' extra latency along its route
};

struct ChipOpPlan {
  // parts -> phases -> chains (0-2 per phase); all parts run at once, phases in order.
  std::vector<std::vector<std::vector<ChainPlan>>> parts;
  std::vector<FlowPlan> flows;  // AllToAll blocks this chip sends
  int incoming_flows = 0;       // AllToAll blocks this chip receives
  // Point-to-point sends: the op is done on this chip when its blocks have arrived.
  bool done_when_delivered = false;
};

struct OpPlan {
  std::vector<ChipOpPlan> chips;   // indexed by ChipId of the planned topology
  int messages = 0;                // ring messages + flows, all chips, one repetition
  // Some routes take one link several times (a reduced AllToAll's class links), which a
  // star zone cannot express: the platform then declares each route pair explicitly.
  bool repeats_links = false;
  // Point to point (plan_send): each flow is one message to a neighbour's port, whose arrival
  // that neighbour's dependent ops wait for.
  bool point_to_point = false;
};

class EndpointRegistry {
 public:
  // Returns the index of (chip, channel), creating it with these routes on first use.
  int get(ChipId chip, const Channel& channel, const std::vector<DirectedLink>& in_route,
          const std::vector<DirectedLink>& out_route = {}, int in_detour_links = 0);
  const std::vector<Endpoint>& endpoints() const { return endpoints_; }

 private:
  std::map<std::pair<ChipId, Channel>, int> index_;
  std::vector<Endpoint> endpoints_;
};

// Plans one collective on `topo`. `real` holds the true length of each axis and the true number
// of slices (the planned topology may be a symmetry-reduced copy, shorter along axes and with
// fewer slices); rings use the true lengths.
OpPlan plan_collective(const Topology& topo, const RealExtent& real,
                       const CollectiveSpec& spec, EndpointRegistry& registry);

// The messages plan_collective would plan (OpPlan::messages), counted without planning them:
// what the preflight estimate of a run needs (sim/engine/preflight.hpp). It walks the same ring
// schedule and chain shapes as the plan, so the two agree; tests/test_preflight.cpp checks it
// on generated collectives.
long long count_messages(const Topology& topo, const RealExtent& real, const CollectiveSpec& spec);

// Point to point along a line: every chip with a neighbour one step along `axis` in
// `direction` sends it `bytes`; the op ends on the sender when the data has arrived. With
// round_the_end the line's last chip sends to its first as well.
OpPlan plan_send(const Topology& topo, int axis, int direction, double bytes, EndpointRegistry& registry,
                 bool round_the_end = false);

// Boustrophedon order of a slice's chips: consecutive chips are ICI neighbours.
std::vector<ChipId> snake_order(const Topology& topo, int slice);

}  // namespace podsim
