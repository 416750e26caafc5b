#pragma once
// The chips of a slice along some of its axes, as a mesh of their own: where one model replica
// of several in a slice runs (serving's parallelism.replica). No collective of the replica
// crosses the axes left out, so its step on this mesh is its step in the slice.
#include <vector>

#include "topology/topology.hpp"

namespace podsim {

// `kept_axes` (ascending indices into slice.axes) with their sizes and wraparound. The chip's
// host block keeps those axes' extents, and a host's DCN bandwidth shrinks to the share of its
// chips the sub-mesh keeps, so every chip keeps its DCN bandwidth (hosts that two replicas
// share split their NIC). Throws std::invalid_argument for a slice with axis splits,
// perturbations or more than one slice.
TopologySpec sub_mesh(const TopologySpec& slice, const std::vector<int>& kept_axes);

// The slice's perturbations that fall on one sub-mesh's chips, as perturbations of the
// sub-mesh: the chips at `position` (a coordinate per slice axis; only the axes left out are
// read) along the axes left out, in the first slice. A box keeps its ranges on the kept axes
// where it holds that position on the others; a link along an axis left out joins two
// sub-meshes, which no collective of either crosses, and is dropped. Throws
// std::invalid_argument for NIC perturbations (a sub-mesh's host NIC is shared with others).
std::vector<Perturbation> sub_mesh_perturbations(const TopologySpec& slice, const std::vector<int>& kept_axes,
                                                 const std::vector<int>& position);

}  // namespace podsim
