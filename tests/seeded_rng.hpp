#pragma once
// Seeded generation for the generated-case tests: a random stream that is the same on every
// platform (std distributions are implementation-defined), and the environment variables that
// set how many cases run.
#include <cstdint>
#include <cstdlib>

namespace podsim_test {

// splitmix64.
struct Rng {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  int below(int n) { return static_cast<int>(next() % static_cast<uint64_t>(n)); }
  bool chance(double p) { return static_cast<double>(next() >> 11) * 0x1.0p-53 < p; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * static_cast<double>(next() >> 11) * 0x1.0p-53; }
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
