#include "sim/report/quantiles.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace podsim {

namespace {

// Bucket k holds magnitudes in (gamma^(k-1), gamma^k]; its representative 2 gamma^k / (gamma + 1)
// is within (gamma - 1) / (gamma + 1) = kRelativeError of each (Masson et al., DDSketch, 2019).
const double kGamma = (1 + Quantiles::kRelativeError) / (1 - Quantiles::kRelativeError);
const double kLogGamma = std::log(kGamma);

}  // namespace

double Distribution::at(double percent) const {
  for (const auto& [p, v] : percentiles)
    if (p == percent) return v;
  return median;
}

int Quantiles::bucket_of(double magnitude) { return static_cast<int>(std::ceil(std::log(magnitude) / kLogGamma)); }

double Quantiles::representative(int bucket) { return 2 * std::exp(bucket * kLogGamma) / (kGamma + 1); }

void Quantiles::add(double value) {
  ++count_;
  if (count_ == 1) {
    min_ = max_ = value;
  } else {
    min_ = std::min(min_, value);
    max_ = std::max(max_, value);
  }
  const double delta = value - mean_;
  mean_ += delta / static_cast<double>(count_);
  m2_ += delta * (value - mean_);
  if (!bucketed_) {
    if (!exact_.empty() && exact_.back().first == value) {
      ++exact_.back().second;
    } else {
      exact_.emplace_back(value, 1);
      if (exact_.size() > kExactPairs) compact_or_bucket();
    }
    return;
  }
  if (value == 0 || !std::isfinite(value)) ++zeros_;
  else if (value > 0) ++positive_[bucket_of(value)];
  else ++negative_[bucket_of(-value)];
}

// Merges equal values; if that does not free half of the pairs, moves to buckets for good.
void Quantiles::compact_or_bucket() {
  std::sort(exact_.begin(), exact_.end());
  size_t out = 0;
  for (size_t i = 1; i < exact_.size(); ++i) {
    if (exact_[i].first == exact_[out].first) exact_[out].second += exact_[i].second;
    else exact_[++out] = exact_[i];
  }
  exact_.resize(out + 1);
  if (exact_.size() <= kExactPairs / 2) return;
  bucketed_ = true;
  for (const auto& [v, n] : exact_) {
    if (v == 0 || !std::isfinite(v)) zeros_ += n;
    else if (v > 0) positive_[bucket_of(v)] += n;
    else negative_[bucket_of(-v)] += n;
  }
  exact_.clear();
  exact_.shrink_to_fit();
}

double Quantiles::value_at_rank(const std::vector<std::pair<double, uint64_t>>& sorted, uint64_t rank) const {
  // The extremes are known exactly either way.
  if (rank == 0) return min_;
  if (rank + 1 >= count_) return max_;
  uint64_t seen = 0;
  if (!bucketed_) {
    for (const auto& [v, n] : sorted) {
      seen += n;
      if (rank < seen) return v;
    }
    return max_;
  }
  for (auto it = negative_.rbegin(); it != negative_.rend(); ++it) {
    seen += it->second;
    if (rank < seen) return std::max(min_, -representative(it->first));
  }
  seen += zeros_;
  if (rank < seen) return 0;
  for (const auto& [bucket, n] : positive_) {
    seen += n;
    if (rank < seen) return std::min(max_, representative(bucket));
  }
  return max_;
}

Distribution Quantiles::summarize(const std::vector<double>& percents) const {
  Distribution d;
  d.count = count_;
  d.exact = !bucketed_;
  if (count_ == 0) {
    for (double p : percents) d.percentiles.emplace_back(p, 0.0);
    return d;
  }
  std::vector<std::pair<double, uint64_t>> sorted;
  if (!bucketed_) {
    sorted = exact_;
    std::sort(sorted.begin(), sorted.end());
  }
  d.mean = mean_;
  d.std = std::sqrt(std::max(0.0, m2_ / static_cast<double>(count_)));
  d.max = max_;
  // numpy.percentile's linear method: position q (n - 1), between the order statistics around it.
  auto at = [&](double percent) {
    const double pos = percent / 100 * static_cast<double>(count_ - 1);
    const uint64_t lo = static_cast<uint64_t>(std::floor(pos));
    const double lo_value = value_at_rank(sorted, lo);
    if (lo + 1 >= count_) return lo_value;
    return lo_value + (pos - static_cast<double>(lo)) * (value_at_rank(sorted, lo + 1) - lo_value);
  };
  d.median = at(50);
  for (double p : percents) d.percentiles.emplace_back(p, at(p));
  return d;
}

}  // namespace podsim
