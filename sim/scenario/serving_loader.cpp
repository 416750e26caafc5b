#include "sim/scenario/serving_loader.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "sim/scenario/input_file.hpp"
#include "sim/scenario/request_trace.hpp"
#include "sim/scenario/routing_loader.hpp"
#include "sim/scenario/inference_loader.hpp"
#include "sim/scenario/model_loader.hpp"
#include "sim/scenario/units.hpp"
#include "sim/scenario/yaml_fields.hpp"
#include "topology/sub_mesh.hpp"

namespace podsim::detail {

using namespace yaml_fields;

namespace {

constexpr int kMaxRequests = 10'000'000;
constexpr int kMaxTokens = 1 << 30;

constexpr size_t kMaxPercentiles = 20;
constexpr int kMaxServers = 100000;

LengthRange read_length(const Field& field) {
  if (field.node.IsScalar()) {
    const int n = read_int(field, 1, kMaxTokens);
    return {n, n};
  }
  const auto items = read_list(field);
  if (items.size() != 2) fail(field, "expected a number of tokens or [min, max]");
  const LengthRange range{read_int(items[0], 1, kMaxTokens), read_int(items[1], 1, kMaxTokens)};
  if (range.max < range.min) fail(items[1], "below the minimum; expected [min, max] with min <= max");
  return range;
}

// A server is one model replica: its model and expert axes together are every mesh axis of its
// slice, or every axis but parallelism.replica's, whose sizes multiply to the replicas in a
// slice, each a server on the sub-mesh of the other axes (no collective crosses a replica axis,
// so a replica's step there is its step in the slice). Without parallelism.model, the model
// axes are those the expert and replica axes leave. Returns a server's mesh; `plan`'s axes index it.
// `prefill_server`: a disaggregated prefill server, the one kind that may split prompts over
// parallelism.context (ring attention, as kind: inference prefill does).
TopologySpec server_axes(const std::optional<Field>& parallelism, const TopologySpec& topology,
                         const TransformerSpec& model, InferencePlan& plan, int& replicas, bool prefill_server) {
  std::vector<int> all;
  for (size_t a = 0; a < topology.axes.size(); ++a) all.push_back(static_cast<int>(a));
  plan.model_axes = all;
  plan.expert_axes.clear();
  plan.d_axes.clear();
  plan.context_axis = -1;
  plan.replica_axes.clear();
  replicas = 1;
  if (!parallelism) return topology;
  const ModelParallelAxes axes = parse_model_parallelism(*parallelism, topology, model);
  plan.expert_axes = axes.expert;
  if (axes.context >= 0 && !prefill_server)
    fail(MapReader(*parallelism, SchemaMap::ModelParallelism).required("context"),
         "context parallelism splits a prompt's tokens, so it runs on the prefill servers of policy: disaggregated "
         "(prefill: {parallelism: {context: ...}}); a decode step has one new token per sequence, nothing for a "
         "ring to split (sharding the cache by sequence is not modelled); expected no context axis here");
  plan.context_axis = axes.context;
  // 2D weight-stationary: D over these axes, F (or heads) over the model axes; the cost model
  // pads each step's batch to a multiple of the D axes' chips (serving_costs.hpp).
  plan.d_axes = axes.model_d;
  auto listed = [](const std::vector<int>& list, int a) { return std::find(list.begin(), list.end(), a) != list.end(); };
  if (axes.model_given) {
    plan.model_axes = axes.model;
  } else {
    plan.model_axes.clear();
    for (int a : all)
      if (!listed(axes.expert, a) && !listed(axes.replica, a) && a != axes.context) plan.model_axes.push_back(a);
  }
  const size_t context_axes = axes.context >= 0 ? 1 : 0;
  if (plan.model_axes.size() + plan.expert_axes.size() + plan.d_axes.size() + context_axes + axes.replica.size() !=
          all.size() ||
      plan.model_axes.empty())
    fail(*parallelism, "a server is one model replica; expected parallelism.model to list every mesh axis (" +
                           axis_names(topology.axes) + ") not in parallelism.expert" +
                           (plan.d_axes.empty() ? "" : ", parallelism.model_d") +
                           (context_axes ? ", parallelism.context" : "") +
                           " or parallelism.replica (replicas inside the slice), each once, and at least one");
  if (axes.replica.empty()) return topology;
  const Field replica_field = MapReader(*parallelism, SchemaMap::ModelParallelism).required("replica");
  if (!topology.splits.empty())
    fail(replica_field, "replicas inside a serving slice take whole mesh axes; expected no topology.splits beside them");
  // The server's mesh: the axes a replica runs on, in the slice's order; the plan's axes renumbered.
  std::vector<int> kept;
  for (int a : all) {
    if (listed(axes.replica, a)) {
      replicas *= topology.axes[a].size;
    } else {
      kept.push_back(a);
    }
  }
  auto renumber = [&](std::vector<int>& list) {
    for (int& a : list) a = static_cast<int>(std::find(kept.begin(), kept.end(), a) - kept.begin());
  };
  renumber(plan.model_axes);
  renumber(plan.expert_axes);
  renumber(plan.d_axes);
  if (plan.context_axis >= 0) {
    std::vector<int> context{plan.context_axis};
    renumber(context);
    plan.context_axis = context[0];
  }
  return sub_mesh(topology, kept);
}

// Servers in all from `slices` slices of `replicas` servers each, at most kMaxServers; `where`
// (the slice count's key) is named otherwise.
int servers_in(int slices, int replicas, const Field& where, const std::string& what) {
  if (static_cast<int64_t>(slices) * replicas > kMaxServers)
    fail(where, std::to_string(slices) + " " + what + " of " + std::to_string(replicas) + " replicas are more than " +
                    std::to_string(kMaxServers) + " servers; expected " +
                    (kMaxServers / replicas > 0 ? "at most " + std::to_string(kMaxServers / replicas) + " slices"
                                                : std::string("fewer replicas a slice")));
  return slices * replicas;
}

// How vLLM's client sends a dataset's requests (--request-rate, default all at once;
// --burstiness; --seed), for the random and sharegpt datasets alike.
void read_sends(const MapReader& r, double& rate_per_s, double& burstiness, uint64_t& seed) {
  rate_per_s = std::numeric_limits<double>::infinity();
  if (auto rate = r.optional("request_rate")) rate_per_s = read_quantity(*rate, parse_rate_per_s);
  if (auto field = r.optional("burstiness")) {
    burstiness = read_real(*field);
    if (!(burstiness > 0) || !std::isfinite(burstiness))
      fail(*field, "expected a positive number (vLLM's --burstiness: 1 is a Poisson process, below 1 burstier)");
  }
  if (auto field = r.optional("seed")) seed = static_cast<uint64_t>(read_integer(*field, 0, INT64_MAX));
}

// vLLM benchmark_serving's random dataset (workloads/requests.hpp); returns its output_len
// field, where a request too long for HBM is reported.
Field parse_random(const Field& field, ServingWorkload& w) {
  const MapReader r(field, SchemaMap::RandomDataset);
  r.reject_unknown();
  RandomDataset d;
  d.count = read_int(r.required("count"), 1, kMaxRequests);
  d.input_len = read_int(r.required("input_len"), 1, kMaxTokens);
  const Field output = r.required("output_len");
  d.output_len = read_int(output, 1, kMaxTokens);
  if (auto ratio = r.optional("range_ratio")) {
    d.range_ratio = read_real(*ratio);
    if (!(d.range_ratio >= 0 && d.range_ratio < 1))
      fail(*ratio, "expected a ratio in [0, 1) (vLLM's --random-range-ratio: lengths within (1 +- ratio) x the given)");
  }
  if (auto prefix = r.optional("prefix_len")) d.prefix_len = read_int(*prefix, 0, kMaxTokens);
  if (auto prefixes = r.optional("prefixes")) {
    d.prefixes = read_int(*prefixes, 1, kMaxRequests);
    if (d.prefix_len == 0) fail(*prefixes, "applies with prefix_len > 0: the prompts share no prefix");
  }
  if (auto share = r.optional("prefix_share")) {
    d.prefix_share = read_real(*share);
    if (!(d.prefix_share >= 0 && d.prefix_share <= 1)) fail(*share, "expected a fraction in [0, 1] of the requests");
    if (d.prefix_len == 0) fail(*share, "applies with prefix_len > 0: the prompts share no prefix");
  }
  read_sends(r, d.request_rate_per_s, d.burstiness, d.seed);
  const int64_t longest = static_cast<int64_t>(d.prefix_len) + random_input_lengths(d).max + random_output_lengths(d).max;
  if (longest > w.model.max_sequence_length)
    fail(output, "prefix_len + input_len and output_len within range_ratio can reach " + std::to_string(longest) +
                     " tokens, longer than " + w.model.name + "'s max_sequence_length of " +
                     std::to_string(w.model.max_sequence_length));
  w.requests = random_requests(d);
  w.requests_source = "random";
  w.request_rate_per_s = d.request_rate_per_s;
  w.request_rate_key = "workload.requests.random.request_rate";
  return output;
}

// vLLM benchmark_serving's sharegpt dataset on a length table (workloads/requests.hpp).
void parse_sharegpt(const Field& field, ServingWorkload& w) {
  const MapReader r(field, SchemaMap::ShareGpt);
  r.reject_unknown();
  const std::string path = resolve_input_path(read_string(r.required("path")), field.where.file);
  const LengthTable table = read_length_table(path);
  SampledDataset d;
  d.rows = table.rows;
  d.count = read_int(r.required("count"), 1, kMaxRequests);
  if (auto output = r.optional("output_len")) d.output_len = read_int(*output, 1, kMaxTokens);
  read_sends(r, d.request_rate_per_s, d.burstiness, d.seed);
  std::vector<size_t> rows;
  w.requests = sampled_requests(d, &rows);
  if (w.requests.empty())
    fail(r.required("path"), "no row of the " + std::to_string(table.rows.size()) + " passes vLLM's pruning (prompt and "
                             "output at least 4 tokens, prompt at most 1024, both at most 2048); expected some that do");
  for (size_t i = 0; i < w.requests.size(); ++i)
    require_fits_model(table, path, rows[i], w.requests[i], w.model.max_sequence_length, w.model.name);
  w.requests_source = read_string(r.required("path"));
  w.request_rate_per_s = d.request_rate_per_s;
  w.request_rate_key = "workload.requests.sharegpt.request_rate";
}

// Fills w.requests (and the client's concurrency limit); returns the generated output length's
// field (empty for a trace), where a request too long for HBM is reported.
std::optional<Field> parse_requests(const Field& field, ServingWorkload& w) {
  const MapReader reader(field, SchemaMap::Requests);
  reader.reject_unknown();
  const auto poisson = reader.optional("poisson");
  const auto random = reader.optional("random");
  const auto trace = reader.optional("trace");
  const auto sharegpt = reader.optional("sharegpt");
  if (poisson.has_value() + random.has_value() + trace.has_value() + sharegpt.has_value() != 1)
    fail(field, "expected exactly one of poisson:, random:, sharegpt: or trace:");
  if (auto limit = reader.optional("max_concurrency")) w.config.max_concurrency = read_int(*limit, 1, kMaxRequests);
  if (random) return parse_random(*random, w);
  if (sharegpt) {
    parse_sharegpt(*sharegpt, w);
    return std::nullopt;
  }
  if (trace) {
    const std::string path = resolve_input_path(read_string(*trace), field.where.file);
    w.requests = read_request_trace(path, w.model.max_sequence_length, w.model.name);
    w.requests_source = read_string(*trace);
    return std::nullopt;
  }
  const MapReader p(*poisson, SchemaMap::Poisson);
  p.reject_unknown();
  PoissonArrivals arrivals;
  arrivals.rate_per_s = read_quantity(p.required("rate"), parse_rate_per_s);
  arrivals.count = read_int(p.required("count"), 1, kMaxRequests);
  arrivals.prompt_tokens = read_length(p.required("prompt_tokens"));
  const Field output = p.required("output_tokens");
  arrivals.output_tokens = read_length(output);
  if (auto seed = p.optional("seed")) arrivals.seed = static_cast<uint64_t>(read_integer(*seed, 0, INT64_MAX));
  if (arrivals.prompt_tokens.max + static_cast<int64_t>(arrivals.output_tokens.max) > w.model.max_sequence_length)
    fail(output, "prompt_tokens + output_tokens can reach " +
                     std::to_string(arrivals.prompt_tokens.max + arrivals.output_tokens.max) + ", longer than " +
                     w.model.name + "'s max_sequence_length of " + std::to_string(w.model.max_sequence_length));
  w.requests = poisson_requests(arrivals);
  w.requests_source = "poisson";
  w.request_rate_per_s = arrivals.rate_per_s;
  w.request_rate_key = "workload.requests.poisson.rate";
  return output;
}

std::vector<int> parse_buckets(const std::optional<Field>& field, const TransformerSpec& model) {
  std::vector<int> buckets;
  if (!field) {
    // Powers of two from 128, as TPU serving stacks pad prompts, up to the model's context.
    for (int b = 128; b <= std::min(8192, model.max_sequence_length); b *= 2) buckets.push_back(b);
    if (buckets.empty()) buckets.push_back(model.max_sequence_length);
    return buckets;
  }
  for (const Field& item : read_list(*field)) {
    const int b = read_int(item, 1, model.max_sequence_length);
    if (!buckets.empty() && b <= buckets.back()) fail(item, "expected bucket lengths in ascending order");
    buckets.push_back(b);
  }
  if (buckets.empty()) fail(*field, "expected at least one prompt length bucket");
  return buckets;
}

// metric_percentiles: 1 to kMaxPercentiles distinct values in (0, 100).
std::vector<double> parse_percentiles(const Field& field) {
  std::vector<double> out;
  const auto items = read_list(field);
  if (items.empty() || items.size() > kMaxPercentiles)
    fail(field, "expected 1 to " + std::to_string(kMaxPercentiles) + " percentiles, e.g. [50, 90, 99]");
  for (const auto& item : items) {
    const double p = read_real(item);
    if (!(p > 0 && p < 100)) fail(item, "expected a percentile between 0 and 100, e.g. 99 or 99.9");
    if (std::find(out.begin(), out.end(), p) != out.end()) fail(item, "listed twice; expected each percentile once");
    out.push_back(p);
  }
  return out;
}

// slo: at least one positive latency bound.
ServingWorkload::Slo parse_slo(const Field& field) {
  ServingWorkload::Slo slo;
  const MapReader bounds(field, SchemaMap::Slo);
  bounds.reject_unknown();
  auto bound = [&](const char* key, double& target) {
    if (auto value = bounds.optional(key)) {
      target = read_quantity(*value, parse_time_s);
      if (!(target > 0)) fail(*value, "a latency bound must be positive, e.g. \"200 ms\"");
    }
  };
  bound("ttft", slo.ttft_s);
  bound("tpot", slo.tpot_s);
  bound("latency", slo.latency_s);
  if (!slo.given()) fail(field, "expected at least one of ttft, tpot, latency, e.g. {ttft: \"500 ms\", tpot: \"50 ms\"}");
  return slo;
}

// Speculative decoding (workloads/speculative.hpp) under vLLM's speculative_config names:
// method ngram (drafts proposed on the host, so the accelerator runs the verification alone)
// or draft_model with its model (run on the server's chips, its weights and cache in HBM:
// parse_mixed), num_speculative_tokens k, and the drafts' acceptance as vLLM reports it
// (acceptance_rate, accepted over drafted) or per draft (acceptance_probability).
void parse_speculative(const Field& field, ServingWorkload& w) {
  const MapReader r(field, SchemaMap::Speculative);
  r.reject_unknown();
  SpeculativeDecoding& spec = w.config.speculative;
  const Field method = r.required("method");
  spec.method = read_choice(method, draft_method_names());
  const auto model = r.optional("model");
  if (model.has_value() != (spec.method == DraftMethod::DraftModel))
    fail(model.value_or(method), model ? "applies to method draft_model; ngram drafts on the host with no model"
                                       : "method draft_model needs the draft's model: a preset name or a model mapping "
                                         "(an EAGLE head: a mapping of one layer)");
  if (model) {
    w.draft_model = parse_model_field(*model, kMaxTokens);
    const TopologySpec& server = w.generate_topology;
    if (!kv_batch_axes(*w.draft_model, w.generate, server).empty())
      fail(*model, "the draft model runs on the server's model axes with its cache sharded by heads: its " +
                       std::to_string(w.draft_model->kv_heads) + " KV heads do not cover the " +
                       std::to_string(model_parallel_degree(w.generate, server)) + " chips; expected more KV heads");
  }
  spec.num_tokens = read_int(r.required("num_speculative_tokens"), 1, 64);
  const auto rate = r.optional("acceptance_rate");
  const auto probability = r.optional("acceptance_probability");
  if (rate.has_value() == probability.has_value())
    fail(field, "expected exactly one of acceptance_rate (accepted over drafted, as vLLM reports it) and "
                "acceptance_probability (per draft, given the drafts before it accepted)");
  const Field& given = rate ? *rate : *probability;
  const double value = read_real(given);
  if (!(value >= 0 && value <= 1)) fail(given, "expected a fraction in [0, 1]");
  spec.acceptance_probability = rate ? acceptance_probability_for_rate(value, spec.num_tokens) : value;
  if (auto seed = r.optional("seed")) spec.seed = static_cast<uint64_t>(read_integer(*seed, 0, INT64_MAX));
}

// A server's HBM as its fit checks count it: "238.4 GiB HBM less 5% headroom".
std::string server_hbm_text(const TopologySpec& server) {
  return human_hbm(server.chips_per_slice() * server.chip.hbm_bytes, server.chip.hbm_headroom);
}

const char* weight_dtype_name(double weight_bytes) {
  return weight_bytes >= 2 ? "bf16" : weight_bytes >= 1 ? "int8/fp8" : "int4";
}

// The weights alone beyond a server's HBM: no request length can help, so the message names the
// weights, the chips they need and the narrower dtypes that fit (issue 42: 405B on v6e-8 was
// blamed on output_tokens).
void require_weights_fit(const Field& model_field, const ServingWorkload& w, double weights) {
  const TopologySpec& server = w.generate_topology;
  const double per_chip = server.chip.usable_hbm_bytes();
  if (weights < server.chips_per_slice() * per_chip) return;
  std::string narrower;
  for (double bytes : {1.0, 0.5}) {
    const double scaled = weights * bytes / w.generate.weight_bytes;
    if (bytes < w.generate.weight_bytes)
      narrower += std::string(narrower.empty() ? "" : ", ") + "weights: " + (bytes == 1 ? "int8" : "int4") + " (" +
                  human_bytes(scaled) + (scaled < server.chips_per_slice() * per_chip ? ", fits" : ", still too big") + ")";
  }
  fail(model_field, "the weights alone, " + human_bytes(weights) + " of " + w.model.name + " in " +
                        weight_dtype_name(w.generate.weight_bytes) + ", exceed the " + server_hbm_text(server) +
                        " of a server's " + std::to_string(server.chips_per_slice()) + " " + server.chip.name +
                        " chips, whatever the requests; expected a server of more than " +
                        std::to_string(static_cast<long long>(std::ceil(weights / per_chip))) +
                        " chips (the weights alone fill that many; the KV cache needs room beside them)" +
                        (narrower.empty() ? std::string() : ", or narrower weights (" + narrower + ")"));
}

// The KV cache page tpu-inference's Pallas backend takes for a max_model_len (vLLM
// v1/attention/backends/pallas.py, PallasAttentionBackend.get_page_size): max_model_len split
// into 16 pages, a power of two in [16, 256], and 16 above 8192 tokens.
int tpu_page_size(int max_model_len) {
  if (max_model_len > 8192) return 16;
  int pow2 = 1;
  while (pow2 < max_model_len) pow2 *= 2;
  return std::clamp(pow2 / 16, 16, 256);
}

// vLLM's scheduler limits and KV cache page from a policy mixed workload: its defaults for
// `vllm serve` on a TPU (EngineArgs._set_default_args; docs/modelling.md, "vLLM on TPU"): a
// budget of 2048 tokens and min(256, budget) sequences; blocks of 16 tokens, or with
// max_model_len the page tpu-inference's Pallas backend picks for it.
void read_vllm_limits(const MapReader& reader, ServingWorkload& w) {
  ServingConfig& c = w.config;
  c.max_num_batched_tokens = 2048;
  c.block_size = 16;
  const auto budget = reader.optional("max_num_batched_tokens");
  if (budget) c.max_num_batched_tokens = read_int(*budget, 1, kMaxTokens);
  c.max_num_seqs = std::min(256, c.max_num_batched_tokens);
  if (auto f = reader.optional("max_num_seqs")) c.max_num_seqs = read_int(*f, 1, kMaxRequests);
  if (auto f = reader.optional("max_model_len")) {
    w.max_model_len = read_int(*f, 1, kMaxTokens);
    c.block_size = tpu_page_size(w.max_model_len);
  }
  if (auto f = reader.optional("async_scheduling")) c.async_scheduling = read_bool(*f);
  if (auto f = reader.optional("block_size")) {
    c.block_size = read_int(*f, 1, 1 << 20);
    // Paged attention kernels tile a sequence's blocks in powers of two: vLLM's TPU (Pallas)
    // backend picks pages of 16 to 256 tokens, its GPU block sizes are 1, 8, 16, 32, 64, 128.
    if ((c.block_size & (c.block_size - 1)) != 0)
      fail(*f, "a block of " + std::to_string(c.block_size) + " tokens does not divide the paged attention kernel's "
               "power-of-two tiles; expected a power of two (vLLM's TPU backend uses 16 to 256)");
  }
  if (c.max_num_batched_tokens < c.max_num_seqs)
    fail(budget.value_or(reader.required("policy")),
         "max_num_batched_tokens " + std::to_string(c.max_num_batched_tokens) + " is below max_num_seqs " +
             std::to_string(c.max_num_seqs) + "; expected at least one token a running sequence (as vLLM requires)");
}

// Policy mixed (vLLM v1's scheduler, workloads/serving.hpp): the token budget, the running
// sequences, and the paged KV cache HBM holds beside the weights.
void parse_mixed(const MapReader& reader, double kv_per_token, ServingWorkload& w) {
  ServingConfig& c = w.config;
  const TopologySpec& server = w.generate_topology;
  if (auto field = reader.optional("max_batch"))
    fail(*field, "policy mixed runs up to max_num_seqs sequences (vLLM's name, default 256); expected max_num_seqs");
  if (expert_parallel_degree(w.generate, server) > 1 || !w.generate.d_axes.empty())
    fail(reader.required("policy"), "policy mixed prices steps over the model axes alone; expected no parallelism.expert "
                                     "or parallelism.model_d (not yet supported with mixed steps)");
  if (!kv_batch_axes(w.model, w.generate, server).empty())
    fail(reader.required("policy"), "policy mixed shards the paged KV cache by heads; " + w.model.name + "'s " +
                                         std::to_string(w.model.kv_heads) + " KV heads do not cover the model axes' " +
                                         std::to_string(model_parallel_degree(w.generate, server)) +
                                         " chips; expected fewer model-parallel chips");
  read_vllm_limits(reader, w);
  if (auto f = reader.optional("prefix_caching")) c.prefix_caching = read_bool(*f);
  if (auto f = reader.optional("speculative")) parse_speculative(*f, w);
  const auto preemption = reader.optional("preemption");
  if (preemption)
    c.preemption = read_choice(*preemption, preemption_names());
  const auto swap_space = reader.optional("swap_space");
  if (swap_space && c.preemption != Preemption::Swap)
    fail(*swap_space, "applies to preemption: swap; expected preemption: swap beside it");
  if (auto f = reader.optional("router"))
    c.router = read_choice(*f, router_names());
  // A draft model's weights and KV cache share HBM: its cache paged in the same blocks.
  double weights = server_weight_bytes(w.model, w.generate, server);
  if (w.draft_model) {
    weights += server_weight_bytes(*w.draft_model, w.generate, server);
    kv_per_token += kv_cache_bytes_per_token(*w.draft_model, w.generate.kv_bytes);
  }
  // vLLM's KV cache is gpu_memory_utilization of the memory less the weights; podsim's headroom
  // is that share's complement (chip_spec.hpp).
  const double hbm = server.chips_per_slice() * server.chip.usable_hbm_bytes();
  const double blocks = std::floor((hbm - weights) / (c.block_size * kv_per_token));
  c.kv_blocks = static_cast<long long>(std::clamp(blocks, 0.0, 1e15));
  if (c.preemption == Preemption::Swap) {
    // vLLM's swap_space: host memory a device keeps for swapped blocks, default 4 GiB.
    const double per_chip = swap_space ? static_cast<double>(read_quantity(*swap_space, parse_bytes)) : 4.0 * (1 << 30);
    c.swap_blocks = static_cast<long long>(
        std::floor(per_chip * server.chips_per_slice() / (c.block_size * kv_per_token)));
    if (c.servers > 1 && c.router == Router::SharedQueue)
      fail(*preemption, "a swapped sequence's cache waits on its server's host, so it must come back to that server; "
                        "expected a router (round_robin, least_outstanding or kv_aware) with several servers");
  }
  c.slots = c.max_num_seqs;
  long long longest = 0;
  for (const auto& r : w.requests) longest = std::max<long long>(longest, static_cast<long long>(r.prompt_tokens) + r.output_tokens);
  // vLLM refuses a request whose prompt and max_tokens exceed max_model_len (the benchmark
  // counts it failed); a run of such requests would measure another workload.
  if (w.max_model_len > 0 && longest > w.max_model_len)
    fail(reader.required("max_model_len"), "a request of " + std::to_string(longest) + " tokens (prompt and output) is longer than " +
                             "max_model_len " + std::to_string(w.max_model_len) +
                             ", which vLLM refuses; expected max_model_len of at least " + std::to_string(longest));
  if (w.draft_model && longest > w.draft_model->max_sequence_length)
    fail(reader.required("speculative"), "a request of " + std::to_string(longest) + " tokens is longer than the draft " +
                                             w.draft_model->name + "'s max_sequence_length of " +
                                             std::to_string(w.draft_model->max_sequence_length));
  if (static_cast<double>(longest) > static_cast<double>(c.kv_blocks) * c.block_size)
    fail(reader.required("requests"), "a request of " + std::to_string(longest) + " tokens needs more than the " +
                                          std::to_string(c.kv_blocks) + " KV cache blocks of " +
                                          std::to_string(c.block_size) + " tokens " + human_bytes(hbm - weights) +
                                          " beside the weights holds (of " + server_hbm_text(server) +
                                          "); expected shorter requests or a larger slice");
}

// The decode slots HBM holds beside the weights (and max_batch, at most that). Returns the KV
// cache's bytes per token.
double size_slots(const MapReader& reader, const std::optional<Field>& output_field, ServingWorkload& w) {
  ServingConfig& c = w.config;
  const TopologySpec& server = w.generate_topology;
  // What a slot must hold: the longest request, its prompt padded as prefilled (mixed steps
  // take prompts as they are).
  for (const auto& r : w.requests) {
    const int prompt = c.policy == BatchingPolicy::Mixed ? r.prompt_tokens : padded_prompt_tokens(r.prompt_tokens, c.buckets);
    w.max_context = std::max(w.max_context, prompt + r.output_tokens);
  }
  const double kv_per_token = kv_cache_bytes_per_token(w.model, w.generate.kv_bytes);
  // Expert parallelism copies all but the routed experts into every expert-parallel group.
  const double weights = server_weight_bytes(w.model, w.generate, server);
  require_weights_fit(reader.required("model"), w, weights);
  const double hbm = server.chips_per_slice() * server.chip.usable_hbm_bytes();
  // Clamped before the conversion: a small model beside a large HBM fits more sequences than an
  // int holds (16 chips of 1 PiB, 256 B a sequence: 7e13), a conversion C++ leaves undefined
  // (clang's UBSan reports it; x86 gave INT_MIN, and 2 tokens "did not fit" in 16,384 TiB).
  // A server never decodes more sequences than there can be requests.
  // With expert parallelism each group holds its share of the caches (data-parallel attention),
  // so the slots are a multiple of the groups: EP x floor(per group), as kind: inference counts.
  // Under 2D weight-stationary sharding each D shard holds the caches of its 1/X of the
  // sequences, their heads over the model axes: a chip holds weights / N + (slots / X) x
  // context x kv / YZ, the whole slice's sum in even shares, so the slots are a multiple of X
  // (and a padded batch never needs more caches than the slots hold).
  const int groups = expert_parallel_degree(w.generate, server) * d_batch_degree(w.model, w.generate, server);
  const double fit = groups * std::floor((hbm - weights) / groups / (w.max_context * kv_per_token));
  w.hbm_slots = static_cast<int>(std::clamp(fit, 0.0, static_cast<double>(kMaxRequests)));
  if (w.hbm_slots < 1) {
    const Field where = output_field.value_or(reader.required("requests"));
    fail(where, "a sequence of " + std::to_string(w.max_context) + " tokens needs " +
                    human_bytes(w.max_context * kv_per_token) + " of KV cache, more than the " +
                    human_bytes(hbm - weights) + " left beside " + human_bytes(weights) + " of weights in " +
                    server_hbm_text(server) + "; expected shorter requests, a smaller kv_cache dtype or a larger slice");
  }
  c.slots = w.hbm_slots;
  if (auto max_batch = reader.optional("max_batch")) {
    c.slots = read_int(*max_batch, 1, kMaxRequests);
    if (c.slots > w.hbm_slots)
      fail(*max_batch, "needs " + human_bytes(weights + static_cast<double>(c.slots) * w.max_context * kv_per_token) +
                           " of HBM for sequences of up to " + std::to_string(w.max_context) + " tokens, more than " +
                           server_hbm_text(server) + "; expected at most " + std::to_string(w.hbm_slots));
  }
  return kv_per_token;
}

// A context-parallel prefill server splits every prompt chunk's tokens into 2 x CP zig-zag
// pieces, and rings only the chunk's own keys and values: every prompt bucket must split so, and
// no prompt may be longer than the largest bucket (its later chunks would attend over a cached
// prefix spread over the context axis, which a ring of the chunk's blocks does not pass).
void check_context_prefill(const Field& context, const ServingWorkload& w) {
  const int cp = w.prefill_server_topology.axes.at(w.prefill.context_axis).size;
  for (int b : w.config.buckets)
    if (b % (2 * cp) != 0)
      fail(context, "a prompt bucket of " + std::to_string(b) + " tokens does not split into 2 x " + std::to_string(cp) +
                        " equal chunks (context parallelism's zig-zag); expected prompt_buckets that are multiples of " +
                        std::to_string(2 * cp));
  for (const auto& r : w.requests)
    if (r.prompt_tokens > w.config.buckets.back())
      fail(context, "a prompt of " + std::to_string(r.prompt_tokens) + " tokens is prefilled in chunks after the "
                        "largest bucket (" + std::to_string(w.config.buckets.back()) +
                        "), and a later chunk's ring would pass the cached prefix too, which is not modelled; "
                        "expected prompts of at most the largest bucket");
}

// Disaggregated serving's prefill servers: their slices, axes and numerics, and whether a
// prefill batch of the longest prompts fits one.
void parse_prefill_servers(const MapReader& reader, const TopologySpec& topology, const TopologyParser& parse_topology,
                           double kv_per_token, ServingWorkload& w) {
  ServingConfig& c = w.config;
  const bool split = c.policy == BatchingPolicy::Disaggregated;
  const TopologySpec& server = w.generate_topology;
  w.prefill_topology = topology;
  w.prefill_server_topology = server;
  w.prefill_replicas_per_slice = w.replicas_per_slice;
  const auto prefill = reader.optional("prefill");
  if (prefill && !split) fail(*prefill, "applies to policy: disaggregated only");
  if (split) {
    c.prefill_servers = 1;
    if (prefill) {
      const MapReader p(*prefill, SchemaMap::Prefill);
      p.reject_unknown();
      if (auto servers = p.optional("servers")) c.prefill_servers = read_int(*servers, 1, kMaxServers);
      if (auto t = p.optional("topology")) {
        w.prefill_topology = parse_topology(*t);
        if (w.prefill_topology.slices != 1) fail(*t, "expected one slice per prefill server");
      }
      // Without its own parallelism a prefill server on the workload's slice keeps the workload's
      // axes; on a slice of its own, the workload's axis indices mean nothing, so it takes every axis.
      const auto prefill_parallelism = p.optional("parallelism");
      if (prefill_parallelism || p.optional("topology"))
        w.prefill_server_topology = server_axes(prefill_parallelism, w.prefill_topology, w.model, w.prefill,
                                                w.prefill_replicas_per_slice, true);
      if (w.prefill.context_axis >= 0)
        check_context_prefill(MapReader(*prefill_parallelism, SchemaMap::ModelParallelism).required("context"), w);
      if (auto e = p.optional("efficiency")) w.prefill.efficiency = read_fraction(*e);
      if (auto overlap = p.optional("collective_matmul")) w.prefill.collective_matmul = read_bool(*overlap);
    }
    // A prefill server holds the weights and the caches of the prompts it is prefilling.
    int longest = 0;
    for (const auto& r : w.requests) longest = std::max(longest, padded_prompt_tokens(r.prompt_tokens, c.buckets));
    // prefill.servers counts slices.
    c.prefill_servers = servers_in(c.prefill_servers, w.prefill_replicas_per_slice, prefill.value_or(reader.self()),
                                   "prefill slices");
    const TopologySpec& prefill_server = w.prefill_server_topology;
    const double prefill_hbm = prefill_server.chips_per_slice() * prefill_server.chip.usable_hbm_bytes();
    // In doubles: a prefill batch of 10^7 prompts of 8,192 tokens overflows an int. Under 2D
    // weight-stationary sharding the batch is padded to a multiple of the D axes' chips, each
    // padding prompt's cache written as a real one's.
    const int x = d_batch_degree(w.model, w.prefill, prefill_server);
    const int64_t prompts = (static_cast<int64_t>(c.prefill_batch) + x - 1) / x * x;
    // Context parallelism keeps a copy of the model axes' weights on every context chip.
    const double need = server_weight_bytes(w.model, w.prefill, prefill_server) * context_degree(w.prefill, prefill_server) +
                        static_cast<double>(prompts) * longest * kv_per_token;
    if (need > prefill_hbm)
      fail(reader.optional("prefill_batch").value_or(prefill.value_or(reader.self())),
           "a prefill server needs " + human_bytes(need) + " for the weights and " + std::to_string(prompts) +
               " prompts of " + std::to_string(longest) + " tokens" + (prompts > c.prefill_batch ? " (padded)" : "") +
               ", more than its " + server_hbm_text(prefill_server));
  }
}

}  // namespace

ServingWorkload parse_serving(const MapReader& reader, const TopologySpec& topology,
                              const TopologyParser& parse_topology) {
  ServingWorkload w;
  if (topology.slices != 1)
    fail(reader.self(), "a serving topology is one server's slice (topology.slices: " +
                            std::to_string(topology.slices) + "); expected slices: 1 and servers: for more");
  w.model = parse_model_field(reader.required("model"), kMaxTokens);   // a custom model: no limit of its own
  parse_inference_numerics(reader, topology.chip, w.generate);
  w.generate_topology =
      server_axes(reader.optional("parallelism"), topology, w.model, w.generate, w.replicas_per_slice, false);
  if (auto routing = reader.optional("routing")) w.generate.routing = parse_routing(*routing, w.model, false);
  w.prefill = w.generate;
  if (auto e = reader.optional("prefill_efficiency")) w.prefill.efficiency = read_fraction(*e);
  ServingConfig& c = w.config;
  if (auto policy = reader.optional("policy")) c.policy = read_choice(*policy, batching_policy_names());
  const bool split = c.policy == BatchingPolicy::Disaggregated;
  // `servers:` counts slices; each holds replicas_per_slice servers, at most kMaxServers in all.
  const auto servers_field = reader.optional("servers");
  if (servers_field) c.servers = read_int(*servers_field, 1, kMaxServers);
  c.servers = servers_in(c.servers, w.replicas_per_slice, servers_field.value_or(reader.self()), "slices");
  c.buckets = parse_buckets(reader.optional("prompt_buckets"), w.model);
  const auto output_field = parse_requests(reader.required("requests"), w);
  if (auto percentiles = reader.optional("metric_percentiles")) w.metric_percentiles = parse_percentiles(*percentiles);
  if (auto slo = reader.optional("slo")) w.slo = parse_slo(*slo);

  const double kv_per_token = size_slots(reader, output_field, w);
  c.prefill_batch = c.policy == BatchingPolicy::Continuous ? c.slots : 1;
  if (auto prefill_batch = reader.optional("prefill_batch")) {
    if (c.policy == BatchingPolicy::Static || c.policy == BatchingPolicy::Interleaved ||
        c.policy == BatchingPolicy::JetStream || c.policy == BatchingPolicy::Mixed)
      fail(*prefill_batch, std::string("applies to policies continuous and disaggregated; ") + to_string(c.policy) +
                               (c.policy == BatchingPolicy::Mixed
                                    ? " fills each step with prompts' chunks up to max_num_batched_tokens"
                                    : std::string(" prefills ") +
                                          (c.policy == BatchingPolicy::Static ? "its whole batch" : "one prompt") +
                                          " at a time"));
    c.prefill_batch = read_int(*prefill_batch, 1, kMaxRequests);
    if (!split && c.prefill_batch > c.slots)
      fail(*prefill_batch, "more than the " + std::to_string(c.slots) + " decode slots; expected at most that");
  }

  // The serving process's work per step (ServingConfig::host_overhead_s), any policy.
  auto host_time = [&](const char* key, double& target) {
    if (auto value = reader.optional(key)) {
      target = read_quantity(*value, parse_time_s);
      if (!(target >= 0 && target < 3600)) fail(*value, "expected a time of at least 0 (and under an hour), e.g. \"2 ms\"");
    }
  };
  host_time("host_overhead_per_step", c.host_overhead_per_step_s);
  host_time("host_overhead_per_sequence", c.host_overhead_per_sequence_s);

  if (c.policy == BatchingPolicy::Mixed) parse_mixed(reader, kv_per_token, w);
  else
    for (const char* key : {"max_num_batched_tokens", "max_num_seqs", "block_size", "prefix_caching", "router", "speculative", "preemption",
                             "swap_space", "max_model_len", "async_scheduling"})
      if (auto field = reader.optional(key))
        fail(*field, std::string("applies to policy mixed (vLLM's scheduler); policy ") + to_string(c.policy) +
                         " batches by max_batch and prefill_batch");
  parse_prefill_servers(reader, topology, parse_topology, kv_per_token, w);
  return w;
}

}  // namespace podsim::detail
