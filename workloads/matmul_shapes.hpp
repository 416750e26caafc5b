#pragma once
// The weight matrices of a block as one chip holds them, and what the matrix unit does with
// their shapes. On a TPU the MXU takes one bf16[8, 128] @ [128, 128] tile at a time
// (hardware.md, tpus.md:L97; 256 on v6e), so a matmul [M, K] @ [K, N] whose K or N is not a
// multiple of the array, or M of 8, does the padded work: small or odd per-chip shards (a
// d_ff of 11008 split 16 ways is 688 columns, 768 padded) waste part of the array. Off on the
// ideal machine (ChipSpec::mxu_padding); a calibration turns it on.
#include <vector>

#include "topology/chip_spec.hpp"
#include "workloads/model_spec.hpp"

namespace podsim {

struct WeightShape {
  double rows = 0;   // K, the contracted dimension
  double cols = 0;   // N
};

// Per chip of a group of `model_degree` (Megatron: heads and d_ff split, the larger share where
// they do not divide; KV heads fewer than the chips copied, one per chip; MLA's latent
// down-projections replicated).
std::vector<WeightShape> attention_weight_shapes(const TransformerSpec& model, int model_degree);
std::vector<WeightShape> mlp_weight_shapes(const TransformerSpec& model, double d_ff, int model_degree);
std::vector<WeightShape> unembed_weight_shapes(const TransformerSpec& model, int model_degree);
// An MoE layer's dense part every token passes through: the router [D, E] and the shared experts.
std::vector<WeightShape> router_shared_weight_shapes(const TransformerSpec& model, int model_degree);

// The work the MXU does for `tokens` rows through these weights over the work their FLOPs
// count: sum pad8(M) pad(K) pad(N) / sum M K N, 1 without padding (or without weights).
double mxu_padding_factor(double tokens, const std::vector<WeightShape>& weights, const ChipSpec& chip);

}  // namespace podsim
