// The calibration parameter table (sim/scenario/hardware_parameters.hpp) against everything it
// drives: a row added in a test is a hardware.overrides key, a profile parameter, a --fit name
// calibrate recovers and a schema key; the docs (scenario-schema.md, calibration.md,
// scenario.schema.json) list exactly the rows; a scenario and a profile accept one range.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli_helpers.hpp"
#include "sim/commands/calibrate.hpp"
#include "sim/commands/calibration_report.hpp"
#include "sim/scenario/calibration_files.hpp"
#include "sim/scenario/hardware_parameters.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/scenario/schema_keys.hpp"

using namespace podsim;
namespace fs = std::filesystem;
using podsim_test::read_file;
using podsim_test::source_path;

namespace {

const std::string kCollective =
    "version: 1\nhardware: {preset: v5e}\ntopology: {mesh: {X: 4}}\nworkload:\n  kind: collectives\n  operations:\n"
    "    - {name: ag, kind: all_gather, axes: [X], bytes: \"1 MB\"}\n";

void write(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

// The `| `key` | ... |` rows of the markdown table under `heading`, by key: their cells.
std::map<std::string, std::vector<std::string>> markdown_rows(const std::string& text, const std::string& heading) {
  std::map<std::string, std::vector<std::string>> rows;
  std::istringstream in(text.substr(text.find(heading + "\n") + heading.size() + 1));
  std::string line;
  const std::regex row(R"(^\| `([a-z0-9_]+)` \|(.*)\|\s*$)");
  while (std::getline(in, line) && line.rfind("#", 0) != 0) {
    std::smatch match;
    if (!std::regex_match(line, match, row)) continue;
    std::vector<std::string> cells;
    std::string cell;
    std::istringstream cells_in(match[2].str());
    while (std::getline(cells_in, cell, '|')) cells.push_back(cell.substr(1, cell.size() - 2));
    rows[match[1]] = cells;
  }
  return rows;
}

// The keys under `parameters:` in calibration.md's profile example.
std::set<std::string> calibration_md_profile_keys(const std::string& text) {
  std::istringstream in(text.substr(text.find("## Profile (YAML)")));
  std::string line;
  while (std::getline(in, line) && line.rfind("parameters:", 0) != 0) {
  }
  std::set<std::string> keys;
  while (std::getline(in, line) && line.rfind("  ", 0) == 0) keys.insert(line.substr(2, line.find(':') - 2));
  return keys;
}

std::set<std::string> as_set(const std::vector<std::string>& keys) { return {keys.begin(), keys.end()}; }

template <typename Map>
std::set<std::string> keys_of(const Map& map) {
  std::set<std::string> keys;
  for (const auto& [key, value] : map) keys.insert(key);
  return keys;
}

// Where the docs and the table disagree, one line each (none: they agree both ways).
std::vector<std::string> docs_disagreements() {
  std::vector<std::string> out;
  const std::string schema_md = read_file(source_path("docs/scenario-schema.md"));
  const std::string calibration_md = read_file(source_path("docs/calibration.md"));
  const auto json = nlohmann::json::parse(read_file(source_path("docs/scenario.schema.json")));
  struct Section {
    std::string name, heading, definition;
    SchemaMap map;
  };
  for (const Section& section : {Section{"hardware.overrides", "### `hardware.overrides`", "hardware_overrides",
                                         SchemaMap::HardwareOverrides},
                                 Section{"simulation", "## `simulation`", "simulation", SchemaMap::Simulation}}) {
    const auto md = markdown_rows(schema_md, section.heading);
    const auto& properties = json.at("definitions").at(section.definition).at("properties");
    const std::set<std::string> keys = as_set(key_table(section.map).keys);
    if (keys_of(md) != keys)
      out.push_back("scenario-schema.md's " + section.name + " table lists other keys than the loader");
    if (keys_of(properties.items()) != keys)
      out.push_back("scenario.schema.json's " + section.definition + " has other keys than the loader");
    for (const HardwareParameter* row : hardware_parameters_in(section.name)) {
      const std::string leaf(row->scenario_leaf());
      const std::string range = row->range_text(row->valid);
      // hardware.overrides has a range column; simulation says the range in its meaning.
      if (!md.count(leaf)) out.push_back(row->key + ": not in scenario-schema.md");
      else if (section.name == "hardware.overrides" ? md.at(leaf).at(1) != range
                                                    : md.at(leaf).back().find(range) == std::string::npos)
        out.push_back(row->key + ": scenario-schema.md does not give the range " + range);
      if (!properties.contains(leaf)) out.push_back(row->key + ": not in scenario.schema.json");
      else if (properties.at(leaf).at("description").get<std::string>().find(range) == std::string::npos)
        out.push_back(row->key + ": scenario.schema.json's description does not give the range " + range);
    }
  }
  // calibration.md's fit bounds: a bullet per fitted row, `key` and its fit range.
  const size_t fit_begin = calibration_md.find("Each parameter lives inside");
  const std::string fit_text = calibration_md.substr(fit_begin, calibration_md.find("The compute parameters", fit_begin) - fit_begin);
  std::set<std::string> fit_keys, fitted;
  const std::regex quoted("`([a-z0-9_]+)`");
  for (auto it = std::sregex_iterator(fit_text.begin(), fit_text.end(), quoted); it != std::sregex_iterator(); ++it)
    fit_keys.insert((*it)[1]);
  for (const HardwareParameter& row : hardware_parameters()) {
    if (!row.fit) continue;
    fitted.insert(row.key);
    if (fit_text.find("`" + row.key + "` " + row.range_text(*row.fit)) == std::string::npos)
      out.push_back(row.key + ": calibration.md's fit bounds do not give " + row.range_text(*row.fit));
  }
  if (fit_keys != fitted) out.push_back("calibration.md's fit bounds name other parameters than the fitted rows");
  std::set<std::string> rows;
  for (const HardwareParameter& row : hardware_parameters()) rows.insert(row.key);
  for (const auto& key : calibration_md_profile_keys(calibration_md))
    if (!rows.count(key)) out.push_back(key + ": in calibration.md's profile but not a row");
  for (const auto& key : rows)
    if (!calibration_md_profile_keys(calibration_md).count(key)) out.push_back(key + ": a row missing from calibration.md's profile");
  return out;
}

InputError error_from(const std::function<void()>& load) {
  try {
    load();
  } catch (const InputError& e) {
    return e;
  }
  FAIL("accepted");
  throw std::logic_error("unreachable");
}

// A test-only row: the ICI link bandwidth again, under a key of its own, as a bandwidth (the one
// unit no built-in row has).
HardwareParameter test_row() {
  return {"test_ici_bandwidth",
          "hardware.overrides.test_ici_bandwidth",
          &ChipSpec::ici_bandwidth_Bps,
          nullptr,
          ParameterUnit::Bandwidth,
          ParameterRange{1e9, 1e12, false, "a test's range"},
          ParameterRange{1e10, 1e11, false, "a test's fit range"},
          std::nullopt,
          "a test-only row: one ICI link's bandwidth"};
}

// Bandwidth-bound AllGathers on the book's v5e 16-ring: they measure the link bandwidth.
std::string measurements(const std::vector<double>& measured_s) {
  const std::vector<std::string> bytes = {"4194304", "67108864", "268435456"};
  std::string out = "version: 1\nmeasurements:\n";
  for (size_t i = 0; i < bytes.size(); ++i)
    out += "  - {name: m" + std::to_string(i) + ", scenario: " + source_path("scenarios/profiles/v5e_8x16_allgather_16.yaml") +
           ", set: {workload.operations.0.bytes: " + bytes[i] + "}, field: operations.allgather.time_s, measured: \"" +
           std::to_string(i < measured_s.size() ? measured_s[i] * 1e6 : 1.0) + " us\"}\n";
  return out;
}

}  // namespace

TEST_CASE("the docs list exactly the calibration parameters, with their ranges", "[hardware_parameters][schema]") {
  const auto disagreements = docs_disagreements();
  for (const auto& line : disagreements) INFO(line);
  CHECK(disagreements.empty());
  for (const auto& line : disagreements) WARN(line);
}

TEST_CASE("each row is whole: one member, ranges with reasons, a fit inside what a scenario accepts",
          "[hardware_parameters]") {
  for (const HardwareParameter& row : hardware_parameters()) {
    INFO(row.key);
    CHECK((row.chip_member == nullptr) != (row.scenario_member == nullptr));
    CHECK((row.section() == "hardware.overrides" || row.section() == "simulation"));
    CHECK_FALSE(row.valid.reason.empty());
    CHECK_FALSE(row.doc.empty());
    CHECK(row.valid.low < row.valid.high);
    if (row.fit) {
      // calibrate sets a candidate without the loader's checks: every candidate must be one it accepts.
      CHECK_FALSE(row.fit->reason.empty());
      CHECK(row.valid.contains(row.fit->low));
      CHECK(row.valid.contains(row.fit->high));
    }
  }
}

TEST_CASE("a scenario and a profile accept one range per parameter, and say so alike", "[hardware_parameters]") {
  const fs::path dir = podsim_test::made_dir("hardware-parameters-range");
  for (const HardwareParameter& row : hardware_parameters()) {
    INFO(row.key);
    const double high = row.valid.high, beyond = row.valid.high * 1.5;
    const Scenario ok = load_scenario_text(kCollective, "s.yaml", {{row.scenario_key, row.yaml_text(high)}});
    CHECK(row.get(ok) == Approx(high).epsilon(1e-12));
    const InputError scenario_error =
        error_from([&] { load_scenario_text(kCollective, "s.yaml", {{row.scenario_key, row.yaml_text(beyond)}}); });
    CHECK(scenario_error.key() == row.scenario_key);
    write(dir / "p.yaml", "version: 1\nname: p\nchip: v5e\nparameters:\n  " + row.key + ": " + row.yaml_text(high) + "\n");
    CHECK(load_profile((dir / "p.yaml").string()).parameters.at(row.key) == Approx(high).epsilon(1e-12));
    write(dir / "p.yaml", "version: 1\nname: p\nchip: v5e\nparameters:\n  " + row.key + ": " + row.yaml_text(beyond) + "\n");
    const InputError profile_error = error_from([&] { load_profile((dir / "p.yaml").string()); });
    CHECK(profile_error.key() == "parameters." + row.key);
    CHECK(profile_error.where().line == 5);
    CHECK(scenario_error.expected() == "out of range; expected " + row.expected_text());
    CHECK(profile_error.expected() == scenario_error.expected());
  }
}

TEST_CASE("setting a row's member equals loading its key, on every chip a run reads", "[hardware_parameters][calibrate]") {
  // Disaggregated serving: the slice's chip, and the generate and prefill servers' copies.
  const std::string path = source_path("scenarios/serving_llama3_70b_disaggregated_v5e.yaml");
  const Scenario base = load_scenario(path);
  for (const HardwareParameter& row : hardware_parameters()) {
    INFO(row.key);
    // Unfitted rows near the low end of their range: half of HBM as headroom would leave this
    // scenario's generate server no room for its batch of 32.
    const double value = row.fit ? (row.fit->low + row.fit->high) / 2 : row.valid.low + (row.valid.high - row.valid.low) / 32;
    const Scenario loaded = load_scenario(path, {{row.scenario_key, row.yaml_text(value)}});
    Scenario set = base;
    row.set(set, value);
    CHECK(row.get(set) == Approx(row.get(loaded)).epsilon(1e-11));
    if (row.chip_member) {
      for (const auto* topology : {&loaded.topology, &loaded.serving().generate_topology, &loaded.serving().prefill_topology,
                                   &loaded.serving().prefill_server_topology})
        CHECK(topology->chip.*row.chip_member == Approx(value).epsilon(1e-11));
      for (const auto* topology : {&set.topology, &set.serving().generate_topology, &set.serving().prefill_topology,
                                   &set.serving().prefill_server_topology})
        CHECK(topology->chip.*row.chip_member == value);
    }
  }
}

TEST_CASE("a calibration parameter added by one row is an override, a profile parameter, fit and in the schema",
          "[hardware_parameters][calibrate]") {
  const fs::path dir = podsim_test::made_dir("hardware-parameters-new-row");
  CHECK(docs_disagreements().empty());
  const HardwareParameterRegistration registration(test_row());
  // The schema: hardware.overrides takes the key, and the docs check names the row they lack.
  const auto& keys = key_table(SchemaMap::HardwareOverrides).keys;
  CHECK(std::find(keys.begin(), keys.end(), "test_ici_bandwidth") != keys.end());
  const auto disagreements = docs_disagreements();
  CHECK(std::find(disagreements.begin(), disagreements.end(), "test_ici_bandwidth: not in scenario-schema.md") !=
        disagreements.end());
  // An override, in the row's unit and range.
  const Scenario overridden = load_scenario_text(kCollective, "s.yaml", {{"hardware.overrides.test_ici_bandwidth", "\"20 GB/s\""}});
  CHECK(overridden.topology.chip.ici_bandwidth_Bps == 2e10);
  const InputError error =
      error_from([&] { load_scenario_text(kCollective, "s.yaml", {{"hardware.overrides.test_ici_bandwidth", "\"2 TB/s\""}}); });
  CHECK(error.key() == "hardware.overrides.test_ici_bandwidth");
  CHECK(error.expected() == "out of range; expected a bandwidth from 1 GB/s to 1 TB/s, e.g. \"45 GB/s\"");
  // calibrate: a --fit name, recovered from measurements generated with it.
  write(dir / "m.yaml", measurements({}));
  auto truth = calibration_parameters();
  for (auto& p : truth) p.fitted = p.name == "test_ici_bandwidth";
  for (auto& p : truth) if (p.fitted) p.value = 3e10;
  REQUIRE(std::count_if(truth.begin(), truth.end(), [](const auto& p) { return p.fitted; }) == 1);
  std::vector<double> measured;
  for (const auto& m : load_measurements((dir / "m.yaml").string()).measurements)
    measured.push_back(predict(m, HopModel::Floor, truth));
  write(dir / "m.yaml", measurements(measured));
  const MeasurementFile file = load_measurements((dir / "m.yaml").string());
  CalibrationOptions options;
  options.fit = {"test_ici_bandwidth"};
  options.hop_model = HopModel::Floor;
  options.leave_one_out = false;
  const CalibrationResult result = calibrate(file, options);
  const auto& parameters = result.profiles.front().parameters;
  const auto fitted = std::find_if(parameters.begin(), parameters.end(),
                                   [](const auto& p) { return p.name == "test_ici_bandwidth"; });
  REQUIRE(fitted != parameters.end());
  CHECK(fitted->value == Approx(3e10).epsilon(1e-3));
  // The profile calibrate writes carries it, reads back, and applies it to a scenario.
  const std::string profile = calibration_profile_yaml(file, result, result.profiles.front(), "test");
  CHECK(profile.find("  test_ici_bandwidth: \"") != std::string::npos);
  write(dir / "p.yaml", profile);
  CHECK(load_profile((dir / "p.yaml").string()).parameters.at("test_ici_bandwidth") == Approx(fitted->value).epsilon(1e-11));
  write(dir / "s.yaml", std::regex_replace(kCollective, std::regex("\\{preset: v5e\\}"), "{preset: v5e, profile: p.yaml}"));
  CHECK(load_scenario((dir / "s.yaml").string()).topology.chip.ici_bandwidth_Bps == Approx(fitted->value).epsilon(1e-11));
}

TEST_CASE("once the row leaves, so does its key", "[hardware_parameters]") {
  { const HardwareParameterRegistration registration(test_row()); }
  const auto& keys = key_table(SchemaMap::HardwareOverrides).keys;
  CHECK(std::find(keys.begin(), keys.end(), "test_ici_bandwidth") == keys.end());
  CHECK(find_hardware_parameter("test_ici_bandwidth") == nullptr);
  CHECK_THROWS_AS(load_scenario_text(kCollective, "s.yaml", {{"hardware.overrides.test_ici_bandwidth", "\"20 GB/s\""}}),
                  InputError);
}
