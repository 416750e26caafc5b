#include "workloads/requests.hpp"

#include <cmath>
#include <random>

namespace podsim {

namespace {

// A uniform double in [0, 1) from the top 53 bits.
double unit(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

int draw(std::mt19937_64& rng, const LengthRange& range) {
  if (range.max <= range.min) return range.min;
  const uint64_t span = static_cast<uint64_t>(range.max - range.min) + 1;
  return range.min + static_cast<int>(rng() % span);
}

}  // namespace

std::vector<Request> poisson_requests(const PoissonArrivals& arrivals) {
  std::mt19937_64 rng(arrivals.seed);
  std::vector<Request> requests;
  requests.reserve(arrivals.count);
  double t = 0;
  for (int i = 0; i < arrivals.count; ++i) {
    t += -std::log1p(-unit(rng)) / arrivals.rate_per_s;   // an infinite rate: all at time 0
    Request r;
    r.id = i;
    r.arrival_s = t;
    r.prompt_tokens = draw(rng, arrivals.prompt_tokens);
    r.output_tokens = draw(rng, arrivals.output_tokens);
    requests.push_back(r);
  }
  return requests;
}

}  // namespace podsim
