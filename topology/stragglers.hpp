#pragma once
// Stragglers drawn at random (issue 27): every chip of the pod is slow with some probability,
// by a factor drawn from a range, or draws its factor from a measured histogram of per-chip
// speeds. The draw is a function of the seed and the chip alone (splitmix64 keyed by both), so
// it is the same on every platform, and a chip's factor does not depend on the pod's other
// chips or on the order they are drawn in.
//
// A draw becomes ordinary SlowChips perturbations (topology/perturbation.hpp), one box per
// chip, one perturbation per distinct factor: the symmetry reduction, the engine and the
// reports see what they see for perturbations written by hand.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "topology/perturbation.hpp"

namespace podsim {

struct TopologySpec;

struct StragglerSpec {
  std::string name;                  // of the entry: its perturbations are name.0, name.1, ...
  // Range draws: each chip is slow with `probability`, by a factor uniform in [factor_low,
  // factor_high] (equal ends: one factor).
  double probability = 0;
  double factor_low = 1, factor_high = 1;
  // Histogram draws (when not empty): (factor, weight) bins; every chip draws a bin with
  // probability weight / total weight (factor 1 bins leave the chip as it is).
  std::vector<std::pair<double, double>> histogram;
  uint64_t seed = 1;
};

// One chip's factor under `spec` with `seed` (1 = not slowed). `chip` is the ChipId order:
// slice * chips_per_slice + position, the first axis fastest.
double straggler_factor(const StragglerSpec& spec, uint64_t seed, int64_t chip);

// The perturbations of one draw over every chip of `topology` (its axes and slices), with
// spec.seed + draw as the seed: one per distinct factor, its boxes the chips drawn with it,
// in ascending factor, named spec.name + "." + index. Empty when no chip is slowed.
std::vector<Perturbation> draw_stragglers(const TopologySpec& topology, const StragglerSpec& spec, uint64_t draw = 0);

}  // namespace podsim
