#include "sim/serving_costs.hpp"

#include <chrono>
#include <optional>
#include <cmath>
#include <spdlog/spdlog.h>
#include <set>
#include <stdexcept>

namespace podsim {

namespace {

double step_s(const TransformerSpec& model, const ServerRole& role, const CommTable& comm, const StepShape& shape) {
  const StepCompute c = step_compute(model, role.plan, role.topology.chip, role.model_degree, shape);
  if (role.model_degree <= 1) return model.layers * (c.attention_s + c.mlp_s) + c.unembed_s;
  const auto it = comm.find(c.activation_bytes);
  if (it == comm.end()) throw std::logic_error("no replayed collectives for this step shape");
  const LayerComm& lc = it->second;
  if (role.plan.collective_matmul) {
    // Each block: the gather beside its first half, the scatter beside its second.
    auto block = [&](double seconds) {
      return std::max(seconds / 2, lc.allgather_s) + std::max(seconds / 2, lc.reducescatter_s);
    };
    return model.layers * (block(c.attention_s) + block(c.mlp_s)) + c.unembed_s;
  }
  return model.layers * (c.attention_s + c.mlp_s) + c.unembed_s + lc.layers_s(model.layers);
}

double activation_bytes(const TransformerSpec& model, double tokens) {
  return tokens * model.d_model * 2.0;   // bf16, as step_compute
}

// A sequence of collectives on one activation size; `gap` entries stand for compute.
struct Window {
  double bytes = 0;
  std::vector<std::optional<CollectiveKind>> ops;
};

// Each window replayed from a common start on every chip, as at the start of a step, in one
// simulation: a window gets its own time (release time) and a window found too short is
// widened and replayed. The compute between collectives is stood in by a gap longer than any
// collective: a step's own compute is longer than the stagger between chips, so no
// collective's traffic meets the next one's and the gap's length does not matter. Returns,
// per window, each op's last end from the window's start with the gaps before it removed.
std::vector<std::vector<double>> replay_windows(const ServerRole& role, const std::vector<Window>& windows,
                                                const SimulationSettings& settings, long long& count) {
  const ChipSpec& chip = role.topology.chip;
  int ring_hops = 0;
  for (int a : role.plan.model_axes) ring_hops += role.topology.axes[a].size;
  for (double widen = 2;; widen *= 4) {
    Program program;
    std::vector<double> release, gap;
    double t = 0;
    for (const Window& w : windows) {
      release.push_back(t);
      // A bound on one collective: the whole array over one link, plus every hop's latency.
      const double bound = w.bytes / (chip.ici_bandwidth_Bps * settings.link_efficiency) +
                           (ring_hops + 2) * chip.hop_latency_s + settings.launch_overhead_s;
      gap.push_back(widen * bound);
      for (size_t k = 0; k < w.ops.size(); ++k) {
        ProgramOp op;
        if (!w.ops[k]) {
          op.name = "gap";
          op.kind = ProgramOpKind::Compute;
          op.compute_s = gap.back();
        } else {
          op.name = "comm";
          op.kind = ProgramOpKind::Collective;
          op.collective.kind = *w.ops[k];
          op.collective.axes = role.plan.model_axes;
          op.collective.bytes = w.bytes;
        }
        if (k == 0) op.release_s = t;
        else op.after = {static_cast<int>(program.size() - 1)};
        program.push_back(std::move(op));
      }
      t += widen * static_cast<double>(w.ops.size()) * bound;
    }
    release.push_back(t);
    const RunResult run = run_program(role.topology, settings, program, {});
    count += static_cast<long long>(program.size());
    std::vector<std::vector<double>> out;
    bool overlapped = false;
    size_t first = 0;
    for (size_t w = 0; w < windows.size(); ++w) {
      auto& ends = out.emplace_back();
      int gaps = 0;
      for (size_t k = 0; k < windows[w].ops.size(); ++k) {
        if (!windows[w].ops[k]) ++gaps;
        ends.push_back(run.operations[first + k].end_s - release[w] - gaps * gap[w]);
      }
      first += windows[w].ops.size();
      overlapped = overlapped || run.operations[first - 1].end_s > release[w + 1];
    }
    if (!overlapped) return out;
  }
}

// Settled: the last two layers each added the same time.
bool settled(const std::vector<double>& ends) {
  const size_t n = ends.size();
  if (n < 4) return false;
  const double d = ends[n - 1] - ends[n - 2];
  return std::fabs(ends[n - 2] - ends[n - 3] - d) <= 1e-12 + 1e-9 * std::fabs(d);
}

CommTable replay_layer_comm(const TransformerSpec& model, const ServerRole& role, const std::set<double>& sizes,
                            const SimulationSettings& settings, long long& count) {
  CommTable out;
  if (role.model_degree <= 1 || sizes.empty()) return out;
  const auto AG = CollectiveKind::AllGather, RS = CollectiveKind::ReduceScatter;
  if (role.plan.collective_matmul) {
    // Each collective alone: the block's compute half hides what it can.
    std::vector<Window> windows;
    for (double bytes : sizes) {
      windows.push_back({bytes, {AG}});
      windows.push_back({bytes, {RS}});
    }
    const auto ends = replay_windows(role, windows, settings, count);
    size_t i = 0;
    for (double bytes : sizes) {
      out[bytes].allgather_s = ends[i++].back();
      out[bytes].reducescatter_s = ends[i++].back();
    }
    return out;
  }
  // Most meshes settle by the third layer; the rest get more layers, then all of them.
  std::vector<double> pending(sizes.begin(), sizes.end());
  for (int layers : {4, 12, model.layers}) {
    layers = std::min(layers, model.layers);
    std::vector<Window> windows;
    for (double bytes : pending) {
      Window w{bytes, {}};
      for (int l = 0; l < layers; ++l) w.ops.insert(w.ops.end(), {AG, std::nullopt, RS, AG, std::nullopt, RS});
      windows.push_back(std::move(w));
    }
    const auto ends = replay_windows(role, windows, settings, count);
    std::vector<double> unsettled;
    for (size_t w = 0; w < pending.size(); ++w) {
      std::vector<double> layer_ends;
      for (int n = 1; n <= layers; ++n) layer_ends.push_back(ends[w][6 * n - 1]);
      if (layers < model.layers && !settled(layer_ends)) {
        unsettled.push_back(pending[w]);
        continue;
      }
      LayerComm& lc = out[pending[w]];
      lc.per_layer_s = layer_ends.size() > 1 ? layer_ends.back() - layer_ends[layer_ends.size() - 2] : 0.0;
      lc.ends_s = std::move(layer_ends);
    }
    if (unsettled.empty()) break;
    spdlog::info("{} step shapes had not settled after {} layers", unsettled.size(), layers);
    pending = unsettled;
  }
  return out;
}

// Each chip of the prefill slice sends its shard of the cache to its peer on a generate slice
// over DCN (PCIe, NIC, switch); the smaller slice's hosts bound it.
std::map<int, double> replay_kv_transfers(const TransformerSpec& model, const ServerRole& prefill,
                                          const ServerRole& generate, const std::set<int>& lengths,
                                          const SimulationSettings& settings, long long& count) {
  std::map<int, double> out;
  if (lengths.empty()) return out;
  auto chips = [](const TopologySpec& t) {
    int n = 1;
    for (const auto& a : t.axes) n *= a.size;
    return n;
  };
  TopologySpec pair = chips(prefill.topology) <= chips(generate.topology) ? prefill.topology : generate.topology;
  pair.slices = 2;
  pair.splits.clear();
  const double per_token = kv_cache_bytes_per_token(model, prefill.plan.kv_bytes) / chips(pair);
  Program program;
  for (int tokens : lengths) {
    ProgramOp op;
    op.name = "kv";
    op.kind = ProgramOpKind::Send;
    op.send_axis = Topology::kSliceAxis;
    op.collective.bytes = per_token * tokens;
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

double prefill_step_s(const TransformerSpec& model, const ServerRole& role, const CommTable& comm, int batch,
                      int chunk, int offset) {
  return step_s(model, role, comm, prefill_shape(batch, chunk, offset));
}

double decode_step_s(const TransformerSpec& model, const ServerRole& role, const CommTable& comm, int batch,
                     double context_tokens) {
  StepShape shape = decode_shape(batch, 0);
  shape.attended_tokens = shape.kv_tokens = context_tokens;
  return step_s(model, role, comm, shape);
}

StepCosts ServingCostModel::costs(const TransformerSpec& model) const {
  StepCosts c;
  c.prefill_s = [this, &model](int batch, int chunk, int offset) {
    return prefill_step_s(model, prefill, prefill_comm, batch, chunk, offset);
  };
  c.decode_s = [this, &model](int batch, double context) {
    return decode_step_s(model, generate, generate_comm, batch, context);
  };
  c.kv_transfer_s = [this](int tokens) { return kv_transfer_s.at(tokens); };
  return c;
}

ServingCostModel build_serving_costs(const TransformerSpec& model, const ServerRole& prefill,
                                     const ServerRole& generate, bool colocated, const ServingConfig& config,
                                     const std::vector<Request>& requests, const SimulationSettings& settings) {
  const auto wall_start = std::chrono::steady_clock::now();
  ServingCostModel m{prefill, generate, {}, {}, {}, 0, 0};
  // Every chunk length a prompt can be cut into, and every batch a step can take.
  std::set<int> chunks, padded;
  for (const auto& r : requests) {
    int total = 0;
    for (int c : prefill_chunks(r.prompt_tokens, config.buckets)) chunks.insert(c), total += c;
    padded.insert(total);
  }
  const int prefill_batch = config.policy == BatchingPolicy::Static      ? config.slots
                            : config.policy == BatchingPolicy::Interleaved ? 1
                                                                           : config.prefill_batch;
  std::set<double> prefill_sizes, generate_sizes;
  for (int b = 1; b <= prefill_batch; ++b) {
    for (int c : chunks) prefill_sizes.insert(activation_bytes(model, static_cast<double>(b) * c));
  }
  for (int b = 1; b <= config.slots; ++b) generate_sizes.insert(activation_bytes(model, b));
  if (colocated) {
    prefill_sizes.insert(generate_sizes.begin(), generate_sizes.end());
    m.prefill_comm = m.generate_comm =
        replay_layer_comm(model, prefill, prefill_sizes, settings, m.collectives_replayed);
  } else {
    m.prefill_comm = replay_layer_comm(model, prefill, prefill_sizes, settings, m.collectives_replayed);
    m.generate_comm = replay_layer_comm(model, generate, generate_sizes, settings, m.collectives_replayed);
    m.kv_transfer_s = replay_kv_transfers(model, prefill, generate, padded, settings, m.collectives_replayed);
  }
  m.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return m;
}

}  // namespace podsim
