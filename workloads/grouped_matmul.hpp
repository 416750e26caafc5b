#pragma once
// A grouped matmul as MaxText's dropless MoE runs its routed experts on a TPU (`sparse_matmul:
// True`): the rows sorted by expert, each expert's rows times its own weights, in tiles of
// (tm, tk, tn). One model serves the three implementations MaxText calls, whose grids are the
// same (docs/modelling.md, "What a grouped matmul costs"):
//   - megablox's Pallas `gmm` and `tgmm` (`megablox: True`; MaxText/kernels/megablox/backend.py
//     at maxtext 3eb77db3: make_group_metadata, grid (tiles_n, active m tiles, tiles_k));
//   - jax.lax.ragged_dot (`megablox: False`), to which MaxText passes the same tiles as XLA's
//     `ragged_dot_tiling` metadata (layers/moe.py:827 at 3eb77db3);
//   - tokamax's TPU ragged_dot (`use_tokamax_gmm: True`), a fork of megablox's kernel with the
//     same grid (tokamax/_src/ops/ragged_dot/pallas_mosaic_tpu_kernel.py at 783ea957), whose
//     tiles its own heuristic picks.
// What the structure costs beyond the FLOPs a roofline counts:
//   - padding: an m tile is visited once per group that has rows in it, so a group of g rows
//     starting at row s takes ceil((s + g) / tm) - floor(s / tm) tile visits, each the MXU work
//     of a whole tm x tk x tn tile per k and n tile; K and N round up to their tiles;
//   - bytes: each visit streams its [tm, K] rows once per n tile and, where K takes more than
//     one k tile, the group's whole [K, N] weights again (the weights stay in VMEM only across
//     consecutive visits of one group when a single k tile covers K) - megablox's own
//     CostEstimate, bytes_accessed = lhs x tiles_n + rhs x visits + out.
#include <vector>

#include "topology/chip_spec.hpp"

namespace podsim {

// MaxText's tile sizes for its grouped matmuls (base.yml:175-178 at 3eb77db3, the defaults):
// tile_batch_seq rows, tile_embed_dim along the model dimension, tile_mlp_dim along the
// expert's width. The up-projections run (tile_batch_seq, tile_embed_dim, tile_mlp_dim), the
// down-projection (tile_batch_seq, tile_mlp_dim, tile_embed_dim) (layers/moe.py:1029-1038),
// their backward passes the same tiles (megablox/ops.py _gmm_bwd).
struct GroupedMatmulTiling {
  double batch_seq = 512;
  double embed_dim = 1024;
  double mlp_dim = 1024;
};

// The m tiles a grouped matmul visits for groups of `group_rows` rows laid out in order from
// row 0, tm rows a tile (make_group_metadata): sum over non-empty groups of
// ceil(end / tm) - floor(start / tm); with `visit_empty_groups` (tgmm, which zeroes an empty
// group's gradient) one more visit for each empty group.
double group_tile_visits(const std::vector<double>& group_rows, double tm, bool visit_empty_groups);

// A grouped matmul's work on the chip: the MXU's FLOPs (whole tiles), the HBM bytes it streams,
// and the FLOPs its rows count (2 rows K N).
struct GroupedMatmulWork {
  double mxu_flops = 0;
  double bytes = 0;
  double useful_flops = 0;
  double visits = 0;
};

// gmm: lhs [m, K] @ rhs[g] [K, N] for each group's rows (forward, and the input gradient
// dY [m, N] @ W^T with K and N swapped). `m_rows`: the lhs's rows (the groups' and any buffer
// tail the tiles never visit); tiles clamped to the dimensions as MaxText does
// (min(tile, dim), layers/moe.py:805-809); `element_bytes` of every operand.
GroupedMatmulWork gmm_work(const std::vector<double>& group_rows, double m_rows, double k, double n, double tm,
                           double tk, double tn, double element_bytes, const ChipSpec& chip);

// tgmm: the weight gradient lhs^T [K, m] @ dY [m, N] -> [g, K, N]: the same visits (and one per
// empty group, which computes nothing), each reading its [tm, K] rows once per n tile and its
// [tm, N] gradient rows once per k tile, and every group's [K, N] gradient written once.
GroupedMatmulWork tgmm_work(const std::vector<double>& group_rows, double k, double n, double tm, double tk, double tn,
                            double element_bytes, const ChipSpec& chip);

}  // namespace podsim
