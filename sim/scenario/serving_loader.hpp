#pragma once
// Internal to the scenario loader: the part of the schema for `workload.kind: serving`
// (docs/scenario-schema.md).
#include <functional>
#include <string>

#include "sim/scenario/scenario.hpp"
#include "sim/scenario/yaml_fields.hpp"

namespace podsim::detail {

using TopologyParser = std::function<TopologySpec(const yaml_fields::Field&)>;

// The serving workload from the `workload` mapping (its keys already checked): the model, the
// servers, the batching policy and the requests, checked against HBM and the model's context.
ServingWorkload parse_serving(const yaml_fields::MapReader& reader, const TopologySpec& topology,
                              const TopologyParser& parse_topology);

// An expectation's `field` for a serving workload: a summary field, or "<metric>.<statistic>"
// for the latency distributions (ttft_s.p99: mean, std, median, max or one of the workload's
// metric_percentiles); returns the name whose suffix gives the unit.
std::string check_serving_field(const yaml_fields::Field& field, const std::vector<double>& percentiles);

}  // namespace podsim::detail
