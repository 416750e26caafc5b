#pragma once
// Internal to the scenario loader: the top-level `perturbations:` list (docs/scenario-schema.md),
// parsed by perturbation_loader.cpp for scenario_loader.cpp.
#include <vector>

#include "sim/scenario/yaml_fields.hpp"
#include "topology/stragglers.hpp"
#include "topology/topology.hpp"

namespace podsim::detail {

// Slow chips, degraded links and degraded NICs, each checked against the topology (positions
// on the mesh, axes, factors, units) so that Topology never sees a selection it would refuse.
// `link_efficiency`: the simulation's, which scales every link a bandwidth_scale scales too.
// Entries with `stragglers:` are drawn at random (topology/stragglers.hpp): they come back as
// specs, for the caller to draw.
struct ParsedPerturbations {
  std::vector<Perturbation> fixed;
  std::vector<StragglerSpec> stragglers;
};
ParsedPerturbations parse_perturbations(const yaml_fields::Field& field, const TopologySpec& topology,
                                        double link_efficiency = 1.0);

}  // namespace podsim::detail
