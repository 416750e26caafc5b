#pragma once
// An expert-load CSV (workload.routing.loads, docs/scenario-schema.md): how a MoE model's tokens
// spread over its routed experts, measured or made up. A header whose first column is `layer`
// and then one column per routed expert (names free, e.g. expert_0, expert_1, ...); then either
// one row whose layer is `*` (every MoE layer), or one row per MoE layer, named by its model
// layer index (moe.dense_layers .. layers - 1), each once, in any order. Values are token counts
// or relative weights: finite, >= 0, and at least experts_per_token of them positive in each
// row. Blank lines and lines starting with '#' are skipped.
#include <string>
#include <vector>

#include "workloads/model_spec.hpp"

namespace podsim {

// The rows as MoeRouting::layer_weights takes them: one row for `*`, or one per MoE layer in
// layer order. Throws InputError naming the file, line, column, value and what was expected.
// `model` must have experts (std::logic_error otherwise: the loader checks that first).
std::vector<std::vector<double>> read_expert_loads(const std::string& path, const TransformerSpec& model);
std::vector<std::vector<double>> parse_expert_loads(const std::string& text, const std::string& path,
                                                    const TransformerSpec& model);

}  // namespace podsim
