#pragma once
// A run's headline figures with the interval its calibration profile states (issue 43;
// docs/calibration.md, "Prediction intervals"): the text every run table ends with, and
// summary.json's prediction_error and prediction_interval (summary_field_table.hpp).
#include <string>
#include <vector>

#include "sim/scenario/scenario.hpp"

namespace podsim {

struct RunResult;
struct TrainingReport;
struct InferenceReport;
struct ServingStats;

// A figure an interval is put around: its summary key, how the table names it, its value.
struct IntervalQuantity {
  enum class Unit { Time, Fraction, Rate };
  std::string key, label;
  double value = 0;
  Unit unit = Unit::Time;
};

std::vector<IntervalQuantity> collectives_interval_quantities(const RunResult& run);
std::vector<IntervalQuantity> training_interval_quantities(const TrainingReport& r);
std::vector<IntervalQuantity> inference_interval_quantities(const InferenceReport& r);
std::vector<IntervalQuantity> serving_interval_quantities(const ServingStats& s);

// The profile's pool for the run: its dense rows', or every row's for a run whose model routes
// tokens to experts; null without a profile.
const PredictionError* run_prediction_error(const Scenario& scenario);
// The error a figure's interval takes: its kind's (figure_kind of its summary key and the run's
// model) where the profile's rows of that kind state one, else the run's pool; null without a profile.
const PredictionError* prediction_error_for(const Scenario& scenario, const std::string& quantity);

// "prediction intervals (profile v5e: ...)\n  step time  80% ... 95% ...\n": empty when the
// scenario's profile states no error (the ideal machine).
std::string prediction_interval_text(const Scenario& scenario, const std::vector<IntervalQuantity>& quantities);

}  // namespace podsim
