#pragma once
// Running a shipped scenario as a user would and reading its summary.json.
#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "cli_helpers.hpp"
#include "scratch.hpp"

namespace podsim_test {

// `podsim run scenarios/<name>.yaml <args> -o DIR` (DIR a scratch directory named `dir_name`),
// required to succeed; its summary.json.
inline nlohmann::json run_summary(const std::string& name, const std::string& args, const std::string& dir_name) {
  const auto dir = made_dir(dir_name);
  const auto run = run_podsim("run " + source_path("scenarios/" + name + ".yaml") + " " + args + " -o " + dir.string());
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  return nlohmann::json::parse(read_file(dir / "summary.json"));
}

}  // namespace podsim_test
