#include "sim/report/summary_writer.hpp"

#include "sim/report/serving_report.hpp"
#include "sim/scenario/summary_field_names.hpp"

namespace podsim {

SummaryWorkloads SummaryInputs::workload() const {
  if (serving != nullptr) return kServingSummary;
  if (training != nullptr) return kTrainingSummary;
  if (inference != nullptr) return kInferenceSummary;
  return kCollectivesSummary;
}

const std::vector<SummaryRow>& summary_rows() { return summary_field_rows<SummaryGetter>(); }

std::string write_summary(const SummaryInputs& in) {
  nlohmann::ordered_json summary;
  const SummaryWorkloads workload = in.workload();
  for (const SummaryRow& row : summary_rows()) {
    if ((row.written & workload) == 0) continue;
    nlohmann::ordered_json value = row.get(in);
    if (value.is_discarded()) continue;
    nlohmann::ordered_json* node = &summary;
    for (const std::string& key : summary_row_path(row.name)) node = &(*node)[key];
    *node = std::move(value);
  }
  return summary.dump(2) + "\n";
}

ScopedSummaryField::ScopedSummaryField(SummaryRow row) {
  summary_field_storage<NamesOnly>().push_back(
      {row.name, row.unit, row.written, row.expect, row.doc, NamesOnly(row.get), row.compare});
  summary_field_storage<SummaryGetter>().push_back(std::move(row));
}

ScopedSummaryField::~ScopedSummaryField() {
  summary_field_storage<NamesOnly>().pop_back();
  summary_field_storage<SummaryGetter>().pop_back();
}

}  // namespace podsim
