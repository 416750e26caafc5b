#include "workloads/requests.hpp"

#include <algorithm>
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

// Marsaglia and Tsang (2000), "A simple method for generating gamma variables", with the
// standard normal by Box-Muller; shape < 1 by boosting: Gamma(a) = Gamma(a + 1) U^(1/a).
double normal(std::mt19937_64& rng) {
  const double u1 = 1.0 - unit(rng), u2 = unit(rng);   // u1 in (0, 1]
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

double gamma_unit_scale(std::mt19937_64& rng, double shape) {
  if (shape < 1.0) return gamma_unit_scale(rng, shape + 1.0) * std::pow(1.0 - unit(rng), 1.0 / shape);
  const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  while (true) {
    double x, v;
    do {
      x = normal(rng);
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = 1.0 - unit(rng);
    if (u < 1.0 - 0.0331 * x * x * x * x || std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
  }
}

// The gap to the next send (vLLM's get_request): gamma of shape `burstiness` and mean 1 / rate,
// Gamma(k, 1 / (rate k)) whatever k; 0 (all at once) for an infinite or zero rate.
double send_gap(std::mt19937_64& rng, double rate_per_s, double burstiness) {
  if (!(rate_per_s > 0) || std::isinf(rate_per_s)) return 0.0;
  return gamma_unit_scale(rng, burstiness) / (rate_per_s * burstiness);
}

}  // namespace

LengthRange random_input_lengths(const RandomDataset& dataset) {
  const double r = dataset.range_ratio;
  return {static_cast<int>(std::floor(dataset.input_len * (1 - r))), static_cast<int>(std::ceil(dataset.input_len * (1 + r)))};
}

LengthRange random_output_lengths(const RandomDataset& dataset) {
  const double r = dataset.range_ratio;
  return {std::max(1, static_cast<int>(std::floor(dataset.output_len * (1 - r)))),
          std::max(1, static_cast<int>(std::ceil(dataset.output_len * (1 + r))))};
}

std::vector<Request> random_requests(const RandomDataset& dataset) {
  std::mt19937_64 rng(dataset.seed);
  std::mt19937_64 prefix_rng(dataset.seed ^ 0x9e3779b97f4a7c15ULL);   // its own stream: lengths as without
  const LengthRange input = random_input_lengths(dataset), output = random_output_lengths(dataset);
  std::vector<Request> requests;
  requests.reserve(dataset.count);
  double t = 0;
  for (int i = 0; i < dataset.count; ++i) {
    Request r;
    r.id = i;
    r.arrival_s = t;
    r.prompt_tokens = dataset.prefix_len + std::max(1, draw(rng, input));   // a prompt has a token
    r.output_tokens = draw(rng, output);
    // Drawn only when used, so a share of 1 keeps the stream of draws (and requests) as before.
    if (dataset.prefix_len > 0 && (dataset.prefix_share >= 1 || unit(prefix_rng) < dataset.prefix_share)) {
      r.prefix_id = dataset.prefixes > 1 ? draw(prefix_rng, {0, dataset.prefixes - 1}) : 0;
      r.prefix_tokens = dataset.prefix_len;
    }
    requests.push_back(r);
    t += send_gap(rng, dataset.request_rate_per_s, dataset.burstiness);
  }
  return requests;
}

bool sharegpt_valid(int prompt_tokens, int output_tokens, bool output_len_given) {
  const bool too_short = prompt_tokens < 4 || (!output_len_given && output_tokens < 4);
  return !too_short && prompt_tokens <= 1024 && prompt_tokens + static_cast<int64_t>(output_tokens) <= 2048;
}

std::vector<Request> sampled_requests(const SampledDataset& dataset, std::vector<size_t>* rows) {
  std::mt19937_64 rng(dataset.seed);
  std::vector<size_t> order(dataset.rows.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  for (size_t i = order.size(); i > 1; --i)
    std::swap(order[i - 1], order[static_cast<size_t>(draw(rng, {0, static_cast<int>(i - 1)}))]);
  const bool given = dataset.output_len > 0;
  std::vector<size_t> taken;
  for (size_t i = 0; i < order.size() && static_cast<int>(taken.size()) < dataset.count; ++i) {
    const Request& row = dataset.rows[order[i]];
    if (sharegpt_valid(row.prompt_tokens, given ? dataset.output_len : row.output_tokens, given)) taken.push_back(order[i]);
  }
  if (taken.empty()) return {};
  for (size_t passed = taken.size(); static_cast<int>(taken.size()) < dataset.count;)
    taken.push_back(taken[static_cast<size_t>(draw(rng, {0, static_cast<int>(passed - 1)}))]);
  std::mt19937_64 gaps(dataset.seed ^ 0x9e3779b97f4a7c15ULL);   // their own stream: rows as at any rate
  std::vector<Request> requests;
  requests.reserve(taken.size());
  double t = 0;
  for (size_t i = 0; i < taken.size(); ++i) {
    Request r = dataset.rows[taken[i]];
    r.id = static_cast<int>(i);
    r.arrival_s = t;
    t += send_gap(gaps, dataset.request_rate_per_s, dataset.burstiness);
    if (given) r.output_tokens = dataset.output_len;
    requests.push_back(r);
  }
  if (rows) *rows = std::move(taken);
  return requests;
}

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
