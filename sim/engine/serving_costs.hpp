#pragma once
// Step durations for the serving simulation (workloads/serving.hpp), from SimGrid replays.
//
// A step is a chain of identical layers: per layer, attention and MLP rooflines (exact
// arithmetic, workloads/inference.cpp) and four model-parallel collectives on the [tokens, D]
// activations. On meshes without wraparound chips finish a collective at different times and
// the stagger carries into the next layer, settling after a few layers to the same time per
// layer. So a step's first layers are replayed, in a window of a shared simulation where every
// chip starts together as at the start of a step, until the time per layer repeats (then the
// rest is extrapolated; shapes that do not settle are replayed for all L layers). Where the
// model group is two lines of different lengths (4x2), the replay breaks some ties by rounding
// and a settled time per layer can switch later in the step: the extrapolation is then within
// a bound of whole-step replays, not equal (docs/design.md, "Serving").
//
// Prefill steps come in few shapes (batch, chunk, offset): each is replayed as it is, with its
// own compute, the first time the serving simulation asks for it. Decode steps depend on the
// summed context of their batch, a continuous quantity, but their collectives only on the
// batch: those are replayed up front for every batch size with gaps standing in for the
// compute (longer than any collective, as a decode step's compute is, so the gap's length does
// not matter and is subtracted), and a decode step lasts
//   L x (attention + MLP) + unembedding + the collectives of L layers,
// or, with collective matmuls, L x sum over blocks of max(compute / 2, AllGather) +
// max(compute / 2, ReduceScatter) (+ attention's two AllToAlls where the cache is sharded over
// batch). test_serving_costs.cpp checks both against whole step replays on generated cases.
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "sim/engine/run.hpp"
#include "workloads/inference.hpp"
#include "workloads/serving.hpp"

namespace podsim {

// One kind of server: its slice and how the model runs on it.
struct ServerRole {
  TopologySpec topology;
  InferencePlan plan;        // model axes, dtypes, efficiency (batch and lengths unused)
  int model_degree = 1;      // chips the weights are split over
  std::vector<int> kv_batch_axes;   // set by the cost model: where attention's AllToAlls run
};

// A decode batch's collectives, replayed.
struct LayerComm {
  std::vector<double> ends_s;   // the collectives of the first 1, 2, ... layers end
  double per_layer_s = 0;       // what each further layer adds, once settled
  double allgather_s = 0, reducescatter_s = 0, alltoall_s = 0;   // each alone from a common start
  double layers_s(int layers) const;
};
using CommTable = std::map<double, LayerComm>;   // activation bytes -> replayed collectives

using PrefillShape = std::tuple<int, int, int>;   // batch, chunk, offset

class ServingCostModel {
 public:
  ServingCostModel(const TransformerSpec& model, ServerRole prefill, ServerRole generate, SimulationSettings settings);
  // Replays every decode batch's collectives (every_batch: each one; else where two batch
  // sizes replay the same the ones between are filled, see prepare) and, when disaggregated,
  // every KV transfer size.
  void prepare(const ServingConfig& config, const std::vector<Request>& requests, bool colocated,
               bool every_batch = false);

  double prefill_s(int batch, int chunk, int offset);   // replayed on first use
  double decode_s(int batch, double context_tokens) const;
  double kv_transfer_s(int tokens) const { return kv_transfer_.at(tokens); }
  StepCosts costs();

  const CommTable& decode_comm() const { return decode_comm_; }
  long long collectives_replayed() const { return collectives_replayed_; }
  size_t prefill_shapes() const { return prefill_.size(); }
  size_t kv_transfer_shapes() const { return kv_transfer_.size(); }
  double wall_s() const { return wall_s_; }

 private:
  void replay_decode_batches(const std::vector<int>& batches);

  const TransformerSpec& model_;
  ServerRole prefill_role_, generate_role_;
  SimulationSettings settings_;
  std::map<PrefillShape, double> prefill_;
  CommTable decode_comm_;
  std::map<int, double> kv_transfer_;
  long long collectives_replayed_ = 0;
  double wall_s_ = 0;
};

}  // namespace podsim
