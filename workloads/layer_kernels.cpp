#include "workloads/layer_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "workloads/roofline.hpp"

namespace podsim {

namespace {

double up(double x, double to) { return std::ceil(x / to) * to; }

// A weight matmul [T, K] @ [K, N]: 2 T K N FLOPs, or what the MXU does with the shape padded
// (matmul_shapes.hpp: K and N to the array, M to 8 rows); reads the weights and its input,
// writes its output. Backward: dX = dY W^T and dW = X^T dY, reading X, dY and W, writing dX
// and dW (the gradient in the weights' dtype).
Kernel matmul(std::string name, bool mlp, std::vector<std::string> inputs, double k, double n, double tokens,
              const TransformerSpec& model, const ChipSpec& chip, double output_bytes_per_element = 0) {
  const double a = model.activation_bytes;
  const double out = output_bytes_per_element > 0 ? output_bytes_per_element : a;
  Kernel m;
  m.name = std::move(name);
  m.kind = KernelKind::Matmul;
  m.mlp = mlp;
  m.backward_needs = inputs;
  m.inputs = std::move(inputs);
  const double rows = tokens > 0 ? tokens : 1;
  m.flops_per_token = chip.mxu_padding ? 2 * up(rows, 8) * up(k, chip.mxu_size) * up(n, chip.mxu_size) / rows
                                       : 2 * k * n;
  m.bytes_per_token = k * a + n * out;
  m.backward_bytes_per_token = 2 * k * a + n * out;
  m.weight_bytes = k * n * model.param_bytes;
  m.output_bytes_per_token = n * out;
  m.quantizable = true;
  m.k_dim = k;
  m.n_dim = n;
  m.element_bytes = a;
  return m;
}

Kernel vector(std::string name, bool mlp, std::vector<std::string> inputs, std::vector<std::string> needs,
              double forward_bytes, double backward_bytes, double output_bytes) {
  Kernel v;
  v.name = std::move(name);
  v.mlp = mlp;
  v.inputs = std::move(inputs);
  v.backward_needs = std::move(needs);
  v.bytes_per_token = forward_bytes;
  v.backward_bytes_per_token = backward_bytes;
  v.output_bytes_per_token = output_bytes;
  return v;
}

// Causal flash attention over sequences of `sequence` tokens in blocks of kFlashBlockTokens:
// query block i computes key blocks 1..i, so a query attends to (n + 1) / 2 blocks on average
// (n blocks a sequence) and reads K and V that often. QK^T and AV are 4 H FLOPs per query head
// and key; the backward recomputes the scores and runs dV, dP, dQ and dK: 5 matmuls to the
// forward's 2 (FlashAttention-2, Dao 2023, section 3.1.2).
// What every attention kernel is: `context` from the rotated Q, K and V, its backward reading them
// and its output; the chip's query and KV heads (KV heads fewer than the chips copied, one each).
struct AttentionShape {
  Kernel kernel;
  double heads = 0, kv_heads = 0, bytes = 0;
  double qk_dim = 0, v_dim = 0;           // per head: what QK^T contracts, what AV outputs
  double mxu_qk_dim = 0, mxu_v_dim = 0;   // the same as the score matmuls run them
  // FLOPs per query head and key: QK^T and AV forward; backward FlashAttention-2's five
  // (S = QK^T again, dP = dO V^T, dV = P^T dO over v; dQ = dS K, dK = dS^T Q over qk).
  double forward_flops() const { return 2 * (mxu_qk_dim + mxu_v_dim); }
  double flash_backward_factor() const { return (3 * mxu_qk_dim + 2 * mxu_v_dim) / (mxu_qk_dim + mxu_v_dim); }
};
// With mxu_padding, each score matmul uses its head dimension padded to the array: QK^T contracts
// over the query/key dimension, AV outputs the value's (a head_dim of 128 on v6e's 256-wide MXU
// does half the work per pass). GQA: both are head_dim (the backward 2.5x the forward). MLA
// (DeepSeek-V2 eqs. 16-18, MaxText's attention_mla.py at 3eb77db3, which hands splash attention
// the materialised [N, d_h + d_h^R] queries and keys and [N, v] values): QK^T over
// d_h + d_h^R = 192 (256 on every MXU), AV over v = 128 (256 on v6e's).
AttentionShape attention_shape(const TransformerSpec& model, int y, const ChipSpec& chip) {
  AttentionShape s;
  s.heads = std::ceil(static_cast<double>(model.heads) / y);
  const bool mla = model.attention == AttentionKind::Mla;
  s.kv_heads = mla ? s.heads : std::ceil(static_cast<double>(model.kv_heads) / y);
  s.qk_dim = mla ? static_cast<double>(model.mla.qk_nope_head_dim) + model.mla.qk_rope_head_dim : model.head_dim;
  s.v_dim = mla ? model.mla.v_head_dim : model.head_dim;
  s.mxu_qk_dim = chip.mxu_padding ? up(s.qk_dim, chip.mxu_size) : s.qk_dim;
  s.mxu_v_dim = chip.mxu_padding ? up(s.v_dim, chip.mxu_size) : s.v_dim;
  s.bytes = model.activation_bytes;
  s.kernel.name = "context";
  s.kernel.kind = KernelKind::Attention;
  const std::string queries = mla ? "query_proj" : "rotary", keys = mla ? "key_proj" : "rotary";
  s.kernel.inputs = {queries, keys, "value_proj"};
  s.kernel.backward_needs = {queries, keys, "value_proj", "context"};
  s.kernel.output_bytes_per_token = s.heads * s.v_dim * s.bytes;
  return s;
}

Kernel flash_attention(const TransformerSpec& model, int y, double sequence, const AttentionRun& run,
                       const ChipSpec& chip) {
  const AttentionShape shape = attention_shape(model, y, chip);
  const double a = shape.bytes, heads = shape.heads, kv_heads = shape.kv_heads;
  const double qk = shape.qk_dim, v = shape.v_dim;
  const double block = std::min(sequence, run.block);
  const double blocks = std::ceil(sequence / block);
  const double keys = run.causal ? block * (blocks + 1) / 2 : block * blocks;
  const double passes = run.causal ? (blocks + 1) / 2 : blocks;   // K/V reads per query block
  Kernel f = shape.kernel;
  f.flops_per_token = heads * shape.forward_flops() * keys;
  f.backward_flops_factor = shape.flash_backward_factor();
  const double kv_reads = kv_heads * (qk + v) * a * passes;
  // Q read, O written, K and V read per block, the softmax statistics (fp32) written.
  f.bytes_per_token = heads * (qk + v) * a + kv_reads + heads * 4;
  // Q, O, dO read, dQ written, K and V read per block, dK and dV written once.
  f.backward_bytes_per_token = heads * (2 * qk + 2 * v) * a + kv_reads + kv_heads * (qk + v) * a + heads * 4;
  return f;
}

// The MLP block after the residual stream `stream`: norm, up-projection(s), activation, down,
// residual sum; without `norm` (a parallel block) the up-projections read `stream` and the layer
// adds the sums itself.
void append_mlp(std::vector<Kernel>& k, const TransformerSpec& m, int y, double tokens, const ChipSpec& chip,
                const std::string& stream, bool norm = true) {
  const double a = m.activation_bytes;
  const double d = m.d_model, dy = d / y;
  const double f = std::ceil(static_cast<double>(m.d_ff) / y);
  std::string in = stream;
  if (norm) {
    k.push_back(vector("mlp_norm", true, {stream}, {stream}, 2 * dy * a, 3 * dy * a, dy * a));
    in = "mlp_norm";
  }
  std::vector<std::string> up_outputs;
  if (m.gated_mlp) {
    k.push_back(matmul("mlpwi_0", true, {in}, d, f, tokens, m, chip));
    k.push_back(matmul("mlpwi_1", true, {in}, d, f, tokens, m, chip));
    up_outputs = {"mlpwi_0", "mlpwi_1"};
  } else {
    k.push_back(matmul("mlpwi", true, {in}, d, f, tokens, m, chip));
    up_outputs = {"mlpwi"};
  }
  // The activation function (and the gate's product): reads the up-projections, writes one F;
  // backward reads them and dY, writes their gradients.
  const double ups = static_cast<double>(up_outputs.size());
  k.push_back(vector("mlp_activation", true, up_outputs, up_outputs, (ups + 1) * f * a, (2 * ups + 1) * f * a, f * a));
  k.push_back(matmul("mlpwo", true, {"mlp_activation"}, f, d, tokens, m, chip));
  k.back().output_bytes_per_token = dy * a;   // kept after its reduce-scatter: the stream's share
  if (norm) k.push_back(vector("mlp_residual", true, {stream, "mlpwo"}, {}, 3 * dy * a, 0, dy * a));
}


// XLA's attention as MaxText's `dot_product` writes it: QK^T over the whole sequence (the mask
// applied after, so causal saves nothing), the fp32 scores written, the softmax reading them and
// writing bf16 probabilities, AV reading those. The backward recomputes nothing: it reads the
// probabilities (which the policy keeps or recomputes as `context`'s input) and writes the
// scores' gradient.
Kernel dot_product_attention(const TransformerSpec& model, int y, double sequence, const ChipSpec& chip) {
  const AttentionShape shape = attention_shape(model, y, chip);
  const double a = shape.bytes, heads = shape.heads, kv_heads = shape.kv_heads;
  Kernel k = shape.kernel;
  k.flops_per_token = heads * shape.forward_flops() * sequence;
  const double scores = heads * sequence;
  // Q and K/V read, scores written (fp32) and read by the softmax, probabilities written and read.
  k.bytes_per_token = heads * shape.qk_dim * a + kv_heads * (shape.qk_dim + shape.v_dim) * a + scores * (4 + 4 + a + a) +
                      heads * shape.v_dim * a;
  k.backward_bytes_per_token = 2 * k.bytes_per_token + scores * 4;
  return k;
}

// Multi-head latent attention as MaxText trains it (layers/attention_mla.py at 3eb77db3:
// mla_query_projection :499-529, mla_kv_projection :638-658, mla_get_key_value :531-550), per
// chip of a tensor group of y (the heads split, the latent down-projections replicated, as
// matmul_shapes.hpp has them), each tensor under the checkpoint name MaxText gives it (at
// e591f30: attention_mla.py:930-932, 1097-1100, 1285-1287, 1349), so a remat policy keeps,
// offloads or reruns it by that name:
//  - `query_wa_proj` (wq_a's output, the query latent d_c'), `mla_q` (its RMSNorm); wq_b up to
//    the heads' d_h + d_h^R (unnamed, "query_up"); the rotary part rotated, the heads
//    concatenated and scaled (`query_proj`);
//  - `kv_wa_proj` (wkv_a's output: the latent d_c and the shared rotary key d_h^R), `mla_kv` (the
//    latent's RMSNorm), the rotary key's rotation (unnamed, "key_rope", read from kv_wa_proj);
//    wkv_b up to every head's d_h key and v value (unnamed, "kv_up"), the value a slice of it
//    (`value_proj`), the key concatenated with the rotary key broadcast to every head (`key_proj`);
//  - attention over the materialised heads (`context`; attention_shape: QK^T over d_h + d_h^R, AV
//    over v); the output projection (`out_proj`).
// Each tensor is written to HBM and read back by the next kernel: per token the heads' queries
// and keys are N (d_h + d_h^R) values, the values N v, where the latents are d_c' and d_c + d_h^R.
// What each backward reads: a matmul its input (dW), an RMSNorm its input; the rotation, the
// concatenations and the slice are linear and read nothing.
void append_mla_attention(std::vector<Kernel>& k, const TransformerSpec& m, int y, double tokens, double sequence,
                          const ChipSpec& chip, const AttentionRun& run) {
  const double a = m.activation_bytes;
  const double d = m.d_model;
  const MlaSpec& mla = m.mla;
  const double heads = std::ceil(static_cast<double>(m.heads) / y);
  const double nope = mla.qk_nope_head_dim, rope = mla.qk_rope_head_dim, v = mla.v_head_dim;
  const double q = heads * (nope + rope), kv_latent = mla.kv_lora_rank;
  std::string query_in = "attn_norm";
  if (mla.q_lora_rank > 0) {
    const double q_latent = mla.q_lora_rank;
    k.push_back(matmul("query_wa_proj", false, {"attn_norm"}, d, q_latent, tokens, m, chip));
    k.push_back(vector("mla_q", false, {"query_wa_proj"}, {"query_wa_proj"}, 2 * q_latent * a, 3 * q_latent * a,
                       q_latent * a));
    query_in = "mla_q";
  }
  k.push_back(matmul("query_up", false, {query_in}, query_in == "attn_norm" ? d : mla.q_lora_rank, q, tokens, m, chip));
  // The rotary part rotated, the heads concatenated and scaled: one pass over the queries.
  k.push_back(vector("query_proj", false, {"query_up"}, {}, 2 * q * a, 2 * q * a, q * a));
  k.push_back(matmul("kv_wa_proj", false, {"attn_norm"}, d, kv_latent + rope, tokens, m, chip));
  // The latent's RMSNorm (reading its part of kv_wa_proj), and the shared rotary key's rotation.
  k.push_back(vector("mla_kv", false, {"kv_wa_proj"}, {"kv_wa_proj"}, 2 * kv_latent * a, 3 * kv_latent * a,
                     kv_latent * a));
  k.push_back(vector("key_rope", false, {"kv_wa_proj"}, {}, 2 * rope * a, 2 * rope * a, rope * a));
  k.push_back(matmul("kv_up", false, {"mla_kv"}, kv_latent, heads * (nope + v), tokens, m, chip));
  // key = concat(key_nope, key_rope broadcast to every head): the heads' keys written whole.
  k.push_back(vector("key_proj", false, {"kv_up", "key_rope"}, {}, heads * nope * a + rope * a + q * a,
                     2 * q * a, q * a));
  // value: a slice of wkv_b's output, no pass of its own.
  k.push_back(vector("value_proj", false, {"kv_up"}, {}, 0, 0, heads * v * a));
  if (sequence > 0) k.push_back(run.flash ? flash_attention(m, y, sequence, run, chip)
                                          : dot_product_attention(m, y, sequence, chip));
  k.push_back(matmul("out_proj", false, {"context"}, heads * v, d, tokens, m, chip));
  k.back().output_bytes_per_token = d / y * a;
}

}  // namespace

std::vector<Kernel> layer_kernels(const TransformerSpec& m, int y, double tokens, double sequence,
                                  const ChipSpec& chip, const AttentionRun& run) {
  const double a = m.activation_bytes;
  const double d = m.d_model, dy = d / y;
  const double q = std::ceil(static_cast<double>(m.heads) / y) * m.head_dim;
  const double kv = std::ceil(static_cast<double>(m.kv_heads) / y) * m.head_dim;
  std::vector<Kernel> k;
  if (m.attention == AttentionKind::None) {   // MLP blocks only (the book's measured layer, F6)
    append_mlp(k, m, y, tokens, chip, "layer_input");
    return k;
  }
  // RMSNorm: reads x, writes its output; backward reads x and dY, writes dX.
  k.push_back(vector("attn_norm", false, {"layer_input"}, {"layer_input"}, 2 * dy * a, 3 * dy * a, dy * a));
  if (m.attention == AttentionKind::Mla) {
    append_mla_attention(k, m, y, tokens, sequence, chip, run);
    k.push_back(vector("attn_residual", false, {"layer_input", "out_proj"}, {}, 3 * dy * a, 0, dy * a));
    append_mlp(k, m, y, tokens, chip, "attn_residual");
    return k;
  }
  k.push_back(matmul("query_proj", false, {"attn_norm"}, d, q, tokens, m, chip));
  k.push_back(matmul("key_proj", false, {"attn_norm"}, d, kv, tokens, m, chip));
  k.push_back(matmul("value_proj", false, {"attn_norm"}, d, kv, tokens, m, chip));
  // Rotary embedding: reads and writes Q and K; its backward is the inverse rotation.
  k.push_back(vector("rotary", false, {"query_proj", "key_proj"}, {}, 2 * (q + kv) * a, 2 * (q + kv) * a,
                     (q + kv) * a));
  if (sequence > 0) k.push_back(run.flash ? flash_attention(m, y, sequence, run, chip)
                                                        : dot_product_attention(m, y, sequence, chip));
  k.push_back(matmul("out_proj", false, {"context"}, q, d, tokens, m, chip));
  k.back().output_bytes_per_token = dy * a;
  if (m.parallel_block) {
    // Both branches read the one norm; x + attention + MLP is one sum of three.
    append_mlp(k, m, y, tokens, chip, "attn_norm", false);
    for (auto& kernel : k) kernel.mlp = false;
    k.push_back(vector("layer_residual", false, {"layer_input", "out_proj", "mlpwo"}, {}, 4 * dy * a, 0, dy * a));
    return k;
  }
  // The residual sum x + attention: reads two, writes one (the backward passes dY on).
  k.push_back(vector("attn_residual", false, {"layer_input", "out_proj"}, {}, 3 * dy * a, 0, dy * a));
  append_mlp(k, m, y, tokens, chip, "attn_residual");
  return k;
}

std::vector<Kernel> unembed_kernels(const TransformerSpec& m, int y, double tokens, const ChipSpec& chip) {
  const double a = m.activation_bytes;
  const double d = m.d_model, v = std::ceil(static_cast<double>(m.vocab) / y);
  std::vector<Kernel> k;
  k.push_back(vector("final_norm", false, {"layer_input"}, {"layer_input"}, 2 * d / y * a, 3 * d / y * a, d / y * a));
  // fp32 logits (MaxText casts them before the softmax): the loss reads them, its backward reads
  // them again and writes the logits' gradient.
  k.push_back(matmul("logits", false, {"final_norm"}, d, v, tokens, m, chip, 4));
  k.back().quantizable = false;   // MaxText does not quantize the logits matmul
  k.push_back(vector("loss", false, {"logits"}, {"logits"}, v * 4, v * (4 + a), 0));
  return k;
}

std::vector<int> recompute_plan(const std::vector<Kernel>& kernels, const RematPolicy& policy) {
  std::map<std::string, size_t> producer;
  for (size_t i = 0; i < kernels.size(); ++i) producer[kernels[i].name] = i;
  std::vector<int> plan(kernels.size(), 0);
  auto available = [&](const std::string& t) {
    const auto it = producer.find(t);
    return it == producer.end() || plan[it->second] != 0 || policy.of(t) != TensorFate::Recompute;
  };
  // The MLP block's backward first (2), then the attention block's (1).
  for (int block : {2, 1}) {
    std::vector<std::string> needed;
    for (const auto& k : kernels)
      if (k.mlp == (block == 2)) needed.insert(needed.end(), k.backward_needs.begin(), k.backward_needs.end());
    while (!needed.empty()) {
      const std::string t = needed.back();
      needed.pop_back();
      if (available(t)) continue;
      const size_t p = producer.at(t);
      plan[p] = block;
      needed.insert(needed.end(), kernels[p].inputs.begin(), kernels[p].inputs.end());
    }
  }
  return plan;
}

namespace {

// Quantizing `elements` bf16 values to int8 (AQT, dynamic abs-max scales): one op reads them for
// the scale, one reads them again and writes int8.
double quantize_s(double elements, double element_bytes, const ChipSpec& chip, double efficiency) {
  return roofline_s(0, elements * element_bytes, chip, efficiency) +
         roofline_s(0, elements * (element_bytes + 1), chip, efficiency);
}

// A quantized weight matmul, forward and backward, each product its own op at the chip's int8 or
// fp8 rate (MatmulQuantization) on one-byte operands, outputs written as before. Every operand is
// quantized from bf16 on each use: an abs-max pass and a quantize pass (quantize_s), or, where
// fp8's calibration fixes X's or W's scale, one cast (read a B, write 1 B an element). int8 is
// AQT's: every operand abs-max, X^T dY in int8 or bf16, over `local_shards` parts; fp8 is
// qwix's fp8_full: dY abs-max, X and W as the calibration methods say.
KernelTimes quantized_matmul_times(const Kernel& k, double tokens, const ChipSpec& chip, double efficiency,
                                   const MatmulQuantization& q) {
  KernelTimes t;
  t.flops = k.flops_per_token * tokens;
  const double rate = q.fp8 ? chip.achieved_fp8_flops_per_s() : chip.achieved_int8_ops_per_s();
  const double a = k.element_bytes;
  const double x = k.k_dim * tokens, w = k.k_dim * k.n_dim, y = k.n_dim * tokens;   // elements
  const double y_bytes = k.output_bytes_per_token * tokens;
  auto cast = [&](double elements) { return roofline_s(0, elements * (a + 1), chip, efficiency); };
  auto quantize = [&](double elements) { return quantize_s(elements, a, chip, efficiency); };
  const double x_s = q.fixed_act_scale ? cast(x) : quantize(x), w_s = q.fixed_weight_scale ? cast(w) : quantize(w);
  t.forward_s = roofline_s(t.flops, x + w + y_bytes, rate, chip, efficiency) + x_s + w_s;
  // dX = dY W^T: dY and W quantized again (their scales run along other axes), dX written in bf16.
  const double dlhs_s = roofline_s(t.flops, y + w + x * a, rate, chip, efficiency) + quantize(y) + w_s;
  double drhs_s = 0;
  if (q.weight_gradients) {
    // dW = X^T dY over `local_shards` parts of the tokens, summed (fp32) when there are several.
    drhs_s = roofline_s(t.flops, x + y + k.weight_bytes, rate, chip, efficiency) + x_s + quantize(y);
    if (q.local_shards > 1) drhs_s += roofline_s(0, (q.local_shards + 1) * w * 4, chip, efficiency);
  } else {
    drhs_s = roofline_s(t.flops, (x + y) * a + k.weight_bytes, chip, efficiency);
  }
  t.backward_s = dlhs_s + drhs_s;
  return t;
}

}  // namespace

KernelTimes kernel_times(const Kernel& k, double tokens, const ChipSpec& chip, double efficiency,
                         const MatmulQuantization& quantization) {
  if ((quantization.int8 || quantization.fp8) && k.quantizable)
    return quantized_matmul_times(k, tokens, chip, efficiency, quantization);
  KernelTimes t;
  t.flops = k.flops_per_token * tokens;
  t.forward_s = roofline_s(t.flops, k.weight_bytes + k.bytes_per_token * tokens, chip, efficiency);
  t.backward_s = roofline_s(k.backward_flops_factor * t.flops,
                            2 * k.weight_bytes + k.backward_bytes_per_token * tokens, chip, efficiency);
  return t;
}

SavedBytes saved_bytes_per_token(const std::vector<Kernel>& kernels, const RematPolicy& policy, double layer_input) {
  // jax.checkpoint keeps what the policy allows among the residuals the backward reads: the
  // tensors a backward needs, and the inputs of what it recomputes. A tensor nothing reads
  // afterwards (the output projections' sums, consumed by the residual add) is not kept.
  const auto plan = recompute_plan(kernels, policy);
  std::set<std::string> read;
  for (size_t i = 0; i < kernels.size(); ++i) {
    read.insert(kernels[i].backward_needs.begin(), kernels[i].backward_needs.end());
    if (plan[i] != 0) read.insert(kernels[i].inputs.begin(), kernels[i].inputs.end());
  }
  SavedBytes s;
  // The layer's input: in HBM, or on the host under custom's decoder_layer_input: offload.
  (policy.of(kDecoderLayerInput) == TensorFate::Offload ? s.host : s.device) = layer_input;
  for (size_t i = 0; i < kernels.size(); ++i) {
    const Kernel& k = kernels[i];
    if (plan[i] != 0 || (!policy.keep_everything && !read.count(k.name))) continue;
    const TensorFate f = policy.of(k.name);
    if (f == TensorFate::Device) s.device += k.output_bytes_per_token;
    else if (f == TensorFate::Offload) {
      s.host += k.output_bytes_per_token;
      if (k.mlp) s.host_mlp += k.output_bytes_per_token;
    }
  }
  return s;
}

}  // namespace podsim
