// summary.json's field table (sim/report/summary_field_table.hpp) against everything that names
// a field: a new field is one row (written, expectable, read back, documented);
// docs/scenario-schema.md lists exactly the rows; every shipped scenario's summary.json writes
// only rows of its workload, and each row is written by a shipped scenario of its workload (or
// by one of two variants turning on what none does).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <algorithm>
#include <map>
#include <set>
#include <fstream>
#include <sstream>
#include <unordered_set>

#include "cli_helpers.hpp"
#include "scratch.hpp"
#include "sim/commands/run_command.hpp"
#include "sim/report/summary_fields.hpp"
#include "sim/report/summary_writer.hpp"
#include "sim/scenario/summary_field_names.hpp"

using namespace podsim_test;
namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

namespace {

const std::string kCollectives = R"(version: 1
hardware: {preset: v5p}
topology: {mesh: {X: 4, Y: 4, Z: 4}}
workload:
  kind: collectives
  operations:
    - {name: ag, kind: all_gather, axes: [X], bytes: "1 MiB"}
expect:
  - {field: test_answer_s, value: "42 ms"}
)";

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

const std::map<podsim::WorkloadKind, std::string> kWorkloadNames = {
    {podsim::WorkloadKind::Collectives, "collectives"}, {podsim::WorkloadKind::Training, "training"},
    {podsim::WorkloadKind::Inference, "inference"}, {podsim::WorkloadKind::Serving, "serving"}};

}  // namespace

TEST_CASE("a new summary field is one table row: written, expectable, read back, documented", "[summary_fields]") {
  // Without the row an expectation may not name it.
  CHECK_THROWS_AS(podsim::load_scenario_text(kCollectives, "new-field.yaml"), podsim::InputError);
  const podsim::ScopedSummaryField row({"test_answer_s", "s", podsim::kCollectivesSummary, podsim::kCollectivesSummary,
                                        "a test's field",
                                        [](const podsim::SummaryInputs& in) -> Json { return in.run->total_time_s * 0 + 0.042; }});
  const auto scenario = podsim::load_scenario_text(kCollectives, "new-field.yaml");
  REQUIRE(scenario.expectations.size() == 1);
  CHECK(scenario.expectations[0].value == Approx(0.042));   // read as a time: the row's unit
  const auto out = fresh_dir("summary_field_row");
  podsim::RunCommandOptions options;
  options.reproducible = true;
  podsim::run_to_directory(scenario, out.string(), options);
  const auto summary = Json::parse(read_file(out / "summary.json"));
  REQUIRE(summary.contains("test_answer_s"));
  CHECK(std::prev(summary.end()).key() == "test_answer_s");   // its place: the table's last row
  // What calibrate and the scenario tests read back, and the expectation it meets.
  const double value = podsim::summary_field_value(nlohmann::json::parse(summary.dump()), "test_answer_s");
  CHECK(value == 0.042);
  CHECK(scenario.expectations[0].accepts(value));
  CHECK(podsim::summary_fields_markdown().find("| `test_answer_s` | s | collectives | collectives | a test's field |") !=
        std::string::npos);
  // Another workload's expectation still may not name it.
  podsim::ExpectFieldContext training;
  training.kind = podsim::WorkloadKind::Training;
  CHECK_FALSE(podsim::match_expect_field("test_answer_s", training).error.empty());
}

TEST_CASE("docs/scenario-schema.md lists the summary field table, row for row", "[summary_fields]") {
  const std::string docs = read_file(source_path("docs/scenario-schema.md"));
  const size_t begin = docs.find(podsim::kSummaryFieldsBegin);
  const size_t end = docs.find(podsim::kSummaryFieldsEnd);
  REQUIRE(begin != std::string::npos);
  REQUIRE(end != std::string::npos);
  const std::string listed = docs.substr(begin, end + podsim::kSummaryFieldsEnd.size() + 1 - begin);
  const std::string expected = podsim::summary_fields_markdown();
  const auto listed_lines = lines_of(listed), expected_lines = lines_of(expected);
  for (const auto& line : listed_lines) {
    if (std::find(expected_lines.begin(), expected_lines.end(), line) == expected_lines.end())
      FAIL_CHECK("docs/scenario-schema.md lists what the table has not: " << line);
  }
  for (const auto& line : expected_lines) {
    if (std::find(listed_lines.begin(), listed_lines.end(), line) == listed_lines.end())
      FAIL_CHECK("the table has a row docs/scenario-schema.md does not list: " << line);
  }
  // In the table's order too. The section as the table gives it is written beside the test's
  // other files, to paste over the docs' one.
  const fs::path generated = made_dir("summary_fields_docs") / "summary-fields.md";
  std::ofstream(generated) << expected;
  INFO("the table's section (kept with PODSIM_KEEP_TEST_DIRS=1): " << generated.string());
  CHECK(listed == expected);
}

TEST_CASE("every shipped scenario's summary.json writes rows of its workload, every row is written by one",
          "[summary_fields][scenarios]") {
  // Per workload, the rows' paths and which of them some shipped scenario wrote.
  std::map<podsim::WorkloadKind, std::map<std::vector<std::string>, bool>> written;
  for (const auto& [kind, name] : kWorkloadNames) {
    for (const auto& row : podsim::summary_name_rows())
      if (row.written & podsim::summary_workload(kind)) written[kind][podsim::summary_row_path(row.name)] = false;
  }
  auto check = [&](const fs::path& file, const std::vector<podsim::ScenarioOverride>& overrides) {
    const auto scenario = podsim::load_scenario(file.string(), overrides);
    const auto out = fresh_dir("summary_fields_" + file.stem().string());
    podsim::RunCommandOptions options;
    options.reproducible = true;
    podsim::run_to_directory(scenario, out.string(), options);
    const auto summary = Json::parse(read_file(out / "summary.json"));
    auto& rows = written[scenario.kind()];
    for (const auto& [key, value] : summary.items()) {
      if (auto row = rows.find({key}); row != rows.end()) {
        row->second = true;
        continue;
      }
      // An object of fixed members: a row each ("moe.dispatch_bytes_per_chip").
      const auto members = value.is_object() ? value : Json::object({{"", nullptr}});
      for (const auto& [member, unused] : members.items()) {
        auto row = rows.find({key, member});
        if (row == rows.end()) {
          FAIL_CHECK(file.filename().string() << " writes " << key << (member.empty() ? "" : "." + member)
                                              << ", which no " << kWorkloadNames.at(scenario.kind())
                                              << " row names");
          continue;
        }
        row->second = true;
      }
    }
  };
  for (const auto& entry : fs::directory_iterator(source_path("scenarios"))) {
    if (entry.path().extension() == ".yaml") check(entry.path(), {});
  }
  // What no shipped scenario turns on: a calibration profile in training or serving, an SLO.
  check(source_path("scenarios/training_tp_crossover.yaml"),
        {{"hardware.preset", "v5e"}, {"hardware.profile", "profiles/v5e_book.yaml"}});
  check(source_path("scenarios/serving_llama3_70b_continuous_v5e_4x4.yaml"),
        {{"hardware.profile", "profiles/v5e_book.yaml"}, {"workload.slo", "{ttft: \"2 s\"}"}});
  for (const auto& [kind, rows] : written) {
    for (const auto& [path, seen] : rows) {
      std::string name;
      for (const auto& key : path) name += (name.empty() ? "" : ".") + key;
      if (!seen) FAIL_CHECK("no shipped " << kWorkloadNames.at(kind) << " scenario writes " << name);
    }
  }
}

TEST_CASE("the table's rows agree with themselves and with the names' units", "[summary_fields]") {
  std::map<podsim::CompareColumn, std::string> compare;
  for (const auto& row : podsim::summary_name_rows()) {
    const std::string name(row.name), unit(row.unit);
    INFO(name);
    CHECK((row.expect & ~row.written) == 0);   // an expectation names what the workload writes
    if (row.compare != podsim::kNoCompareColumn) {
      CHECK(compare.emplace(row.compare, name).first->second == name);   // one name per compare column
    }
    // design.md, habit 2: a name's suffix is its unit, and an expectation's value is read in it.
    const std::string last = name.substr(name.rfind('.') + 1);
    if (last.ends_with("_s") && !last.ends_with("_per_s")) CHECK(unit == "s");
    if (last.ends_with("_bytes")) CHECK(unit == "bytes");
    if (name.find(".<") != std::string::npos && name.rfind("_s.<") != std::string::npos) CHECK(unit == "s");
  }
  CHECK(compare.size() == 3);
}

TEST_CASE("expect: fields match the table's patterns, and a miss lists what the workload may name",
          "[summary_fields]") {
  podsim::ExpectFieldContext serving;
  serving.kind = podsim::WorkloadKind::Serving;
  serving.percentiles = {50, 99.9};
  CHECK(podsim::match_expect_field("ttft_s.p99.9", serving).unit == "s");
  CHECK(podsim::match_expect_field("latency_s.median", serving).unit == "s");
  const auto statistic = podsim::match_expect_field("ttft_s.p42", serving);
  CHECK(statistic.error.find("ttft_s.<statistic>") != std::string::npos);
  CHECK(statistic.error.find("<statistic>: mean|std|median|max|p50|p99.9") != std::string::npos);

  const std::unordered_set<std::string> operations = {"ag"};
  podsim::ExpectFieldContext collectives;
  collectives.operation_names = &operations;
  CHECK(podsim::match_expect_field("operations.ag.algbw_Bps", collectives).unit == "by suffix");
  CHECK(podsim::match_expect_field("operations.nope.time_s", collectives).error == "no operation is named 'nope'");
  CHECK(podsim::match_expect_field("step_time_s", collectives).error ==
        "expected one of: total_time_s, operations.<name>.<field>");

  podsim::ExpectFieldContext training;
  training.kind = podsim::WorkloadKind::Training;
  CHECK(podsim::match_expect_field("memory_breakdown_bytes.params", training).unit == "bytes");
  CHECK(podsim::match_expect_field("per_layer.L0.attn.forward_s", training).unit == "s");
  CHECK(podsim::match_expect_field("fits_hbm", training).unit == "bool");
  CHECK(podsim::match_expect_field("moe.bogus", training).error.find("moe.<all_to_all_time_s|") != std::string::npos);
  CHECK_FALSE(podsim::match_expect_field("wall_time_s", training).error.empty());   // written, not a promise
}
