#include "sim/scenario/plan_axes.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace podsim::detail {

using namespace yaml_fields;   // the field readers every loader uses

// The names an axes value lists: a list, one name, or `all` (every mesh axis, in order).
std::vector<Field> axis_items(const Field& field, const TopologySpec& topology) {
  std::vector<Field> items;
  if (field.node.IsScalar() && field.node.Scalar() == "all") {   // every mesh axis, in order
    for (const auto& axis : topology.axes) {
      Field item = field;
      item.node = YAML::Node(axis.name);
      items.push_back(item);
    }
  } else if (field.node.IsScalar()) {
    items.push_back(field);   // "data: X" for a single axis
  } else {
    items = read_list(field);
  }
  return items;
}

PlanAxes parse_plan_axes(const Field& field, const TopologySpec& topology,
                         std::vector<std::pair<std::string, std::string>>& used, const std::string& kind) {
  const std::vector<Field> items = axis_items(field, topology);
  PlanAxes out;
  const auto& mesh = topology.axes;
  for (const Field& item : items) {
    const std::string name = read_string(item);
    int index = axis_index(mesh, name);
    AxisSlice slice{1, 0};
    std::string key = name;   // what conflicts: "Z", or "Z:inner" / "Z:outer"
    if (index < 0) {
      for (const auto& split : topology.splits) {
        if (name != split.inner && name != split.outer) continue;
        index = split.axis;
        const int n = mesh[split.axis].size;
        slice = name == split.inner ? AxisSlice{1, split.inner_size} : AxisSlice{split.inner_size, n / split.inner_size};
        key = mesh[split.axis].name + (name == split.inner ? ":inner" : ":outer");
      }
    }
    if (index < 0) {
      std::string known = axis_names(mesh);
      for (const auto& split : topology.splits) known += ", " + split.inner + ", " + split.outer;
      fail(item, "not a mesh axis; the mesh has " + known);
    }
    const std::string physical = mesh[index].name;
    for (const auto& [other, owner] : used) {
      const bool clash = other == key || other == physical || (key == physical && other.rfind(physical + ":", 0) == 0);
      if (clash) {
        fail(item, owner == kind ? "axis listed twice"
                                 : "axis already carries " + owner +
                                       " parallelism; expected each mesh axis (or each part of a split axis) in at "
                                       "most one of data, tensor and pipeline");
      }
    }
    used.emplace_back(key, kind);
    out.axes.push_back(index);
    out.slices.push_back(slice);
  }
  return out;
}

std::vector<int> parse_whole_axes(const Field& field, const TopologySpec& topology,
                                  std::vector<std::pair<std::string, std::string>>& used, const std::string& kind,
                                  const std::string& expected) {
  const PlanAxes parsed = parse_plan_axes(field, topology, used, kind);
  for (const auto& slice : parsed.slices) {
    if (slice.size != 0) fail(field, expected);
  }
  return parsed.axes;
}

int parse_one_whole_axis(const Field& field, const TopologySpec& topology,
                         std::vector<std::pair<std::string, std::string>>& used, const std::string& kind,
                         const std::string& not_one) {
  if (!field.node.IsScalar()) fail(field, not_one);
  return parse_whole_axes(field, topology, used, kind, "expected a whole mesh axis, not part of a split one").at(0);
}

std::vector<int> parse_expert_axes(const Field& field, const TopologySpec& topology, const TransformerSpec& model,
                                   const ExpertAxisCheck& check) {
  // Its own list of used axes: in training the expert axes are data axes too.
  std::vector<std::pair<std::string, std::string>> used;
  const PlanAxes parsed = parse_plan_axes(field, topology, used, "expert");
  const std::vector<Field> items = axis_items(field, topology);
  for (size_t i = 0; i < parsed.axes.size(); ++i) {
    if (parsed.slices[i].size != 0)
      fail(items[i], "part of a split axis; expected whole mesh axes for expert parallelism");
  }
  if (parsed.axes.empty()) return {};
  if (!model.moe)
    fail(field, "the model has no experts (" + model.name + " is dense); expected no expert axes, or a model with moe");
  for (size_t i = 0; i < parsed.axes.size(); ++i) check(parsed.axes[i], items[i]);
  int64_t ranks = 1;
  std::vector<std::string> sizes;
  for (int axis : parsed.axes) {
    ranks *= topology.axes[axis].size;
    sizes.push_back(topology.axes[axis].name + "=" + std::to_string(topology.axes[axis].size));
  }
  const int experts = model.moe->experts;
  if (experts % ranks != 0)
    fail(field, std::to_string(experts) + " experts do not divide over the expert axes (" + join(sizes, " x ") +
                    (sizes.size() > 1 ? " = " + std::to_string(ranks) : std::string()) +
                    " ranks); expected expert axes whose sizes multiply to a divisor of " + model.name + "'s " +
                    std::to_string(experts) + " experts");
  return parsed.axes;
}

namespace {

bool splits_whole_heads(const TransformerSpec& model, int degree) {
  if (model.heads % degree != 0) return false;
  if (model.attention != AttentionKind::Gqa) return true;   // MLA's latent is whole on every shard
  return model.kv_heads % degree == 0 || degree % model.kv_heads == 0;
}

}  // namespace

void require_whole_heads(const yaml_fields::Field& field, const TransformerSpec& model, int degree) {
  if (model.attention == AttentionKind::None || splits_whole_heads(model, degree)) return;
  std::string working;
  for (int d = 1; d <= model.heads; ++d)
    if (splits_whole_heads(model, d)) working += (working.empty() ? "" : ", ") + std::to_string(d);
  const bool query = model.heads % degree != 0;
  const std::string heads = query ? std::to_string(model.heads) + " query heads"
                                  : std::to_string(model.kv_heads) + " KV heads";
  yaml_fields::fail(field, std::to_string(degree) + " chips of tensor parallelism split the " + heads + " of " +
                               model.name + " unevenly (" + std::to_string(model.heads) + " query, " +
                               std::to_string(model.kv_heads) +
                               " KV heads; fewer KV heads than chips must divide their number); heads are whole on "
                               "a chip, as MaxText requires; expected a degree among " + working);
}

}  // namespace podsim::detail
