#pragma once
// Step durations for the serving simulation (workloads/serving.hpp), from SimGrid replays.
// A step is a chain of identical layers: per layer, attention and MLP rooflines (exact
// arithmetic, workloads/inference.cpp) and four model-parallel collectives on the [tokens, D]
// activations, whose time depends only on the token count. Compute of equal length on every
// chip shifts all later events equally, so a step lasts  L x (attention + MLP) + unembedding +
// the collectives of L layers. On meshes without wraparound chips finish a collective at
// different times and the stagger carries into the next layer, settling after a few layers
// to the same time per layer. So every distinct token count the run can produce has the
// collectives of its first layers replayed once, up front (all in one simulation, each in its
// own time window), until the time per layer repeats; sizes that have not settled are
// replayed for all L layers. With collective matmuls each block takes
// max(compute / 2, AllGather) + max(compute / 2, ReduceScatter), each collective replayed from
// a common start. test_serving.cpp checks steps against whole step replays.
#include <map>
#include <vector>

#include "sim/run.hpp"
#include "workloads/inference.hpp"
#include "workloads/serving.hpp"

namespace podsim {

// One kind of server: its slice and how the model runs on it.
struct ServerRole {
  TopologySpec topology;
  InferencePlan plan;        // model axes, dtypes, efficiency (batch and lengths unused)
  int model_degree = 1;      // chips the weights are split over
};

// The collectives of a step's first layers, replayed: when the last of them ends.
struct LayerComm {
  std::vector<double> ends_s;   // after 1, 2, ... layers
  double per_layer_s = 0;       // what each further layer adds, once settled
  // Collective matmuls: one AllGather and one ReduceScatter, each from a common start.
  double allgather_s = 0, reducescatter_s = 0;
  double layers_s(int layers) const;   // the collectives of `layers` layers
};
using CommTable = std::map<double, LayerComm>;   // activation bytes -> replayed layers

struct ServingCostModel {
  ServerRole prefill;                        // == generate when colocated
  ServerRole generate;
  CommTable prefill_comm;
  CommTable generate_comm;
  std::map<int, double> kv_transfer_s;             // padded prompt tokens -> DCN transfer
  long long collectives_replayed = 0;
  double wall_s = 0;                               // spent replaying
  StepCosts costs(const TransformerSpec& model) const;
};

// Replays the collectives of every step shape `requests` can produce under `config`.
ServingCostModel build_serving_costs(const TransformerSpec& model, const ServerRole& prefill,
                                     const ServerRole& generate, bool colocated, const ServingConfig& config,
                                     const std::vector<Request>& requests, const SimulationSettings& settings);

// One step's duration from the model, for tests and reports.
double prefill_step_s(const TransformerSpec& model, const ServerRole& role, const CommTable& comm, int batch,
                      int chunk, int offset);
double decode_step_s(const TransformerSpec& model, const ServerRole& role, const CommTable& comm, int batch,
                     double context_tokens);

}  // namespace podsim
