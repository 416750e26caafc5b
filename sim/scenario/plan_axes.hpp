#pragma once
// Internal to the scenario loader: the mesh axes a kind of parallelism names (training's data,
// tensor, context, pipeline and expert axes; inference's model, model_d, replica and expert
// axes), checked against the topology and against the axes other kinds already took.
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "collectives/collective.hpp"
#include "sim/scenario/yaml_fields.hpp"
#include "topology/topology.hpp"
#include "workloads/model_spec.hpp"

namespace podsim::detail {

// Axis names of one kind of parallelism: mesh axes, or logical axes from topology.split. Each
// axis carries at most one kind, once; the inner and outer parts of a split axis may carry
// one kind each.
struct PlanAxes {
  std::vector<int> axes;
  std::vector<AxisSlice> slices;
};

// The names an axes value lists: a list, one name, or `all` (every mesh axis, in order).
std::vector<yaml_fields::Field> axis_items(const yaml_fields::Field& field, const TopologySpec& topology);

// `used` holds (axis or part, kind) pairs already taken; `kind` names this one in errors.
PlanAxes parse_plan_axes(const yaml_fields::Field& field, const TopologySpec& topology,
                         std::vector<std::pair<std::string, std::string>>& used, const std::string& kind);

// parse_plan_axes for kinds that take whole mesh axes only: their indices; a part of a split
// axis fails at `field` with `expected` (e.g. "expected whole mesh axes for replicas").
std::vector<int> parse_whole_axes(const yaml_fields::Field& field, const TopologySpec& topology,
                                  std::vector<std::pair<std::string, std::string>>& used, const std::string& kind,
                                  const std::string& expected);

// One whole mesh axis, named by a scalar (a context or pipeline axis): its index. A list fails
// with `not_one`; a part of a split axis with "expected a whole mesh axis".
int parse_one_whole_axis(const yaml_fields::Field& field, const TopologySpec& topology,
                         std::vector<std::pair<std::string, std::string>>& used, const std::string& kind,
                         const std::string& not_one);

// `expert:` axes (expert parallelism): whole mesh axes, each once, on a model with experts, and
// as many expert ranks as divide the experts. `check` adds what the workload needs of each axis
// (training: a data axis; inference: not a model axis), before the divisibility is checked.
using ExpertAxisCheck = std::function<void(int axis, const yaml_fields::Field& item)>;
std::vector<int> parse_expert_axes(const yaml_fields::Field& field, const TopologySpec& topology,
                                   const TransformerSpec& model, const ExpertAxisCheck& check);

// Tensor (model) parallelism over `degree` chips splits attention heads whole: the query heads
// must divide by it, and GQA's KV heads must divide by it or divide it (each KV head then
// copied degree / KV times, as vLLM pads them). MaxText refuses the uneven split ("Attention
// heads are atomic under tensor parallelism", layers/attentions.py _validate_kv_head_sharding);
// the error at `field` names the counts and the degrees that work.
void require_whole_heads(const yaml_fields::Field& field, const TransformerSpec& model, int degree);

}  // namespace podsim::detail
