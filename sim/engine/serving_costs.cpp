#include "sim/engine/serving_costs.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <set>
#include <spdlog/spdlog.h>
#include <stdexcept>

#include "topology/sub_mesh.hpp"
#include "workloads/collective_reduction.hpp"

namespace podsim {

namespace {

// The TensorCore's additions of a tensor-parallel ReduceScatter of `bytes` over the role's model
// axes (workloads/collective_reduction.hpp); 0 unless the chip reduces on its core.
double core_reduction_s(const ServerRole& role, double bytes) {
  if (!role.topology.chip.reductions_on_tensor_core) return 0;
  CollectiveSpec spec;
  spec.kind = CollectiveKind::ReduceScatter;
  spec.axes = role.plan.model_axes;
  spec.bytes = bytes;
  return reduction_core_s(spec, role.topology);
}

// One op of a replay window: a collective on the window's activations, a compute of known
// length, or a gap standing in for compute (its length chosen by the replay).
struct WindowOp {
  enum Kind { Collective, Compute, Gap } kind = Gap;
  CollectiveKind collective = CollectiveKind::AllGather;   // AllToAll: over the KV batch axes
  double compute_s = 0;
  std::vector<int> after;   // indices in the window; the first op waits for the window's start
};

struct Window {
  double bytes = 0;
  std::vector<WindowOp> ops;
  std::vector<std::vector<int>> layer_ends;   // per layer, the ops whose last end ends it
  std::vector<int> gaps_before;               // per layer, gaps on the path to its end
};

WindowOp collective_op(CollectiveKind kind, std::vector<int> after) {
  return {WindowOp::Collective, kind, 0, std::move(after)};
}
WindowOp compute_op(double seconds, std::vector<int> after) {
  return {WindowOp::Compute, CollectiveKind::AllGather, seconds, std::move(after)};
}
WindowOp gap_op(std::vector<int> after) { return {WindowOp::Gap, CollectiveKind::AllGather, 0, std::move(after)}; }

// `layers` layers of a step: per block (attention, MLP) its AllGather, compute and
// ReduceScatter as inference_step_program chains them (or overlaps them, with collective
// matmuls), with attention's two AllToAlls where the cache is sharded over batch, and the
// ReduceScatter's additions on the TensorCore (`reduce_s`, 0 without) where
// with_collective_reductions puts them. `compute_s` per block, or gaps when empty.
Window layer_window(double bytes, int layers, const std::vector<double>& compute_s, bool collective_matmul,
                    bool to_batch, double reduce_s) {
  Window w;
  w.bytes = bytes;
  std::vector<int> previous;
  int gaps = 0;
  auto add = [&](WindowOp op) {
    w.ops.push_back(std::move(op));
    return static_cast<int>(w.ops.size() - 1);
  };
  for (int l = 0; l < layers; ++l) {
    for (int block = 0; block < 2; ++block) {
      const auto AG = CollectiveKind::AllGather, RS = CollectiveKind::ReduceScatter;
      auto work = [&](double fraction, std::vector<int> after) {
        if (compute_s.empty()) {
          ++gaps;
          return add(gap_op(std::move(after)));
        }
        return add(compute_op(compute_s[block] * fraction, std::move(after)));
      };
      const auto A2A = CollectiveKind::AllToAll;
      const bool a2a = to_batch && block == 0;
      const int gather = add(collective_op(AG, previous));
      if (!collective_matmul) {
        int before = gather;
        if (a2a) before = add(collective_op(A2A, {gather}));
        int c = work(1.0, {before});
        if (a2a) c = add(collective_op(A2A, {c}));
        if (reduce_s > 0) c = add(compute_op(reduce_s, {c}));
        previous = {add(collective_op(RS, {c}))};
        continue;
      }
      const int first = work(0.5, previous);
      std::vector<int> ready = {first, gather};
      if (a2a) {
        const int q = add(collective_op(A2A, ready));
        ready = {add(collective_op(A2A, {q}))};
      }
      // The reduction behind the first half (its producer), which the second half waits for
      // too; behind the AllToAll (no compute producer) when Q moved to batch sharding.
      std::vector<int> second_after = ready, scatter_after = ready;
      if (reduce_s > 0) {
        const int r = add(compute_op(reduce_s, a2a ? ready : std::vector<int>{first}));
        if (!a2a) second_after.push_back(r);
        scatter_after.push_back(r);
      }
      const int second = work(0.5, second_after);
      const int scatter = add(collective_op(RS, scatter_after));
      previous = {second, scatter};
    }
    w.layer_ends.push_back(previous);
    w.gaps_before.push_back(collective_matmul ? 0 : gaps);
  }
  return w;
}

// Each window replayed from a common start on every chip, as at the start of a step, in one
// simulation: a window gets its own time (release time); a window found too short is widened
// and the replay redone. Returns, per window and layer, when the layer ends from the window's
// start with the gaps before it removed.
std::vector<std::vector<double>> replay_window_group(const ServerRole& role, const std::vector<Window>& windows,
                                                    const SimulationSettings& settings, long long& count) {
  const ChipSpec& chip = role.topology.chip;
  int ring_hops = 0;
  for (int a : role.plan.model_axes) ring_hops += role.topology.axes[a].size;
  for (double widen = 2;; widen *= 4) {
    Program program;
    std::vector<double> release, gap;
    std::vector<size_t> first_op;
    double t = 0;
    for (const Window& w : windows) {
      release.push_back(t);
      first_op.push_back(program.size());
      // A bound on one collective: the whole array over one link, plus every hop's latency.
      const double bound = w.bytes / (chip.ici_bandwidth_Bps * settings.link_efficiency) +
                           (ring_hops + 2) * chip.hop_latency_s + settings.launch_overhead_s;
      gap.push_back(widen * bound);
      double length = 0;
      for (size_t k = 0; k < w.ops.size(); ++k) {
        const WindowOp& o = w.ops[k];
        ProgramOp op;
        op.name = "window";
        if (o.kind == WindowOp::Collective) {
          CollectiveSpec& c = op.collective();
          c.kind = o.collective;
          c.axes = o.collective == CollectiveKind::AllToAll ? role.kv_batch_axes : role.plan.model_axes;
          c.bytes = w.bytes;
          length += gap.back();
        } else {
          const double seconds = o.kind == WindowOp::Gap ? gap.back() : o.compute_s;
          op.work = ComputeWork{seconds, 0, {}, {}};
          length += seconds;
        }
        if (k == 0) op.release_s = t;
        for (int dep : o.after) op.after.push_back(static_cast<int>(first_op.back()) + dep);
        program.push_back(std::move(op));
      }
      t += length + gap.back();
    }
    release.push_back(t);
    const RunResult run = run_program(role.topology, settings, program, {});
    count += static_cast<long long>(program.size());
    std::vector<std::vector<double>> out;
    bool overlapped = false;
    for (size_t w = 0; w < windows.size(); ++w) {
      auto& ends = out.emplace_back();
      double last = 0;
      for (size_t l = 0; l < windows[w].layer_ends.size(); ++l) {
        double end = 0;
        for (int op : windows[w].layer_ends[l]) end = std::max(end, run.operations[first_op[w] + op].end_s);
        last = std::max(last, end);
        ends.push_back(end - release[w] - windows[w].gaps_before[l] * gap[w]);
      }
      overlapped = overlapped || last > release[w + 1];
    }
    if (!overlapped) return out;
  }
}

// Windows in groups of at most kMaxOpsPerReplay ops per simulation: a replay holds an actor
// per op and chip, and thousands of windows at once would take gigabytes.
constexpr size_t kMaxOpsPerReplay = 2000;

std::vector<std::vector<double>> replay_windows(const ServerRole& role, const std::vector<Window>& windows,
                                                const SimulationSettings& settings, long long& count) {
  std::vector<std::vector<double>> out;
  std::vector<Window> group;
  size_t ops = 0;
  auto flush = [&] {
    if (group.empty()) return;
    for (auto& ends : replay_window_group(role, group, settings, count)) out.push_back(std::move(ends));
    group.clear();
    ops = 0;
  };
  for (const Window& w : windows) {
    if (ops + w.ops.size() > kMaxOpsPerReplay) flush();
    group.push_back(w);
    ops += w.ops.size();
  }
  flush();
  return out;
}

// Settled: the last two layers each added the same time.
bool settled(const std::vector<double>& ends) {
  const size_t n = ends.size();
  if (n < 4) return false;
  const double d = ends[n - 1] - ends[n - 2];
  return std::fabs(ends[n - 2] - ends[n - 3] - d) <= 1e-12 + 1e-9 * std::fabs(d);
}


// Replays `windows_for(layers)` for 4, then 12, then all layers until each has settled; returns
// per window its layer ends and the time per further layer.
std::vector<LayerComm> replay_until_settled(const TransformerSpec& model, const ServerRole& role, size_t count,
                                            const std::function<Window(size_t, int)>& window_for,
                                            const SimulationSettings& settings, long long& replayed) {
  std::vector<LayerComm> out(count);
  std::vector<size_t> pending(count);
  for (size_t i = 0; i < count; ++i) pending[i] = i;
  for (int layers : {4, 12, model.layers}) {
    layers = std::min(layers, model.layers);
    std::vector<Window> windows;
    for (size_t i : pending) windows.push_back(window_for(i, layers));
    const auto ends = replay_windows(role, windows, settings, replayed);
    std::vector<size_t> unsettled;
    for (size_t k = 0; k < pending.size(); ++k) {
      if (layers < model.layers && !settled(ends[k])) {
        unsettled.push_back(pending[k]);
        continue;
      }
      LayerComm& lc = out[pending[k]];
      lc.ends_s = ends[k];
      lc.per_layer_s = ends[k].size() > 1 ? ends[k].back() - ends[k][ends[k].size() - 2] : 0.0;
    }
    if (unsettled.empty()) break;
    spdlog::info("{} step shapes had not settled after {} layers", unsettled.size(), layers);
    pending = unsettled;
  }
  return out;
}

// The chips that hold one request's cache: under 2D weight-stationary sharding the chips of its
// D shard (the sub-mesh of the other axes: its heads over the model axes; its NIC share kept),
// else the whole slice (a context-parallel prefill's cache is spread over the context axis too).
TopologySpec cache_holders(const ServerRole& role) {
  if (role.plan.d_axes.empty()) return role.topology;
  std::vector<int> kept;
  for (int a = 0; a < static_cast<int>(role.topology.axes.size()); ++a)
    if (std::find(role.plan.d_axes.begin(), role.plan.d_axes.end(), a) == role.plan.d_axes.end()) kept.push_back(a);
  TopologySpec slice = role.topology;
  slice.splits.clear();   // logical names only
  return sub_mesh(slice, kept);
}

// Each chip holding the request's cache on the prefill slice sends its shard to its peer on a
// generate slice over DCN (PCIe, NIC, switch); the side with fewer such chips bounds it.
std::map<int, double> replay_kv_transfers(const TransformerSpec& model, const ServerRole& prefill,
                                          const ServerRole& generate, const std::set<int>& lengths,
                                          const SimulationSettings& settings, long long& count) {
  std::map<int, double> out;
  if (lengths.empty()) return out;
  const TopologySpec sender = cache_holders(prefill), receiver = cache_holders(generate);
  TopologySpec pair = sender.chips_per_slice() <= receiver.chips_per_slice() ? sender : receiver;
  pair.slices = 2;
  pair.splits.clear();
  const double per_token = kv_cache_bytes_per_token(model, prefill.plan.kv_bytes) / pair.chips_per_slice();
  Program program;
  for (int tokens : lengths) {
    ProgramOp op;
    op.name = "kv";
    op.work = SendWork{per_token * tokens, Topology::kSliceAxis, +1, false};
    if (!program.empty()) op.after = {static_cast<int>(program.size() - 1)};
    program.push_back(std::move(op));
  }
  const RunResult run = run_program(pair, settings, program, {});
  count += static_cast<long long>(program.size());
  size_t i = 0;
  for (int tokens : lengths) out[tokens] = run.operations[i++].time_s;
  return out;
}

}  // namespace

double LayerComm::layers_s(int layers) const {
  if (layers <= 0) return 0.0;
  const int known = static_cast<int>(ends_s.size());
  if (layers <= known) return ends_s[layers - 1];
  return ends_s.back() + (layers - known) * per_layer_s;
}

ServingCostModel::ServingCostModel(const TransformerSpec& model, ServerRole prefill, ServerRole generate,
                                   SimulationSettings settings)
    : model_(model), prefill_role_(std::move(prefill)), generate_role_(std::move(generate)), settings_(settings) {
  // The layer shortcut prices a step as identical layers of an attention and a dense MLP block,
  // each between its Megatron collectives. An MoE model's layers differ and a model without
  // attention lacks a block: those are priced by whole steps (serving_whole_steps.cpp).
  // So are a 2D weight-stationary server's (block_2d's parts and reductions over the D axes).
  whole_steps_ = serving_prices_whole_steps(model_, prefill_role_.plan) ||
                 serving_prices_whole_steps(model_, generate_role_.plan);
  decode_multiple_ = expert_parallel_degree(generate_role_.plan, generate_role_.topology) *
                     d_batch_degree(model_, generate_role_.plan, generate_role_.topology);
  prefill_multiple_ = d_batch_degree(model_, prefill_role_.plan, prefill_role_.topology);
  every_step_ = !prefill_role_.topology.perturbations.empty() || !generate_role_.topology.perturbations.empty();
  prefill_whole_ = whole_steps_ || prefill_role_.plan.context_axis >= 0;
  pads_2d_ = prefill_multiple_ > 1 || d_batch_degree(model_, generate_role_.plan, generate_role_.topology) > 1;
  for (ServerRole* role : {&prefill_role_, &generate_role_})
    role->kv_batch_axes = kv_batch_axes(model_, role->plan, role->topology);
}

double ServingCostModel::prefill_s(int batch, int chunk, int offset) {
  const PrefillShape key{batch, chunk, offset};
  if (auto it = prefill_.find(key); it != prefill_.end()) return it->second;
  const auto wall_start = std::chrono::steady_clock::now();
  if (every_step_) {
    const int padded = (batch + prefill_multiple_ - 1) / prefill_multiple_ * prefill_multiple_;
    const double seconds = own_shape_s(prefill_role_, prefill_shape(padded, chunk, offset));
    wall_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    return prefill_[key] = seconds;
  }
  if (prefill_whole_) {
    const double seconds = whole_prefill_s(batch, chunk, offset);
    wall_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    return prefill_[key] = seconds;
  }
  const ServerRole& role = prefill_role_;
  const StepCompute c = chip_step_compute(model_, role.plan, role.topology, prefill_shape(batch, chunk, offset));
  double layers_s = model_.layers * (c.attention_s + c.mlp_s);
  if (role.model_degree > 1) {
    const auto replayed = replay_until_settled(
        model_, role, 1,
        [&](size_t, int layers) {
          return layer_window(c.activation_bytes, layers, {c.attention_s, c.mlp_s}, role.plan.collective_matmul,
                              false,   // a prefill replicates K and V instead (kv_batch_axes)
                              core_reduction_s(role, c.activation_bytes));
        },
        settings_, collectives_replayed_);
    layers_s = replayed[0].layers_s(model_.layers);
  }
  wall_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return prefill_[key] = layers_s + c.unembed_s;
}

double ServingCostModel::own_shape_s(const ServerRole& role, const StepShape& shape) {
  const auto key =
      std::make_tuple(shape.decode, shape.tokens, shape.attended_tokens, shape.kv_tokens, shape.logit_rows, shape.sequences);
  if (auto it = own_shape_steps_.find(key); it != own_shape_steps_.end()) return it->second;
  const Program program = inference_step_program(model_, role.plan, role.topology, shape);
  for (const auto& op : program) collectives_replayed_ += op.is(ProgramOpKind::Collective);
  return own_shape_steps_[key] = run_program(role.topology, settings_, program, {}).total_time_s;
}

double ServingCostModel::mixed_s(const StepShape& shape) {
  const auto wall_start = std::chrono::steady_clock::now();
  const double seconds = every_step_ ? own_shape_s(generate_role_, shape) : whole_mixed_s(shape);
  wall_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return seconds;
}

double ServingCostModel::decode_s(int batch, double context_tokens) {
  if (every_step_) {
    const auto wall_start = std::chrono::steady_clock::now();
    StepShape shape = decode_shape(padded_groups(batch) * decode_multiple_, 0);
    shape.attended_tokens = shape.kv_tokens = context_tokens;
    const double seconds = own_shape_s(generate_role_, shape);
    wall_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    return seconds;
  }
  if (whole_steps_) {
    const auto wall_start = std::chrono::steady_clock::now();
    const double seconds = whole_decode_s(batch, context_tokens);
    wall_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    return seconds;
  }
  const ServerRole& role = generate_role_;
  StepShape shape = decode_shape(batch, 0);
  shape.attended_tokens = shape.kv_tokens = context_tokens;
  // chip_step_compute: the layer shortcut's servers have no experts, D axes or context axis, but
  // a cache sharded by batch splits the sequences each chip's attention walks.
  const StepCompute c = chip_step_compute(model_, role.plan, role.topology, shape);
  if (role.model_degree <= 1) return model_.layers * (c.attention_s + c.mlp_s) + c.unembed_s;
  const auto it = decode_comm_.find(c.activation_bytes);
  if (it == decode_comm_.end()) throw std::logic_error("no replayed collectives for this decode batch");
  const LayerComm& lc = it->second;
  if (role.plan.collective_matmul) {
    // The ReduceScatter's additions (with_collective_reductions): behind the first half, before
    // the second half and the scatter; behind attention's AllToAlls where Q moved to batch
    // sharding, before the scatter only.
    const double r = core_reduction_s(role, c.activation_bytes);
    auto block = [&](double seconds) {
      return std::max(seconds / 2 + r, lc.allgather_s) + std::max(seconds / 2, lc.reducescatter_s);
    };
    const double attention = !role.kv_batch_axes.empty()
                                 ? std::max(c.attention_s / 2, lc.allgather_s) + 2 * lc.alltoall_s +
                                       std::max(c.attention_s / 2, r + lc.reducescatter_s)
                                 : block(c.attention_s);
    return model_.layers * (attention + block(c.mlp_s)) + c.unembed_s;
  }
  return model_.layers * (c.attention_s + c.mlp_s) + c.unembed_s + lc.layers_s(model_.layers);
}

double ServingCostModel::kv_swap_s(long long tokens) const {
  const ServerRole& role = generate_role_;
  return static_cast<double>(tokens) * kv_cache_bytes_per_token(model_, role.plan.kv_bytes) /
         (role.model_degree * role.topology.chip.pcie_bandwidth_Bps);
}

double draft_passes_s(ServingCostModel& draft, const StepShape& step, int sequences, double context_tokens, int k) {
  StepShape first = step;
  first.logit_rows = sequences;
  double total = draft.mixed_s(first);
  for (int i = 1; i < k; ++i) {
    StepShape next;
    next.tokens = next.logit_rows = next.sequences = sequences;
    next.kv_tokens = context_tokens + static_cast<double>(i) * sequences;
    next.attended_tokens = next.kv_tokens;   // one row a sequence over its whole cache
    total += draft.mixed_s(next);
  }
  return total;
}

StepCosts ServingCostModel::costs() {
  StepCosts c;
  c.prefill_s = [this](int batch, int chunk, int offset) { return prefill_s(batch, chunk, offset); };
  c.decode_s = [this](int batch, double context) { return decode_s(batch, context); };
  c.kv_transfer_s = [this](int tokens) { return kv_transfer_s(tokens); };
  c.mixed_s = [this](const StepShape& shape) { return mixed_s(shape); };
  c.kv_swap_s = [this](long long tokens) { return kv_swap_s(tokens); };
  return c;
}

namespace {

// Replayed times agree to a picosecond (float rounding of the same schedule).
bool same(double a, double b) { return std::fabs(a - b) <= 1e-12 + 1e-9 * std::fabs(a); }

bool same_comm(const LayerComm& a, const LayerComm& b) {
  if (a.ends_s.size() != b.ends_s.size() || !same(a.per_layer_s, b.per_layer_s) ||
      !same(a.allgather_s, b.allgather_s) || !same(a.reducescatter_s, b.reducescatter_s) ||
      !same(a.alltoall_s, b.alltoall_s))
    return false;
  for (size_t i = 0; i < a.ends_s.size(); ++i) {
    if (!same(a.ends_s[i], b.ends_s[i])) return false;
  }
  return true;
}

// The replayed collectives of batch x on the line through batches lo and hi.
std::optional<LayerComm> interpolate(const LayerComm& a, const LayerComm& b, int lo, int hi, int x) {
  if (a.ends_s.size() != b.ends_s.size()) return std::nullopt;
  const double f = static_cast<double>(x - lo) / (hi - lo);
  auto mix = [&](double u, double v) { return u + f * (v - u); };
  LayerComm out;
  for (size_t i = 0; i < a.ends_s.size(); ++i) out.ends_s.push_back(mix(a.ends_s[i], b.ends_s[i]));
  out.per_layer_s = mix(a.per_layer_s, b.per_layer_s);
  out.allgather_s = mix(a.allgather_s, b.allgather_s);
  out.reducescatter_s = mix(a.reducescatter_s, b.reducescatter_s);
  out.alltoall_s = mix(a.alltoall_s, b.alltoall_s);
  return out;
}

}  // namespace

void ServingCostModel::replay_decode_batches(const std::vector<int>& batches) {
  const ServerRole& role = generate_role_;
  std::vector<double> sizes;
  for (int b : batches) sizes.push_back(activation_bytes(model_, b));
  std::vector<LayerComm> comm(sizes.size());
  if (role.plan.collective_matmul) {
    // Each collective alone from a common start: the block's compute half hides what it can.
    std::vector<Window> windows;
    const bool a2a = !role.kv_batch_axes.empty();
    const size_t per = a2a ? 3 : 2;
    for (double bytes : sizes) {
      windows.push_back({bytes, {collective_op(CollectiveKind::AllGather, {})}, {{0}}, {0}});
      windows.push_back({bytes, {collective_op(CollectiveKind::ReduceScatter, {})}, {{0}}, {0}});
      if (a2a) windows.push_back({bytes, {collective_op(CollectiveKind::AllToAll, {})}, {{0}}, {0}});
    }
    const auto ends = replay_windows(role, windows, settings_, collectives_replayed_);
    for (size_t i = 0; i < sizes.size(); ++i) {
      comm[i].allgather_s = ends[per * i][0];
      comm[i].reducescatter_s = ends[per * i + 1][0];
      if (a2a) comm[i].alltoall_s = ends[per * i + 2][0];
    }
  } else {
    comm = replay_until_settled(
        model_, role, sizes.size(),
        [&](size_t i, int layers) {
          return layer_window(sizes[i], layers, {}, false, !role.kv_batch_axes.empty(),
                              core_reduction_s(role, sizes[i]));
        },
        settings_, collectives_replayed_);
  }
  for (size_t i = 0; i < sizes.size(); ++i) decode_comm_[sizes[i]] = comm[i];
}

void ServingCostModel::prepare(const ServingConfig& config, const std::vector<Request>& requests, bool colocated,
                               bool every_batch) {
  const auto wall_start = std::chrono::steady_clock::now();
  mixed_ = config.policy == BatchingPolicy::Mixed;
  if (every_step_) {
    // Nothing to replay ahead: each step is replayed as the simulation asks for it.
  } else if (mixed_) {
    // Mixed steps are replayed as the simulation asks for them, their attention shifted from
    // every row at the longest context a request reaches (its prompt and output, unpadded).
    reference_context_ = 0;
    for (const auto& r : requests) reference_context_ = std::max<double>(reference_context_, r.prompt_tokens + r.output_tokens);
    if (reference_context_ <= 0) reference_context_ = model_.max_sequence_length;
  } else if (whole_steps_) {
    // Every sequence at the longest context a request reaches (its padded prompt and output);
    // decode steps are replayed as the serving simulation asks for them (every_batch: dense only).
    reference_context_ = 0;
    for (const auto& r : requests)
      reference_context_ = std::max<double>(reference_context_, padded_prompt_tokens(r.prompt_tokens, config.buckets) +
                                                                     r.output_tokens);
    if (reference_context_ <= 0) reference_context_ = model_.max_sequence_length;
  } else if (generate_role_.model_degree > 1) {
    const int slots = config.slots;
    if (every_batch || slots <= 17) {
      std::vector<int> all;
      for (int b = 1; b <= slots; ++b) all.push_back(b);
      replay_decode_batches(all);
    } else {
      // Collective time is flat in the bytes where the hop latency floors every message and
      // affine where every message is bandwidth-bound with the same pattern. So replay a grid
      // of 17 batch sizes; an interval whose ends replay the same is filled with that; else its
      // midpoint is replayed, and if the three lie on a line the interval is filled by
      // interpolation; else both halves are resolved the same way. About log2(slots) rounds of
      // simulation instead of one window per batch size; test_serving_costs.cpp checks the filled
      // table against replaying every batch.
      auto comm = [&](int b) -> const LayerComm& { return decode_comm_.at(activation_bytes(model_, b)); };
      std::vector<int> grid;
      for (int k = 0; k <= 16; ++k) grid.push_back(1 + static_cast<int>(std::lround((slots - 1) * k / 16.0)));
      grid.erase(std::unique(grid.begin(), grid.end()), grid.end());
      replay_decode_batches(grid);
      std::vector<std::pair<int, int>> open;
      for (size_t i = 0; i + 1 < grid.size(); ++i) open.emplace_back(grid[i], grid[i + 1]);
      while (!open.empty()) {
        std::vector<std::pair<int, int>> need_mid;
        for (auto [lo, hi] : open) {
          if (hi - lo < 2) continue;
          if (same_comm(comm(lo), comm(hi))) {
            const LayerComm a = comm(lo);
            for (int m = lo + 1; m < hi; ++m) decode_comm_[activation_bytes(model_, m)] = a;
          } else {
            need_mid.emplace_back(lo, hi);
          }
        }
        std::vector<int> mids;
        for (auto [lo, hi] : need_mid) mids.push_back((lo + hi) / 2);
        if (!mids.empty()) replay_decode_batches(mids);
        open.clear();
        for (auto [lo, hi] : need_mid) {
          const int mid = (lo + hi) / 2;
          const LayerComm a = comm(lo), b = comm(hi), m = comm(mid);
          if (auto line = interpolate(a, b, lo, hi, mid); line && same_comm(*line, m)) {
            for (int x = lo + 1; x < hi; ++x)
              if (x != mid) decode_comm_[activation_bytes(model_, x)] = *interpolate(a, b, lo, hi, x);
          } else {
            open.emplace_back(lo, mid);
            open.emplace_back(mid, hi);
          }
        }
      }
    }
  }
  if (!colocated) {
    std::set<int> padded;
    for (const auto& r : requests) padded.insert(padded_prompt_tokens(r.prompt_tokens, config.buckets));
    kv_transfer_ = replay_kv_transfers(model_, prefill_role_, generate_role_, padded, settings_, collectives_replayed_);
  }
  wall_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
}

ServerRole server_role(const TopologySpec& topology, const InferencePlan& plan) {
  ServerRole r;
  r.topology = topology;
  r.plan = plan;
  r.model_degree = model_parallel_degree(plan, topology);
  return r;
}

}  // namespace podsim
