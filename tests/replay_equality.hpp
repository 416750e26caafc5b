#pragma once
// The symmetry reduction's check: a reduced replay against the full one, chip by chip.
#include <cmath>

#include "sim/engine/run.hpp"

namespace podsim_test {

// How many (op, chip) spans of the programs' first repetitions start or end more than 1e-9 of
// the full step apart between the two replays (0: the shortcut gave every chip's timings).
inline int spans_differing(const podsim::Program& program, const podsim::RunResult& reduced,
                           const podsim::RunResult& full) {
  int differ = 0;
  const double tolerance = 1e-9 * full.total_time_s;
  for (podsim::ChipId chip = 0; chip < full.topology.chip_count(); ++chip) {
    for (int op = 0; op < static_cast<int>(program.size()); ++op) {
      const auto& r = reduced.span(op, 0, chip);
      const auto& f = full.span(op, 0, chip);
      if (std::abs(r.end_s - f.end_s) > tolerance || std::abs(r.start_s - f.start_s) > tolerance) ++differ;
    }
  }
  return differ;
}

}  // namespace podsim_test
