#pragma once
// What a run writes: summary.json (machine-readable), operations.csv, and a short table for
// the terminal; trace.json is run_trace.hpp's.
#include <nlohmann/json.hpp>
#include <string>

#include "sim/engine/run.hpp"
#include "sim/report/inference_report.hpp"
#include "sim/report/training_report.hpp"
#include "sim/scenario/scenario.hpp"

namespace podsim {

struct ReportOptions {
  bool reproducible = false;   // write wall_time_s as 0 so repeated runs are byte-identical
};

// `training` adds the training step's figures (null for a collectives workload); the fields are
// summary_field_table.hpp's rows.
std::string summary_json(const Scenario& scenario, const RunResult& run, const ReportOptions& options,
                         const TrainingReport* training = nullptr, const InferenceReport* inference = nullptr);
std::string operations_csv(const RunResult& run);
std::string summary_table(const Scenario& scenario, const RunResult& run);
// A training plan's memory per chip by part, as the run table and the does-not-fit error print
// it: "params 6.061 MiB, grads ..., logits 93.75 MiB[, gathered weights ...][, ring blocks ...]".
std::string memory_breakdown_text(const MemoryBreakdown& memory);
std::string training_table(const Scenario& scenario, const RunResult& run, const TrainingReport& report);
std::string inference_table(const Scenario& scenario, const RunResult& run, const InferenceReport& report);

}  // namespace podsim
