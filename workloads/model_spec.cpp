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

// A preset with routed experts. The MoE presets below mostly differ from llama() in head_dim.
TransformerSpec moe_model(std::string name, int layers, int d_model, int d_ff, int heads, int kv_heads,
                          int head_dim, int vocab, bool tied_embeddings, int max_sequence_length, MoeSpec moe) {
  TransformerSpec s;
  s.name = std::move(name);
  s.layers = layers;
  s.d_model = d_model;
  s.d_ff = d_ff;
  s.heads = heads;
  s.kv_heads = kv_heads;
  s.head_dim = head_dim;
  s.vocab = vocab;
  s.gated_mlp = true;   // every expert below is SwiGLU (gate, up, down)
  s.tied_embeddings = tied_embeddings;
  s.max_sequence_length = max_sequence_length;
  s.moe = moe;
  return s;
}

[[noreturn]] void fail_field(const TransformerSpec& spec, const std::string& message) {
  throw std::invalid_argument("TransformerSpec '" + spec.name + "': " + message);
}

void validate_moe(const TransformerSpec& spec, const MoeSpec& moe) {
  require_positive(spec, "moe.experts", moe.experts);
  require_positive(spec, "moe.experts_per_token", moe.experts_per_token);
  if (moe.experts_per_token > moe.experts)
    fail_field(spec, "moe.experts_per_token (" + std::to_string(moe.experts_per_token) +
                         ") must be at most moe.experts (" + std::to_string(moe.experts) + ")");
  require_non_negative(spec, "moe.shared_experts", moe.shared_experts);
  require_positive(spec, "moe.expert_d_ff", moe.expert_d_ff);
  require_non_negative(spec, "moe.dense_layers", moe.dense_layers);
  if (moe.dense_layers > spec.layers)
    fail_field(spec, "moe.dense_layers (" + std::to_string(moe.dense_layers) + ") must be at most layers (" +
                         std::to_string(spec.layers) + ")");
  if (moe.interleave_moe_layer_step < 1 || moe.interleave_moe_layer_step > spec.layers)
    fail_field(spec, "moe.interleave_moe_layer_step (" + std::to_string(moe.interleave_moe_layer_step) +
                         ") must be 1 to layers (" + std::to_string(spec.layers) + ")");
}

void validate_mla(const TransformerSpec& spec) {
  require_non_negative(spec, "mla.q_lora_rank", spec.mla.q_lora_rank);
  require_positive(spec, "mla.kv_lora_rank", spec.mla.kv_lora_rank);
  require_positive(spec, "mla.qk_nope_head_dim", spec.mla.qk_nope_head_dim);
  require_positive(spec, "mla.qk_rope_head_dim", spec.mla.qk_rope_head_dim);
  require_positive(spec, "mla.v_head_dim", spec.mla.v_head_dim);
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
  require_non_negative(spec, "weight_dtype_bytes", spec.weight_dtype_bytes);
  require_non_negative(spec, "max_sequence_length", spec.max_sequence_length);
  if (spec.heads % spec.kv_heads != 0) {
    throw std::invalid_argument("TransformerSpec '" + spec.name + "': heads (" +
                                std::to_string(spec.heads) + ") must be a multiple of kv_heads (" +
                                std::to_string(spec.kv_heads) + ")");
  }
  if (spec.moe) validate_moe(spec, *spec.moe);
  if (spec.attention == AttentionKind::Mla) validate_mla(spec);
}

double attention_params_per_layer(const TransformerSpec& s) {
  if (s.attention == AttentionKind::None) return 0;
  if (s.attention == AttentionKind::Mla) {
    // DeepSeek-V2 (arXiv 2405.04434) eqs. 9-19, shapes as in DeepSeek-V3's modeling code
    // (q_a_proj, q_b_proj, kv_a_proj_with_mqa, kv_b_proj, o_proj):
    //   queries: W^DQ [D, d_c'] and W^UQ, W^QR [d_c', N(d_h + d_h^R)], or [D, N(d_h + d_h^R)]
    //            when q_lora_rank is 0;
    //   keys/values: W^DKV and W^KR [D, d_c + d_h^R]; W^UK, W^UV [d_c, N(d_h + v_head_dim)];
    //   output: W^O [N v_head_dim, D].
    // The latents' RMSNorm scales (d_c' + d_c per layer) are in norm_params.
    const MlaSpec& m = s.mla;
    const double qk_head = static_cast<double>(m.qk_nope_head_dim) + m.qk_rope_head_dim;
    const double queries = m.q_lora_rank > 0 ? D(s) * m.q_lora_rank + double(m.q_lora_rank) * N(s) * qk_head
                                             : D(s) * N(s) * qk_head;
    const double latent = D(s) * (double(m.kv_lora_rank) + m.qk_rope_head_dim);
    const double up = double(m.kv_lora_rank) * N(s) * (double(m.qk_nope_head_dim) + m.v_head_dim);
    const double out = N(s) * m.v_head_dim * D(s);
    return queries + latent + up + out;
  }
  // W_Q [D, N, H] + W_K, W_V [D, K, H] + W_O [N, H, D] (transformers.md "Attention" table, with
  // the GQA note: K merely has to divide N). For K = N this is the book's 4DNH.
  return D(s) * H(s) * (N(s) + 2 * K(s)) + N(s) * H(s) * D(s);
}

double mlp_params_per_layer(const TransformerSpec& s) {
  // transformers.md "MLPs": W_in1, W_in2, W_out = 3DF; without the gating einsum 2DF.
  return (s.gated_mlp ? 3.0 : 2.0) * D(s) * F(s);
}

TransformerSpec moe_layer_as_dense(const TransformerSpec& spec) {
  TransformerSpec layer = spec;
  if (spec.moe) layer.d_ff = (spec.moe->experts_per_token + spec.moe->shared_experts) * spec.moe->expert_d_ff;
  return layer;
}

double expert_params(const TransformerSpec& s) {
  // One expert is one MLP of width expert_d_ff (inference.md Question 5: "3 * E * D * F" for E
  // experts of the dense width F).
  if (!s.moe) return 0;
  return (s.gated_mlp ? 3.0 : 2.0) * D(s) * s.moe->expert_d_ff;
}

double router_params_per_layer(const TransformerSpec& s) {
  // The gate's weight [E, D], no bias (Mixtral's and Qwen3's "gate" nn.Linear(D, E, bias=False);
  // DeepSeek-V3's MoEGate weight [n_routed_experts, hidden_size]).
  if (!s.moe) return 0;
  return D(s) * s.moe->experts;
}

bool is_moe_layer(const TransformerSpec& s, int l) {
  return s.moe && l >= s.moe->dense_layers && l < s.layers && (l + 1) % s.moe->interleave_moe_layer_step == 0;
}

int moe_layer_count(const TransformerSpec& s) {
  int n = 0;
  for (int l = 0; s.moe && l < s.layers; ++l) n += is_moe_layer(s, l) ? 1 : 0;
  return n;
}

int moe_layer_index(const TransformerSpec& s, int l) {
  if (!is_moe_layer(s, l)) return -1;
  int n = 0;
  for (int i = 0; i < l; ++i) n += is_moe_layer(s, i) ? 1 : 0;
  return n;
}

double stored_weight_bytes(const TransformerSpec& s) {
  return s.weight_dtype_bytes > 0 ? s.weight_dtype_bytes : s.param_bytes;
}

double gradient_bytes(const TransformerSpec& s) {
  return s.gradient_bytes_per_param > 0 ? s.gradient_bytes_per_param : stored_weight_bytes(s);
}

double mlp_params_all_layers(const TransformerSpec& s, bool activated_only) {
  if (!s.moe) return L(s) * mlp_params_per_layer(s);
  const MoeSpec& m = *s.moe;
  const double experts = (activated_only ? m.experts_per_token : m.experts) + double(m.shared_experts);
  return (s.layers - moe_layer_count(s)) * mlp_params_per_layer(s) +
         moe_layer_count(s) * (experts * expert_params(s) + router_params_per_layer(s));
}

double embedding_params(const TransformerSpec& s) {
  // training.md:L653-L674: "vocab params: 2VD" (separate embedding and output matrices).
  return V(s) * D(s) * (s.tied_embeddings ? 1.0 : 2.0);
}

double norm_params(const TransformerSpec& s) {
  // Pre-attention and pre-MLP RMSNorm per layer, plus the final norm; MLA adds one RMSNorm on
  // each latent (DeepSeek-V3's q_a_layernorm and kv_a_layernorm).
  const double dense = 2 * L(s) * D(s) + D(s);
  if (s.attention != AttentionKind::Mla) return dense;
  return dense + L(s) * (double(s.mla.q_lora_rank) + s.mla.kv_lora_rank);
}

double param_count(const TransformerSpec& s) {
  // transformers.md Question 1: L*(3DF + 4DNH + D) + 2DV, generalised to GQA and 2 norms/layer.
  if (!s.moe)
    return L(s) * (attention_params_per_layer(s) + mlp_params_per_layer(s)) + embedding_params(s) +
           norm_params(s);
  // inference.md Question 5 (1): L*D*(3EF + 2H(N + K)) + D*V, with dense layers, shared experts,
  // routers and norms.
  return L(s) * attention_params_per_layer(s) + mlp_params_all_layers(s, false) + embedding_params(s) +
         norm_params(s);
}

double activated_param_count(const TransformerSpec& s) {
  if (!s.moe) return param_count(s);
  // inference.md Question 5 (1): "k instead of E": L*D*(3kF + 2H(N + K)) + D*V.
  return L(s) * attention_params_per_layer(s) + mlp_params_all_layers(s, true) + embedding_params(s) +
         norm_params(s);
}

double matmul_flops_per_token_forward(const TransformerSpec& s) {
  // 2 FLOPs per weight per token forward (transformers.md: "2NPM in the forward pass"). The
  // output projection A[B,T,D] . W_unembed[D,V] is a matmul even when tied; the input embedding
  // is a gather.
  if (!s.moe) {
    const double matmul_weights =
        L(s) * (attention_params_per_layer(s) + mlp_params_per_layer(s)) + V(s) * D(s);
    return 2 * matmul_weights;
  }
  // inference.md Question 5 (4): 2 x the activated parameters; the router [D, E] is a matmul
  // every token pays for.
  const double matmul_weights = L(s) * attention_params_per_layer(s) + mlp_params_all_layers(s, true) + V(s) * D(s);
  return 2 * matmul_weights;
}

double kv_cache_elements_per_token(const TransformerSpec& s) {
  if (s.attention == AttentionKind::None) return 0;
  if (s.attention == AttentionKind::Mla) {
    // DeepSeek-V2 section 2.1.2-2.1.3: during inference only c_t^KV (d_c) and the shared rotary
    // key k_t^R (d_h^R) are cached, (d_c + d_h^R) l elements per token (its Table 1).
    return L(s) * (double(s.mla.kv_lora_rank) + s.mla.qk_rope_head_dim);
  }
  // A K and a V vector of K heads x H per layer (inference.md, "KV cache").
  return 2.0 * s.layers * s.kv_heads * s.head_dim;
}

double mla_ring_elements_per_layer(const TransformerSpec& s) {
  if (s.attention != AttentionKind::Mla) return 0;
  return double(s.mla.kv_lora_rank) + s.mla.qk_rope_head_dim;
}

double mla_up_projection_flops_per_layer(const TransformerSpec& s) {
  if (s.attention != AttentionKind::Mla) return 0;
  return 2 * double(s.mla.kv_lora_rank) * N(s) * (double(s.mla.qk_nope_head_dim) + s.mla.v_head_dim);
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
  // MLA without weight absorption: QK^T over d_h + d_h^R dims per head, AV over v_head_dim
  // (DeepSeek-V2 eqs. 16-18).
  if (s.attention == AttentionKind::None) return 0;
  const double full =
      s.attention == AttentionKind::Mla
          ? 2 * seq_len * N(s) * (double(s.mla.qk_nope_head_dim) + s.mla.qk_rope_head_dim + s.mla.v_head_dim) * L(s)
          : 4 * seq_len * N(s) * H(s) * L(s);
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
      // Llama 3.1 (meta-llama/Llama-3.1-8B, -70B): the Llama 3 shapes with RoPE scaling to a
      // 131,072-token context (max_position_embeddings 131072; the Llama 3 paper, sec. 3.4.2:
      // "long-context pre-training ... up to 128K"). Cross-read in Megatron's llama3.1-8B
      // model arguments (--max-position-embeddings 131072, --num-query-groups 8).
      llama("llama3.1-8b",  32,  4096,  14336, 32, 8,  128256, 131072),
      llama("llama3.1-70b", 80,  8192,  28672, 64, 8,  128256, 131072),
      // 405B exists only as Llama 3.1 (meta-llama/Llama-3.1-405B): 128K context.
      llama("llama3-405b", 126, 16384, 53248, 128, 8,  128256, 131072),
      // MaxText's src/maxtext/configs/models/mistral-7b.yml at e591f30 (and at its
      // tpu-recipes-v0.1.2 tag, which the v6e-8 recipe ran): base_emb_dim 4096,
      // base_num_query_heads 32, base_num_kv_heads 8, base_mlp_dim 14336, 32 layers, head_dim
      // 128, SwiGLU, vocab_size 32000, logits_via_embedding false. Mistral-7B v0.1's 4,096-token
      // sliding window is not in MaxText's config: its attention_type stays 'global' and
      // sliding_window_size 0 (base.yml at tpu-recipes-v0.1.2, lines 218-219), so MaxText runs
      // full causal attention, as this preset does. 32,768 positions (mistralai/Mistral-7B-v0.1
      // config.json max_position_embeddings).
      llama("mistral-7b", 32, 4096, 14336, 32, 8, 32000, 32768),
  };
  return presets;
}

const std::vector<TransformerSpec>& moe_model_presets() {
  static const std::vector<TransformerSpec> presets = [] {
    std::vector<TransformerSpec> out;
    // mistralai/Mixtral-8x7B-v0.1 config.json (read at https://huggingface.co/mistralai/
    // Mixtral-8x7B-Instruct-v0.1/blob/eba92302a2861cdc0098cc54bc9f17cb2c47eb61/config.json, the
    // same architecture): hidden_size 4096, intermediate_size 14336 (each expert),
    // num_hidden_layers 32, num_attention_heads 32, num_key_value_heads 8, head_dim 128,
    // num_local_experts 8, num_experts_per_tok 2, vocab_size 32000, tie_word_embeddings false,
    // max_position_embeddings 32768. Every layer is MoE; d_ff is the same 14336 (unused).
    // Model card: 46.7B total, 12.9B active parameters.
    out.push_back(moe_model("mixtral-8x7b", 32, 4096, 14336, 32, 8, 128, 32000, false, 32768,
                            MoeSpec{8, 2, 0, 14336, 0}));

    // MaxText's MaxText/configs/models/mixtral-8x22b.yml at 261a8be0 (docs/reference/
    // tpu-recipes-runs.md 2.5; the same as mistralai/Mixtral-8x22B-v0.1's config.json):
    // base_emb_dim 6144, base_num_query_heads 48, base_num_kv_heads 8, head_dim 128,
    // base_mlp_dim 16384 (each expert), base_num_decoder_layers 56, num_experts 8,
    // num_experts_per_tok 2, vocab_size 32768, logits_via_embedding false; 65,536 positions.
    out.push_back(moe_model("mixtral-8x22b", 56, 6144, 16384, 48, 8, 128, 32768, false, 65536,
                            MoeSpec{8, 2, 0, 16384, 0}));

    // deepseek-ai/DeepSeek-V3: github.com/deepseek-ai/DeepSeek-V3 inference/configs/
    // config_671B.json at 9b4e978 (vocab_size 129280, dim 7168, inter_dim 18432, moe_inter_dim
    // 2048, n_layers 61, n_dense_layers 3, n_heads 128, n_routed_experts 256, n_shared_experts 1,
    // n_activated_experts 8, q_lora_rank 1536, kv_lora_rank 512, qk_nope_head_dim 128,
    // qk_rope_head_dim 64, v_head_dim 128), the Hugging Face config.json's hidden_size,
    // intermediate_size, moe_intermediate_size, first_k_dense_replace, num_key_value_heads 128
    // and max_position_embeddings 163840; tie_word_embeddings false. The multi-token-prediction
    // module (num_nextn_predict_layers 1) is left out, as in the paper's 671B (arXiv 2412.19437:
    // "671B total parameters with 37B activated for each token"). head_dim is the query/key
    // head (d_h + d_h^R = 192), kept for code that does not know MLA.
    TransformerSpec v3 = moe_model("deepseek-v3", 61, 7168, 18432, 128, 128, 192, 129280, false, 163840,
                                   MoeSpec{256, 8, 1, 2048, 3});
    v3.attention = AttentionKind::Mla;
    v3.mla = MlaSpec{1536, 512, 128, 64, 128};
    out.push_back(v3);

    // Qwen/Qwen3-235B-A22B config.json: hidden_size 4096, num_hidden_layers 94,
    // num_attention_heads 64, num_key_value_heads 4, head_dim 128, num_experts 128,
    // num_experts_per_tok 8, moe_intermediate_size 1536, intermediate_size 12288 (unused:
    // mlp_only_layers [], decoder_sparse_step 1), vocab_size 151936, tie_word_embeddings false,
    // max_position_embeddings 40960; read in its copies github.com/AI-Hypercomputer/maxtext
    // src/MaxText/configs/models/qwen3-235b-a22b.yml at 1e3dfac and MindSpeed-RL's
    // configs/model/qwen3_235b_a22b.yaml. Model card: 235B total, 22B activated, 234B
    // non-embedding. Its per-head q_norm and k_norm (2H per layer, 24k in all) are not counted.
    out.push_back(moe_model("qwen3-235b-a22b", 94, 4096, 12288, 64, 4, 128, 151936, false, 40960,
                            MoeSpec{128, 8, 0, 1536, 0}));

    // Llama 4 Maverick (meta-llama/Llama-4-Maverick-17B-128E) as MaxText defines it:
    // src/maxtext/configs/models/llama4-17b-128e.yml at e591f30: base_emb_dim 5120, 48 layers,
    // 40 query / 8 KV heads (head_dim 5120 / 40 = 128), base_mlp_dim 16384 (the dense layers),
    // base_moe_mlp_dim 8192 (each routed and the shared expert), num_experts 128,
    // num_experts_per_tok 1, shared_experts 1, vocab_size 202048, interleave_moe_layer_step 2
    // ("every 2nd layer is MoE layer, and 1st layer is dense layer": layers 1, 3, 5, ... by
    // llama4.py:281), logits_via_embedding false (base.yml). Its attention is chunked (8,192
    // tokens, chunk_attn_window_size) on the RoPE layers and global on every fourth (NoPE):
    // at 8,192-token sequences, as the v5p recipe runs, each is plain causal attention.
    // 1,048,576 positions (the model card's context).
    TransformerSpec maverick = moe_model("llama4-17b-128e", 48, 5120, 16384, 40, 8, 128, 202048, false, 1048576,
                                         MoeSpec{128, 1, 1, 8192, 0});
    maverick.moe->interleave_moe_layer_step = 2;
    out.push_back(maverick);

    // The seed chapter's model (inference.md, "Worked problems": L 64, D 4096, F 16384, N 32,
    // K 8, H 256, V 32128, input and output embeddings shared) made an MoE by Question 5:
    // E = 16, k = 2, every expert the dense F wide: 212e9 total, 31.2e9 activated. Question 2
    // asks for 128k-token sequences: max_sequence_length 131072.
    out.push_back(moe_model("seed-moe-e16-k2", 64, 4096, 16384, 32, 8, 256, 32128, true, 131072,
                            MoeSpec{16, 2, 0, 16384, 0}));
    return out;
  }();
  return presets;
}

const TransformerSpec* find_model_preset(std::string_view name) {
  for (const auto& p : model_presets()) {
    if (p.name == name) return &p;
  }
  for (const auto& p : moe_model_presets()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

}  // namespace podsim
