#pragma once
// Dense decoder-only Transformer shapes, their parameter counts and FLOPs per token, in the
// scaling book's notation (transformers.md; training.md:L653-L674 for LLaMA-2 13B).
// Letters: L layers, D d_model, F d_ff, N query heads, K key/value heads, H head dim, V vocab,
// T sequence length. Plain C++: no SimGrid, no YAML.
#include <string>
#include <string_view>
#include <vector>

namespace podsim {

struct TransformerSpec {
  std::string name;
  int layers = 0;      // L
  int d_model = 0;     // D
  int d_ff = 0;        // F
  int heads = 0;       // N, query heads
  int kv_heads = 0;    // K, key/value heads (K = N: MHA; K < N: GQA; K = 1: MQA)
  int head_dim = 0;    // H
  int vocab = 0;       // V
  bool gated_mlp = true;          // two up-projections (SwiGLU) + one down: 3DF; else 2DF
  bool tied_embeddings = false;   // input embedding and output projection share one [V, D]
  double param_bytes = 2;                    // bf16 weights (and bf16 gradients)
  double activation_bytes = 2;               // bf16 activations
  double optimizer_bytes_per_param = 8;      // Adam: two fp32 moments (training.md:L198-L200)
  double master_weight_bytes_per_param = 0;  // e.g. 4 for an fp32 master copy; the book has none
  int max_sequence_length = 0;               // tokens, from the published config
};

// Throws std::invalid_argument naming the field when a dimension is not positive, heads is
// not a multiple of kv_heads, or a byte size is negative. vocab may be 0 (no embeddings).
void validate_transformer_spec(const TransformerSpec& spec);

// Q, K, V, O projection weights of one layer: D*H*(N + 2K) + N*H*D (= 4DNH when K = N,
// transformers.md "Attention" table; with GQA the K and V projections shrink to D*K*H each).
double attention_params_per_layer(const TransformerSpec& spec);

// MLP weights of one layer: 3DF gated, 2DF plain (transformers.md "MLPs" and the gating note).
double mlp_params_per_layer(const TransformerSpec& spec);

// Input embedding plus output projection: 2VD untied, VD tied (training.md:L653-L674: "2VD").
double embedding_params(const TransformerSpec& spec);

// RMSNorm scales: two per layer plus the final one, 2LD + D. Elementwise, no matmul FLOPs;
// the book's "Other: D per layer" row (transformers.md), < 0.01% of any preset.
double norm_params(const TransformerSpec& spec);

// All parameters: L*(attention + mlp) + embeddings + norms.
double param_count(const TransformerSpec& spec);

// Forward matmul FLOPs per token, 2 per matmul weight (transformers.md: 2NPM forward): the
// L*(attention + mlp) projections and the output projection [D, V]; the input embedding is a
// lookup (no FLOPs) and norms are elementwise. Excludes dot-product attention (see below).
double matmul_flops_per_token_forward(const TransformerSpec& spec);

// Dot-product attention (QK^T and AV) forward FLOPs per token at sequence length seq_len:
// 2*T*N*H for each of the two matmuls, per layer: 4*T*N*H*L. This is the book's convention
// (transformers.md "Attention": 12BTSNH training = 3 x 4BTSNH forward with S = T), which counts
// the full T x T score matrix. causal_mask = true halves it, for kernels that skip the masked
// upper triangle (the book does not; it is off by default).
double attention_flops_per_token_forward(const TransformerSpec& spec, double seq_len,
                                         bool causal_mask = false);

// Training FLOPs per token: 3 x forward (forward 2, backward 4 per weight: transformers.md,
// "6 * num parameters * num tokens"). Rematerialisation is not counted (it is policy, not model).
double training_flops_per_token(const TransformerSpec& spec, double seq_len,
                                bool include_attention, bool causal_mask = false);

// Published LLaMA-2 and LLaMA-3(.1) shapes; sources cited in model_spec.cpp.
const std::vector<TransformerSpec>& model_presets();
// nullptr when no preset has that name.
const TransformerSpec* find_model_preset(std::string_view name);

}  // namespace podsim
