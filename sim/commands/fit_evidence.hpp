#pragma once
// Which rows of a fit inform which parameter (issue 43; docs/calibration.md, "Which rows inform
// which parameter"). With J the fit's Jacobian (rows x coordinates) and V = (J^T J)^-1, the
// information about coordinate k is 1 / V_kk; without row i it is 1 / V^(-i)_kk, where by
// Sherman-Morrison V^(-i) = V + V j_i j_i^T V / (1 - h_i), h_i = j_i^T V j_i the row's leverage.
// Row i's share of k's information is 1 - V_kk / V^(-i)_kk
//     = a / (V_kk + a),   a = (V j_i)_k^2 / (1 - h_i),
// 0 when the row does not move k, 1 when nothing else identifies it (h_i = 1).
#include <vector>

namespace podsim {

// The inverse of a square matrix by Gauss-Jordan with partial pivoting; empty when singular.
std::vector<std::vector<double>> matrix_inverse(std::vector<std::vector<double>> a);

// share[i][k] for every row i of `jacobian` and coordinate k; empty when J^T J is singular.
std::vector<std::vector<double>> information_shares(const std::vector<std::vector<double>>& jacobian);

}  // namespace podsim
