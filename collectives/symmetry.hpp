#pragma once
// Symmetry reduction: simulate a small mesh whose per-chip timings equal the full pod's.
//
// Why it is exact: every chip runs the same program, so
//  - an axis no collective uses splits the pod into identical, independent groups on disjoint
//    links: one group stands for all (size 1);
//  - along a wrapped axis that only rings use, every chip is equivalent under translation:
//    each sends the same messages at the same times over its own links, so a 2-chip ring with
//    its wraparound link (two parallel links) sees the same time per hop as a ring of any size,
//    as long as the schedule keeps the true ring length (steps, message sizes);
//  - an AllToAll over a wrapped axis is translation-invariant too: one representative chip's
//    blocks, routed over one link per direction of that axis taken once per hop, load it
//    exactly as all chips' blocks load every link of the real ring (hop_plan.cpp);
//  - axes without wraparound and flat rings keep full size.
// With DCN traffic, the chips of one host share its NIC, so a reduced axis keeps whole hosts.
// `--fidelity full` replays the real mesh; tests check the two agree on meshes up to 8x8x8.
#include <vector>

#include "collectives/collective.hpp"
#include "topology/topology.hpp"

namespace podsim {

struct SymmetryReduction {
  TopologySpec reduced;          // the mesh to simulate
  std::vector<int> real_sizes;   // true axis lengths, for ring schedules
  bool identity = true;          // reduced == real

  // The simulated chip whose timings `real_chip` (of the real topology) shares.
  ChipId representative(const Topology& real, const Topology& simulated, ChipId real_chip) const;
};

// `full_axes` are kept whole whatever the collectives do (chips along them run differently,
// as pipeline stages do).
SymmetryReduction reduce_by_symmetry(const TopologySpec& real, const std::vector<CollectiveSpec>& ops,
                                     bool full_fidelity, const std::vector<int>& full_axes = {});

}  // namespace podsim
