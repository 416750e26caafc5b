#pragma once
// Latency distributions in bounded memory: mean, population std (numpy's, as vLLM's), max and
// percentiles interpolated linearly between order statistics (numpy's default, as vLLM's
// benchmark_serving). Values are kept exactly, runs of equal values as one (value, count) pair,
// up to kExactPairs pairs; past that the distribution switches to logarithmic buckets whose
// representative is within kRelativeError of every value in it (DDSketch's construction), so a
// run of 10 million requests and billions of inter-token gaps keeps at most a few hundred
// thousand buckets. `Distribution::exact` says which a summary came from.
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sim/scenario/units.hpp"   // percentile_name

namespace podsim {

struct Distribution {
  double mean = 0, std = 0, median = 0, max = 0;
  std::vector<std::pair<double, double>> percentiles;   // (percent, value), in the order asked
  uint64_t count = 0;
  bool exact = true;
  // The value at `percent` if it was asked for; median otherwise when percent is 50.
  double at(double percent) const;
};

class Quantiles {
 public:
  static constexpr size_t kExactPairs = size_t{1} << 20;   // 16 MiB of pairs at most
  static constexpr double kRelativeError = 1e-4;

  void add(double value);
  Distribution summarize(const std::vector<double>& percents) const;
  uint64_t count() const { return count_; }

 private:
  // The value of 0-based rank in ascending order; `sorted`: exact_ sorted (unused when bucketed).
  double value_at_rank(const std::vector<std::pair<double, uint64_t>>& sorted, uint64_t rank) const;
  void compact_or_bucket();
  static int bucket_of(double magnitude);
  static double representative(int bucket);

  std::vector<std::pair<double, uint64_t>> exact_;   // unsorted until compacted
  bool bucketed_ = false;
  std::map<int, uint64_t> positive_, negative_;      // bucket -> count (negative_: by magnitude)
  uint64_t zeros_ = 0;
  uint64_t count_ = 0;
  double mean_ = 0, m2_ = 0, min_ = 0, max_ = 0;     // Welford's running mean and squared deviations
};

}  // namespace podsim
