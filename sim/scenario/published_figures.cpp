#include "sim/scenario/published_figures.hpp"

#include <stdexcept>

#include "sim/scenario/units.hpp"
#include "workloads/flop_conventions.hpp"

namespace podsim {
namespace {

const TrainingWorkload& training_of(const Scenario& scenario, const SourceLocation& where, const std::string& key) {
  if (scenario.kind() != WorkloadKind::Training)
    throw InputError(where, key, scenario.path,
                     std::string("a ") + workload_kind_name(scenario.kind()) +
                         " scenario; expected a training scenario (the figure is converted to its step time)");
  return scenario.training();
}

// Chips the step runs on, as the training report divides by (all slices).
double chips_of(const Scenario& scenario) {
  return static_cast<double>(scenario.topology.slices) * scenario.topology.chips_per_slice();
}

}  // namespace

double convention_flops_per_chip(const std::string& convention, const Scenario& scenario, const SourceLocation& where) {
  const FlopConvention* row = find_flop_convention(convention);
  if (!row) throw std::out_of_range("no FLOP convention " + convention);
  const TrainingWorkload& w = training_of(scenario, where, "tflops_per_chip");
  const FlopCountInputs inputs{w.model, static_cast<double>(w.plan.sequence_length),
                               w.plan.global_batch_tokens / chips_of(scenario), w.plan.attention_flops};
  return row->flops_per_chip(inputs);
}

double published_step_time_s(const PublishedFigure& figure, const Scenario& scenario) {
  if (figure.kind == PublishedFigure::Kind::TokensPerSecondPerChip) {
    const TrainingWorkload& w = training_of(scenario, figure.where, "tokens_per_s_per_chip");
    return w.plan.global_batch_tokens / chips_of(scenario) / figure.value;
  }
  return convention_flops_per_chip(figure.convention, scenario, figure.where) / (figure.value * 1e12);
}

std::string published_text(const PublishedFigure& figure) {
  if (figure.kind == PublishedFigure::Kind::TokensPerSecondPerChip) return number_text(figure.value) + " tokens/s/chip";
  return number_text(figure.value) + " TFLOP/s/chip (" + figure.convention + ")";
}

void resolve_published_figure(Measurement& m, const Scenario& scenario) {
  if (m.published) m.measured = published_step_time_s(*m.published, scenario);
}

}  // namespace podsim
