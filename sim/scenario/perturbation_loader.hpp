#pragma once
// Internal to the scenario loader: the top-level `perturbations:` list (docs/scenario-schema.md),
// parsed by perturbation_loader.cpp for scenario_loader.cpp.
#include <vector>

#include "sim/scenario/yaml_fields.hpp"
#include "topology/topology.hpp"

namespace podsim::detail {

// Slow chips, degraded links and degraded NICs, each checked against the topology (positions
// on the mesh, axes, factors, units) so that Topology never sees a selection it would refuse.
std::vector<Perturbation> parse_perturbations(const yaml_fields::Field& field, const TopologySpec& topology);

}  // namespace podsim::detail
