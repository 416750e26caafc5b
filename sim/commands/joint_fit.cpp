#include "sim/commands/joint_fit.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include <spdlog/spdlog.h>

#include "sim/commands/fit_evidence.hpp"

namespace podsim {
namespace {

double logistic(double u) { return 1 / (1 + std::exp(-u)); }

// The solution of a x = b, through the inverse (the matrices here are the fit's few coordinates
// square); zeros when a is singular, which the damping of the steps keeps it from being.
std::vector<double> solve(const std::vector<std::vector<double>>& a, const std::vector<double>& b) {
  const auto inv = matrix_inverse(a);
  std::vector<double> x(b.size(), 0.0);
  if (inv.empty()) return x;
  for (size_t i = 0; i < b.size(); ++i)
    for (size_t k = 0; k < b.size(); ++k) x[i] += inv[i][k] * b[k];
  return x;
}

// The memo's key of row i under a profile's parameters: their exact bits, so only a repeat of the
// very same candidate hits.
std::string memo_key(int row, HopModel model, const std::vector<CalibrationParameter>& parameters) {
  std::string key = std::to_string(row) + "/" + std::string(to_string(model));
  char bits[32];
  for (const CalibrationParameter& q : parameters) {
    std::snprintf(bits, sizeof bits, "/%a", q.value);
    key += bits;
  }
  return key;
}

double sum_squares(const std::vector<double>& r) {
  double s = 0;
  for (double x : r) s += x * x;
  return s;
}

}  // namespace

JointFitter::JointFitter(const JointFitProblem& problem, int& simulations, PredictionMemo* memo)
    : problem_(problem), simulations_(simulations), memo_(memo) {
  // Per-profile coordinates first, profile by profile, then one per shared parameter.
  for (size_t p = 0; p < problem_.profiles.size(); ++p)
    for (size_t i = 0; i < problem_.profiles[p].size(); ++i)
      if (problem_.profiles[p][i].fitted && !problem_.profiles[p][i].shared) coordinates_.push_back({static_cast<int>(p), i});
  if (!problem_.profiles.empty())
    for (size_t i = 0; i < problem_.profiles.front().size(); ++i)
      if (problem_.profiles.front()[i].fitted && problem_.profiles.front()[i].shared) coordinates_.push_back({-1, i});
}

std::vector<std::vector<CalibrationParameter>> JointFitter::at(const std::vector<double>& u) const {
  auto profiles = problem_.profiles;
  for (size_t k = 0; k < coordinates_.size(); ++k) {
    const Coordinate& c = coordinates_[k];
    for (size_t p = 0; p < profiles.size(); ++p) {
      if (c.profile >= 0 && c.profile != static_cast<int>(p)) continue;
      auto& q = profiles[p][c.parameter];
      q.value = q.low + (q.high - q.low) * logistic(u[k]);
    }
  }
  return profiles;
}

std::vector<double> JointFitter::start() const {
  std::vector<double> u;
  for (const Coordinate& c : coordinates_) {
    const auto& q = problem_.profiles[c.profile < 0 ? 0 : c.profile][c.parameter];
    // The preset's value, nudged inside the bounds (the logistic never reaches them).
    const double f = std::clamp((q.value - q.low) / (q.high - q.low), 0.02, 0.98);
    u.push_back(std::log(f / (1 - f)));
  }
  return u;
}

std::vector<double> JointFitter::residuals(const std::vector<double>& u, const std::vector<int>& use, int profile,
                                           const std::vector<double>& base) {
  const auto parameters = at(u);
  std::vector<double> r = base;
  r.resize(use.size());
  std::vector<size_t> run;
  std::vector<std::string> keys;
  std::vector<const Measurement*> rows;
  std::vector<Scenario> scenarios;
  for (size_t k = 0; k < use.size(); ++k) {
    const int i = use[k];
    const int p = problem_.profile_of_row[i];
    if (profile >= 0 && p != profile) continue;
    const Measurement& row = problem_.rows[i];
    std::string key = memo_ ? memo_key(i, problem_.hop_model, parameters[p]) : std::string();
    if (memo_) {
      if (auto hit = memo_->find(key); hit != memo_->end()) {
        r[k] = (hit->second - row.measured) / row.measured;
        continue;
      }
    }
    run.push_back(k);
    keys.push_back(std::move(key));
    rows.push_back(&row);
    scenarios.push_back(with_parameters(problem_.scenarios[i], problem_.hop_model, parameters[p]));
  }
  const std::vector<double> predicted = measure_all(rows, std::move(scenarios), problem_.jobs);
  simulations_ += static_cast<int>(run.size());
  for (size_t j = 0; j < run.size(); ++j) {
    r[run[j]] = (predicted[j] - rows[j]->measured) / rows[j]->measured;
    if (memo_) (*memo_)[keys[j]] = predicted[j];
  }
  return r;
}

std::vector<double> JointFitter::residuals(const std::vector<double>& u, const std::vector<int>& use) {
  return residuals(u, use, -1, {});
}

// Forward differences in u; a profile's column recomputes only that profile's rows.
std::vector<std::vector<double>> JointFitter::jacobian(const JointFit& at, const std::vector<int>& use) {
  const size_t n = coordinates_.size();
  std::vector<std::vector<double>> j(use.size(), std::vector<double>(n, 0.0));
  for (size_t k = 0; k < n; ++k) {
    auto v = at.u;
    const double h = 1e-4 * std::max(1.0, std::abs(v[k]));
    v[k] += h;
    const auto r = residuals(v, use, coordinates_[k].profile, at.residuals);
    for (size_t i = 0; i < r.size(); ++i) j[i][k] = (r[i] - at.residuals[i]) / h;
  }
  return j;
}

JointFit JointFitter::fit(std::vector<double> u, const std::vector<int>& use) {
  const size_t n = coordinates_.size();
  JointFit best;
  best.u = std::move(u);
  best.residuals = residuals(best.u, use);
  best.cost = sum_squares(best.residuals);
  double lambda = 1e-2;
  for (int iteration = 0; iteration < 60 && n > 0; ++iteration) {
    const auto j = jacobian(best, use);
    std::vector<std::vector<double>> a(n, std::vector<double>(n, 0.0));
    std::vector<double> g(n, 0.0);
    for (size_t i = 0; i < j.size(); ++i)
      for (size_t p = 0; p < n; ++p) {
        g[p] += j[i][p] * best.residuals[i];
        for (size_t q = 0; q < n; ++q) a[p][q] += j[i][p] * j[i][q];
      }
    best.jtj = a;
    best.jacobian = j;
    bool improved = false;
    for (int attempt = 0; attempt < 8 && !improved; ++attempt) {
      auto m = a;
      for (size_t p = 0; p < n; ++p) m[p][p] += lambda * std::max(a[p][p], 1e-12);
      std::vector<double> rhs(n);
      for (size_t p = 0; p < n; ++p) rhs[p] = -g[p];
      const auto step = solve(m, rhs);
      auto v = best.u;
      for (size_t p = 0; p < n; ++p) v[p] += step[p];
      const auto r = residuals(v, use);
      const double cost = sum_squares(r);
      if (cost < best.cost) {
        const double gain = best.cost - cost;
        best.u = v;
        best.residuals = r;
        best.cost = cost;
        lambda = std::max(lambda / 3, 1e-9);
        improved = true;
        spdlog::info("calibrate: iteration {} over {} rows: sum of squared relative errors {:.9g}", iteration + 1,
                     use.size(), cost);
        // Converged when a step gains less than 1e-8 of the cost: the rows' relative errors then
        // move by ~1e-4 of themselves, far inside any measurement's precision (a fit to
        // generated rows still drives the cost to rounding, recovering the parameters to 1e-6).
        if (gain < 1e-8 * std::max(1e-30, cost) || gain < 1e-16) return best;
      } else {
        lambda *= 4;
      }
    }
    if (!improved) break;
  }
  return best;
}

void JointFitter::standard_deviations(const JointFit& fit, size_t rows,
                                      std::vector<std::vector<CalibrationParameter>>& out) const {
  const size_t n = coordinates_.size();
  auto each = [&](size_t k, auto&& apply) {
    for (size_t p = 0; p < out.size(); ++p)
      if (coordinates_[k].profile < 0 || coordinates_[k].profile == static_cast<int>(p)) apply(out[p][coordinates_[k].parameter]);
  };
  // Not estimated (no residual degrees of freedom, or J^T J singular) stays NaN: written as such, never as 0.
  for (size_t k = 0; k < n; ++k) each(k, [](CalibrationParameter& q) { q.sd = std::numeric_limits<double>::quiet_NaN(); });
  const double dof = static_cast<double>(rows) - static_cast<double>(n);
  if (n == 0 || dof <= 0 || fit.jtj.empty()) return;
  const auto cov = matrix_inverse(fit.jtj);
  if (cov.empty()) return;
  const double s2 = fit.cost / dof;
  for (size_t k = 0; k < n; ++k) {
    const double l = logistic(fit.u[k]);
    const double deviation = std::sqrt(std::max(0.0, s2 * cov[k][k]));
    each(k, [&](CalibrationParameter& q) { q.sd = (q.high - q.low) * l * (1 - l) * deviation; });
  }
}

void JointFitter::evidence(const JointFit& fit, const std::vector<std::string>& row_names,
                           std::vector<std::vector<CalibrationParameter>>& out) const {
  const auto shares = information_shares(fit.jacobian);
  if (shares.empty()) return;   // J^T J singular: no parameter is identified, nothing to say
  for (size_t k = 0; k < coordinates_.size(); ++k)
    for (size_t p = 0; p < out.size(); ++p) {
      if (coordinates_[k].profile >= 0 && coordinates_[k].profile != static_cast<int>(p)) continue;
      auto& evidence = out[p][coordinates_[k].parameter].evidence;
      for (size_t i = 0; i < shares.size() && i < row_names.size(); ++i) evidence[row_names[i]] = shares[i][k];
    }
}

size_t JointFitter::coordinates_of(int profile) const {
  return std::count_if(coordinates_.begin(), coordinates_.end(), [&](const Coordinate& c) { return c.profile == profile; });
}

}  // namespace podsim
