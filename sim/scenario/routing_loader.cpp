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

// The experts' buffers: capacity_factor, pad_to_capacity and how the experts are computed
// (dispatch), each checked against the others.
void read_expert_buffers(const MapReader& reader, const MoeSpec& moe, bool training, MoeRouting& routing) {
  const auto capacity = reader.optional("capacity_factor");
  if (capacity) {
    routing.spec.capacity_factor = read_real(*capacity);
    if (!(routing.spec.capacity_factor > 0)) fail(*capacity, "expected a capacity factor > 0, e.g. 1.25");
    // capacity = ceil(cf T k / E): beyond cf = E every expert holds more than all T k
    // assignments, which routing could not fill and a whole-token count may not hold.
    if (routing.spec.capacity_factor > moe.experts)
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
  if (auto value = reader.optional("dispatch")) {
    if (!training)
      fail(*value, "applies to a training step (MaxText's dense_matmul); inference and serving compute their experts "
                   "as grouped matmuls: expected no dispatch");
    routing.dispatch = read_choice<MoeDispatch>(*value, {{"grouped", MoeDispatch::Grouped}, {"einsum", MoeDispatch::Einsum}});
    // MaxText's dense_matmul without a capacity runs every token through every expert: not modelled.
    if (routing.dispatch == MoeDispatch::Einsum && !capacity)
      fail(*value, "einsum dispatch places tokens in capacity slots; expected capacity_factor beside it (MaxText's "
                   "dense_matmul with capacity_factor > 0), or dispatch: grouped");
    if (routing.dispatch == MoeDispatch::Einsum && !routing.pad_to_capacity)
      fail(*value, "einsum dispatch computes every capacity slot (its buffers are padded); expected no "
                   "pad_to_capacity: false beside it, or dispatch: grouped");
  }
}

MoeRouting parse_routing(const Field& field, const TransformerSpec& model, bool training) {
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

  read_expert_buffers(reader, moe, training, routing);
  // MaxText's tiles for its grouped matmuls (base.yml:175-178 at 3eb77db3), priced by the
  // kernels compute model; the einsum dispatch has no grouped matmul to tile.
  for (const char* key : {"tile_batch_seq", "tile_embed_dim", "tile_mlp_dim"}) {
    const auto value = reader.optional(key);
    if (!value) continue;
    if (routing.dispatch == MoeDispatch::Einsum)
      fail(*value, std::string("tiles the grouped matmuls of dispatch: grouped (MaxText's sparse_matmul); expected no ") +
                       key + " with dispatch: einsum");
    const double tile = static_cast<double>(read_integer(*value, 1, 1 << 20));
    GroupedMatmulTiling& t = routing.tiling;
    (std::string(key) == "tile_batch_seq" ? t.batch_seq : std::string(key) == "tile_embed_dim" ? t.embed_dim : t.mlp_dim) =
        tile;
  }
  if (auto seed = reader.optional("seed")) spec.seed = static_cast<uint64_t>(read_integer(*seed, 0, INT64_MAX));
  return routing;
}

}  // namespace podsim::detail
