#include "sim/commands/memory_fit.hpp"

#include <algorithm>
#include <cmath>

#include "sim/report/report.hpp"
#include "sim/scenario/units.hpp"

namespace podsim {
namespace {

// "bad.yaml: llama 13b on v5p-8: ", the run's name before its memory.
std::string run_named(const Scenario& scenario) {
  return scenario.path + ": " + (scenario.name.empty() ? std::string() : scenario.name + ": ");
}

// "89.41 GiB HBM less 5% headroom (84.94 GiB)": the limit and what is left of it.
std::string limit_text(const ChipSpec& chip) {
  const std::string hbm = human_hbm(chip.hbm_bytes, chip.hbm_headroom);
  return chip.hbm_headroom > 0 ? hbm + " (" + human_bytes(chip.usable_hbm_bytes()) + ")" : hbm;
}

const char* kAnyway = "; or simulate it anyway: podsim run --allow-oom, or workload.strict_memory: false";

// What would make a training plan fit, from what fills its HBM: sharded state where the weights'
// state is most of it, fewer saved activations where they are.
std::string training_changes(const TrainingPlan& plan, const MemoryBreakdown& m) {
  const double state = m.params_bytes + m.grads_bytes + m.optimizer_bytes;
  std::string out;
  if (!plan.fsdp && plan.zero_stage == 0)
    out += "parallelism.fsdp: true (or zero: 1 or 2) to shard the weights' state over the data axes, ";
  out += "more chips (a larger mesh, or parallelism.tensor or pipeline over more of it) to split the weights further";
  const double saved = m.activations_bytes + m.logits_bytes;
  std::string fewer = "checkpointing: block (or remat_policy: full) to save fewer activations, more "
                      "workload.microbatches, or a smaller batch_tokens";
  return saved > state ? fewer + "; or " + out : out + "; or " + fewer;
}

}  // namespace

std::string training_does_not_fit(const Scenario& scenario, const TrainingLayout& layout) {
  const MemoryBreakdown& m = layout.memory;
  return run_named(scenario) + "the " + layout.strategy + " plan does not fit HBM: it needs " +
         human_bytes(m.total_bytes) + " per chip, more than " + limit_text(scenario.topology.chip) + ": " +
         memory_breakdown_text(m) + ". To fit: " + training_changes(scenario.training().plan, m) + kAnyway;
}

std::string inference_does_not_fit(const Scenario& scenario, const InferenceLayout& layout) {
  const InferencePlan& plan = scenario.inference().plan;
  std::string changes;
  if (layout.max_batch > 0) changes += "workload.batch of at most " + std::to_string(layout.max_batch) + ", ";
  if (plan.kv_bytes > 1) changes += "kv_cache: int8, ";
  if (plan.weight_bytes > 1) changes += "weights: int8, ";
  changes += changes.empty() ? "more chips on parallelism.model" : "or more chips on parallelism.model";
  if (layout.smallest_slice_chips > 0)
    changes += " (the weights fit on " + std::to_string(layout.smallest_slice_chips) + " chips or more)";
  return run_named(scenario) + "a batch of " + std::to_string(plan.batch) + " does not fit HBM: it needs " +
         human_bytes(layout.memory_per_chip_bytes) + " per chip (weights and " +
         human_bytes(layout.kv_cache_bytes_per_token) + " of KV cache per token), more than " +
         limit_text(scenario.topology.chip) +
         (layout.max_batch > 0 ? "; " + std::to_string(layout.max_batch) + " sequences fit"
                               : std::string("; the weights alone do not")) +
         ". To fit: " + changes + kAnyway;
}

void check_training_fits(const Scenario& scenario, const TrainingLayout& layout, bool allow_oom) {
  if (layout.fits_hbm || allow_oom || !scenario.training().strict_memory) return;
  throw DoesNotFitHbm(training_does_not_fit(scenario, layout));
}

void check_inference_fits(const Scenario& scenario, const InferenceLayout& layout, bool allow_oom) {
  if (layout.fits_hbm || allow_oom || !scenario.inference().strict_memory) return;
  throw DoesNotFitHbm(inference_does_not_fit(scenario, layout));
}

}  // namespace podsim
