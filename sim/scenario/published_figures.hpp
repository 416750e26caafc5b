#pragma once
// Published figures as measurements (issue 26; docs/calibration.md): a training step given as
// tokens/s per chip or TFLOP/s per chip (in a named FLOP convention) is the step time it was
// computed from, which the simulation predicts as step_time_s:
//   tokens/s/chip: step = global batch tokens / chips / value;
//   TFLOP/s/chip:  step = the convention's FLOPs per chip per step / value.
// Both use the row's scenario's training workload (its model, batch and sequence length).
#include <string>

#include "sim/scenario/calibration_files.hpp"
#include "sim/scenario/scenario.hpp"

namespace podsim {

// The step time the figure implies for `scenario`. Throws InputError at the figure's key when
// the scenario is not a training one.
double published_step_time_s(const PublishedFigure& figure, const Scenario& scenario);

// The FLOPs one chip does per step as the convention counts them (throws InputError as above,
// and std::out_of_range for a convention no registry row has: load_measurements refuses those).
double convention_flops_per_chip(const std::string& convention, const Scenario& scenario, const SourceLocation& where);

// As published: "328 TFLOP/s/chip (maxtext-76bd53b)", "7138.9 tokens/s/chip".
std::string published_text(const PublishedFigure& figure);

// Fills m.measured with the step time of its published figure; nothing for a row without one.
void resolve_published_figure(Measurement& m, const Scenario& scenario);

}  // namespace podsim
