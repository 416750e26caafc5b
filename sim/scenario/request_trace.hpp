#pragma once
// A serving trace as CSV: a header `arrival_s,prompt_tokens,output_tokens` (in any order; other
// columns are ignored), then one request per line. Times in seconds from the trace's start,
// non-decreasing; lengths whole and positive. Blank lines and lines starting with '#' are skipped.
#include <string>
#include <vector>

#include "workloads/requests.hpp"

namespace podsim {

// Throws InputError naming the trace file, line, column, value and what was expected; a
// request whose prompt and response together exceed `max_tokens` (the model's context) is one.
std::vector<Request> read_request_trace(const std::string& path, int max_tokens, const std::string& model_name);
std::vector<Request> parse_request_trace(const std::string& text, const std::string& path, int max_tokens,
                                         const std::string& model_name);

}  // namespace podsim
