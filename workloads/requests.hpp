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
  // A shared prefix: requests of one id start with the same prefix_tokens tokens (a system
  // prompt, a conversation so far), which prefix caching computes once. -1: none.
  int prefix_id = -1;
  int prefix_tokens = 0;
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

// vLLM's benchmark_serving with `--dataset-name random` (vllm/benchmarks/datasets.py,
// get_sampling_params; benchmark_serving.py, get_request): each prompt a prefix of
// `prefix_len` tokens and a length drawn uniformly from the integers in
// [floor(input_len (1 - r)), ceil(input_len (1 + r))], each output from
// [max(1, floor(output_len (1 - r))), max(1, ceil(output_len (1 + r)))] (r = range_ratio, in
// [0, 1); no tokenizer, so no special tokens are taken off, and outputs run to their length as
// under --ignore-eos). Requests are sent at `request_rate_per_s` (infinite: all at 0), the
// first at 0 and the gaps gamma-distributed with shape `burstiness` and mean 1 / rate
// (burstiness 1: a Poisson process; below 1 burstier, above more regular). The draws are
// podsim's own (a 64-bit Mersenne Twister, Marsaglia-Tsang gamma), not numpy's: the same
// distributions, not the same requests as vLLM's for a seed.
struct RandomDataset {
  int count = 1;                // --num-prompts
  int input_len = 1024;         // --random-input-len
  int output_len = 128;         // --random-output-len
  double range_ratio = 0;       // --random-range-ratio
  int prefix_len = 0;           // --random-prefix-len
  int prefixes = 1;             // distinct prefixes, each request's drawn uniformly (vLLM: one)
  double request_rate_per_s = 0;   // --request-rate; 0 or infinity: all at once
  double burstiness = 1;        // --burstiness
  uint64_t seed = 0;            // --seed
};
// The prompt lengths (prefix excluded) and output lengths the dataset draws from.
LengthRange random_input_lengths(const RandomDataset& dataset);
LengthRange random_output_lengths(const RandomDataset& dataset);
std::vector<Request> random_requests(const RandomDataset& dataset);

}  // namespace podsim
