#pragma once
// Serving requests: when each arrives and how long its prompt and its response are. They come
// from a Poisson process (here) or a CSV trace (sim/scenario/request_trace.cpp).
#include <cstdint>
#include <vector>

namespace podsim {

struct Request {
  int id = 0;
  double arrival_s = 0;
  int prompt_tokens = 1;
  int output_tokens = 1;   // tokens generated, the first one by the prefill
};

// A length drawn uniformly from [min, max] (min == max: fixed).
struct LengthRange {
  int min = 1;
  int max = 1;
};

struct PoissonArrivals {
  double rate_per_s = 1;    // mean arrivals per second
  int count = 1;            // requests generated
  LengthRange prompt_tokens;
  LengthRange output_tokens;
  uint64_t seed = 1;
};

// Exponential gaps from a 64-bit Mersenne Twister through the inverse CDF, computed here rather
// than by <random>'s distributions, whose algorithms the standard leaves to the library: the
// same seed gives the same requests on every platform.
std::vector<Request> poisson_requests(const PoissonArrivals& arrivals);

}  // namespace podsim
