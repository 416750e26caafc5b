#pragma once
// summary.json's fields, one row each: the one place a summary field is named. The rows drive
// the writer (summary_writer.hpp: key order is row order), what an `expect:` entry may name and
// how its value is read (sim/scenario/summary_field_names.hpp), compare's columns
// (sim/commands/compare.cpp) and docs/scenario-schema.md's field list (tests/test_summary_fields.cpp
// checks it both ways, and checks every shipped scenario's summary.json against the rows).
//
// Adding a field is one row below. The rows are a template over the getter type so that the
// scenario layer, which must not link the engine or the report (tests/CMakeLists.txt), can read
// the names without compiling a getter: there Getter is NamesOnly, which ignores the lambda;
// the writer instantiates them as std::function over SummaryInputs (summary_writer.hpp). A
// getter's body only touches its argument `in` (or summary_parts helpers taking it), so it is
// compiled only where the writer is.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace podsim {

// Which workloads write a field (and which may expect it): a bit set.
using SummaryWorkloads = std::uint8_t;
constexpr SummaryWorkloads kCollectivesSummary = 1, kTrainingSummary = 2, kInferenceSummary = 4,
                           kServingSummary = 8;
constexpr SummaryWorkloads kStepSummaries = kCollectivesSummary | kTrainingSummary | kInferenceSummary;
constexpr SummaryWorkloads kEverySummary = kStepSummaries | kServingSummary;

// The figures compare shows beside the headline time (compare.cpp): the rows marked with one
// fill it, and name its compare.csv column.
enum CompareColumn : std::uint8_t { kNoCompareColumn = 0, kCompareExposedComm, kCompareMfu, kCompareTokens };

// A row. `name` is a dotted path; a `<placeholder>` stands for keys the run chooses (axes,
// categories, blocks, statistics, operations): the getter then returns the whole object
// (or list) at the path before the first placeholder. `unit` says how an expectation's value
// is read: "s" a time, "bytes" a size, "bool" true or false, "by suffix" by the name's last
// part (design.md, habit 2), anything else a plain number. A getter returning absent() writes
// nothing (the field is conditional: its doc says when).
template <class Getter>
struct SummaryFieldRow {
  std::string_view name;
  std::string_view unit;
  SummaryWorkloads written;   // the workloads whose summary has it
  SummaryWorkloads expect;    // the workloads whose `expect:` may name it (numbers only)
  std::string_view doc;
  Getter get;
  CompareColumn compare = kNoCompareColumn;
};

// The scenario layer's getter: the names, units and docs, no code.
struct NamesOnly {
  template <class Lambda>
  NamesOnly(const Lambda&) {}
};

struct SummaryInputs;   // summary_writer.hpp: the run, its reports and the options
struct Distribution;    // quantiles.hpp

// The value of a field a run does not have.
inline nlohmann::ordered_json absent() { return nlohmann::ordered_json(nlohmann::ordered_json::value_t::discarded); }
template <class T>
nlohmann::ordered_json present_if(bool present, const T& value) {
  return present ? nlohmann::ordered_json(value) : absent();
}
template <class Map>
nlohmann::ordered_json object_of(const Map& values) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& [key, value] : values) out[key] = value;
  return out;
}

// The parts of a summary longer than a line (report.cpp, serving_report.cpp).
namespace summary_parts {
using Json = nlohmann::ordered_json;
std::string podsim_version(const SummaryInputs& in);   // PODSIM_VERSION: the report's build defines it
Json symmetry(const SummaryInputs& in);
Json step_topology(const SummaryInputs& in);
Json training_workload(const SummaryInputs& in);
Json per_layer(const SummaryInputs& in);
Json chip_views(const SummaryInputs& in);
Json inference_workload(const SummaryInputs& in);
Json operations(const SummaryInputs& in);
Json serving_topology(const SummaryInputs& in);
Json serving_workload(const SummaryInputs& in);
bool serving_disaggregated(const SummaryInputs& in);
double serving_kv_cache_bytes_per_token(const SummaryInputs& in);
Json serving_slo(const SummaryInputs& in);
Json distribution(const Distribution& d);
Json busy_fraction(const SummaryInputs& in, bool prefill);
bool serving_mixed(const SummaryInputs& in);
bool serving_speculative(const SummaryInputs& in);
bool serving_swaps(const SummaryInputs& in);
bool serving_draft_model(const SummaryInputs& in);
Json serving_trace(const SummaryInputs& in);
Json step_costs(const SummaryInputs& in);
Json prediction_error(const SummaryInputs& in);
Json prediction_interval(const SummaryInputs& in);
}  // namespace summary_parts

// The rows, in storage a test may extend (ScopedSummaryField, summary_writer.hpp); everything
// else reads them through summary_field_rows().
template <class Getter>
std::vector<SummaryFieldRow<Getter>>& summary_field_storage() {
  using Json = nlohmann::ordered_json;
  namespace p = summary_parts;
  constexpr SummaryWorkloads C = kCollectivesSummary, T = kTrainingSummary, I = kInferenceSummary,
                             S = kServingSummary, Run = kStepSummaries, All = kEverySummary, None = 0;
  // In the order the writer writes them; a name written by several workloads in different
  // places, or meaning different things, has a row per place. (A table, not logic: this
  // function is as long as its rows.)
  static std::vector<SummaryFieldRow<Getter>> rows = {
    // Every summary starts with these.
    {"podsim_version", "text", All, None, "the podsim that wrote it", [](const auto& in) -> Json { return p::podsim_version(in); }},
    {"scenario", "text", All, None, "the scenario's name", [](const auto& in) -> Json { return in.scenario.name; }},
    {"scenario_file", "text", All, None, "its file", [](const auto& in) -> Json { return in.scenario.path; }},
    {"hop_model", "text", All, None, "simulation.hop_model", [](const auto& in) -> Json { return std::string(to_string(in.scenario.hop_model)); }},
    {"link_efficiency", "fraction", All, None, "fraction of peak ICI/DCN bandwidth a transfer achieves (simulation.link_efficiency)", [](const auto& in) -> Json { return in.scenario.link_efficiency; }},
    {"launch_overhead_s", "s", All, None, "fixed cost per collective per chip before its first hop (simulation.launch_overhead)", [](const auto& in) -> Json { return in.scenario.launch_overhead_s; }},
    {"hop_latency_s", "s", All, None, "the chip's per-hop latency (its preset, overrides or profile)", [](const auto& in) -> Json { return in.scenario.topology.chip.hop_latency_s; }},
    {"calibration_profile", "text", All, None, "the calibration profile the run used: hardware.profile's, else the preset's built-in one (ideal: the book's machine)", [](const auto& in) -> Json { return in.scenario.profile; }},
    {"prediction_error", "object", All, None, "the error the profile states for its predictions, every kind of figure pooled over its dense rows (every row for a run of an MoE model; docs/calibration.md, \"Prediction intervals\"): rows (the fit's rows whose left-out errors it is over, and its checks), checks (of rows: the profile's fit.checks, rows of no fit), sole_evidence (rows left out of it, each the sole evidence for a parameter), rms_log_error (sqrt of the mean ln(measured / left out)^2), degrees_of_freedom; absent when the profile states none (the ideal machine, a fit without leave-one-out)", [](const auto& in) -> Json { return p::prediction_error(in); }},
    {"prediction_interval.<quantity>.<bound>", "object", All, None, "each headline figure's interval at 80% and 95% (bounds low_80, high_80, low_95, high_95; quantities: total_time_s of collectives; step_time_s, mfu, tokens_per_s_per_chip of training; decode_step_time_s or prefill_time_s and tokens_per_s of inference; ttft_s_mean, tpot_s_mean, output_token_throughput_per_s of serving): the prediction times exp(-+ t rms_log_error), t Student's with degrees_of_freedom; beside the bounds, kind (the figure's kind, ttft say, or moe_step for a step of an MoE model, where the profile has two rows or checks of it, whose errors it then takes; else pooled: prediction_error's; an MFU's high bound at most 1), rms_log_error and degrees_of_freedom; absent with prediction_error", [](const auto& in) -> Json { return p::prediction_interval(in); }},
    // A simulated step or set of collectives.
    {"fidelity", "text", Run, None, "what was simulated: the full pod or a symmetry-reduced one", [](const auto& in) -> Json { return in.run->fidelity; }},
    {"simulated_chips", "count", Run, None, "chips the replay simulated", [](const auto& in) -> Json { return in.run->simulated.chip_count(); }},
    {"engine", "text", Run, None, "which replay ran it: native (podsim's own event loop) or simgrid (SimGrid's actors); both follow the same rules", [](const auto& in) -> Json { return in.run->engine; }},
    {"symmetry", "list", Run, None, "per axis (and slices): real and simulated size, period, and the reason the reduction is exact", [](const auto& in) -> Json { return p::symmetry(in); }},
    {"simulated_messages", "count", Run, None, "messages the replay sent", [](const auto& in) -> Json { return in.run->replay.messages; }},
    {"total_time_s", "s", Run, Run, "simulated time from the first op's start to the last op's end", [](const auto& in) -> Json { return in.run->total_time_s; }},
    {"wall_time_s", "s", Run, None, "the simulation's own wall time (0 with --reproducible)", [](const auto& in) -> Json { return in.options.reproducible ? 0.0 : in.run->wall_time_s; }},
    {"topology", "object", Run, None, "chip, axes (name, size, wraparound), slices, chips, hosts, diameter_hops, bisection_links, link bandwidths and latency, perturbations", [](const auto& in) -> Json { return p::step_topology(in); }},
    // A training step.
    {"workload", "object", T, None, "model, strategy, global_batch_tokens, sequence_length, microbatches, matmul_efficiency", [](const auto& in) -> Json { return p::training_workload(in); }},
    {"step_time_s", "s", T, T, "the simulated training step", [](const auto& in) -> Json { return in.training->step_time_s; }},
    {"mfu", "fraction", T, T, "model FLOPs utilisation", [](const auto& in) -> Json { return in.training->mfu; }, kCompareMfu},
    {"hfu", "fraction", T, T, "hardware FLOPs utilisation (recomputation included)", [](const auto& in) -> Json { return in.training->hfu; }},
    {"recompute_flops", "FLOP", T, T, "FLOPs spent recomputing activations", [](const auto& in) -> Json { return in.training->recompute_flops; }},
    {"steps_to_train", "count", T, T, "steps over workload.token_budget (with a budget)", [](const auto& in) -> Json { return present_if(in.training->steps_to_train > 0, in.training->steps_to_train); }},
    {"time_to_train_s", "s", T, T, "steps_to_train x the step (with a budget)", [](const auto& in) -> Json { return present_if(in.training->steps_to_train > 0, in.training->time_to_train_s); }},
    {"time_to_train_days", "days", T, None, "time_to_train_s in days (with a budget)", [](const auto& in) -> Json { return present_if(in.training->steps_to_train > 0, in.training->time_to_train_s / 86400); }},
    {"training_cost_usd", "USD", T, T, "chips x hours x the chip-hour price (with a budget and a price)", [](const auto& in) -> Json { return present_if(in.training->steps_to_train > 0 && in.training->training_cost_usd > 0, in.training->training_cost_usd); }},
    {"chip_hour_price_usd", "USD/h", T, None, "the price behind training_cost_usd", [](const auto& in) -> Json { return present_if(in.training->steps_to_train > 0 && in.training->training_cost_usd > 0, in.scenario.topology.chip.chip_hour_price_usd); }},
    {"chip_hour_price_source", "text", T, None, "where that price comes from", [](const auto& in) -> Json { return present_if(in.training->steps_to_train > 0 && in.training->training_cost_usd > 0, in.scenario.topology.chip.chip_hour_price_source); }},
    {"tokens_per_s_per_chip", "tokens/s/chip", T, T, "tokens trained per second per chip", [](const auto& in) -> Json { return in.training->tokens_per_s_per_chip; }, kCompareTokens},
    {"tflops_per_s_per_chip", "TFLOP/s/chip", T, None, "model TFLOP/s per chip", [](const auto& in) -> Json { return in.training->tflops_per_s_per_chip; }},
    {"parameters", "count", T, T, "the model's parameters", [](const auto& in) -> Json { return in.training->parameters; }},
    {"breakdown_chip", "text", T, None, "the chip compute_time_s, exposed_comm_s and wait_for_peers_s describe: the critical chip (chip_views has chip 0 and the slowest too)", [](const auto& in) -> Json { return in.run->topology.chip_name(in.training->breakdown_chip); }},
    {"compute_time_s", "s", T, T, "the breakdown chip's compute in the step", [](const auto& in) -> Json { return in.training->compute_time_s; }},
    {"exposed_comm_s", "s", T, T, "the breakdown chip's communication not hidden behind compute, late peers left out (compute + exposed + wait for peers = the step)", [](const auto& in) -> Json { return in.training->exposed_comm_s; }, kCompareExposedComm},
    {"exposed_comm_by_axis_s.<axis>", "s", T, T, "exposed communication by mesh axis", [](const auto& in) -> Json { return object_of(in.training->exposed_comm_by_axis_s); }},
    {"exposed_comm_by_category_s.<category>", "s", T, T, "exposed communication by op category", [](const auto& in) -> Json { return object_of(in.training->exposed_comm_by_category_s); }},
    {"wait_for_peers_s", "s", T, T, "the breakdown chip's time blocked in collectives for peers that entered them late (a slow chip, or one it held up), and after its own last op for the step's last chip", [](const auto& in) -> Json { return in.training->wait_for_peers_s; }},
    {"wait_for_peers_by_axis_s.<axis>", "s", T, T, "wait_for_peers_s by the axes of the collectives it waited in (step_end: after the chip's last op)", [](const auto& in) -> Json { return object_of(in.training->wait_for_peers_by_axis_s); }},
    {"wait_for_peers_by_category_s.<category>", "s", T, T, "wait_for_peers_s by the categories of the collectives it waited in (step_end: after the chip's last op)", [](const auto& in) -> Json { return object_of(in.training->wait_for_peers_by_category_s); }},
    {"chip_views", "list", T, None, "the same breakdown for chip 0, the slowest chip (most compute) and the critical chip (most compute on the path the step's end waited along): view, chip, compute_time_s, exposed_comm_s, wait_for_peers_s and their splits", [](const auto& in) -> Json { return p::chip_views(in); }},
    {"moe.expert_parallelism", "count", T, None, "MoE models: chips an expert layer spans", [](const auto& in) -> Json { return present_if(in.training->moe, in.training->moe_stats.expert_degree); }},
    {"moe.experts_per_chip", "count", T, None, "MoE models: experts each chip holds", [](const auto& in) -> Json { return present_if(in.training->moe, in.training->moe_stats.experts_per_chip); }},
    {"moe.moe_layers", "count", T, None, "MoE models: layers with experts", [](const auto& in) -> Json { return present_if(in.training->moe, in.training->moe_stats.moe_layers); }},
    {"moe.all_to_all_time_s", "s", T, T, "MoE models: AllToAll time in the step", [](const auto& in) -> Json { return present_if(in.training->moe, in.training->all_to_all_time_s); }},
    {"moe.exposed_all_to_all_s", "s", T, T, "MoE models: AllToAll time not hidden", [](const auto& in) -> Json { return present_if(in.training->moe, in.training->exposed_all_to_all_s); }},
    {"moe.dispatch_bytes_per_chip", "bytes/chip", T, T, "MoE models: bytes each chip dispatches", [](const auto& in) -> Json { return present_if(in.training->moe, in.training->moe_stats.dispatch_bytes_per_chip); }},
    {"moe.dropped_fraction", "fraction", T, T, "MoE models: tokens dropped at expert capacity", [](const auto& in) -> Json { return present_if(in.training->moe, in.training->moe_stats.dropped_fraction); }},
    {"moe.busiest_expert_over_mean", "ratio", T, T, "MoE models: the busiest expert's load over the mean", [](const auto& in) -> Json { return present_if(in.training->moe, in.training->moe_stats.busiest_expert_over_mean); }},
    {"moe.busiest_chip_over_mean", "ratio", T, T, "MoE models: the busiest chip's load over the mean", [](const auto& in) -> Json { return present_if(in.training->moe, in.training->moe_stats.busiest_chip_over_mean); }},
    {"moe.max_busiest_chip_over_mean", "ratio", T, T, "MoE models: the worst layer's busiest_chip_over_mean", [](const auto& in) -> Json { return present_if(in.training->moe, in.training->moe_stats.max_busiest_chip_over_mean); }},
    {"moe.expert_compute_mean_s", "s", T, T, "MoE models: expert compute of the mean chip", [](const auto& in) -> Json { return present_if(in.training->moe, in.training->moe_stats.expert_compute_mean_s); }},
    {"moe.expert_compute_busiest_s", "s", T, T, "MoE models: expert compute of the busiest chip", [](const auto& in) -> Json { return present_if(in.training->moe, in.training->moe_stats.expert_compute_busiest_s); }},
    {"moe.busiest_extra_s", "s", T, T, "MoE models: busiest minus mean expert compute", [](const auto& in) -> Json { return present_if(in.training->moe, in.training->moe_stats.expert_compute_busiest_s - in.training->moe_stats.expert_compute_mean_s); }},
    {"total_flops", "FLOP", T, T, "model FLOPs of the step, all chips", [](const auto& in) -> Json { return in.training->total_flops; }},
    {"pipeline_bubble_fraction", "fraction", T, T, "the first stage's span spent waiting on other stages", [](const auto& in) -> Json { return in.training->pipeline_bubble_fraction; }},
    {"memory_per_chip_bytes", "bytes", T, T, "the memory breakdown's sum", [](const auto& in) -> Json { return in.training->memory.total_bytes; }},
    {"memory_peak_bytes", "bytes", T, T, "the most chip 0 holds at once on the timeline", [](const auto& in) -> Json { return in.training->memory_peak_bytes; }},
    {"memory_peak_at_s", "s", T, None, "when that peak is reached", [](const auto& in) -> Json { return in.training->memory_peak_at_s; }},
    {"memory_breakdown_bytes.params", "bytes", T, T, "parameters per chip", [](const auto& in) -> Json { return in.training->memory.params_bytes; }},
    {"memory_breakdown_bytes.grads", "bytes", T, T, "gradients per chip", [](const auto& in) -> Json { return in.training->memory.grads_bytes; }},
    {"memory_breakdown_bytes.optimizer", "bytes", T, T, "optimizer state per chip", [](const auto& in) -> Json { return in.training->memory.optimizer_bytes; }},
    {"memory_breakdown_bytes.activations", "bytes", T, T, "activations kept for the backward pass", [](const auto& in) -> Json { return in.training->memory.activations_bytes; }},
    {"memory_breakdown_bytes.logits", "bytes", T, T, "the logits", [](const auto& in) -> Json { return in.training->memory.logits_bytes; }},
    {"memory_breakdown_bytes.gathered_weights", "bytes", T, T, "FSDP-gathered weights in flight", [](const auto& in) -> Json { return in.training->memory.gathered_weights_bytes; }},
    {"memory_breakdown_bytes.unreduced_gradients", "bytes", T, T, "MoE models under FSDP of the experts: one layer's expert gradients before their ReduceScatter", [](const auto& in) -> Json { return in.training->memory.unreduced_gradients_bytes; }},
    {"moe.serial_expert_gathers", "bool", T, None, "MoE models under FSDP of the experts: each layer's expert gather waits for the previous layer's experts (prefetching does not fit HBM)", [](const auto& in) -> Json { return present_if(in.training->moe, in.training->moe_stats.serial_expert_gathers); }},
    {"memory_breakdown_bytes.ring_blocks", "bytes", T, T, "context-parallel ring blocks in flight", [](const auto& in) -> Json { return in.training->memory.ring_blocks_bytes; }},
    {"hbm_bytes", "bytes", T, None, "the chip's HBM", [](const auto& in) -> Json { return in.scenario.topology.chip.hbm_bytes; }},
    {"fits_hbm", "bool", T, T, "whether memory_per_chip_bytes fits in HBM", [](const auto& in) -> Json { return in.training->fits_hbm; }},
    {"per_layer.<block>.<metric>", "s", T, T, "one layer's T_math and T_comms by block (attn, mlp): t_math_s, t_comms_s, their _forward_ parts and the book's", [](const auto& in) -> Json { return p::per_layer(in); }},
    {"per_layer_index", "count", T, None, "the layer per_layer describes", [](const auto& in) -> Json { return in.scenario.training().model.layers / 2; }},
    // A decode step or a prefill.
    {"workload", "object", I, None, "model, phase, batch, context_length, weight_bytes, kv_bytes, model_parallelism, expert_parallelism", [](const auto& in) -> Json { return p::inference_workload(in); }},
    {"decode_step_time_s", "s", I, I, "the simulated decode step (phase decode)", [](const auto& in) -> Json { return present_if(in.inference->decode, in.inference->step_time_s); }},
    {"prefill_time_s", "s", I, I, "the simulated prefill (phase prefill)", [](const auto& in) -> Json { return present_if(!in.inference->decode, in.inference->step_time_s); }},
    {"compute_time_s", "s", I, I, "the rooflines of the step's compute", [](const auto& in) -> Json { return in.inference->compute_time_s; }},
    {"exposed_comm_s", "s", I, I, "collectives on the critical path, late peers left out", [](const auto& in) -> Json { return in.inference->exposed_comm_s; }, kCompareExposedComm},
    {"wait_for_peers_s", "s", I, I, "chip 0's time blocked in collectives for peers that entered them late (a slow chip)", [](const auto& in) -> Json { return in.inference->wait_for_peers_s; }},
    {"moe.expert_parallelism", "count", I, None, "MoE models: chips an expert layer spans", [](const auto& in) -> Json { return present_if(in.inference->moe, in.inference->layout.expert_degree); }},
    {"moe.expert_compute_mean_s", "s", I, I, "MoE models: expert compute of the mean chip", [](const auto& in) -> Json { return present_if(in.inference->moe, in.inference->expert_compute_mean_s); }},
    {"moe.expert_compute_busiest_s", "s", I, I, "MoE models: expert compute of the busiest chip", [](const auto& in) -> Json { return present_if(in.inference->moe, in.inference->expert_compute_busiest_s); }},
    {"moe.all_to_all_time_s", "s", I, I, "MoE models: AllToAll time in the step", [](const auto& in) -> Json { return present_if(in.inference->moe, in.inference->all_to_all_time_s); }},
    {"moe.dispatch_bytes_per_chip", "bytes/chip", I, I, "MoE models: bytes each chip dispatches", [](const auto& in) -> Json { return present_if(in.inference->moe, in.inference->dispatch_bytes_per_chip); }},
    {"rule_of_thumb_s", "s", I, I, "the book's estimate of the step", [](const auto& in) -> Json { return in.inference->layout.rule_of_thumb_s; }},
    {"tokens_per_s", "tokens/s", I, I, "tokens produced per second (decode: generated; prefill: prompt)", [](const auto& in) -> Json { return in.inference->tokens_per_s; }},
    {"tokens_per_s_per_chip", "tokens/s/chip", I, I, "tokens_per_s per chip", [](const auto& in) -> Json { return in.inference->tokens_per_s_per_chip; }, kCompareTokens},
    {"cost_per_million_tokens_usd", "USD", I, I, "every chip's hour over the tokens it produced (with a price)", [](const auto& in) -> Json { return present_if(in.scenario.topology.chip.chip_hour_price_usd > 0 && in.inference->tokens_per_s_per_chip > 0, in.scenario.topology.chip.chip_hour_price_usd / 3600 / in.inference->tokens_per_s_per_chip * 1e6); }},
    {"chip_hour_price_usd", "USD/h", I, None, "the price behind cost_per_million_tokens_usd", [](const auto& in) -> Json { return present_if(in.scenario.topology.chip.chip_hour_price_usd > 0 && in.inference->tokens_per_s_per_chip > 0, in.scenario.topology.chip.chip_hour_price_usd); }},
    {"chip_hour_price_source", "text", I, None, "where that price comes from", [](const auto& in) -> Json { return present_if(in.scenario.topology.chip.chip_hour_price_usd > 0 && in.inference->tokens_per_s_per_chip > 0, in.scenario.topology.chip.chip_hour_price_source); }},
    {"kv_cache_bytes_per_token", "bytes/token", I, I, "the KV cache one token takes", [](const auto& in) -> Json { return in.inference->layout.kv_cache_bytes_per_token; }},
    {"max_batch", "count", I, I, "the largest batch whose caches fit", [](const auto& in) -> Json { return in.inference->layout.max_batch; }},
    {"smallest_slice_chips", "count", I, I, "the smallest power-of-two slice holding the weights (0: none up to 8192)", [](const auto& in) -> Json { return in.inference->layout.smallest_slice_chips; }},
    {"smallest_slice_kv_caches", "count", I, I, "the caches that slice has room for", [](const auto& in) -> Json { return in.inference->layout.smallest_slice_kv_caches; }},
    {"memory_per_chip_bytes", "bytes", I, I, "weights and caches per chip", [](const auto& in) -> Json { return in.inference->layout.memory_per_chip_bytes; }},
    {"hbm_bytes", "bytes", I, None, "the chip's HBM", [](const auto& in) -> Json { return in.scenario.topology.chip.hbm_bytes; }},
    {"fits_hbm", "bool", I, I, "whether memory_per_chip_bytes fits in HBM", [](const auto& in) -> Json { return in.inference->layout.fits_hbm; }},
    // Every step summary ends with its operations.
    {"operations.<name>.<field>", "by suffix", Run, C, "each op: name, kind, category, layer, repeat, time_s, start_s, end_s, present_on_chips (ops that run on some pipeline stages only); collectives also axes, dcn, bytes, size_bytes, group_size, hops, algbw_Bps, busbw_Bps, analytic_s, rel_error, regime, formula, formula_source", [](const auto& in) -> Json { return p::operations(in); }},
    // A serving run.
    {"wall_time_s", "s", S, None, "the simulation's own wall time (0 with --reproducible)", [](const auto& in) -> Json { return in.options.reproducible ? 0.0 : in.serving->wall_time_s; }},
    {"topology", "object", S, None, "a server's slice: chip, axes, chips, diameter_hops, bisection_links", [](const auto& in) -> Json { return p::serving_topology(in); }},
    {"workload", "object", S, None, "model, policy, numerics, prompt_buckets, prefill_batch, requests_source (`poisson`, `random`, or the trace's or length table's path), max_context_tokens, hbm_slots, metric_percentiles (and max_concurrency; host_overhead_per_step_s and host_overhead_per_sequence_s when given; max_num_batched_tokens, max_num_seqs, max_model_len when given, async_scheduling, router, preemption, swap_blocks and speculative under policy mixed; prefill_topology)", [](const auto& in) -> Json { return p::serving_workload(in); }},
    {"servers", "count", S, S, "generate servers (model replicas)", [](const auto& in) -> Json { return in.scenario.serving().config.servers; }},
    {"prefill_servers", "count", S, S, "prefill servers (disaggregated)", [](const auto& in) -> Json { return in.scenario.serving().config.prefill_servers; }},
    {"replicas_per_slice", "count", S, None, "model replicas a slice holds", [](const auto& in) -> Json { return in.scenario.serving().replicas_per_slice; }},
    {"prefill_replicas_per_slice", "count", S, None, "the same for prefill slices (disaggregated)", [](const auto& in) -> Json { return present_if(p::serving_disaggregated(in), in.scenario.serving().prefill_replicas_per_slice); }},
    {"chips", "count", S, None, "every server's chips", [](const auto& in) -> Json { return in.serving->total_chips; }},
    {"requests", "count", S, S, "requests served", [](const auto& in) -> Json { return in.serving->totals.request_count; }},
    {"total_time_s", "s", S, S, "when the last request finished", [](const auto& in) -> Json { return in.serving->totals.end_s; }},
    {"max_batch", "count", S, S, "slots per server", [](const auto& in) -> Json { return in.scenario.serving().config.slots; }},
    {"kv_cache_bytes_per_token", "bytes/token", S, S, "the KV cache one token takes", [](const auto& in) -> Json { return p::serving_kv_cache_bytes_per_token(in); }},
    // Policy mixed runs no prefill step: a prompt's chunks share a step's pass over the weights
    // with the decoding sequences, and a step's time has no prompt share of its own.
    {"prefill_time_s", "s", S, S, "the mean prefill step as simulated (not under policy mixed, whose prompts share mixed steps with decodes)", [](const auto& in) -> Json { return present_if(!p::serving_mixed(in), in.serving->stats.prefill_step.mean); }},
    {"decode_step_time_s", "s", S, S, "the mean decode step as simulated (policy mixed: of its steps that decode only, no prompt chunk in them; absent if none did)", [](const auto& in) -> Json { return present_if(!p::serving_mixed(in) || in.serving->stats.decode_step.count > 0, in.serving->stats.decode_step.mean); }},
    {"mixed_step_time_s", "s", S, S, "the mean mixed step as simulated (policy mixed)", [](const auto& in) -> Json { return present_if(p::serving_mixed(in), in.serving->stats.mixed_step.mean); }},
    {"mixed_steps", "count", S, None, "mixed steps run (policy mixed)", [](const auto& in) -> Json { return present_if(p::serving_mixed(in), in.serving->totals.mixed_steps); }},
    {"preemptions", "count", S, S, "running sequences returned to the queue for want of KV blocks, recomputed when readmitted (policy mixed)", [](const auto& in) -> Json { return present_if(p::serving_mixed(in), in.serving->totals.preemptions); }},
    {"swap_preemptions", "count", S, S, "preemptions that swapped the sequence's cache to host memory rather than recompute it (preemption: swap)", [](const auto& in) -> Json { return present_if(p::serving_swaps(in), in.serving->totals.swap_outs); }},
    {"kv_swap_time_s", "s", S, S, "seconds the copies to and from host memory added to steps, all servers (preemption: swap)", [](const auto& in) -> Json { return present_if(p::serving_swaps(in), in.serving->totals.swap_s); }},
    {"kv_cache_blocks", "count", S, S, "KV cache blocks a server holds (policy mixed)", [](const auto& in) -> Json { return present_if(p::serving_mixed(in), in.serving->totals.kv_blocks); }},
    {"kv_cache_block_tokens", "tokens", S, None, "tokens a block holds (policy mixed)", [](const auto& in) -> Json { return present_if(p::serving_mixed(in), in.scenario.serving().config.block_size); }},
    {"kv_cache_peak_usage", "fraction", S, S, "the most blocks any server held at once, over its blocks (policy mixed)", [](const auto& in) -> Json { return present_if(p::serving_mixed(in), static_cast<double>(in.serving->totals.peak_kv_blocks_used) / static_cast<double>(std::max(1LL, in.serving->totals.kv_blocks))); }},
    {"kv_cache_mean_usage", "fraction", S, S, "blocks in use, time-averaged over the run and the servers, over a server's blocks (policy mixed)", [](const auto& in) -> Json { return present_if(p::serving_mixed(in), in.serving->totals.mean_kv_blocks_used / static_cast<double>(std::max(1LL, in.serving->totals.kv_blocks))); }},
    {"prefix_cache_hit_rate", "fraction", S, S, "prompt tokens found in the prefix cache over those looked up, every request's and readmissions' (policy mixed, with prefix caching)", [](const auto& in) -> Json { return present_if(p::serving_mixed(in) && in.serving->totals.prefix_query_tokens > 0, in.serving->totals.prefix_hit_tokens / std::max(1.0, in.serving->totals.prefix_query_tokens)); }},
    {"spec_decode_num_drafts", "count", S, None, "sequence-steps that verified draft tokens (speculative decoding; vLLM's metric name)", [](const auto& in) -> Json { return present_if(p::serving_speculative(in), in.serving->totals.spec_drafts); }},
    {"spec_decode_num_draft_tokens", "count", S, None, "draft tokens verified (speculative decoding)", [](const auto& in) -> Json { return present_if(p::serving_speculative(in), in.serving->totals.spec_draft_tokens); }},
    {"spec_decode_num_accepted_tokens", "count", S, S, "draft tokens accepted (speculative decoding)", [](const auto& in) -> Json { return present_if(p::serving_speculative(in), in.serving->totals.spec_accepted_tokens); }},
    {"spec_decode_acceptance_rate", "fraction", S, S, "accepted over verified draft tokens (speculative decoding; benchmark_serving's acceptance rate)", [](const auto& in) -> Json { return present_if(p::serving_speculative(in), static_cast<double>(in.serving->totals.spec_accepted_tokens) / static_cast<double>(std::max(1LL, in.serving->totals.spec_draft_tokens))); }},
    {"spec_decode_mean_acceptance_length", "tokens", S, S, "tokens a verifying step emits for a sequence, 1 + accepted over drafts (speculative decoding; benchmark_serving's mean acceptance length)", [](const auto& in) -> Json { return present_if(p::serving_speculative(in), 1.0 + static_cast<double>(in.serving->totals.spec_accepted_tokens) / static_cast<double>(std::max(1LL, in.serving->totals.spec_drafts))); }},
    {"spec_decode_draft_time_s", "s", S, S, "seconds the draft model's passes added to steps, all servers (speculative decoding, method draft_model)", [](const auto& in) -> Json { return present_if(p::serving_draft_model(in), in.serving->totals.spec_draft_s); }},
    {"prefill_steps", "count", S, None, "prefill steps run", [](const auto& in) -> Json { return in.serving->totals.prefill_steps; }},
    {"decode_steps", "count", S, None, "decode steps run", [](const auto& in) -> Json { return in.serving->totals.decode_steps; }},
    {"requests_per_s", "1/s", S, S, "requests finished per second", [](const auto& in) -> Json { return in.serving->stats.requests_per_s; }},
    {"tokens_per_s", "tokens/s", S, S, "output tokens per second", [](const auto& in) -> Json { return in.serving->stats.tokens_per_s; }},
    {"tokens_per_s_per_chip", "tokens/s/chip", S, S, "tokens_per_s per chip", [](const auto& in) -> Json { return in.serving->stats.tokens_per_s_per_chip; }, kCompareTokens},
    {"total_input_tokens", "count", S, S, "prompt tokens (vLLM benchmark_serving's name)", [](const auto& in) -> Json { return in.serving->stats.total_input_tokens; }},
    {"total_output_tokens", "count", S, S, "generated tokens", [](const auto& in) -> Json { return in.serving->stats.total_output_tokens; }},
    {"request_throughput_per_s", "1/s", S, S, "requests_per_s under vLLM's name", [](const auto& in) -> Json { return in.serving->stats.requests_per_s; }},
    {"output_token_throughput_per_s", "tokens/s", S, S, "tokens_per_s under vLLM's name", [](const auto& in) -> Json { return in.serving->stats.tokens_per_s; }},
    {"total_token_throughput_per_s", "tokens/s", S, S, "prompt and output tokens per second", [](const auto& in) -> Json { return in.serving->stats.total_tokens_per_s; }},
    {"cost_per_million_output_tokens_usd", "USD", S, S, "every chip's hours over the output tokens (with a price)", [](const auto& in) -> Json { return present_if(in.scenario.topology.chip.chip_hour_price_usd > 0 && in.serving->stats.tokens_per_s > 0, in.serving->total_chips * in.scenario.topology.chip.chip_hour_price_usd / 3600 / in.serving->stats.tokens_per_s * 1e6); }},
    {"chip_hour_price_usd", "USD/h", S, None, "the price behind cost_per_million_output_tokens_usd", [](const auto& in) -> Json { return present_if(in.scenario.topology.chip.chip_hour_price_usd > 0 && in.serving->stats.tokens_per_s > 0, in.scenario.topology.chip.chip_hour_price_usd); }},
    {"chip_hour_price_source", "text", S, None, "where that price comes from", [](const auto& in) -> Json { return present_if(in.scenario.topology.chip.chip_hour_price_usd > 0 && in.serving->stats.tokens_per_s > 0, in.scenario.topology.chip.chip_hour_price_source); }},
    {"slo", "object", S, None, "the SLO's bounds (ttft_s, tpot_s, latency_s) when one is given", [](const auto& in) -> Json { return p::serving_slo(in); }},
    {"goodput_requests_per_s", "1/s", S, S, "requests meeting every SLO bound per second (with an SLO)", [](const auto& in) -> Json { return present_if(in.scenario.serving().slo.given(), in.serving->stats.goodput_requests_per_s); }},
    {"slo_attainment", "fraction", S, S, "their share of the requests (with an SLO)", [](const auto& in) -> Json { return present_if(in.scenario.serving().slo.given(), in.serving->stats.slo_attainment); }},
    {"ttft_s.<statistic>", "s", S, S, "time to first token: mean, std, median, the percentiles asked for, max (and count, exact)", [](const auto& in) -> Json { return p::distribution(in.serving->stats.ttft); }},
    {"tpot_s.<statistic>", "s", S, S, "time per output token, the same statistics", [](const auto& in) -> Json { return p::distribution(in.serving->stats.tpot); }},
    {"itl_s.<statistic>", "s", S, S, "inter-token latency, the same statistics", [](const auto& in) -> Json { return p::distribution(in.serving->stats.itl); }},
    {"latency_s.<statistic>", "s", S, S, "request latency, the same statistics", [](const auto& in) -> Json { return p::distribution(in.serving->stats.latency); }},
    {"per_token_latency_s.<statistic>", "s", S, S, "latency over output tokens, the same statistics", [](const auto& in) -> Json { return p::distribution(in.serving->stats.per_token_latency); }},
    {"queueing_s.<statistic>", "s", S, S, "arrival to first scheduling, the same statistics", [](const auto& in) -> Json { return p::distribution(in.serving->stats.queueing); }},
    {"decode_busy_fraction", "fraction", S, None, "generate servers' busy share of the run", [](const auto& in) -> Json { return p::busy_fraction(in, false); }},
    {"prefill_busy_fraction", "fraction", S, None, "prefill servers' busy share of the run", [](const auto& in) -> Json { return p::busy_fraction(in, true); }},
    {"peak_requests_in_memory", "count", S, None, "records the run held at once", [](const auto& in) -> Json { return in.serving->totals.peak_records_held; }},
    {"trace", "object", S, None, "with a trace: events written, complete, and until_s when it stopped at its cap", [](const auto& in) -> Json { return p::serving_trace(in); }},
    {"step_costs", "object", S, None, "how steps were priced: priced_by, steps replayed at their own context or shape (decode_steps_replayed_at_own_context, or under policy mixed mixed_steps_replayed_at_own_shape, and draft_model_steps_replayed_at_own_shape with a draft model), collectives replayed, shapes; with perturbations, perturbed_servers and perturbed_server_steps_replayed (each of their steps replayed at its own shape)", [](const auto& in) -> Json { return p::step_costs(in); }},
  };
  return rows;
}

template <class Getter>
const std::vector<SummaryFieldRow<Getter>>& summary_field_rows() {
  return summary_field_storage<Getter>();
}

}  // namespace podsim
