#include "workloads/matmul_shapes.hpp"

#include <cmath>

namespace podsim {

namespace {

// A dimension split `degree` ways, as one chip holds it: the larger share where it does not
// divide, and at least one head (KV heads fewer than the chips are copied).
double split(double n, int degree) { return std::ceil(n / degree); }

}  // namespace

std::vector<WeightShape> attention_weight_shapes(const TransformerSpec& m, int y) {
  const double d = m.d_model;
  if (m.attention == AttentionKind::None) return {};
  if (m.attention == AttentionKind::Mla) {
    // Shapes as attention_params_per_layer counts them (model_spec.cpp); the heads split y ways,
    // the latent down-projections (shared by the heads) replicated.
    const MlaSpec& a = m.mla;
    const double heads = split(m.heads, y);
    const double qk_head = static_cast<double>(a.qk_nope_head_dim) + a.qk_rope_head_dim;
    std::vector<WeightShape> w;
    if (a.q_lora_rank > 0) {
      w.push_back({d, static_cast<double>(a.q_lora_rank)});
      w.push_back({static_cast<double>(a.q_lora_rank), heads * qk_head});
    } else {
      w.push_back({d, heads * qk_head});
    }
    w.push_back({d, static_cast<double>(a.kv_lora_rank) + a.qk_rope_head_dim});
    w.push_back({static_cast<double>(a.kv_lora_rank), heads * (static_cast<double>(a.qk_nope_head_dim) + a.v_head_dim)});
    w.push_back({heads * a.v_head_dim, d});
    return w;
  }
  const double q = split(m.heads, y) * m.head_dim, kv = split(m.kv_heads, y) * m.head_dim;
  return {{d, q}, {d, kv}, {d, kv}, {q, d}};
}

std::vector<WeightShape> mlp_weight_shapes(const TransformerSpec& m, double d_ff, int y) {
  const double f = split(d_ff, y), d = m.d_model;
  std::vector<WeightShape> w(m.gated_mlp ? 2 : 1, WeightShape{d, f});
  w.push_back({f, d});
  return w;
}

std::vector<WeightShape> unembed_weight_shapes(const TransformerSpec& m, int y) {
  return {{static_cast<double>(m.d_model), split(m.vocab, y)}};
}

std::vector<WeightShape> router_shared_weight_shapes(const TransformerSpec& m, int y) {
  if (!m.moe) return {};
  std::vector<WeightShape> w{{static_cast<double>(m.d_model), static_cast<double>(m.moe->experts)}};
  for (int e = 0; e < m.moe->shared_experts; ++e) {
    const auto expert = mlp_weight_shapes(m, m.moe->expert_d_ff, y);
    w.insert(w.end(), expert.begin(), expert.end());
  }
  return w;
}

double mxu_padding_factor(double tokens, const std::vector<WeightShape>& weights, const ChipSpec& chip) {
  if (!chip.mxu_padding || weights.empty() || tokens <= 0) return 1.0;
  auto up = [](double x, double to) { return std::ceil(x / to) * to; };
  const double t = chip.mxu_size;
  double useful = 0, done = 0;
  for (const WeightShape& w : weights) {
    useful += tokens * w.rows * w.cols;
    done += up(tokens, 8) * up(w.rows, t) * up(w.cols, t);
  }
  return useful > 0 ? done / useful : 1.0;
}

}  // namespace podsim
