#pragma once
// Requests as CSV, a header then one request per line; blank lines and lines starting with '#'
// are skipped, columns other than these ignored, in any order.
// - A trace (requests.trace): `arrival_s,prompt_tokens,output_tokens`, times in seconds from
//   the trace's start, non-decreasing; lengths whole and positive.
// - A length table (requests.sharegpt: a conversation dataset's lengths, as vLLM's
//   benchmark tokenizes them): `prompt_tokens,output_tokens`.
// Either may add `prefix_id,prefix_tokens` (both or neither): the shared prefix the prompt
// starts with (prefix caching; workloads/requests.hpp), an id >= 0 and at most the prompt's
// tokens, or both cells empty for a request without one.
#include <string>
#include <vector>

#include "workloads/requests.hpp"

namespace podsim {

// Throws InputError naming the trace file, line, column, value and what was expected; a
// request whose prompt and response together exceed `max_tokens` (the model's context) is one.
std::vector<Request> read_request_trace(const std::string& path, int max_tokens, const std::string& model_name);
std::vector<Request> parse_request_trace(const std::string& text, const std::string& path, int max_tokens,
                                         const std::string& model_name);

// A length table's rows (arrival 0) and the line each came from; the same errors, except
// length: rows are checked against the model once sampled (requests.sharegpt filters first).
struct LengthTable {
  std::vector<Request> rows;
  std::vector<int> lines;
  int prompt_column = 1;   // 1-based, where a too-long row is reported
};
LengthTable read_length_table(const std::string& path);
LengthTable parse_length_table(const std::string& text, const std::string& path);

// Throws InputError at `row`'s line of the table when `request` (that row's, or sampled from it)
// is longer than the model's context of `max_tokens`.
void require_fits_model(const LengthTable& table, const std::string& path, size_t row, const Request& request,
                        int max_tokens, const std::string& model_name);

}  // namespace podsim
