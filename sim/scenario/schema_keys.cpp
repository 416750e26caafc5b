#include "sim/scenario/schema_keys.hpp"

#include <stdexcept>

#include "sim/scenario/hardware_parameters.hpp"
#include "workloads/remat_policy.hpp"

namespace podsim {

namespace {

// The chip figures a preset gives and an override replaces, then the calibration parameters set
// there (hardware_parameters.cpp), then the choices of model beside them.
std::vector<std::string> hardware_override_keys() {
  std::vector<std::string> keys = {"ici_bandwidth", "hbm_bandwidth", "hbm_capacity", "bf16_flops", "int8_ops",
                                   "fp8_flops", "ici_links_per_neighbor", "chips_per_host", "host_shape",
                                   "dcn_bandwidth_per_host", "pcie_bandwidth"};
  for (const HardwareParameter* row : hardware_parameters_in("hardware.overrides"))
    keys.emplace_back(row->scenario_leaf());
  keys.insert(keys.end(), {"mxu_padding", "antipodal_split", "reductions_on_tensor_core", "sparse_core_offload", "compute_model", "chip_hour_price_usd"});
  return keys;
}

// The hop model, then the calibration parameters that are simulation settings.
std::vector<std::string> simulation_keys() {
  std::vector<std::string> keys = {"hop_model"};
  for (const HardwareParameter* row : hardware_parameters_in("simulation")) keys.emplace_back(row->scenario_leaf());
  return keys;
}

std::vector<KeyTable> make_tables() {
  using M = SchemaMap;
  std::vector<KeyTable> tables = {
      {M::Document, "document", "",
       {"version", "name", "description", "hardware", "topology", "perturbations", "simulation", "workload", "expect",
        "compare"}},
      {M::Hardware, "hardware", "hardware", {"preset", "overrides", "profile"}},
      {M::HardwareOverrides, "hardware_overrides", "hardware.overrides", hardware_override_keys()},
      {M::Topology, "topology", "topology (and workload.prefill.topology)",
       {"mesh", "wraparound", "slices", "dcn_oversubscription", "split"}},
      {M::MeshAxis, "mesh_axis", "topology.mesh[i] (the list form)", {"name", "size"}},
      {M::AxisSplit, "axis_split", "topology.split.<axis>", {"inner", "outer", "inner_size"}},
      {M::Simulation, "simulation", "simulation", simulation_keys()},
      {M::WorkloadCollectives, "workload_collectives", "workload (kind: collectives)", {"kind", "operations"}},
      {M::WorkloadTraining, "workload_training", "workload (kind: training)",
       {"kind", "model", "batch_tokens", "sequence_length", "microbatches", "parallelism", "checkpointing",
        "remat_policy", "remat", "attention_kernel", "causal_attention", "flash_block", "matmul_efficiency", "attention_flops", "strict_memory", "routing", "token_budget",
        "master_weights", "gradients", "weight_dtype", "num_vocab_tiling", "quantization", "quantization_local_shard_count",
        "weight_quantization_calibration_method", "act_quantization_calibration_method"}},
      {M::WorkloadInference, "workload_inference", "workload (kind: inference)",
       {"kind", "model", "phase", "batch", "context_length", "prompt_length", "weights", "kv_cache", "compute",
        "efficiency", "attention_flops", "parallelism", "collective_matmul", "routing", "strict_memory"}},
      {M::WorkloadServing, "workload_serving", "workload (kind: serving)",
       {"kind", "model", "weights", "kv_cache", "compute", "efficiency", "prefill_efficiency", "attention_flops",
        "parallelism", "policy", "servers", "max_batch", "prefill_batch", "prompt_buckets", "requests", "prefill",
        "collective_matmul", "slo", "metric_percentiles", "routing", "max_num_batched_tokens", "max_num_seqs", "block_size", "prefix_caching", "router", "speculative", "preemption", "swap_space", "max_model_len", "async_scheduling", "host_overhead_per_step", "host_overhead_per_sequence"}},
      {M::Operation, "operation", "workload.operations[i]",
       {"name", "kind", "axes", "dcn", "dcn_algorithm", "bytes", "array", "sharding", "bidirectional", "repeat",
        "after"}},
      {M::Model, "model", "workload.model (a mapping)",
       {"preset", "name", "layers", "d_model", "d_ff", "heads", "kv_heads", "head_dim", "vocab", "gated_mlp",
        "parallel_block", "tied_embeddings", "max_sequence_length", "moe", "attention"}},
      {M::ModelMoe, "model_moe", "workload.model.moe",
       {"experts", "experts_per_token", "shared_experts", "expert_d_ff", "dense_layers", "interleave_moe_layer_step"}},
      {M::ModelAttention, "model_attention", "workload.model.attention",
       {"kind", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"}},
      {M::TrainingParallelism, "training_parallelism", "workload.parallelism (kind: training)",
       {"data", "fsdp", "fsdp_transpose", "zero", "tensor", "tensor_overlap", "context", "pipeline", "schedule", "virtual_stages", "dcn_data", "dcn_fsdp", "dcn_sync", "expert"}},
      {M::ModelParallelism, "model_parallelism", "workload.parallelism (inference, serving), workload.prefill.parallelism",
       {"model", "model_d", "replica", "expert", "context"}},
      {M::Routing, "routing", "workload.routing",
       {"distribution", "zipf_s", "loads", "capacity_factor", "pad_to_capacity", "dispatch", "shuffle", "seed",
        "tile_batch_seq", "tile_embed_dim", "tile_mlp_dim"}},
      {M::Requests, "requests", "workload.requests", {"poisson", "random", "sharegpt", "trace", "max_concurrency"}},
      {M::Poisson, "poisson", "workload.requests.poisson", {"rate", "count", "prompt_tokens", "output_tokens", "seed"}},
      {M::RandomDataset, "random_dataset", "workload.requests.random",
       {"count", "input_len", "output_len", "range_ratio", "prefix_len", "prefixes", "prefix_share", "request_rate",
        "burstiness", "seed"}},
      {M::ShareGpt, "sharegpt", "workload.requests.sharegpt",
       {"path", "count", "output_len", "request_rate", "burstiness", "seed"}},
      {M::Slo, "slo", "workload.slo", {"ttft", "tpot", "latency"}},
      {M::Speculative, "speculative", "workload.speculative",
       {"method", "model", "num_speculative_tokens", "acceptance_rate", "acceptance_probability", "seed"}},
      {M::Prefill, "prefill", "workload.prefill",
       {"servers", "topology", "parallelism", "efficiency", "collective_matmul"}},
      {M::Perturbation, "perturbation", "perturbations[i]",
       {"name", "chips", "links", "nics", "stragglers", "compute_slowdown", "bandwidth_scale", "extra_latency"}},
      {M::ChipSelection, "chip_selection", "perturbations[i].chips (a mapping)", {"chip", "chips", "host", "slice"}, true},
      {M::LinkSelection, "link_selection", "perturbations[i].links",
       {"chip", "chips", "host", "slice", "axis", "direction"}, true},
      {M::NicSelection, "nic_selection", "perturbations[i].nics", {"slice", "host", "chip"}},
      {M::Stragglers, "stragglers", "perturbations[i].stragglers", {"probability", "compute_slowdown", "histogram", "seed"}},
      {M::Expectation, "expectation", "expect[i]",
       {"field", "value", "rel_tolerance", "rel_tolerance_above", "tolerance_reason", "source"}},
      {M::Compare, "compare", "compare", {"topologies", "chips"}},
      {M::Remat, "remat", "workload.remat (remat_policy: custom)", remat_tensor_names()},
  };
  // key_table indexes by the enum: a table out of order or missing would hand a reader the
  // wrong keys, so refuse to start rather than load anything with them.
  if (tables.size() != static_cast<size_t>(M::Count)) throw std::logic_error("schema_keys: a SchemaMap has no table");
  for (size_t i = 0; i < tables.size(); ++i)
    if (static_cast<size_t>(tables[i].map) != i) throw std::logic_error("schema_keys: table " + tables[i].id + " out of order");
  return tables;
}

}  // namespace

namespace {

std::vector<KeyTable>& tables() {
  static std::vector<KeyTable> built = make_tables();
  return built;
}

}  // namespace

const std::vector<KeyTable>& key_tables() { return tables(); }

void refresh_key_tables() { tables() = make_tables(); }

const KeyTable& key_table(SchemaMap map) { return key_tables().at(static_cast<size_t>(map)); }

}  // namespace podsim
