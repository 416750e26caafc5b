#pragma once
// The two files of a calibration (issue 12; docs/calibration.md):
//  - a measurement file (YAML): what was measured, as a scenario plus overrides and the summary
//    field it corresponds to, the measured value and its source;
//  - a profile (YAML): fitted parameters that override a chip preset's ideal machine, applied
//    with `hardware: {preset: v5e, profile: FILE}`.
// Both readers report every problem as an InputError naming file, line, key and value.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "collectives/collective.hpp"
#include "sim/scenario/input_error.hpp"
#include "sim/scenario/prediction_error.hpp"
#include "sim/scenario/scenario.hpp"

namespace podsim {

// A figure as a publication gives it instead of a summary field (issue 26): converted to the
// step time it implies once the row's scenario is loaded (published_figures.hpp).
struct PublishedFigure {
  enum class Kind { TokensPerSecondPerChip, TflopsPerChip };
  Kind kind = Kind::TokensPerSecondPerChip;
  double value = 0;          // tokens/s per chip, or TFLOP/s per chip
  std::string convention;    // TflopsPerChip: the FLOP count it divides (workloads/flop_conventions.hpp)
  SourceLocation where;      // its key, for errors found when the scenario loads
};

// Whether a summary field a measurement names is a time (it ends in _s, or is a statistic of
// one, ttft_s.mean; a rate such as output_token_throughput_per_s ends in _per_s and is a
// number): its measured value is read, and printed, as one.
bool is_time_field(const std::string& field);

struct Measurement {
  std::string name;
  // The profile whose parameters predict it (`profile:`; default the file's name). Letters,
  // digits, '_' and '-': it names the profile's file when calibrate writes one per profile.
  std::string profile;
  std::string scenario_path;                 // resolved against the measurement file's folder
  std::vector<ScenarioOverride> overrides;   // `set`: dotted keys, YAML values
  std::string field;                         // a summary.json field (summary_fields.hpp)
  double measured = 0;                       // seconds for a *_s field, else the number
  // Set: field is step_time_s and measured is 0 until resolve_published_figure fills it in.
  std::optional<PublishedFigure> published;
  std::string source;
  SourceLocation where;                      // the entry, for errors found when it runs
};

struct MeasurementFile {
  std::string path;
  std::string name;
  std::vector<Measurement> measurements;
  // The profiles its rows name, in the order they first appear.
  std::vector<std::string> profile_names() const;
};

// Throws InputError: not a mapping, version other than 1, missing or unknown keys, a scenario
// file that is not there, a measured value that is not a positive time (or number), duplicate
// names, fewer than one measurement, a profile name with other characters than letters,
// digits, '_' and '-', both or neither of field + measured and a published figure, a
// tflops_per_chip without a known flop_convention.
MeasurementFile load_measurements(const std::string& path);

// Keeps the rows whose name matches one of `patterns` (shell globs: "M5-*", "T1"), in the
// file's order. InputError (at `option` on the command line) for a pattern no row matches.
void select_measurements(MeasurementFile& file, const std::vector<std::string>& patterns, const std::string& option);

// A calibration's result: a hop model, the MXU padding choice and fitted parameters (keys, units
// and ranges: hardware_parameters.hpp).
struct CalibrationProfile {
  std::string path;
  std::string name;
  std::string chip;                          // the preset it was fit for
  std::optional<HopModel> hop_model;
  std::optional<bool> mxu_padding;           // matmuls pay for their shapes padded to the MXU
  std::optional<bool> antipodal_split;       // even wrapped rings send the opposite chip's shard half each way
  std::optional<bool> reductions_on_tensor_core;   // reductions' additions cost the TensorCore HBM time
  std::optional<ComputeModel> compute_model; // a block as one roofline (book) or as its kernels
  std::map<std::string, double> parameters;  // by HardwareParameter::key, SI units
  // The fit's leave-one-out prediction of each row it recorded one for (fit.residuals), by name.
  std::map<std::string, double> leave_one_out;
  // Every row of fit.residuals, by name: what the profile's prediction interval is made from
  // (prediction_error.hpp), and which rows of a measurement file it was fit on.
  std::map<std::string, ProfileResidual> residuals;
  // fit.checks: rows of no fit the profile predicts (prediction_error.hpp), by name.
  std::map<std::string, ProfileCheck> checks;
  // fit.evidence: each fitted parameter's sd and the rows that inform it (calibrate writes it).
  std::map<std::string, ParameterEvidence> evidence;
};

CalibrationProfile load_profile(const std::string& path);
// The same from text already read; `path` names it in errors (a built-in profile's label).
CalibrationProfile load_profile_text(const std::string& text, const std::string& path);

}  // namespace podsim
