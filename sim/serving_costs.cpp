#include "sim/serving_costs.hpp"

#include <chrono>
#include <cmath>
#include <spdlog/spdlog.h>
#include <set>
#include <stdexcept>

namespace podsim {

namespace {

double step_s(const TransformerSpec& model, const ServerRole& role, const CommTable& comm, const StepShape& shape) {
  const StepCompute c = step_compute(model, role.plan, role.topology.chip, role.model_degree, shape);
  double comm_s = 0;
  if (role.model_degree > 1) {
    const auto it = comm.find(c.activation_bytes);
    if (it == comm.end()) throw std::logic_error("no replayed collectives for this step shape");
    comm_s = it->second.layers_s(model.layers);
  }
  return model.layers * (c.attention_s + c.mlp_s) + c.unembed_s + comm_s;
}

double activation_bytes(const TransformerSpec& model, double tokens) {
  return tokens * model.d_model * 2.0;   // bf16, as step_compute
}

constexpr int kLayersReplayed = 8;

// The collectives of `layers` layers for each size, with the compute between them stood in by
// a gap longer than any collective: a step's own compute is longer than the stagger, so no
// collective's traffic meets the next one's and the gap's length does not matter; the gaps
// are subtracted. Each size gets its own window (release time) so every chip starts it
// together, as at the start of a step; a window found too short is widened and replayed.
std::map<double, std::vector<double>> replay_layers(const ServerRole& role, const std::vector<double>& sizes,
                                                    int layers, const SimulationSettings& settings,
                                                    long long& count) {
  const ChipSpec& chip = role.topology.chip;
  int ring_hops = 0;
  for (int a : role.plan.model_axes) ring_hops += role.topology.axes[a].size;
  const int ops_per_size = 6 * layers;
  for (double widen = 2;; widen *= 4) {
    Program program;
    std::vector<double> release, gap;
    double t = 0;
    for (double bytes : sizes) {
      release.push_back(t);
      // A bound on one collective: the whole array over one link, plus every hop's latency.
      const double bound = bytes / (chip.ici_bandwidth_Bps * settings.link_efficiency) +
                           (ring_hops + 2) * chip.hop_latency_s + settings.launch_overhead_s;
      gap.push_back(widen * bound);
      for (int k = 0; k < ops_per_size; ++k) {
        ProgramOp op;
        // Per layer and block (attention, MLP): AllGather, compute, ReduceScatter.
        if (k % 3 == 1) {
          op.name = "gap";
          op.kind = ProgramOpKind::Compute;
          op.compute_s = gap.back();
        } else {
          op.name = "comm";
          op.kind = ProgramOpKind::Collective;
          op.collective.kind = k % 3 == 0 ? CollectiveKind::AllGather : CollectiveKind::ReduceScatter;
          op.collective.axes = role.plan.model_axes;
          op.collective.bytes = bytes;
        }
        if (k == 0) op.release_s = t;
        else op.after = {static_cast<int>(program.size() - 1)};
        program.push_back(std::move(op));
      }
      t += widen * 6 * layers * bound;
    }
    release.push_back(t);
    const RunResult run = run_program(role.topology, settings, program, {});
    count += static_cast<long long>(program.size());
    std::map<double, std::vector<double>> out;
    bool overlapped = false;
    for (size_t w = 0; w < sizes.size(); ++w) {
      const size_t first = w * ops_per_size;
      auto& ends = out[sizes[w]];
      for (int n = 1; n <= layers; ++n)
        ends.push_back(run.operations[first + 6 * n - 1].end_s - release[w] - 2 * n * gap[w]);
      overlapped = overlapped || run.operations[first + ops_per_size - 1].end_s > release[w + 1];
    }
    if (!overlapped) return out;
  }
}

// Settled: the last three layers each added the same time.
bool settled(const std::vector<double>& ends) {
  const size_t n = ends.size();
  if (n < 4) return false;
  const double d = ends[n - 1] - ends[n - 2];
  auto same = [&](double x) { return std::fabs(x - d) <= 1e-12 + 1e-9 * std::fabs(d); };
  return same(ends[n - 2] - ends[n - 3]) && same(ends[n - 3] - ends[n - 4]);
}

CommTable replay_layer_comm(const TransformerSpec& model, const ServerRole& role, const std::set<double>& sizes,
                            const SimulationSettings& settings, long long& count) {
  CommTable out;
  if (role.model_degree <= 1 || sizes.empty()) return out;
  const int first_layers = std::min(kLayersReplayed, model.layers);
  std::vector<double> unsettled;
  for (auto& [bytes, ends] :
       replay_layers(role, std::vector<double>(sizes.begin(), sizes.end()), first_layers, settings, count)) {
    if (first_layers < model.layers && !settled(ends)) unsettled.push_back(bytes);
    else out[bytes] = {ends, ends.size() > 1 ? ends.back() - ends[ends.size() - 2] : ends.back()};
  }
  if (!unsettled.empty()) {
    spdlog::info("{} step shapes had not settled after {} layers; replaying all {}", unsettled.size(), first_layers,
                 model.layers);
    for (auto& [bytes, ends] : replay_layers(role, unsettled, model.layers, settings, count))
      out[bytes] = {ends, 0.0};
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
