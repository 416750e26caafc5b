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
// a bound of whole-step replays, not equal (docs/modelling.md, "Serving").
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
//
// Models whose layers are not identical blocks (mixture of experts: dense first layers,
// experts behind AllToAlls, routing drawn per layer) or lack one (no attention) are priced by
// whole steps instead (serving_whole_steps.cpp): each prefill shape replayed as it is; each
// decode batch, padded to a multiple of the expert-parallel groups (static shapes: every group
// decodes as many rows), replayed on first use with every sequence at the longest context a
// request reaches, and a decode step of a smaller summed context is that minus L x the
// attention it does not do. That is exact when every chip's attention outlasts the stagger
// of the traffic before it (then no chip's traffic meets another's differently), which the
// replay measures; a step whose attention is shorter is replayed at its own context.
// test_serving_whole_steps.cpp checks both against whole-step replays at the real context.
//
// Servers under 2D weight-stationary sharding (model_d) are priced by whole steps too: their
// blocks reduce over the D axes between their parts (block_2d), not the layer shortcut's
// Megatron blocks. 2D attention splits a step's sequences over the D axes, so a step's batch is
// padded up to a multiple of their X chips (static shapes: a padding row computes and reads its
// slot as a real one would); a decode step's attention is three ops (projections, scores,
// output projection), whose shares of the layer's attention change with the context, so each
// must outlast its own stagger, checked op by op at the step's context and the reference's.
//
// A context-parallel prefill server (disaggregated) prices its prefill steps whole as well: each
// shape replayed as kind: inference's context-parallel prefill of that shape (ring attention
// over the context axis); its generate servers keep their own pricing.
//
// A server whose chips differ (a slow chip, a degraded link: its topology's perturbations)
// prices every step by replaying it whole at its own shape under its topology, once per
// distinct shape: the shortcuts above assume every chip computes alike (the layer shortcut's
// compute and the decode shift's attention come from one chip's roofline), and the replay is
// what the perturbed pod does. Exact, and a replay a distinct step.
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

// A server's role from its mesh and plan: the weights split over its model-parallel chips.
ServerRole server_role(const TopologySpec& topology, const InferencePlan& plan);

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
  double decode_s(int batch, double context_tokens);   // whole steps: replayed on first use
  // A mixed step (policy mixed), priced by whole steps (serving_whole_steps.cpp): replayed once
  // per token count at the reference context, shifted by its attention and unembedding.
  double mixed_s(const StepShape& shape);
  size_t mixed_shapes() const { return mixed_steps_.size(); }
  double kv_transfer_s(int tokens) const { return kv_transfer_.at(tokens); }
  // Swap preemption's copy of `tokens` cached tokens between a generate server's HBM and its
  // host, one way: each model-parallel chip moves its shard of the heads over its own PCIe link
  // at once, so tokens x KV bytes a token / (chips x PCIe bandwidth); no other traffic shares
  // those links in a step (the host's DCN NIC is another path).
  double kv_swap_s(long long tokens) const;
  StepCosts costs();

  // Whole steps: a decode (prefill) step's batch is padded up to a multiple of this.
  // True where a role's 2D attention pads batches (the summary then reports both multiples).
  bool pads_2d_batches() const { return pads_2d_; }
  int decode_batch_multiple() const { return decode_multiple_; }
  int prefill_batch_multiple() const { return prefill_multiple_; }
  const CommTable& decode_comm() const { return decode_comm_; }
  size_t decode_shapes() const { return whole_steps_ ? decode_steps_.size() : decode_comm_.size(); }
  // Whole steps: decode (or mixed) steps whose attention was shorter than its stagger, replayed
  // as they are.
  long long decode_steps_replayed_whole() const { return decode_exact_replays_; }
  // A draft model's cost model (speculative decoding): its replays are the draft's passes.
  void price_draft_passes() { draft_ = true; }
  // The summary.json field that counts those replays (serving_report.cpp writes each), which
  // the warning at the first one names.
  const char* replays_counted_in() const;
  bool whole_steps() const { return whole_steps_; }
  // Its chips differ: every step replayed at its own shape (above).
  bool replays_every_step() const { return every_step_; }
  long long steps_replayed() const { return static_cast<long long>(own_shape_steps_.size()); }
  long long collectives_replayed() const { return collectives_replayed_; }
  size_t prefill_shapes() const { return prefill_.size(); }
  size_t kv_transfer_shapes() const { return kv_transfer_.size(); }
  double wall_s() const { return wall_s_; }

 private:
  void replay_decode_batches(const std::vector<int>& batches);
  // Whole-step pricing (serving_whole_steps.cpp).
  double whole_prefill_s(int batch, int chunk, int offset);
  void replay_whole_decode(int groups_rows);
  double whole_decode_s(int batch, double context_tokens);
  double whole_mixed_s(const StepShape& shape);
  int padded_groups(int batch) const { return (batch + decode_multiple_ - 1) / decode_multiple_; }

  const TransformerSpec& model_;
  ServerRole prefill_role_, generate_role_;
  SimulationSettings settings_;
  std::map<PrefillShape, double> prefill_;
  CommTable decode_comm_;
  std::map<int, double> kv_transfer_;
  // Whole steps: padded batch / decode_multiple_ -> the decode step at the reference context.
  bool whole_steps_ = false;
  // A decode batch is padded to a multiple of this: the expert-parallel groups times the D axes'
  // chips (d_batch_degree) of a generate server; a prefill batch of prompts to the prefill
  // server's D axes' chips.
  int decode_multiple_ = 1;
  int prefill_multiple_ = 1;
  bool pads_2d_ = false;
  // Prefill steps priced whole: beside whole_steps_, a context-parallel prefill server's (its
  // ring attention is no Megatron block of the layer shortcut).
  bool prefill_whole_ = false;
  double reference_context_ = 0;     // tokens per sequence the decode steps are replayed at
  // A step replayed whole at the reference context, which steps of other contexts are shifted
  // from: a decode step's (by padded batch) or a mixed step's (by tokens).
  struct WholeDecode {
    double reference_s = 0;   // the step with every sequence at the reference context
    double attention_s = 0;   // one chip's attention op in it (chip_step_compute)
    double unembed_s = 0;     // and its unembedding
    double stagger_s = 0;     // the longest any layer's attention must last for the shift to hold
    // model_d: what each attention op (in program order) must last for the shift to hold, and
    // whether the reference's own ops all do.
    std::vector<double> op_need_s;
    bool reference_outlasts = true;
  };
  std::map<int, WholeDecode> decode_steps_;
  std::map<long long, WholeDecode> mixed_steps_;   // by tokens
  WholeDecode replay_reference(const StepShape& shape);
  double shift_or_replay(const WholeDecode& reference, const StepShape& actual);
  long long decode_exact_replays_ = 0;
  bool mixed_ = false;   // policy mixed: every step is a mixed step (prepare)
  bool every_step_ = false;   // perturbed servers: every step replayed at its own shape
  // Those replays, by (decode, tokens, attended tokens, cached tokens, logit rows, sequences) of the step's shape.
  std::map<std::tuple<bool, double, double, double, double, double>, double> own_shape_steps_;
  double own_shape_s(const ServerRole& role, const StepShape& shape);
  bool draft_ = false;
  // Counts a step replayed at its own context or shape; warns at the first (serving_whole_steps.cpp).
  void note_exact_replay();
  long long collectives_replayed_ = 0;
  double wall_s_ = 0;
};

// A draft model's passes after a step (speculative decoding, DraftMethod::DraftModel), priced
// by `draft`, a cost model of the draft model on the same server: one pass over the step's
// tokens (keeping its own cache in step with the model's) with logits for the `sequences`
// that will decode, then k - 1 passes of one token each over their `context_tokens`, each
// pass one longer. Every pass is a mixed step of the draft model (its shortcut and its proof).
double draft_passes_s(ServingCostModel& draft, const StepShape& step, int sequences, double context_tokens, int k);

}  // namespace podsim
