#pragma once
// Symmetry reduction: simulate a smaller mesh whose per-chip timings equal the full pod's, and
// only where that is proven.
//
// The proof. Along a wrapped axis of length n, let every op of the program (and the topology:
// links, hosts, any per-chip or per-link difference) be invariant under translation by b chips,
// with b | n. Lift the pod to the infinite line Z along that axis: the lifted system is
// b-periodic, and both the real ring Z_n and a shorter ring Z_p with b | p are its quotients.
// A message routed over d links of Z crosses, in either quotient, the images of those d links;
// a link of the quotient carries, for each orbit of messages, as many copies as the lifted
// link carries, so every link constraint of SimGrid's max-min sharing (and every latency
// floor, counted in real hops) is the same equation in Z_n and Z_p. Max-min rates are unique,
// so the b-periodic solution of Z_n projects onto the solution of Z_p: the chip at position
// x of the real ring runs exactly as the simulated chip at x mod p. This holds for any mix of
// concurrent ops, because each op is planned on the quotient the same way (ring neighbours
// and AllToAll routes walk the simulated mesh, wrapping at p, for the true number of hops).
//
// What is checked, per axis (reduce_by_symmetry):
//  - an axis no collective uses, along which nothing differs, splits the pod into identical
//    groups on disjoint links: one group stands for all (size 1);
//  - an axis used by some op must wrap (a line's chips differ by position), and
//    b = lcm of what each op needs: 1 for a ring or AllToAll over the whole axis, the block
//    length for slices that are blocks (a line of k chips: k), the stride for outer rings
//    (their neighbour is `stride` chips on); b must divide n;
//  - with DCN traffic, a host's chips share its NIC: b includes the host's extent;
//  - pipelines (sends, position-dependent orders), an AllToAll with per-pair sizes (uneven MoE
//    routing), compute that differs by position (ProgramOp::vary_axes) and a flat DCN ring
//    keep their axes whole;
//  - perturbations (topology/perturbation.hpp): an axis along which some perturbation's
//    selection is not invariant under translation by one chip stays whole (the caller passes
//    it as a DifferingAxis); along the others every selection is invariant, so the reduced
//    mesh keeps the part of each selection it holds (restrict_perturbations);
//  - slices (the DCN dimension): every cross-slice op is a hierarchical ring over all slices,
//    invariant under moving every chip one slice on, so the same proof holds with b = 1 and
//    the slices simulated as a ring of 2 (one-way: a DCN ring sends to the next slice only,
//    over the sender's NIC up and the receiver's NIC down, so a ring of 2 gives each NIC the
//    flows it carries in the real ring). The oversubscribed DCN core is the one link every
//    slice shares: the real core carries S/p copies of each simulated flow, so its constraint
//    is the same equation at capacity C*p/S, which is what the simulated topology builds (the
//    core's capacity follows the host count). With no op crossing the DCN, the slices are
//    disjoint identical groups: one stands for all. Slices stay whole under a flat DCN ring, a
//    pipeline or any position-dependent op over slices, or a perturbation that differs between
//    slices (the caller passes Topology::kSliceAxis as a DifferingAxis).
// The simulated size is the smallest multiple of b that is at least 2 (a ring needs a
// neighbour), or the real size when that is not smaller. A ring of 2 strides makes a ring's +1
// and -1 neighbours one chip joined by two routes, which the engine (one actor per chip, a
// message from one chip's host to another's) relays only under the floor hop model: without
// `two_route_rings` a ring of 3 or more positions needs 3 strides, one-way too (another op may
// use the axis the other way).
// `--fidelity full` replays the real mesh; tests/test_symmetry_property.cpp compares the two on
// generated programs.
#include <string>
#include <vector>

#include "collectives/collective.hpp"
#include "topology/topology.hpp"

namespace podsim {

// Why an axis is simulated at the size it is (recorded in summary.json).
struct AxisReduction {
  std::string axis;
  int real_size = 1;
  int simulated_size = 1;
  int period = 1;        // the proven translation period b (real_size when kept whole)
  std::string reason;
};

struct SymmetryReduction {
  TopologySpec reduced;          // the mesh to simulate
  RealExtent real;               // true axis lengths and slices, for ring schedules and routes
  bool identity = true;          // reduced == real
  std::vector<AxisReduction> axes;
  AxisReduction slices;          // the DCN dimension (real_size 1: one slice)

  // The simulated chip whose timings `real_chip` (of the real topology) shares.
  ChipId representative(const Topology& real, const Topology& simulated, ChipId real_chip) const;
};

// An axis along which chips differ, with the reason (pipeline stages, a perturbation...).
// Topology::kSliceAxis records a reason on the slices.
struct DifferingAxis {
  int axis = 0;
  std::string reason;
};

// `names` (optional, one per op) name the ops in the recorded reasons.
SymmetryReduction reduce_by_symmetry(const TopologySpec& real, const std::vector<CollectiveSpec>& ops,
                                     bool full_fidelity, const std::vector<DifferingAxis>& differing = {},
                                     const std::vector<std::string>& names = {}, bool two_route_rings = true);

}  // namespace podsim
