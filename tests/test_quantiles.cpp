// Bounded-memory latency distributions (sim/report/quantiles.hpp) against the plain computation
// on every value kept: numpy.percentile's linear method on the sorted values, the population
// std. Exact while the distinct values fit, within the sketch's relative error after.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <vector>

#include "seeded_rng.hpp"
#include "sim/report/quantiles.hpp"

using namespace podsim;

namespace {

// numpy.percentile(values, p) with its default (linear) method.
double numpy_percentile(std::vector<double> values, double percent) {
  std::sort(values.begin(), values.end());
  const double pos = percent / 100 * static_cast<double>(values.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(values.size() - 1, lo + 1);
  return values[lo] + (pos - static_cast<double>(lo)) * (values[hi] - values[lo]);
}

// Values of the kinds a serving run produces: latencies spread over decades, with runs of equal
// values (every token of a decode step has the same gap) and zeros (a request that never queued).
std::vector<double> generated_values(podsim_test::Rng& rng, size_t n, double repeat_chance = 0.3) {
  std::vector<double> values;
  values.reserve(n);
  while (values.size() < n) {
    const double v = rng.chance(0.05) ? 0.0 : std::pow(10.0, rng.uniform(-6, 2));
    const int repeat = rng.chance(repeat_chance) ? 1 + rng.below(50) : 1;
    for (int i = 0; i < repeat && values.size() < n; ++i) values.push_back(v);
  }
  return values;
}

}  // namespace

TEST_CASE("quantiles: exact percentiles, mean and std on generated distributions", "[quantiles]") {
  const uint64_t seed = static_cast<uint64_t>(podsim_test::env_int("PODSIM_QUANTILES_SEED", 11));
  const std::vector<double> percents = {1, 25, 50, 90, 99, 99.9};
  for (int c = 0; c < 40; ++c) {
    auto rng = podsim_test::case_rng(seed, c);
    const auto values = generated_values(rng, 1 + static_cast<size_t>(rng.below(c < 5 ? 3 : 5000)));
    Quantiles q;
    for (double v : values) q.add(v);
    const Distribution d = q.summarize(percents);
    INFO("case " << c << ", " << values.size() << " values");
    REQUIRE(d.exact);
    CHECK(d.count == values.size());
    double mean = 0;
    for (double v : values) mean += v;
    mean /= static_cast<double>(values.size());
    double squares = 0;
    for (double v : values) squares += (v - mean) * (v - mean);
    CHECK(d.mean == Approx(mean).epsilon(1e-12).margin(1e-300));
    CHECK(d.std == Approx(std::sqrt(squares / static_cast<double>(values.size()))).epsilon(1e-9).margin(1e-15));
    CHECK(d.max == *std::max_element(values.begin(), values.end()));
    CHECK(d.median == numpy_percentile(values, 50));
    for (size_t i = 0; i < percents.size(); ++i) {
      INFO("p" << percents[i]);
      CHECK(d.percentiles[i].first == percents[i]);
      CHECK(d.percentiles[i].second == Approx(numpy_percentile(values, percents[i])).epsilon(1e-12).margin(1e-300));
    }
  }
}

TEST_CASE("quantiles: past the exact limit, percentiles stay within the sketch's relative error", "[quantiles]") {
  // More distinct values than kExactPairs, so the distribution moves to logarithmic buckets.
  auto rng = podsim_test::case_rng(23, 0);
  const auto values = generated_values(rng, Quantiles::kExactPairs * 5 / 2, 0.01);
  Quantiles q;
  for (double v : values) q.add(v);
  const std::vector<double> percents = {10, 50, 90, 99, 99.9};
  const Distribution d = q.summarize(percents);
  REQUIRE_FALSE(d.exact);
  CHECK(d.count == values.size());
  CHECK(d.max == *std::max_element(values.begin(), values.end()));
  for (size_t i = 0; i < percents.size(); ++i) {
    const double exact = numpy_percentile(values, percents[i]);
    INFO("p" << percents[i] << ": sketch " << d.percentiles[i].second << ", exact " << exact);
    // Each order statistic is within kRelativeError; the interpolation between two neighbours
    // keeps that bound.
    CHECK(std::abs(d.percentiles[i].second - exact) <= Quantiles::kRelativeError * exact * (1 + 1e-9));
  }
}

TEST_CASE("quantiles: runs of one value compact instead of bucketing", "[quantiles]") {
  // Many values but few distinct ones (a decode step's gap repeated per token): stays exact.
  Quantiles q;
  for (size_t i = 0; i < 3 * Quantiles::kExactPairs; ++i) q.add(static_cast<double>(i % 1000) * 1e-3);
  const Distribution d = q.summarize({50});
  CHECK(d.exact);
  CHECK(d.count == 3 * Quantiles::kExactPairs);
  CHECK(d.max == 0.999);
}

TEST_CASE("quantiles: an empty distribution reports zeros", "[quantiles]") {
  const Distribution d = Quantiles().summarize({50, 99});
  CHECK(d.count == 0);
  CHECK(d.percentiles.size() == 2);
  CHECK(d.percentiles[1].second == 0.0);
}
