#include "sim/scenario/routing_loader.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>

#include "sim/scenario/expert_loads.hpp"
#include "sim/scenario/input_file.hpp"

namespace podsim::detail {

using namespace yaml_fields;

enum class Distribution { Uniform, Zipf, Loads };

MoeRouting parse_routing(const Field& field, const TransformerSpec& model) {
  const MapReader reader(field, SchemaMap::Routing);
  reader.reject_unknown();
  if (!model.moe)
    fail(field, "the model has no experts (" + model.name +
                    " is dense); expected routing only for a model with moe experts");
  const MoeSpec& moe = *model.moe;
  MoeRouting routing;
  RoutingSpec& spec = routing.spec;
  Distribution distribution = Distribution::Uniform;
  if (auto value = reader.optional("distribution"))
    distribution = read_choice<Distribution>(
        *value, {{"uniform", Distribution::Uniform}, {"zipf", Distribution::Zipf}, {"loads", Distribution::Loads}});
  spec.kind = distribution == Distribution::Zipf    ? RoutingKind::Zipf
              : distribution == Distribution::Loads ? RoutingKind::Weights
                                                    : RoutingKind::Uniform;

  // Keys of one distribution are errors under another: a zipf_s beside distribution: loads
  // would otherwise be ignored without a word.
  for (const char* key : {"zipf_s", "shuffle"})
    if (auto value = reader.optional(key); value && distribution != Distribution::Zipf)
      fail(*value, std::string("applies to distribution: zipf; expected no ") + key + " with distribution: " +
                       (distribution == Distribution::Loads ? "loads" : "uniform"));
  if (auto value = reader.optional("zipf_s")) {
    spec.zipf_s = read_real(*value);
    if (spec.zipf_s < 0) fail(*value, "expected an exponent >= 0 (0: every expert equally likely)");
    // The k-th ranked expert's weight 1/k^s must stay above 0, or no token finds k experts with
    // a weight to draw (pow overflows to infinity past s = log(DBL_MAX) / log k).
    const int k = moe.experts_per_token;
    if (!(1.0 / std::pow(static_cast<double>(k), spec.zipf_s) > 0)) {
      char limit[32];
      std::snprintf(limit, sizeof limit, "%.4g", std::log(std::numeric_limits<double>::max()) / std::log(static_cast<double>(k)));
      fail(*value, "gives the expert ranked " + std::to_string(k) + " a weight of 1/" + std::to_string(k) +
                       "^s, which rounds to 0, and each token needs " + std::to_string(k) +
                       " experts (experts_per_token) with a weight; expected zipf_s below " + limit);
    }
  }
  if (auto value = reader.optional("shuffle")) routing.shuffle = read_bool(*value);

  const auto loads = reader.optional("loads");
  if (distribution == Distribution::Loads) {
    if (!loads)
      throw InputError(field.where, child_key(field.key, "loads"), "",
                       "missing; distribution: loads needs loads: <path of an expert-load CSV>, relative to the "
                       "scenario file");
    routing.layer_weights = read_expert_loads(resolve_input_path(read_string(*loads), field.where.file), model);
  } else if (loads) {
    fail(*loads, "applies to distribution: loads; expected distribution: loads beside it, or no loads");
  }

  const auto capacity = reader.optional("capacity_factor");
  if (capacity) {
    spec.capacity_factor = read_real(*capacity);
    if (!(spec.capacity_factor > 0)) fail(*capacity, "expected a capacity factor > 0, e.g. 1.25");
    // capacity = ceil(cf T k / E): beyond cf = E every expert holds more than all T k
    // assignments, which routing could not fill and a whole-token count may not hold.
    if (spec.capacity_factor > moe.experts)
      fail(*capacity, "above the model's " + std::to_string(moe.experts) +
                          " experts: an expert's capacity would exceed every token's " +
                          std::to_string(moe.experts_per_token) + " choices together; expected at most " +
                          std::to_string(moe.experts) + " (leave capacity_factor out for no capacity)");
  }
  if (auto value = reader.optional("pad_to_capacity")) {
    if (!capacity)
      fail(*value, "applies with capacity_factor (buffers padded to the expert capacity); expected "
                   "capacity_factor beside it, or no pad_to_capacity (without a capacity nothing is padded)");
    routing.pad_to_capacity = read_bool(*value);
  }
  if (auto seed = reader.optional("seed")) spec.seed = static_cast<uint64_t>(read_integer(*seed, 0, INT64_MAX));
  return routing;
}

}  // namespace podsim::detail
