#pragma once
// `podsim bench`: wall time, peak memory and simulated messages of the pod-scale cases the
// engine issue sets targets for (1 GiB AllReduce over XYZ: <= 1 s at 4,096 chips, <= 3 s at
// 8,960, peak RSS <= 1 GB), plus the full replay at 8x8x8 for scale.
#include <string>
#include <vector>

namespace podsim {

struct BenchRow {
  std::string name;
  int chips = 0;
  int simulated_chips = 0;
  unsigned long long messages = 0;
  double simulated_time_s = 0;
  double wall_time_s = 0;
};

std::vector<BenchRow> run_bench(bool include_full);
// Peak resident memory of this process and of any simulation child, in bytes.
double peak_rss_bytes();

}  // namespace podsim
