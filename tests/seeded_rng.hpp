#pragma once
// Seeded generation for the generated-case tests: a random stream that is the same on every
// platform (std distributions are implementation-defined), and the environment variables that
// set how many cases run.
#include <cstdint>
#include <cstdlib>

#include "topology/splitmix.hpp"

namespace podsim_test {

// splitmix64 (topology/splitmix.hpp), with the draws the tests use.
struct Rng : podsim::SplitMix64 {
  int below(int n) { return static_cast<int>(next() % static_cast<uint64_t>(n)); }
  bool chance(double p) { return unit() < p; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * unit(); }
};

// Case `index` of a run seeded `seed`: its own stream, so one case replays alone.
inline Rng case_rng(uint64_t seed, int index) {
  return Rng{seed ^ (0x5851f42d4c957f2dULL * static_cast<uint64_t>(index + 1))};
}

inline int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

}  // namespace podsim_test
