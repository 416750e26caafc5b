#pragma once
// The joint fit of podsim calibrate (issue 26; docs/calibration.md, "The fit"): every profile's
// parameters at once. Each --fit parameter has one coordinate per profile; each --shared
// parameter one coordinate for all of them (physics the generations share, e.g. software's
// cost per op). Levenberg-Marquardt on a numerical Jacobian minimises the sum of squared
// relative errors over the rows used; each coordinate lives inside its parameter's fit range
// through a logistic map. A row is predicted under its own profile's parameters, so a
// profile's coordinate moves only that profile's rows (its Jacobian column simulates no other).
#include <map>
#include <string>
#include <vector>

#include "collectives/collective.hpp"
#include "sim/commands/calibrate.hpp"

namespace podsim {

struct JointFitProblem {
  std::vector<Measurement> rows;        // measured values resolved (published figures converted)
  std::vector<Scenario> scenarios;      // each row's, loaded once; a candidate sets its parameters on a copy
  std::vector<int> profile_of_row;      // index into profiles
  HopModel hop_model = HopModel::Floor;
  int jobs = 1;                         // simulations at once
  // Per profile: where the fit starts, and which parameters are fitted and shared.
  std::vector<std::vector<CalibrationParameter>> profiles;
};

// Predictions already simulated, by row, hop model and the exact values of the row's profile's
// parameters (nothing else enters a row's simulation, and simulations are deterministic): the
// leave-one-out refits all start from the fit's optimum, so each reuses the first refit's
// residuals and Jacobian there instead of simulating them again. The fit is unchanged.
using PredictionMemo = std::map<std::string, double>;

struct JointFit {
  std::vector<double> u;           // unbounded coordinates
  std::vector<double> residuals;   // relative errors of the rows used, in their order
  double cost = 0;                 // sum of squares
  std::vector<std::vector<double>> jtj;   // J^T J at the optimum
  std::vector<std::vector<double>> jacobian;   // J (rows used x coordinates) it was made from
};

class JointFitter {
 public:
  // `memo` (optional, may outlive the fitter) keeps every prediction simulated.
  JointFitter(const JointFitProblem& problem, int& simulations, PredictionMemo* memo = nullptr);

  // Each profile's parameters at the coordinates u.
  std::vector<std::vector<CalibrationParameter>> at(const std::vector<double>& u) const;
  std::vector<double> start() const;   // the profiles' starting values, inside the bounds
  size_t coordinates() const { return coordinates_.size(); }
  // The coordinates of one profile's own (not shared) parameters: its --fit ones less those
  // --fix PROFILE:NAME fixed for it.
  size_t coordinates_of(int profile) const;
  // Levenberg-Marquardt over the rows `use` (indices into the problem's rows), from u.
  JointFit fit(std::vector<double> u, const std::vector<int>& use);
  // Relative errors of the rows `use` at u.
  std::vector<double> residuals(const std::vector<double>& u, const std::vector<int>& use);
  // One standard deviation per fitted parameter, s^2 (J^T J)^-1 with s^2 = cost / (rows - coordinates),
  // through the logistic's slope; NaN where not estimable (no degrees of freedom, J^T J singular).
  void standard_deviations(const JointFit& fit, size_t rows, std::vector<std::vector<CalibrationParameter>>& out) const;
  // Which rows inform each fitted parameter (fit_evidence.hpp), by the rows' names (`use`'s order
  // is the fit's): every profile's parameters get their coordinate's shares.
  void evidence(const JointFit& fit, const std::vector<std::string>& row_names,
                std::vector<std::vector<CalibrationParameter>>& out) const;

 private:
  struct Coordinate {
    int profile = -1;       // -1: shared by every profile
    size_t parameter = 0;   // index into a profile's parameters
  };
  // The residuals of `use` with only the rows of `profile` recomputed (-1: all) from `base`.
  std::vector<double> residuals(const std::vector<double>& u, const std::vector<int>& use, int profile,
                                const std::vector<double>& base);
  std::vector<std::vector<double>> jacobian(const JointFit& at, const std::vector<int>& use);

  const JointFitProblem& problem_;
  std::vector<Coordinate> coordinates_;
  int& simulations_;
  PredictionMemo* memo_;
};

}  // namespace podsim
