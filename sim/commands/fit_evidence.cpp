#include "sim/commands/fit_evidence.hpp"

#include <algorithm>
#include <cmath>

namespace podsim {

std::vector<std::vector<double>> matrix_inverse(std::vector<std::vector<double>> a) {
  const size_t n = a.size();
  std::vector<std::vector<double>> inv(n, std::vector<double>(n, 0.0));
  for (size_t i = 0; i < n; ++i) inv[i][i] = 1;
  for (size_t c = 0; c < n; ++c) {
    size_t pivot = c;
    for (size_t r = c + 1; r < n; ++r)
      if (std::abs(a[r][c]) > std::abs(a[pivot][c])) pivot = r;
    std::swap(a[c], a[pivot]);
    std::swap(inv[c], inv[pivot]);
    if (std::abs(a[c][c]) < 1e-300) return {};
    const double d = a[c][c];
    for (size_t k = 0; k < n; ++k) {
      a[c][k] /= d;
      inv[c][k] /= d;
    }
    for (size_t r = 0; r < n; ++r) {
      if (r == c) continue;
      const double f = a[r][c];
      for (size_t k = 0; k < n; ++k) {
        a[r][k] -= f * a[c][k];
        inv[r][k] -= f * inv[c][k];
      }
    }
  }
  return inv;
}

std::vector<std::vector<double>> information_shares(const std::vector<std::vector<double>>& jacobian) {
  if (jacobian.empty()) return {};
  const size_t n = jacobian.front().size();
  std::vector<std::vector<double>> jtj(n, std::vector<double>(n, 0.0));
  for (const auto& row : jacobian)
    for (size_t p = 0; p < n; ++p)
      for (size_t q = 0; q < n; ++q) jtj[p][q] += row[p] * row[q];
  const auto v = matrix_inverse(jtj);
  if (v.empty()) return {};
  std::vector<std::vector<double>> shares;
  for (const auto& row : jacobian) {
    std::vector<double> vj(n, 0.0);   // V j_i
    for (size_t p = 0; p < n; ++p)
      for (size_t q = 0; q < n; ++q) vj[p] += v[p][q] * row[q];
    double h = 0;
    for (size_t p = 0; p < n; ++p) h += row[p] * vj[p];
    std::vector<double> share(n, 0.0);
    for (size_t k = 0; k < n; ++k) {
      const double moved = vj[k] * vj[k];
      if (moved <= 1e-30 * std::abs(v[k][k])) continue;   // the row does not move k
      // h = 1 (to rounding): without the row k is not identified at all.
      if (1 - h <= 1e-12) {
        share[k] = 1;
        continue;
      }
      const double a = moved / (1 - h);
      share[k] = a / (v[k][k] + a);
    }
    shares.push_back(share);
  }
  return shares;
}

}  // namespace podsim
