#include "workloads/grouped_matmul.hpp"

#include <algorithm>
#include <cmath>

namespace podsim {

namespace {

double up(double x, double to) { return std::ceil(x / to) * to; }

// A tile's MXU shape: the rows to 8 sublanes, K and N to the array (matmul_shapes.hpp), where
// the chip pads; a tile of 512 x 1024 x 1024 is whole on every array.
double tile_mxu_flops(double tm, double tk, double tn, const ChipSpec& chip) {
  if (!chip.mxu_padding) return 2 * tm * tk * tn;
  return 2 * up(tm, 8) * up(tk, chip.mxu_size) * up(tn, chip.mxu_size);
}

double total(const std::vector<double>& rows) {
  double sum = 0;
  for (double g : rows) sum += g;
  return sum;
}

double non_empty(const std::vector<double>& rows) {
  return static_cast<double>(std::count_if(rows.begin(), rows.end(), [](double g) { return g > 0; }));
}

}  // namespace

double group_tile_visits(const std::vector<double>& group_rows, double tm, bool visit_empty_groups) {
  double visits = 0, start = 0;
  for (double g : group_rows) {
    const double end = start + g;
    if (g > 0) visits += std::ceil(end / tm) - std::floor(start / tm);
    else if (visit_empty_groups) visits += 1;
    start = end;
  }
  return visits;
}

GroupedMatmulWork gmm_work(const std::vector<double>& group_rows, double m_rows, double k, double n, double tm,
                           double tk, double tn, double element_bytes, const ChipSpec& chip) {
  GroupedMatmulWork w;
  const double rows = total(group_rows);
  if (rows <= 0) return w;
  // MaxText pads the rows to a multiple of tile_batch_seq, then clamps each tile to its dimension.
  const double m = up(std::max(m_rows, rows), tm);
  tm = std::min(tm, m);
  tk = std::min(tk, k);
  tn = std::min(tn, n);
  const double tiles_k = std::ceil(k / tk), tiles_n = std::ceil(n / tn);
  w.visits = group_tile_visits(group_rows, tm, false);
  w.useful_flops = 2 * rows * k * n;
  w.mxu_flops = w.visits * tiles_k * tiles_n * tile_mxu_flops(tm, tk, tn, chip);
  // Each visit reads its [tm, K] rows once per n tile and, unless one k tile covers K, its
  // group's [K, N] weights (the block index changes with every k step); with one k tile a
  // group's [K, tn] slab stays in VMEM across its consecutive visits. The output tiles the
  // visits touch are written once (a tile two groups share is written on its last visit).
  const double lhs = w.visits * tm * k * tiles_n;
  const double rhs = (tiles_k > 1 ? w.visits : non_empty(group_rows)) * k * n;
  const double out = std::min(m, w.visits * tm) * n;
  w.bytes = (lhs + rhs + out) * element_bytes;
  return w;
}

GroupedMatmulWork tgmm_work(const std::vector<double>& group_rows, double k, double n, double tm, double tk, double tn,
                            double element_bytes, const ChipSpec& chip) {
  GroupedMatmulWork w;
  const double rows = total(group_rows);
  if (rows <= 0) return w;
  const double m = up(rows, tm);
  tm = std::min(tm, m);
  tk = std::min(tk, k);
  tn = std::min(tn, n);
  const double tiles_k = std::ceil(k / tk), tiles_n = std::ceil(n / tn);
  const double computing = group_tile_visits(group_rows, tm, false);
  w.visits = group_tile_visits(group_rows, tm, true);
  w.useful_flops = 2 * rows * k * n;
  w.mxu_flops = computing * tiles_k * tiles_n * tile_mxu_flops(tm, tk, tn, chip);
  // Grid (tiles_n, tiles_k, visits): every visit loads its rows' [tm, tk] of X per n tile and
  // [tm, tn] of dY per k tile; each group's [K, N] gradient is written once.
  const double lhs = w.visits * tm * k * tiles_n;
  const double rhs = w.visits * tm * n * tiles_k;
  const double out = static_cast<double>(group_rows.size()) * k * n;
  w.bytes = (lhs + rhs + out) * element_bytes;
  return w;
}

}  // namespace podsim
