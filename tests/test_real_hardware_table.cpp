// docs/validation.md's real-hardware table is what `podsim validate --measured` prints for the
// development set with the shipped profiles (issue 26): regenerated here, so a change to the
// model, a profile or a row that moves a figure fails until the docs say so. Minutes to run (the
// 16- and 32-slice rows), so not under the sanitizers.
#include <catch2/catch.hpp>

#include <string>

#include "cli_helpers.hpp"

namespace {

const std::string kBegin = "<!-- BEGIN real-hardware table";
const std::string kEnd = "<!-- END real-hardware table -->";

}  // namespace

TEST_CASE("docs/validation.md's real-hardware table is validate --measured's with the shipped profiles",
          "[real-hardware][sanitizer-skip]") {
  const std::string docs = podsim_test::read_file(podsim_test::source_path("docs/validation.md"));
  const size_t begin = docs.find(kBegin), end = docs.find(kEnd);
  REQUIRE(begin != std::string::npos);
  REQUIRE(end != std::string::npos);
  const size_t body = docs.find("-->\n", begin) + 4;
  const std::string documented = docs.substr(body, end - body);

  const auto dir = podsim_test::made_dir("real-hardware-table");
  const auto run = podsim_test::run_podsim("validate --measured " +
                                           podsim_test::source_path("scenarios/real/real_tpu.measurements.yaml") +
                                           " --profiles " + podsim_test::source_path("scenarios/profiles/real") +
                                           " --markdown " + (dir / "table.md").string());
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  const std::string generated = podsim_test::read_file(dir / "table.md");
  INFO("regenerate it with: build/podsim validate --measured scenarios/real/real_tpu.measurements.yaml "
       "--profiles scenarios/profiles/real --markdown TABLE.md, and paste it between the markers");
  CHECK(generated == documented);
}
