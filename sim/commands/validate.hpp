#pragma once
// `podsim validate`: simulated collectives against the book's closed forms over a grid of
// collectives x axes x meshes x sizes, each row naming the effect where they differ.
#include <functional>
#include <string>
#include <vector>

#include "collectives/collective.hpp"

namespace podsim {

struct ValidationRow {
  std::string collective;
  std::string axes;        // e.g. "XY"
  std::string mesh;        // e.g. "v5e 8x4"
  std::string wraparound;  // per involved axis, e.g. "yes", "no", "X:yes Y:no"
  double bytes = 0;
  double analytic_s = 0;
  double simulated_s = 0;
  double rel_error = 0;
  std::string regime;
  std::string note;        // empty within 1%; otherwise the effect that explains the gap
};

struct ValidationOptions {
  bool quick = false;      // a smaller grid (the test suite's)
  std::function<void(const std::string&)> progress;   // called per block of rows
};

struct ValidationResult {
  std::vector<ValidationRow> rows;
  std::vector<std::string> skipped;   // grid points not replayed, with the reason
};

ValidationResult run_validation(const ValidationOptions& options);
std::string validation_csv(const std::vector<ValidationRow>& rows);

}  // namespace podsim
