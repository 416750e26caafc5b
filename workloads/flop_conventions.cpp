#include "workloads/flop_conventions.hpp"

namespace podsim {
namespace {

// podsim's own count, the one summary.json's tflops_per_s_per_chip divides by the step time:
// 3 x forward (model_spec's training_flops_per_token), attention as workload.attention_flops says.
double podsim_flops(const FlopCountInputs& in) {
  return training_flops_per_token(in.model, in.sequence_length, in.attention_flops) * in.tokens_per_chip;
}

// 6 N per token, N = every parameter of the pytree (embeddings and norm scales included).
double six_n_flops(const FlopCountInputs& in) { return 6 * param_count(in.model) * in.tokens_per_chip; }

// 6 N S B plus `factor` heads L head_dim S^2 B of attention; per token of a sequence of S that is
// factor heads L head_dim S.
double six_n_plus_attention(const FlopCountInputs& in, double factor) {
  const TransformerSpec& m = in.model;
  const double attention = m.attention == AttentionKind::None
                               ? 0.0
                               : factor * m.heads * m.layers * static_cast<double>(m.head_dim) * in.sequence_length;
  return six_n_flops(in) + attention * in.tokens_per_chip;
}

// 12 heads L head_dim S^2 B halved "due to causality in attention".
double maxtext_76bd53b_flops(const FlopCountInputs& in) { return six_n_plus_attention(in, 6.0); }

// The same before the causal halving (MaxText at e47fa1b5d, October 2023, where the v5e table
// was first published and the flash kernel ran with causal=False): 12 heads L head_dim S^2 B.
double maxtext_2023_10_flops(const FlopCountInputs& in) { return six_n_plus_attention(in, 12.0); }

// Per token: 3 x [L (qkv + projection) + ffn + 2 D V] x 2 per weight, the FFN only the activated
// experts and the gate, the embedding once as the output projection's matmul (tied or not); plus
// 3 x 4 S heads head_dim L of attention, not halved ("megatron tflops calculation does not
// account for causality in attention").
double maxtext_per_device_flops(const FlopCountInputs& in) {
  const TransformerSpec& m = in.model;
  const double weights = m.layers * attention_params_per_layer(m) + mlp_params_all_layers(m, true) +
                         static_cast<double>(m.d_model) * m.vocab;
  const double attention = attention_flops_per_token_forward(m, in.sequence_length, false);
  return 3 * (2 * weights + attention) * in.tokens_per_chip;
}

}  // namespace

const std::vector<FlopConvention>& flop_conventions() {
  static const std::vector<FlopConvention> rows = {
      {"podsim", podsim_flops,
       "3 x forward matmul FLOPs (2 per weight, the output projection included, the input embedding not) "
       "+ 3 x 4 S N H L of attention when workload.attention_flops",
       "workloads/model_spec.hpp training_flops_per_token; summary.json tflops_per_s_per_chip"},
      {"maxtext-2023", six_n_flops, "6 N S B per device, N = all parameters including embeddings; no attention term",
       "MaxText MaxText/train.py at 281e04bf (line 319) and e286533d (line 286): per_device_tflops = 6 * "
       "num_model_parameters * max_target_length * per_device_batch_size"},
      {"maxtext-76bd53b", maxtext_76bd53b_flops,
       "6 N S B per device, N = all parameters (a tied embedding once), + causal attention 6 heads L head_dim S^2 B",
       "MaxText MaxText/train.py:77-88 at 76bd53b0 (calculate_training_tflops)"},
      {"maxtext-2023-10", maxtext_2023_10_flops,
       "6 N S B per device + non-causal attention 12 heads L head_dim S^2 B",
       "MaxText MaxText/train.py:75-84 at e47fa1b5d (2023-10-31, the v5e table's first commit)"},
      {"maxtext-per-device", maxtext_per_device_flops,
       "3 x 2 x (L (QKV + output projection) + activated FFN and gate + D V) per token + 3 x 4 S N H L of "
       "attention, not halved for causality",
       "MaxText MaxText/maxtext_utils.py:251-332 at 9f1820b4 (tag tpu-recipes-v0.1.4), "
       "calculate_tflops_training_per_device"},
  };
  return rows;
}

const FlopConvention* find_flop_convention(std::string_view name) {
  for (const auto& row : flop_conventions())
    if (row.name == name) return &row;
  return nullptr;
}

std::string flop_convention_names() {
  std::string names;
  for (const auto& row : flop_conventions()) names += (names.empty() ? "" : ", ") + row.name;
  return names;
}

}  // namespace podsim
