#include "sim/report/prediction_report.hpp"

#include <algorithm>

#include <cstdio>

#include "sim/report/report.hpp"
#include "sim/report/serving_report.hpp"
#include "sim/report/summary_writer.hpp"
#include "sim/report/training_report.hpp"
#include "sim/report/inference_report.hpp"
#include "sim/scenario/units.hpp"

namespace podsim {

std::vector<IntervalQuantity> collectives_interval_quantities(const RunResult& run) {
  return {{"total_time_s", "total time", run.total_time_s, IntervalQuantity::Unit::Time}};
}

std::vector<IntervalQuantity> training_interval_quantities(const TrainingReport& r) {
  return {{"step_time_s", "step time", r.step_time_s, IntervalQuantity::Unit::Time},
          {"mfu", "MFU", r.mfu, IntervalQuantity::Unit::Fraction},
          {"tokens_per_s_per_chip", "tokens/s/chip", r.tokens_per_s_per_chip, IntervalQuantity::Unit::Rate}};
}

std::vector<IntervalQuantity> inference_interval_quantities(const InferenceReport& r) {
  return {{r.decode ? "decode_step_time_s" : "prefill_time_s", r.decode ? "step" : "prefill", r.step_time_s,
           IntervalQuantity::Unit::Time},
          {"tokens_per_s", "tokens/s", r.tokens_per_s, IntervalQuantity::Unit::Rate}};
}

std::vector<IntervalQuantity> serving_interval_quantities(const ServingStats& s) {
  return {{"ttft_s_mean", "TTFT mean", s.ttft.mean, IntervalQuantity::Unit::Time},
          {"tpot_s_mean", "TPOT mean", s.tpot.mean, IntervalQuantity::Unit::Time},
          {"output_token_throughput_per_s", "output tokens/s", s.tokens_per_s, IntervalQuantity::Unit::Rate}};
}

namespace {

std::string value_text(const IntervalQuantity& q, double v) {
  char text[48];
  switch (q.unit) {
    case IntervalQuantity::Unit::Time: return human_time(v);
    case IntervalQuantity::Unit::Fraction: std::snprintf(text, sizeof text, "%.1f%%", 100 * v); return text;
    case IntervalQuantity::Unit::Rate: std::snprintf(text, sizeof text, "%.4g", v); return text;
  }
  return "";
}

std::string percent(double coverage) {
  char text[16];
  std::snprintf(text, sizeof text, "%.0f%%", 100 * coverage);
  return text;
}

// A figure's interval; a fraction's (MFU) ends at 1, the most it can be, where a wide spread
// (an MoE step's, two checks) would carry it past.
PredictionInterval quantity_interval(const IntervalQuantity& q, const PredictionError& e, double coverage) {
  PredictionInterval i = prediction_interval(q.value, e, coverage);
  if (q.unit == IntervalQuantity::Unit::Fraction) i.high = std::min(i.high, 1.0);
  return i;
}

// The quantities of the run a summary is written for.
std::vector<IntervalQuantity> quantities_of(const SummaryInputs& in) {
  if (in.training) return training_interval_quantities(*in.training);
  if (in.inference) return inference_interval_quantities(*in.inference);
  if (in.serving) return serving_interval_quantities(in.serving->stats);
  if (in.run) return collectives_interval_quantities(*in.run);
  return {};
}

}  // namespace

const PredictionError* run_prediction_error(const Scenario& scenario) {
  const auto& pool = routes_experts(scenario) ? scenario.prediction_error_moe : scenario.prediction_error;
  return pool ? &*pool : nullptr;
}

const PredictionError* prediction_error_for(const Scenario& scenario, const std::string& quantity) {
  if (const auto it = scenario.prediction_errors_by_kind.find(figure_kind(quantity_kind(quantity), routes_experts(scenario)));
      it != scenario.prediction_errors_by_kind.end())
    return &it->second;
  return run_prediction_error(scenario);
}

std::string prediction_interval_text(const Scenario& scenario, const std::vector<IntervalQuantity>& quantities) {
  if (!run_prediction_error(scenario) || quantities.empty()) return "";
  const PredictionError& e = *run_prediction_error(scenario);
  char line[512];
  std::snprintf(line, sizeof line,
                "prediction intervals (profile %s: %zu out-of-sample errors, %zu of its fit left out and %zu checks in no "
                "fit, rms %.1f%%%s; a figure whose kind has rows of its own takes theirs):\n",
                e.profile.c_str(), e.rows.size(), e.rows.size() - e.checks.size(), e.checks.size(), 100 * e.rms_log,
                e.sole_evidence.empty() ? "" : "; sole-evidence rows apart");
  std::string out = line;
  for (const auto& q : quantities) {
    const PredictionError& qe = *prediction_error_for(scenario, q.key);
    out += "  " + q.label + ":";
    for (double c : kIntervalCoverages) {
      const PredictionInterval i = quantity_interval(q, qe, c);
      out += " " + percent(c) + " " + value_text(q, i.low) + " to " + value_text(q, i.high) + (c == kIntervalCoverages[0] ? "," : "");
    }
    if (!qe.pooled) {
      std::snprintf(line, sizeof line, " (its %zu %s rows, %zu of them checks in no fit: rms %.1f%%)", qe.rows.size(),
                    qe.kind.c_str(), qe.checks.size(), 100 * qe.rms_log);
      out += line;
    }
    out += "\n";
  }
  return out;
}

namespace summary_parts {

Json prediction_error(const SummaryInputs& in) {
  if (!run_prediction_error(in.scenario)) return absent();
  const PredictionError& e = *run_prediction_error(in.scenario);
  Json sole = Json::array();
  for (const auto& s : e.sole_evidence) sole.push_back({{"row", s.row}, {"parameter", s.parameter}});
  return {{"profile", e.profile}, {"rows", e.rows}, {"checks", e.checks}, {"sole_evidence", sole},
          {"rms_log_error", e.rms_log}, {"degrees_of_freedom", e.rows.size()}};
}

Json prediction_interval(const SummaryInputs& in) {
  if (!run_prediction_error(in.scenario)) return absent();
  Json out = Json::object();
  for (const auto& q : quantities_of(in)) {
    Json bounds = Json::object();
    const PredictionError& e = *prediction_error_for(in.scenario, q.key);
    for (double c : kIntervalCoverages) {
      const PredictionInterval i = quantity_interval(q, e, c);
      const std::string suffix = std::to_string(static_cast<int>(std::lround(100 * c)));
      bounds["low_" + suffix] = i.low;
      bounds["high_" + suffix] = i.high;
    }
    bounds["kind"] = e.pooled ? "pooled" : e.kind;   // whose errors: the figure's kind's rows, or every row
    bounds["rms_log_error"] = e.rms_log;
    bounds["degrees_of_freedom"] = e.rows.size();
    out[q.key] = bounds;
  }
  return out;
}

}  // namespace summary_parts

}  // namespace podsim
