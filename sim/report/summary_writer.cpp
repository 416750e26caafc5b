#include "sim/report/summary_writer.hpp"

#include "sim/report/serving_report.hpp"

namespace podsim {

SummaryWorkloads SummaryInputs::workload() const {
  if (serving != nullptr) return kServingSummary;
  if (training != nullptr) return kTrainingSummary;
  if (inference != nullptr) return kInferenceSummary;
  return kCollectivesSummary;
}

const std::vector<SummaryRow>& summary_rows() { return summary_field_rows<SummaryGetter>(); }

namespace {

// The keys a row's value goes under: its dotted name up to the first placeholder (a keyed
// family's getter returns the whole object there).
std::vector<std::string> row_path(std::string_view name) {
  const size_t placeholder = name.find(".<");
  if (placeholder != std::string_view::npos) name = name.substr(0, placeholder);
  std::vector<std::string> path;
  size_t begin = 0;
  while (true) {
    const size_t dot = name.find('.', begin);
    path.emplace_back(name.substr(begin, dot - begin));
    if (dot == std::string_view::npos) return path;
    begin = dot + 1;
  }
}

}  // namespace

std::string write_summary(const SummaryInputs& in, const std::vector<SummaryRow>& rows) {
  nlohmann::ordered_json summary;
  const SummaryWorkloads workload = in.workload();
  for (const SummaryRow& row : rows) {
    if ((row.written & workload) == 0) continue;
    nlohmann::ordered_json value = row.get(in);
    if (value.is_discarded()) continue;
    nlohmann::ordered_json* node = &summary;
    for (const std::string& key : row_path(row.name)) node = &(*node)[key];
    *node = std::move(value);
  }
  return summary.dump(2) + "\n";
}

}  // namespace podsim
