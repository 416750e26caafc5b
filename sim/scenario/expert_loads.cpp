#include "sim/scenario/expert_loads.hpp"

#include <cmath>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "sim/scenario/csv_cells.hpp"
#include "sim/scenario/input_error.hpp"
#include "sim/scenario/input_file.hpp"
#include "sim/scenario/units.hpp"

namespace podsim {

namespace {

// At most this many missing layers are listed; a file for the wrong model would list hundreds.
constexpr size_t kMissingListed = 12;

std::string moe_layers_text(int first, int last) {
  if (first > last) return "the model has no MoE layers";
  if (first == last) return "the MoE layer is " + std::to_string(first);
  return "MoE layers are " + std::to_string(first) + ".." + std::to_string(last);
}

std::string plural(long long n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

}  // namespace

std::vector<std::vector<double>> parse_expert_loads(const std::string& text, const std::string& path,
                                                    const TransformerSpec& model) {
  if (!model.moe) throw std::logic_error("parse_expert_loads: " + model.name + " has no experts");
  const int experts = model.moe->experts;
  const int k = model.moe->experts_per_token;
  const int first_moe = model.moe->dense_layers;
  const int last_moe = model.layers - 1;
  const std::string layers_text = moe_layers_text(first_moe, last_moe);

  std::vector<std::string> columns;   // the header's names, for errors about a value
  std::optional<int> star_line;       // the `*` row's line
  std::map<int, std::pair<int, std::vector<double>>> by_layer;   // layer -> (line, row)
  std::vector<double> star_row;
  std::istringstream in(text);
  std::string line;
  int line_number = 0;
  bool header = false;
  while (std::getline(in, line)) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (csv_line_skipped(line)) continue;
    const std::vector<std::string> cells = split_csv_line(line);
    if (!header) {
      if (cells.front() != "layer")
        throw InputError({path, line_number, 1}, "header", cells.front(),
                         "expected a header whose first column is layer, then one column per routed expert "
                         "(e.g. layer,expert_0,expert_1,...)");
      const long long given = static_cast<long long>(cells.size()) - 1;
      if (given != experts)
        throw InputError({path, line_number, 1}, "header", csv_line_excerpt(line),
                         plural(given, "expert column", "expert columns") + " for a model with " +
                             plural(experts, "expert", "experts") + " (expected layer + " + std::to_string(experts) +
                             ")");
      columns = cells;
      for (size_t c = 1; c < columns.size(); ++c)
        if (columns[c].empty()) columns[c] = "column " + std::to_string(c + 1);
      header = true;
      continue;
    }
    if (cells.size() != columns.size())
      throw InputError({path, line_number, 1}, "row", csv_line_excerpt(line),
                       std::to_string(cells.size()) + " columns; expected " + std::to_string(columns.size()) +
                           ", as in the header (layer + " + plural(experts, "expert", "experts") + ")");

    // The layer: `*`, or a model layer index that has experts.
    const std::string& layer_cell = cells.front();
    const SourceLocation layer_at{path, line_number, 1};
    const bool star = layer_cell == "*";
    int layer = -1;
    if (star) {
      if (star_line)
        throw InputError(layer_at, "layer", layer_cell,
                         "* given twice (first at line " + std::to_string(*star_line) + "); expected one * row");
      if (!by_layer.empty())
        throw InputError(layer_at, "layer", layer_cell,
                         "a * row after rows for single layers (the first at line " +
                             std::to_string(by_layer.begin()->second.first) +
                             "); expected either one * row for every MoE layer or one row per MoE layer");
    } else {
      const std::optional<long long> parsed = parse_whole_number<long long>(layer_cell);
      if (!parsed)
        throw InputError(layer_at, "layer", layer_cell,
                         "expected a model layer index (" + layers_text + ") or * for every MoE layer");
      if (*parsed < 0 || *parsed >= model.layers)
        throw InputError(layer_at, "layer", layer_cell,
                         "layer " + std::to_string(*parsed) + " is not one of " + model.name + "'s " +
                             plural(model.layers, "layer", "layers") + " (" + layers_text + ")");
      layer = static_cast<int>(*parsed);
      if (layer < first_moe)
        throw InputError(layer_at, "layer", layer_cell,
                         "layer " + std::to_string(layer) + " is dense (" + layers_text + ")");
      if (star_line)
        throw InputError(layer_at, "layer", layer_cell,
                         "a row for one layer after the * row (line " + std::to_string(*star_line) +
                             ") that applies to every MoE layer; expected either the * row alone or one row per "
                             "MoE layer");
      if (auto it = by_layer.find(layer); it != by_layer.end())
        throw InputError(layer_at, "layer", layer_cell,
                         "duplicate layer: " + std::to_string(layer) + " is given twice (first at line " +
                             std::to_string(it->second.first) + "); expected each MoE layer once");
    }

    // The loads: finite, >= 0, and enough positive ones for every token's k distinct experts.
    std::vector<double> row(static_cast<size_t>(experts));
    int positive = 0;
    double sum = 0;
    for (int e = 0; e < experts; ++e) {
      const std::string& cell = cells[static_cast<size_t>(e) + 1];
      const std::optional<double> value = parse_whole_number<double>(cell);
      if (!value || !std::isfinite(*value) || *value < 0)
        throw InputError({path, line_number, e + 2}, columns[static_cast<size_t>(e) + 1], cell,
                         "expected a finite number >= 0 (a token count or a relative weight)");
      row[static_cast<size_t>(e)] = *value == 0 ? 0.0 : *value;   // -0 read as 0
      positive += *value > 0;
      sum += *value;
    }
    const std::string row_name = star ? "layer *" : "layer " + std::to_string(layer);
    if (positive < k)
      throw InputError({path, line_number, 1}, row_name, "",
                       plural(positive, "expert has", "experts have") + " a load above 0; expected at least " +
                           std::to_string(k) + " (experts_per_token: each token goes to " + std::to_string(k) +
                           " distinct experts)");
    // Routing draws from the running sum of the weights: an infinite sum would make every draw
    // land on the last expert.
    if (!std::isfinite(sum))
      throw InputError({path, line_number, 1}, row_name, "",
                       "the loads add up to more than the largest number a double holds; expected smaller values "
                       "(only their ratios count)");
    if (star) {
      star_line = line_number;
      star_row = std::move(row);
    } else {
      by_layer.emplace(layer, std::make_pair(line_number, std::move(row)));
    }
  }
  if (!header)
    throw InputError({path, 0, 0}, "", "",
                     "empty expert-load file; expected a header (layer, then one column per routed expert) and "
                     "one * row or one row per MoE layer");
  if (!star_line && by_layer.empty())
    throw InputError({path, line_number, 0}, "", "",
                     "no rows after the header; expected one * row for every MoE layer, or one row per MoE layer (" +
                         layers_text + ")");
  if (star_line) return {std::move(star_row)};

  std::vector<int> missing;
  for (int layer = first_moe; layer <= last_moe; ++layer)
    if (!by_layer.count(layer)) missing.push_back(layer);
  if (!missing.empty()) {
    std::string listed;
    for (size_t i = 0; i < missing.size() && i < kMissingListed; ++i)
      listed += (i ? ", " : "") + std::to_string(missing[i]);
    if (missing.size() > kMissingListed) listed += ", ... (" + std::to_string(missing.size()) + " in all)";
    throw InputError({path, line_number, 0}, "layer", "",
                     std::string(missing.size() == 1 ? "missing MoE layer " : "missing MoE layers ") + listed +
                         "; expected one row per MoE layer (" + layers_text + "), or one * row for all of them");
  }
  std::vector<std::vector<double>> rows;
  for (auto& [layer, entry] : by_layer) rows.push_back(std::move(entry.second));   // std::map: layer order
  return rows;
}

std::vector<std::vector<double>> read_expert_loads(const std::string& path, const TransformerSpec& model) {
  // 64 MiB: a model of 2^10 experts and 2^10 layers written as 40-byte numbers takes 40 MiB.
  const std::string text = read_input_file(path, "expert-load file", uintmax_t{64} << 20);
  require_utf8(text, path);
  return parse_expert_loads(text, path, model);
}

}  // namespace podsim
