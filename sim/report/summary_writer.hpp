#pragma once
// summary.json written from the field table (summary_field_table.hpp): each row of the run's
// workload, in row order, at its path, unless its getter says the run has no such field.
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/report/report.hpp"
#include "sim/report/summary_field_table.hpp"

namespace podsim {

struct ServingRun;

// What a summary is written from: the scenario and one workload's results (the report
// pointers say which: serving, training, inference, or none for collectives).
struct SummaryInputs {
  const Scenario& scenario;
  const ReportOptions& options;
  const RunResult* run = nullptr;
  const TrainingReport* training = nullptr;
  const InferenceReport* inference = nullptr;
  const ServingRun* serving = nullptr;

  SummaryWorkloads workload() const;
};

using SummaryGetter = std::function<nlohmann::ordered_json(const SummaryInputs&)>;
using SummaryRow = SummaryFieldRow<SummaryGetter>;

// The table with its getters.
const std::vector<SummaryRow>& summary_rows();

// summary.json's text (2-space indent, a final newline).
std::string write_summary(const SummaryInputs& in);

// A row added at the end of the table (for the writer and for expectations) while it lives:
// how a test shows that a new field is one row.
class ScopedSummaryField {
 public:
  explicit ScopedSummaryField(SummaryRow row);
  ~ScopedSummaryField();
  ScopedSummaryField(const ScopedSummaryField&) = delete;
  ScopedSummaryField& operator=(const ScopedSummaryField&) = delete;
};

}  // namespace podsim
