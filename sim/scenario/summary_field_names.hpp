#pragma once
// What an `expect:` entry may name: the rows of summary.json's field table
// (sim/report/summary_field_table.hpp) that the scenario's workload writes and marks as
// expectable, with the unit its value is read in. The table is read here without its getters
// (NamesOnly), so loading still links neither the engine nor the report.
#include <string>
#include <unordered_set>
#include <vector>

#include "sim/report/summary_field_table.hpp"
#include "sim/scenario/scenario.hpp"

namespace podsim {

using SummaryNameRow = SummaryFieldRow<NamesOnly>;

// The table's names, units and docs.
const std::vector<SummaryNameRow>& summary_name_rows();

SummaryWorkloads summary_workload(WorkloadKind kind);

// What a placeholder may stand for in this scenario: <name> an operation of the file,
// <statistic> mean, std, median, max or a percentile the workload asks for; others any text.
struct ExpectFieldContext {
  WorkloadKind kind = WorkloadKind::Collectives;
  std::vector<double> percentiles;                                  // serving
  const std::unordered_set<std::string>* operation_names = nullptr;   // collectives
  bool check_keys = true;   // false: a placeholder stands for any key (reading a summary back)
};

// The unit of the row `text` names ("by suffix" rows: the name's last part decides), or an
// error saying what was expected.
struct ExpectFieldMatch {
  std::string unit;
  std::string error;   // empty when a row matched
};
ExpectFieldMatch match_expect_field(const std::string& text, const ExpectFieldContext& context,
                                    const std::vector<SummaryNameRow>& rows = summary_name_rows());

// The keys a row's value goes under in summary.json: its dotted name up to the first
// placeholder (a keyed family's getter returns the whole object there).
std::vector<std::string> summary_row_path(std::string_view name);

// The field a compare column shows (the rows marked with it share one name).
std::string summary_compare_field(CompareColumn column);

// The row `text` names in any workload's summary (placeholders standing for any key), or null.
const SummaryNameRow* find_summary_row(const std::string& text);

// docs/scenario-schema.md's list of summary fields, between its markers (kSummaryFieldsBegin,
// kSummaryFieldsEnd): a Markdown table row per field (tests/test_summary_fields.cpp compares).
constexpr std::string_view kSummaryFieldsBegin =
    "<!-- summary fields: generated from sim/report/summary_field_table.hpp (tests/test_summary_fields.cpp) -->";
constexpr std::string_view kSummaryFieldsEnd = "<!-- end of summary fields -->";
std::string summary_fields_markdown(const std::vector<SummaryNameRow>& rows = summary_name_rows());

}  // namespace podsim
