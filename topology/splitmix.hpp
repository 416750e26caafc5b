#pragma once
// splitmix64 (Steele, Lea and Flood, 2014): a seeded stream that is the same on every platform,
// for sampling in the topology (straggler draws), the workloads (MoE routing) and the tests'
// generated cases; <random>'s distributions leave their algorithms to the library.
#include <cstdint>

namespace podsim {

struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }   // [0, 1)
};

}  // namespace podsim
