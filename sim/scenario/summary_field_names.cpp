#include "sim/scenario/summary_field_names.hpp"

#include <algorithm>
#include <map>

#include "sim/scenario/units.hpp"
#include "sim/scenario/yaml_fields.hpp"

namespace podsim {

const std::vector<SummaryNameRow>& summary_name_rows() { return summary_field_rows<NamesOnly>(); }

SummaryWorkloads summary_workload(WorkloadKind kind) {
  switch (kind) {
    case WorkloadKind::Training: return kTrainingSummary;
    case WorkloadKind::Inference: return kInferenceSummary;
    case WorkloadKind::Serving: return kServingSummary;
    case WorkloadKind::Collectives: break;
  }
  return kCollectivesSummary;
}

namespace {

constexpr size_t kMaxFieldLength = 1000;

std::vector<std::string> statistics(const ExpectFieldContext& context) {
  std::vector<std::string> out = {"mean", "std", "median", "max"};
  for (double p : context.percentiles) out.push_back(percentile_name(p));
  return out;
}

// Whether `value` may stand for <placeholder>; a non-empty reason when it may not.
std::string placeholder_refusal(std::string_view placeholder, const std::string& value,
                                const ExpectFieldContext& context) {
  if (!context.check_keys) return "";
  if (placeholder == "name" && context.operation_names != nullptr && !context.operation_names->contains(value))
    return "no operation is named '" + value + "'";
  if (placeholder == "statistic") {
    const auto allowed = statistics(context);
    if (std::find(allowed.begin(), allowed.end(), value) == allowed.end()) return "unknown statistic";
  }
  return "";
}

// Matches `text` from `at` against `pattern` from `p`: literal text, and <placeholders> standing
// for any non-empty text (dots included: operation and block names are free). Returns "" on a
// match, "no match" or a placeholder's refusal otherwise.
std::string match_from(std::string_view pattern, size_t p, const std::string& text, size_t at,
                       const ExpectFieldContext& context) {
  if (p == pattern.size()) return at == text.size() ? "" : "no match";
  if (pattern[p] != '<') return at < text.size() && text[at] == pattern[p] ? match_from(pattern, p + 1, text, at + 1, context)
                                                                         : "no match";
  const size_t close = pattern.find('>', p);
  const std::string_view placeholder = pattern.substr(p + 1, close - p - 1);
  std::string refusal = "no match";
  for (size_t end = at + 1; end <= text.size(); ++end) {
    if (match_from(pattern, close + 1, text, end, context).empty()) {
      refusal = placeholder_refusal(placeholder, text.substr(at, end - at), context);
      if (refusal.empty()) return "";
    }
  }
  return refusal;
}

// "a, b, moe.<c|d>, ttft_s.<statistic>": the expectable names, dotted fixed names grouped by
// their first part.
std::string expected_names(const std::vector<const SummaryNameRow*>& rows, const ExpectFieldContext& context) {
  std::vector<std::string> items;
  std::map<std::string, size_t> group_item;   // "moe" -> its index in items
  bool statistic = false;
  for (const SummaryNameRow* row : rows) {
    const std::string name(row->name);
    const size_t dot = name.find('.');
    statistic = statistic || name.find("<statistic>") != std::string::npos;
    if (dot == std::string::npos || name.find('<') != std::string::npos) {
      items.push_back(name);
      continue;
    }
    const std::string group = name.substr(0, dot), member = name.substr(dot + 1);
    if (auto it = group_item.find(group); it != group_item.end()) {
      items[it->second].insert(items[it->second].size() - 1, "|" + member);
    } else {
      group_item[group] = items.size();
      items.push_back(group + ".<" + member + ">");
    }
  }
  std::string out = yaml_fields::join(items);
  if (statistic)
    out += " (<statistic>: " + yaml_fields::join(statistics(context), "|") +
           "; other percentiles: add them to workload.metric_percentiles)";
  return out;
}

}  // namespace

namespace {

std::string workload_names(SummaryWorkloads workloads) {
  if (workloads == kEverySummary) return "all";
  std::vector<std::string> names;
  for (const auto& [bit, name] : {std::pair{kCollectivesSummary, "collectives"}, std::pair{kTrainingSummary, "training"},
                                  std::pair{kInferenceSummary, "inference"}, std::pair{kServingSummary, "serving"}})
    if (workloads & bit) names.push_back(name);
  return yaml_fields::join(names);
}

}  // namespace

const SummaryNameRow* find_summary_row(const std::string& text) {
  ExpectFieldContext any_key;
  any_key.check_keys = false;
  if (text.size() > kMaxFieldLength) return nullptr;
  for (const SummaryNameRow& row : summary_name_rows())
    if (match_from(row.name, 0, text, 0, any_key).empty()) return &row;
  return nullptr;
}

std::vector<std::string> summary_row_path(std::string_view name) {
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

std::string summary_compare_field(CompareColumn column) {
  for (const SummaryNameRow& row : summary_name_rows())
    if (row.compare == column) return std::string(row.name);
  return "";
}

std::string summary_fields_markdown(const std::vector<SummaryNameRow>& rows) {
  std::string out = std::string(kSummaryFieldsBegin) + "\n\n| field | unit | written by | `expect:` in | meaning |\n|---|---|---|---|---|\n";
  for (const SummaryNameRow& row : rows) {
    out += "| `" + std::string(row.name) + "` | " + std::string(row.unit) + " | " + workload_names(row.written) + " | " +
           workload_names(row.expect) + " | " + std::string(row.doc) + " |\n";
  }
  return out + "\n" + std::string(kSummaryFieldsEnd) + "\n";
}

ExpectFieldMatch match_expect_field(const std::string& text, const ExpectFieldContext& context,
                                    const std::vector<SummaryNameRow>& rows) {
  const SummaryWorkloads workload = summary_workload(context.kind);
  std::vector<const SummaryNameRow*> expectable;
  for (const SummaryNameRow& row : rows) {
    if ((row.expect & workload) == 0) continue;
    expectable.push_back(&row);
    // Two placeholders match in time quadratic in the text: no field is anywhere near this long.
    if (text.size() > kMaxFieldLength) continue;
    const std::string result = match_from(row.name, 0, text, 0, context);
    if (result.empty()) return {std::string(row.unit), ""};
    if (result != "no match" && result != "unknown statistic") return {"", result};
  }
  return {"", "expected one of: " + expected_names(expectable, context)};
}

}  // namespace podsim
