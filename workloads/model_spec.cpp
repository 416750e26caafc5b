#include "workloads/model_spec.hpp"

#include <stdexcept>
#include <string>

namespace podsim {

namespace {

void require_positive(const TransformerSpec& spec, const char* field, double value) {
  if (!(value > 0)) {
    throw std::invalid_argument("TransformerSpec '" + spec.name + "': " + field +
                                " must be positive, got " + std::to_string(value));
  }
}

void require_non_negative(const TransformerSpec& spec, const char* field, double value) {
  if (!(value >= 0)) {
    throw std::invalid_argument("TransformerSpec '" + spec.name + "': " + field +
                                " must be >= 0, got " + std::to_string(value));
  }
}

// Shorthands in the book's letters, as doubles so products never overflow int.
double L(const TransformerSpec& s) { return s.layers; }
double D(const TransformerSpec& s) { return s.d_model; }
double F(const TransformerSpec& s) { return s.d_ff; }
double N(const TransformerSpec& s) { return s.heads; }
double K(const TransformerSpec& s) { return s.kv_heads; }
double H(const TransformerSpec& s) { return s.head_dim; }
double V(const TransformerSpec& s) { return s.vocab; }

TransformerSpec llama(std::string name, int layers, int d_model, int d_ff, int heads,
                      int kv_heads, int vocab, int max_sequence_length) {
  TransformerSpec s;
  s.name = std::move(name);
  s.layers = layers;
  s.d_model = d_model;
  s.d_ff = d_ff;
  s.heads = heads;
  s.kv_heads = kv_heads;
  s.head_dim = 128;  // every LLaMA-2/3 size: d_model / heads = 128
  s.vocab = vocab;
  s.gated_mlp = true;         // SwiGLU: gate_proj, up_proj, down_proj
  s.tied_embeddings = false;  // "tie_word_embeddings": false in every config below
  s.max_sequence_length = max_sequence_length;
  return s;
}

}  // namespace

void validate_transformer_spec(const TransformerSpec& spec) {
  require_positive(spec, "layers", spec.layers);
  require_positive(spec, "d_model", spec.d_model);
  require_positive(spec, "d_ff", spec.d_ff);
  require_positive(spec, "heads", spec.heads);
  require_positive(spec, "kv_heads", spec.kv_heads);
  require_positive(spec, "head_dim", spec.head_dim);
  require_non_negative(spec, "vocab", spec.vocab);
  require_non_negative(spec, "param_bytes", spec.param_bytes);
  require_non_negative(spec, "activation_bytes", spec.activation_bytes);
  require_non_negative(spec, "optimizer_bytes_per_param", spec.optimizer_bytes_per_param);
  require_non_negative(spec, "master_weight_bytes_per_param", spec.master_weight_bytes_per_param);
  require_non_negative(spec, "max_sequence_length", spec.max_sequence_length);
  if (spec.heads % spec.kv_heads != 0) {
    throw std::invalid_argument("TransformerSpec '" + spec.name + "': heads (" +
                                std::to_string(spec.heads) + ") must be a multiple of kv_heads (" +
                                std::to_string(spec.kv_heads) + ")");
  }
}

double attention_params_per_layer(const TransformerSpec& s) {
  // W_Q [D, N, H] + W_K, W_V [D, K, H] + W_O [N, H, D] (transformers.md "Attention" table, with
  // the GQA note: K merely has to divide N). For K = N this is the book's 4DNH.
  return D(s) * H(s) * (N(s) + 2 * K(s)) + N(s) * H(s) * D(s);
}

double mlp_params_per_layer(const TransformerSpec& s) {
  // transformers.md "MLPs": W_in1, W_in2, W_out = 3DF; without the gating einsum 2DF.
  return (s.gated_mlp ? 3.0 : 2.0) * D(s) * F(s);
}

double embedding_params(const TransformerSpec& s) {
  // training.md:L653-L674: "vocab params: 2VD" (separate embedding and output matrices).
  return V(s) * D(s) * (s.tied_embeddings ? 1.0 : 2.0);
}

double norm_params(const TransformerSpec& s) {
  // Pre-attention and pre-MLP RMSNorm per layer, plus the final norm.
  return 2 * L(s) * D(s) + D(s);
}

double param_count(const TransformerSpec& s) {
  // transformers.md Question 1: L*(3DF + 4DNH + D) + 2DV, generalised to GQA and 2 norms/layer.
  return L(s) * (attention_params_per_layer(s) + mlp_params_per_layer(s)) + embedding_params(s) +
         norm_params(s);
}

double matmul_flops_per_token_forward(const TransformerSpec& s) {
  // 2 FLOPs per weight per token forward (transformers.md: "2NPM in the forward pass"). The
  // output projection A[B,T,D] . W_unembed[D,V] is a matmul even when tied; the input embedding
  // is a gather.
  const double matmul_weights =
      L(s) * (attention_params_per_layer(s) + mlp_params_per_layer(s)) + V(s) * D(s);
  return 2 * matmul_weights;
}

double attention_flops_per_token_forward(const TransformerSpec& s, double seq_len,
                                         bool causal_mask) {
  if (!(seq_len >= 0)) {
    throw std::invalid_argument("attention_flops_per_token_forward: seq_len must be >= 0, got " +
                                std::to_string(seq_len));
  }
  // transformers.md "Attention": Q[B,T,N,H].K[B,S,N,H] and S[B,T,S,N].V[B,S,N,H] are 6BTSNH
  // training FLOPs each, i.e. 2BTSNH forward each. Per token (divide by BT), with S = T, over L
  // layers: 4*T*N*H*L. With GQA the FLOPs still scale with N (each query head attends).
  const double full = 4 * seq_len * N(s) * H(s) * L(s);
  return causal_mask ? full / 2 : full;
}

double training_flops_per_token(const TransformerSpec& s, double seq_len, bool include_attention,
                                bool causal_mask) {
  // Backward = 2 x forward (dW and dX matmuls), so training = 3 x forward: 6P per token for the
  // weights (transformers.md), 12*T*N*H*L for attention (its "12BT^2NH" per layer / BT).
  double forward = matmul_flops_per_token_forward(s);
  if (include_attention) forward += attention_flops_per_token_forward(s, seq_len, causal_mask);
  return 3 * forward;
}

const std::vector<TransformerSpec>& model_presets() {
  // Shapes from the published Hugging Face config.json files (hidden_size, intermediate_size,
  // num_hidden_layers, num_attention_heads, num_key_value_heads, vocab_size,
  // max_position_embeddings) and the papers: LLaMA 2 (Touvron et al. 2023, Table 1: 4k
  // context, GQA for 70B only); The Llama 3 Herd of Models (Dubey et al. 2024, Table 3: layers,
  // model dim, FFN dim, heads, 8 KV heads, 128K vocab). LLaMA-2 13B also in training.md:L653-L674.
  static const std::vector<TransformerSpec> presets = {
      //     name          L    D      F      N    K  V       max seq
      llama("llama2-7b",   32,  4096,  11008, 32,  32, 32000,  4096),   // meta-llama/Llama-2-7b-hf
      llama("llama2-13b",  40,  5120,  13824, 40,  40, 32000,  4096),   // meta-llama/Llama-2-13b-hf
      llama("llama2-70b",  80,  8192,  28672, 64,  8,  32000,  4096),   // meta-llama/Llama-2-70b-hf
      llama("llama3-8b",   32,  4096,  14336, 32,  8,  128256, 8192),   // meta-llama/Meta-Llama-3-8B
      llama("llama3-70b",  80,  8192,  28672, 64,  8,  128256, 8192),   // meta-llama/Meta-Llama-3-70B
      // 405B exists only as Llama 3.1 (meta-llama/Llama-3.1-405B): 128K context.
      llama("llama3-405b", 126, 16384, 53248, 128, 8,  128256, 131072),
  };
  return presets;
}

const TransformerSpec* find_model_preset(std::string_view name) {
  for (const auto& p : model_presets()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

}  // namespace podsim
