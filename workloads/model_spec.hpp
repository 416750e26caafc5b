#pragma once
// Decoder-only Transformer shapes, their parameter counts and FLOPs per token, in the scaling
// book's notation (transformers.md; training.md:L653-L674 for LLaMA-2 13B). Dense by default;
// an optional mixture-of-experts block (inference.md Question 5: "a dense model with E copies of
// the FFW block", k of them per token) and multi-head latent attention (DeepSeek-V2, arXiv
// 2405.04434 section 2.1) cover today's large MoE models.
// Letters: L layers, D d_model, F d_ff, N query heads, K key/value heads, H head dim, V vocab,
// T sequence length, E routed experts, k experts per token. Plain C++: no SimGrid, no YAML.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace podsim {

// gqa: query heads share K key/value heads of H dims (MHA when K = N, MQA when K = 1).
// mla: multi-head latent attention; keys and values come from a compressed latent (MlaSpec).
// none: no attention at all, only MLP blocks (the book's measured layer of "only 2 matmuls",
// inference.md F6: a model of MLPs is what such a measurement describes).
enum class AttentionKind { Gqa, Mla, None };

// Multi-head latent attention dims, named as in DeepSeek-V3's config.json (symbols of the
// DeepSeek-V2 paper, arXiv 2405.04434 eqs. 9-19, in brackets).
struct MlaSpec {
  int q_lora_rank = 0;       // [d_c'] query latent; 0: queries projected straight from D
  int kv_lora_rank = 0;      // [d_c] key/value latent, cached per token and layer
  int qk_nope_head_dim = 0;  // [d_h] per-head query/key dims without rotary embedding
  int qk_rope_head_dim = 0;  // [d_h^R] rotary part; the key's is shared by all heads and cached
  int v_head_dim = 0;        // per-head value dims
};

// Routed experts replace the MLP of every layer but the first dense_layers. Each expert is an
// MLP of width expert_d_ff (gated as the dense one); a router [D, E] scores the experts.
struct MoeSpec {
  int experts = 0;            // E, routed experts per MoE layer
  int experts_per_token = 0;  // k, routed experts each token passes through
  int shared_experts = 0;     // experts every token passes through as well (DeepSeek)
  int expert_d_ff = 0;        // MLP width of one expert, routed or shared
  int dense_layers = 0;       // the first layers keep a dense MLP of width d_ff
  // MaxText's interleave_moe_layer_step (Llama 4): of the layers past dense_layers, those whose
  // 0-based index l has (l + 1) % step == 0 are MoE, the others dense (d_ff wide); 1: all of
  // them (maxtext@e591f30 src/maxtext/models/llama4.py:281, determine_is_moe_layer).
  int interleave_moe_layer_step = 1;
};

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
  // Attention and MLP read the same normed input and add to the residual together (GPT-J,
  // PaLM; MaxText's synthetic decoder at its 2023-24 commits): one block a layer, one
  // tensor-parallel gather before it and one scatter after.
  bool parallel_block = false;
  bool tied_embeddings = false;   // input embedding and output projection share one [V, D]
  double param_bytes = 2;                    // bf16 weights (and bf16 gradients)
  double activation_bytes = 2;               // bf16 activations
  double optimizer_bytes_per_param = 8;      // Adam: two fp32 moments (training.md:L198-L200)
  double master_weight_bytes_per_param = 0;  // e.g. 4 for an fp32 master copy; the book has none
  double gradient_bytes_per_param = 0;       // 0: the stored weights' dtype (bf16, the book's); 4: fp32
                                             // accumulation (Megatron's main grads, 18 B/param)
  // The dtype the weights are stored in (MaxText's weight_dtype), when not param_bytes, the dtype
  // the matmuls read (MaxText's dtype): 4 for weight_dtype float32, MaxText's default
  // (base.yml:174 at e591f30), whose layers cast each weight to bf16 before its matmul
  // (linears.py:297). 0: stored as param_bytes.
  double weight_dtype_bytes = 0;
  int max_sequence_length = 0;               // tokens, from the published config
  AttentionKind attention = AttentionKind::Gqa;
  MlaSpec mla;                 // used when attention is Mla (heads is then N, kv_heads unused)
  std::optional<MoeSpec> moe;  // none: a dense model
};

// Throws std::invalid_argument naming the field when a dimension is not positive, heads is
// not a multiple of kv_heads, or a byte size is negative. vocab may be 0 (no embeddings).
// MoE fields are named "moe.<field>" (experts_per_token must be in [1, experts], expert_d_ff
// positive, dense_layers in [0, layers]); MLA fields "mla.<field>".
void validate_transformer_spec(const TransformerSpec& spec);

// Q, K, V, O projection weights of one layer. GQA: D*H*(N + 2K) + N*H*D (= 4DNH when K = N,
// transformers.md "Attention" table; with GQA the K and V projections shrink to D*K*H each).
// MLA: the DeepSeek-V2 projections W^DQ, W^UQ and W^QR (or one D x N(d_h + d_h^R) without a
// query latent), W^DKV and W^KR, W^UK and W^UV, and W^O (see model_spec.cpp).
double attention_params_per_layer(const TransformerSpec& spec);

// The dense MLP of one layer: 3DF gated, 2DF plain (transformers.md "MLPs" and the gating
// note). Every layer of a dense model; only the first moe.dense_layers of an MoE model.
double mlp_params_per_layer(const TransformerSpec& spec);

// One expert's MLP, routed or shared: 3 D expert_d_ff gated, 2 D expert_d_ff plain. 0 if dense.
double expert_params(const TransformerSpec& spec);
// An MoE layer as the dense layer whose per-token tensors match it: each token's k routed experts
// and the shared ones side by side, one MLP (k + shared) x expert_d_ff wide (what its saved and
// offloaded activations weigh: memory.cpp, block_kernels.cpp). The spec itself where not MoE.
TransformerSpec moe_layer_as_dense(const TransformerSpec& spec);

// The router of one MoE layer: a [D, E] matmul scoring the experts. 0 if dense.
double router_params_per_layer(const TransformerSpec& spec);

// Layers with routed experts: past dense_layers, every interleave_moe_layer_step-th (all of
// them at step 1: L - dense_layers), or 0 for a dense model.
int moe_layer_count(const TransformerSpec& spec);
// Whether layer l (0-based) has routed experts, and its index among the MoE layers (-1 if not).
bool is_moe_layer(const TransformerSpec& spec, int l);
int moe_layer_index(const TransformerSpec& spec, int l);

// Bytes a parameter is stored in (weight_dtype_bytes, else param_bytes) and its gradient's
// (gradient_bytes_per_param, else the stored weights' dtype: a gradient has its parameter's
// dtype, MaxText's grad_dtype float32 for float32 weights, train.py:535 at e591f30).
double stored_weight_bytes(const TransformerSpec& spec);
double gradient_bytes(const TransformerSpec& spec);

// The MLP weights of every layer: all of them (param_count) or those one token passes through
// (activated_param_count): L*mlp for a dense model; for an MoE model dense_layers*mlp +
// moe layers x ((E or k) + shared experts) x expert + router.
double mlp_params_all_layers(const TransformerSpec& spec, bool activated_only);

// Input embedding plus output projection: 2VD untied, VD tied (training.md:L653-L674: "2VD").
double embedding_params(const TransformerSpec& spec);

// RMSNorm scales: two per layer plus the final one, 2LD + D. Elementwise, no matmul FLOPs;
// the book's "Other: D per layer" row (transformers.md), < 0.01% of any preset.
double norm_params(const TransformerSpec& spec);

// All parameters: L*(attention + mlp) + embeddings + norms; for an MoE model every expert and
// router counts (inference.md Question 5: L*D*(3EF + 2H(N + K)) + D*V, "212e9" for E = 16).
double param_count(const TransformerSpec& spec);

// Parameters one token passes through: as param_count, but only k routed experts (plus the
// shared ones and the router) per MoE layer (inference.md Question 5: "31.2e9" for k = 2). Both
// embeddings count, as in param_count and the seed's formula; equals param_count when dense.
double activated_param_count(const TransformerSpec& spec);

// Forward matmul FLOPs per token, 2 per matmul weight (transformers.md: 2NPM forward): the
// L*attention projections, the MLPs (for an MoE model only the activated ones: inference.md
// Question 5 (4), "still 2ND where D is the activated parameter count") and the output
// projection [D, V]; the input embedding is a lookup (no FLOPs) and norms are elementwise.
// Excludes dot-product attention (see below).
double matmul_flops_per_token_forward(const TransformerSpec& spec);

// Elements cached per token of context for the whole model. GQA: a K and a V vector of K heads x
// H per layer, 2*L*K*H (inference.md, "KV cache"). MLA: the KV latent and the shared rotary key
// per layer, L*(kv_lora_rank + qk_rope_head_dim) (DeepSeek-V2 eq. 9-14: only c_t^KV and k_t^R
// are cached).
double kv_cache_elements_per_token(const TransformerSpec& spec);

// MLA under ring attention (context parallelism), per token and layer: what a ring block carries, the
// latent and the shared rotary key MLA caches, kv_lora_rank + qk_rope_head_dim elements (every
// head's K and V come from them, so a chip of any tensor shard needs them whole); and the FLOPs
// to up-project one received token to K and V heads before scoring it, W^UK and W^UV:
// 2 kv_lora_rank N (qk_nope_head_dim + v_head_dim) per layer (DeepSeek-V2 eqs. 12-13), over all
// N heads (a tensor shard does its share). 0 for a model without MLA.
double mla_ring_elements_per_layer(const TransformerSpec& spec);
double mla_up_projection_flops_per_layer(const TransformerSpec& spec);

// Dot-product attention (QK^T and AV) forward FLOPs per token at sequence length seq_len:
// 2*T*N*H for each of the two matmuls, per layer: 4*T*N*H*L (MLA: 2*T*N*(d_h + d_h^R) for QK^T
// and 2*T*N*v_head_dim for AV, without weight absorption). This is the book's convention
// (transformers.md "Attention": 12BTSNH training = 3 x 4BTSNH forward with S = T), which counts
// the full T x T score matrix. causal_mask = true halves it, for kernels that skip the masked
// upper triangle (the book does not; it is off by default).
double attention_flops_per_token_forward(const TransformerSpec& spec, double seq_len,
                                         bool causal_mask = false);

// Training FLOPs per token: 3 x forward (forward 2, backward 4 per weight: transformers.md,
// "6 * num parameters * num tokens"). Rematerialisation is not counted (it is policy, not model).
double training_flops_per_token(const TransformerSpec& spec, double seq_len,
                                bool include_attention, bool causal_mask = false);

// Published LLaMA-2 and LLaMA-3(.1) shapes (dense, GQA); sources cited in model_spec.cpp.
const std::vector<TransformerSpec>& model_presets();
// Mixture-of-experts shapes: Mixtral 8x7B, DeepSeek-V3 (MLA, without its multi-token-prediction
// module), Qwen3-235B-A22B and the seed chapter's MoE variant (inference.md Question 5);
// sources cited in model_spec.cpp.
const std::vector<TransformerSpec>& moe_model_presets();
// Either list's preset of that name; nullptr when none has it.
const TransformerSpec* find_model_preset(std::string_view name);

}  // namespace podsim
