#include "sim/commands/cli_suggest.hpp"

#include <algorithm>

namespace podsim {

namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::vector<std::string> option_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* option : app.get_options()) {
    for (const auto& l : option->get_lnames()) names.push_back("--" + l);
    for (const auto& s : option->get_snames()) names.push_back("-" + s);
  }
  return names;
}

std::string with_suggestion(const std::string& what, const std::string& word, const std::vector<std::string>& known) {
  std::string message = what + " '" + word + "'";
  if (auto near = nearest_word(word, known)) message += " (did you mean " + *near + "?)";
  return message;
}

}  // namespace

std::optional<std::string> nearest_word(const std::string& word, const std::vector<std::string>& known) {
  std::optional<std::string> best;
  size_t best_distance = std::max<size_t>(1, word.size() / 3) + 1;
  for (const auto& k : known) {
    const size_t d = edit_distance(word, k);
    if (d < best_distance) {
      best = k;
      best_distance = d;
    }
  }
  return best;
}

std::optional<std::string> unknown_word_message(const CLI::App& app, int argc, const char* const* argv) {
  std::vector<std::string> commands;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) commands.push_back(sub->get_name());
  const auto globals = option_names(app);
  const CLI::App* command = nullptr;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;
    if (arg.size() > 1 && arg[0] == '-') {
      const std::string name = arg.substr(0, arg.find('='));
      auto known = globals;
      if (command != nullptr) {
        const auto own = option_names(*command);
        known.insert(known.end(), own.begin(), own.end());
      }
      // A negative number is a value, not an option.
      if (name.find_first_not_of("-0123456789.e") == std::string::npos) continue;
      if (std::find(known.begin(), known.end(), name) == known.end()) {
        return (command ? "podsim " + command->get_name() + ": " : std::string()) +
               with_suggestion("unknown option", name, known);
      }
      continue;
    }
    if (command == nullptr) {
      if (std::find(commands.begin(), commands.end(), arg) == commands.end()) {
        return with_suggestion("unknown command", arg, commands);
      }
      command = app.get_subcommand(arg);
    }
  }
  return std::nullopt;
}

}  // namespace podsim
