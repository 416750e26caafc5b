#pragma once
// Serving requests: when each arrives and how long its prompt and its response are. They come
// from a Poisson process (here) or a CSV trace (sim/scenario/request_trace.cpp).
#include <cstddef>
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
  bool operator==(const Request&) const = default;
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
  // The share of requests whose prefix is a shared one; the others start with prefix_len
  // tokens of their own, which no other request has (vLLM: all shared). How a workload's hit
  // rate is set: about share x (1 - prefixes / requests) of the prefix tokens hit.
  double prefix_share = 1;
  double request_rate_per_s = 0;   // --request-rate; 0 or infinity: all at once
  double burstiness = 1;        // --burstiness
  uint64_t seed = 0;            // --seed
};
// The prompt lengths (prefix excluded) and output lengths the dataset draws from.
LengthRange random_input_lengths(const RandomDataset& dataset);
LengthRange random_output_lengths(const RandomDataset& dataset);
std::vector<Request> random_requests(const RandomDataset& dataset);

// vLLM's benchmark_serving with `--dataset-name sharegpt` (vllm/benchmarks/datasets.py,
// ShareGPTDataset.sample and is_valid_sequence) on a table of conversations' lengths: the rows
// shuffled by the seed, then taken in that order while they pass vLLM's pruning (prompt and
// output at least 4 tokens, prompt at most 1024, the two at most 2048; with `output_len` given,
// as --sharegpt-output-len, every output is that long and its minimum is not checked) until
// `count`; if fewer pass, drawn again uniformly from those taken (vLLM oversamples so). Sent
// as the random dataset's requests are (request_rate_per_s, burstiness). The shuffle is
// podsim's (Fisher-Yates on a 64-bit Mersenne Twister), not Python's: the same pruning and
// sampling, other rows for a seed.
struct SampledDataset {
  std::vector<Request> rows;    // lengths and prefixes, in the file's order
  int count = 1;                // --num-prompts
  int output_len = 0;           // --sharegpt-output-len; 0: each row's own
  double request_rate_per_s = 0;
  double burstiness = 1;
  uint64_t seed = 0;
};
// vLLM's is_valid_sequence at its defaults.
bool sharegpt_valid(int prompt_tokens, int output_tokens, bool output_len_given);
// The requests, and in `rows` (if given) the table row each came from.
std::vector<Request> sampled_requests(const SampledDataset& dataset, std::vector<size_t>* rows = nullptr);

}  // namespace podsim
