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

std::string moe_layers_text(int first, int last, int step) {
  if (first > last) return "the model has no MoE layers";
  // Interleaved (interleave_moe_layer_step): every step-th layer, l + 1 a multiple of step.
  if (step > 1) return "MoE layers are every " + std::to_string(step) + "th from " + std::to_string(step - 1) + ", past " +
                       std::to_string(first) + " dense ones, up to " + std::to_string(last);
  if (first == last) return "the MoE layer is " + std::to_string(first);
  return "MoE layers are " + std::to_string(first) + ".." + std::to_string(last);
}

std::string plural(long long n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// Reads the file line by line: the header, then rows of one layer (or `*`) and E loads each.
class ExpertLoadReader {
 public:
  ExpertLoadReader(const std::string& path, const TransformerSpec& model)
      : path_(path), model_(model), experts_(model.moe->experts), first_moe_(model.moe->dense_layers),
        layers_text_(moe_layers_text(first_moe_, model.layers - 1, model.moe->interleave_moe_layer_step)) {}

  void line(const std::string& text, int line_number) {
    line_ = line_number;
    const std::vector<std::string> cells = split_csv_line(text);
    if (columns_.empty()) return header(cells, text);
    if (cells.size() != columns_.size())
      throw InputError({path_, line_, 1}, "row", csv_line_excerpt(text),
                       std::to_string(cells.size()) + " columns; expected " + std::to_string(columns_.size()) +
                           ", as in the header (layer + " + plural(experts_, "expert", "experts") + ")");
    const bool star = cells.front() == "*";
    const int layer = star ? -1 : layer_of(cells.front());
    if (star) check_star(cells.front());
    std::vector<double> row = loads(cells, star ? "layer *" : "layer " + std::to_string(layer));
    if (star) {
      star_line_ = line_;
      star_row_ = std::move(row);
    } else {
      by_layer_.emplace(layer, std::make_pair(line_, std::move(row)));
    }
  }

  // What the file gives, once its `last_line` lines are read (errors about what is missing
  // point there).
  std::vector<std::vector<double>> rows(int last_line) {
    line_ = last_line;
    if (columns_.empty())
      throw InputError({path_, 0, 0}, "", "",
                       "empty expert-load file; expected a header (layer, then one column per routed expert) and "
                       "one * row or one row per MoE layer");
    if (!star_line_ && by_layer_.empty())
      throw InputError({path_, line_, 0}, "", "",
                       "no rows after the header; expected one * row for every MoE layer, or one row per MoE layer (" +
                           layers_text_ + ")");
    if (star_line_) return {std::move(star_row_)};
    check_every_layer();
    std::vector<std::vector<double>> out;
    for (auto& [layer, entry] : by_layer_) out.push_back(std::move(entry.second));   // std::map: layer order
    return out;
  }

 private:
  void header(const std::vector<std::string>& cells, const std::string& text) {
    if (cells.front() != "layer")
      throw InputError({path_, line_, 1}, "header", cells.front(),
                       "expected a header whose first column is layer, then one column per routed expert "
                       "(e.g. layer,expert_0,expert_1,...)");
    const long long given = static_cast<long long>(cells.size()) - 1;
    if (given != experts_)
      throw InputError({path_, line_, 1}, "header", csv_line_excerpt(text),
                       plural(given, "expert column", "expert columns") + " for a model with " +
                           plural(experts_, "expert", "experts") + " (expected layer + " + std::to_string(experts_) +
                           ")");
    columns_ = cells;
    for (size_t c = 1; c < columns_.size(); ++c)
      if (columns_[c].empty()) columns_[c] = "column " + std::to_string(c + 1);
  }

  // `*` once, and never after rows for single layers.
  void check_star(const std::string& cell) const {
    const SourceLocation at{path_, line_, 1};
    if (star_line_)
      throw InputError(at, "layer", cell,
                       "* given twice (first at line " + std::to_string(*star_line_) + "); expected one * row");
    if (!by_layer_.empty())
      throw InputError(at, "layer", cell,
                       "a * row after rows for single layers (the first at line " +
                           std::to_string(by_layer_.begin()->second.first) +
                           "); expected either one * row for every MoE layer or one row per MoE layer");
  }

  // A model layer index that has experts, given once, and never after the `*` row.
  int layer_of(const std::string& cell) const {
    const SourceLocation at{path_, line_, 1};
    const std::optional<long long> parsed = parse_whole_number<long long>(cell);
    if (!parsed)
      throw InputError(at, "layer", cell, "expected a model layer index (" + layers_text_ + ") or * for every MoE layer");
    if (*parsed < 0 || *parsed >= model_.layers)
      throw InputError(at, "layer", cell,
                       "layer " + std::to_string(*parsed) + " is not one of " + model_.name + "'s " +
                           plural(model_.layers, "layer", "layers") + " (" + layers_text_ + ")");
    const int layer = static_cast<int>(*parsed);
    if (!is_moe_layer(model_, layer))
      throw InputError(at, "layer", cell, "layer " + std::to_string(layer) + " is dense (" + layers_text_ + ")");
    if (star_line_)
      throw InputError(at, "layer", cell,
                       "a row for one layer after the * row (line " + std::to_string(*star_line_) +
                           ") that applies to every MoE layer; expected either the * row alone or one row per "
                           "MoE layer");
    if (auto it = by_layer_.find(layer); it != by_layer_.end())
      throw InputError(at, "layer", cell,
                       "duplicate layer: " + std::to_string(layer) + " is given twice (first at line " +
                           std::to_string(it->second.first) + "); expected each MoE layer once");
    return layer;
  }

  // The loads: finite, >= 0, and enough positive ones for every token's k distinct experts.
  std::vector<double> loads(const std::vector<std::string>& cells, const std::string& row_name) const {
    const int k = model_.moe->experts_per_token;
    std::vector<double> row(static_cast<size_t>(experts_));
    int positive = 0;
    double sum = 0;
    for (int e = 0; e < experts_; ++e) {
      const std::string& cell = cells[static_cast<size_t>(e) + 1];
      const std::optional<double> value = parse_whole_number<double>(cell);
      if (!value || !std::isfinite(*value) || *value < 0)
        throw InputError({path_, line_, e + 2}, columns_[static_cast<size_t>(e) + 1], cell,
                         "expected a finite number >= 0 (a token count or a relative weight)");
      row[static_cast<size_t>(e)] = *value == 0 ? 0.0 : *value;   // -0 read as 0
      positive += *value > 0;
      sum += *value;
    }
    if (positive < k)
      throw InputError({path_, line_, 1}, row_name, "",
                       plural(positive, "expert has", "experts have") + " a load above 0; expected at least " +
                           std::to_string(k) + " (experts_per_token: each token goes to " + std::to_string(k) +
                           " distinct experts)");
    // Routing draws from the running sum of the weights: an infinite sum would make every draw
    // land on the last expert.
    if (!std::isfinite(sum))
      throw InputError({path_, line_, 1}, row_name, "",
                       "the loads add up to more than the largest number a double holds; expected smaller values "
                       "(only their ratios count)");
    return row;
  }

  void check_every_layer() const {
    std::vector<int> missing;
    for (int layer = first_moe_; layer < model_.layers; ++layer)
      if (is_moe_layer(model_, layer) && !by_layer_.count(layer)) missing.push_back(layer);
    if (missing.empty()) return;
    std::string listed;
    for (size_t i = 0; i < missing.size() && i < kMissingListed; ++i) listed += (i ? ", " : "") + std::to_string(missing[i]);
    if (missing.size() > kMissingListed) listed += ", ... (" + std::to_string(missing.size()) + " in all)";
    throw InputError({path_, line_, 0}, "layer", "",
                     std::string(missing.size() == 1 ? "missing MoE layer " : "missing MoE layers ") + listed +
                         "; expected one row per MoE layer (" + layers_text_ + "), or one * row for all of them");
  }

  const std::string& path_;
  const TransformerSpec& model_;
  const int experts_, first_moe_;
  const std::string layers_text_;
  std::vector<std::string> columns_;   // the header's names, for errors about a value (empty: no header yet)
  int line_ = 0;
  std::optional<int> star_line_;       // the `*` row's line
  std::vector<double> star_row_;
  std::map<int, std::pair<int, std::vector<double>>> by_layer_;   // layer -> (line, row)
};

}  // namespace

std::vector<std::vector<double>> parse_expert_loads(const std::string& text, const std::string& path,
                                                    const TransformerSpec& model) {
  if (!model.moe) throw std::logic_error("parse_expert_loads: " + model.name + " has no experts");
  ExpertLoadReader reader(path, model);
  std::istringstream in(text);
  std::string line;
  int line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!csv_line_skipped(line)) reader.line(line, line_number);
  }
  return reader.rows(line_number);
}

std::vector<std::vector<double>> read_expert_loads(const std::string& path, const TransformerSpec& model) {
  // 64 MiB: a model of 2^10 experts and 2^10 layers written as 40-byte numbers takes 40 MiB.
  const std::string text = read_input_file(path, "expert-load file", uintmax_t{64} << 20);
  require_utf8(text, path);
  return parse_expert_loads(text, path, model);
}

}  // namespace podsim
