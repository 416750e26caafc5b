#pragma once
// "Did you mean ...?" for the command line: a mistyped subcommand or option is named, with
// the nearest known word, before any other complaint (`run --hlep` is about --hlep, not about
// the scenario it did not get).
#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

namespace podsim {

// The known word nearest to `word` (edit distance at most max(1, |word| / 3)), if any.
std::optional<std::string> nearest_word(const std::string& word, const std::vector<std::string>& known);

// For arguments that CLI11 rejected: a message naming the first unknown subcommand or option
// of argv and the nearest known one; nullopt when every word is known.
std::optional<std::string> unknown_word_message(const CLI::App& app, int argc, const char* const* argv);

}  // namespace podsim
