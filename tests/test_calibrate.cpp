// podsim calibrate (sim/commands/calibrate.hpp): it recovers parameters podsim itself generated
// measurements with, a profile applies as its parameters would, and bad measurement files and
// profiles get located errors.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli_helpers.hpp"
#include "sim/commands/calibrate.hpp"
#include "sim/scenario/calibration_files.hpp"
#include "sim/scenario/scenario.hpp"

using namespace podsim;
namespace fs = std::filesystem;
using podsim_test::source_path;

namespace {

fs::path scratch(const std::string& name) { return podsim_test::made_dir("calibrate-" + name); }

void write(const fs::path& path, const std::string& text) {
  std::ofstream(path) << text;
}

// Measurements over the book's two v5e collective scenarios: sizes from latency- to
// bandwidth-bound on the 16-ring and the 4-line.
std::string entries(const std::vector<std::pair<std::string, double>>& measured) {
  const std::vector<std::pair<std::string, std::string>> points = {
      {"v5e_8x16_allgather_16.yaml", "{workload.operations.0.bytes: 8192}"},
      {"v5e_8x16_allgather_16.yaml", "{workload.operations.0.bytes: 524288}"},
      {"v5e_8x16_allgather_16.yaml", "{workload.operations.0.bytes: 4194304}"},
      {"v5e_8x16_allgather_16.yaml", "{workload.operations.0.bytes: 268435456}"},
      {"v5e_8x4_allgather_y.yaml", "{workload.operations.0.array: \"bf16[256,256]\"}"},
      {"v5e_8x4_allgather_y.yaml", "{}"}};
  std::string out = "version: 1\nname: generated\nmeasurements:\n";
  for (size_t i = 0; i < points.size(); ++i) {
    const std::string field = points[i].first.find("8x4") != std::string::npos ? "operations.allgather_y.time_s"
                                                                                 : "operations.allgather.time_s";
    out += "  - name: m" + std::to_string(i) + "\n    scenario: " + source_path("scenarios/profiles/" + points[i].first) +
           "\n    set: " + points[i].second + "\n    field: " + field + "\n    measured: \"" +
           std::to_string(i < measured.size() ? measured[i].second * 1e6 : 1.0) + " us\"\n";
  }
  return out;
}

}  // namespace

TEST_CASE("calibrate recovers the parameters podsim generated its measurements with", "[calibrate]") {
  const fs::path dir = scratch("recover");
  // Placeholders first, to predict each measurement under the known parameters.
  write(dir / "m.yaml", entries({}));
  MeasurementFile file = load_measurements((dir / "m.yaml").string());
  auto truth = calibration_parameters();
  for (auto& p : truth) {
    p.fitted = p.name == "hop_latency" || p.name == "link_efficiency" || p.name == "collective_overhead";
    if (p.name == "hop_latency") p.value = 1.6e-6;
    if (p.name == "link_efficiency") p.value = 0.93;
    if (p.name == "collective_overhead") p.value = 3.0e-6;
  }
  std::vector<std::pair<std::string, double>> measured;
  for (const auto& m : file.measurements) measured.push_back({m.name, predict(m, HopModel::Additive, truth)});
  write(dir / "m.yaml", entries(measured));
  file = load_measurements((dir / "m.yaml").string());
  CalibrationOptions options;
  options.hop_model = HopModel::Additive;
  options.leave_one_out = false;
  const auto result = calibrate(file, options);
  for (const auto& p : result.profiles.front().parameters) {
    if (!p.fitted) continue;   // the compute parameters: not in the default --fit
    const double expected = p.name == "hop_latency" ? 1.6e-6 : p.name == "link_efficiency" ? 0.93 : 3.0e-6;
    INFO(p.name << " fitted " << p.value << ", generated with " << expected);
    CHECK(p.value == Approx(expected).epsilon(0.01));
  }
  CHECK(result.errors.max_abs_fitted < 1e-3);
  // The defaults (floor model, ideal links, no overhead) miss them: the fit had work to do.
  CHECK(result.errors.rms_default > 0.1);
}

TEST_CASE("a profile applies its parameters to a scenario", "[calibrate]") {
  const fs::path dir = scratch("profile");
  write(dir / "p.yaml",
        "version: 1\nname: test-profile\nchip: v5e\nhop_model: additive\nmxu_padding: true\nparameters:\n  hop_latency: \"2 us\"\n"
        "  link_efficiency: 0.9\n  collective_overhead: \"5 us\"\n  dcn_latency: \"20 us\"\n  dequant_rate: 4e12\n");
  const std::string scenario = "version: 1\nhardware: {preset: v5e, profile: p.yaml}\ntopology: {mesh: {X: 4}}\n"
                               "workload:\n  kind: collectives\n  operations:\n    - {name: ag, kind: all_gather, axes: [X], bytes: \"1 MB\"}\n";
  write(dir / "s.yaml", scenario);
  const Scenario s = load_scenario((dir / "s.yaml").string());
  CHECK(s.topology.chip.hop_latency_s == Approx(2e-6));
  CHECK(s.hop_model == HopModel::Additive);
  CHECK(s.link_efficiency == Approx(0.9));
  CHECK(s.launch_overhead_s == Approx(5e-6));
  CHECK(s.profile == "test-profile");
  CHECK(s.topology.chip.mxu_padding);
  CHECK(s.topology.chip.dcn_latency_s == Approx(20e-6));
  CHECK(s.topology.chip.dequant_weights_per_s == 4e12);
  write(dir / "bad_mxu.yaml", "version: 1\nname: b\nchip: v5e\nmxu_padding: maybe\n");
  try {
    load_profile((dir / "bad_mxu.yaml").string());
    FAIL("accepted mxu_padding: maybe");
  } catch (const InputError& e) {
    CHECK(e.key() == "mxu_padding");
    CHECK(e.where().line == 4);
  }
  // antipodal_split: the profile's value applies unless the scenario's overrides set it; a value
  // that is not a boolean is refused at its line (profile) or key (scenario).
  CHECK_FALSE(s.topology.chip.antipodal_split);
  write(dir / "split.yaml", "version: 1\nname: split\nchip: v5e\nantipodal_split: true\n");
  CHECK(load_scenario((dir / "s.yaml").string(), {{"hardware.profile", "split.yaml"}}).topology.chip.antipodal_split);
  CHECK_FALSE(load_scenario((dir / "s.yaml").string(), {{"hardware.profile", "split.yaml"},
                                                        {"hardware.overrides.antipodal_split", "false"}})
                  .topology.chip.antipodal_split);
  write(dir / "bad_split.yaml", "version: 1\nname: b\nchip: v5e\nhop_model: floor\nantipodal_split: half\n");
  try {
    load_profile((dir / "bad_split.yaml").string());
    FAIL("accepted antipodal_split: half");
  } catch (const InputError& e) {
    CHECK(e.key() == "antipodal_split");
    CHECK(e.value() == "half");
    CHECK(e.where().line == 5);
  }
  try {
    load_scenario((dir / "s.yaml").string(), {{"hardware.overrides.antipodal_split", "2"}});
    FAIL("accepted hardware.overrides.antipodal_split: 2");
  } catch (const InputError& e) {
    CHECK(e.key() == "hardware.overrides.antipodal_split");
  }
  // reductions_on_tensor_core: the same rules (workloads/collective_reduction.hpp).
  CHECK_FALSE(s.topology.chip.reductions_on_tensor_core);
  write(dir / "core.yaml", "version: 1\nname: core\nchip: v5e\nreductions_on_tensor_core: true\n");
  CHECK(load_scenario((dir / "s.yaml").string(), {{"hardware.profile", "core.yaml"}}).topology.chip.reductions_on_tensor_core);
  CHECK_FALSE(load_scenario((dir / "s.yaml").string(), {{"hardware.profile", "core.yaml"},
                                                        {"hardware.overrides.reductions_on_tensor_core", "false"}})
                  .topology.chip.reductions_on_tensor_core);
  write(dir / "bad_core.yaml", "version: 1\nname: b\nchip: v5e\nreductions_on_tensor_core: sometimes\n");
  try {
    load_profile((dir / "bad_core.yaml").string());
    FAIL("accepted reductions_on_tensor_core: sometimes");
  } catch (const InputError& e) {
    CHECK(e.key() == "reductions_on_tensor_core");
    CHECK(e.value() == "sometimes");
    CHECK(e.where().line == 4);
  }
  try {
    load_scenario((dir / "s.yaml").string(), {{"hardware.overrides.reductions_on_tensor_core", "1.5"}});
    FAIL("accepted hardware.overrides.reductions_on_tensor_core: 1.5");
  } catch (const InputError& e) {
    CHECK(e.key() == "hardware.overrides.reductions_on_tensor_core");
  }
  // The scenario's own simulation keys win over the profile.
  const Scenario own = load_scenario((dir / "s.yaml").string(), {{"simulation.link_efficiency", "0.5"}});
  CHECK(own.link_efficiency == Approx(0.5));
  // A profile for another chip is refused where the scenario names it.
  write(dir / "v4.yaml", "version: 1\nname: v4-profile\nchip: v4p\nparameters: {hop_latency: \"2 us\"}\n");
  try {
    load_scenario((dir / "s.yaml").string(), {{"hardware.profile", "v4.yaml"}});
    FAIL("accepted a v4p profile on a v5e");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("a profile for v4p") != std::string::npos);
  }
}

TEST_CASE("bad measurement files get located errors", "[calibrate]") {
  const fs::path dir = scratch("bad");
  const std::string scenario = source_path("scenarios/profiles/v5e_8x4_allgather_y.yaml");
  const std::string good = "version: 1\nmeasurements:\n  - name: a\n    scenario: " + scenario +
                           "\n    field: operations.allgather_y.time_s\n    measured: \"680 us\"\n";
  write(dir / "good.yaml", good);
  CHECK(load_measurements((dir / "good.yaml").string()).measurements.size() == 1);
  struct Case {
    std::string name, text, key, expected;
  };
  const std::vector<Case> cases = {
      {"missing field", "version: 1\nmeasurements:\n  - {name: a, scenario: " + scenario + ", measured: \"1 us\"}\n",
       "measurements[0].field", "missing"},
      {"negative time",
       "version: 1\nmeasurements:\n  - {name: a, scenario: " + scenario +
           ", field: operations.allgather_y.time_s, measured: \"-3 us\"}\n",
       "measurements[0].measured", "positive"},
      {"time without a unit",
       "version: 1\nmeasurements:\n  - {name: a, scenario: " + scenario +
           ", field: operations.allgather_y.time_s, measured: \"3\"}\n",
       "measurements[0].measured", "unit"},
      {"no such scenario",
       "version: 1\nmeasurements:\n  - {name: a, scenario: nowhere.yaml, field: x_s, measured: \"1 us\"}\n",
       "measurements[0].scenario", "no such scenario file"},
      {"unknown key", "version: 1\nmeasurements:\n  - {name: a, scenario: " + scenario + ", feild: x}\n",
       "measurements[0].feild", "unknown key"},
      {"duplicate name",
       "version: 1\nmeasurements:\n  - {name: a, scenario: " + scenario +
           ", field: x_s, measured: \"1 us\"}\n  - {name: a, scenario: " + scenario + ", field: x_s, measured: \"1 us\"}\n",
       "measurements[1].name", "unique"},
      // A time no collective or step takes drove the fit to 0 error of a prediction of 0 (1e300 s)
      // or to NaN parameters blamed on a --set never given (1e-300 s).
      {"an absurdly long time",
       "version: 1\nmeasurements:\n  - {name: a, scenario: " + scenario +
           ", field: operations.allgather_y.time_s, measured: \"1e300 s\"}\n",
       "measurements[0].measured", "between 1 ns and 1e6 s"},
      {"an absurdly short time",
       "version: 1\nmeasurements:\n  - {name: a, scenario: " + scenario +
           ", field: operations.allgather_y.time_s, measured: \"1e-300 s\"}\n",
       "measurements[0].measured", "between 1 ns and 1e6 s"},
      {"a number beyond any measurement",
       "version: 1\nmeasurements:\n  - {name: a, scenario: " + scenario + ", field: mfu, measured: 1e300}\n",
       "measurements[0].measured", "between 1e-12 and 1e15"},
      // A number with a unit after it was read as the number (\"251.04 ms\" for a rate: 251.04).
      {"a number followed by text",
       "version: 1\nmeasurements:\n  - {name: a, scenario: " + scenario + ", field: mfu, measured: \"251.04 ms\"}\n",
       "measurements[0].measured", "expected a number"},
      // A statistic of a time distribution is a time: it needs its unit.
      {"a time statistic without a unit",
       "version: 1\nmeasurements:\n  - {name: a, scenario: " + scenario + ", field: ttft_s.mean, measured: \"0.25\"}\n",
       "measurements[0].measured", "unit"},
      {"empty list", "version: 1\nmeasurements: []\n", "measurements", "non-empty"},
      {"wrong version", "version: 2\nmeasurements: []\n", "version", "expected 1"}};
  for (const auto& c : cases) {
    INFO(c.name);
    write(dir / "bad.yaml", c.text);
    try {
      load_measurements((dir / "bad.yaml").string());
      FAIL("accepted");
    } catch (const InputError& e) {
      CHECK(e.key() == c.key);
      CHECK(std::string(e.what()).find(c.expected) != std::string::npos);
      CHECK(e.where().file == (dir / "bad.yaml").string());
      CHECK(e.where().line >= 1);
    }
  }
  // A scenario that does not load fails when calibrate runs it, naming the scenario's own error.
  write(dir / "broken.yaml", "version: 1\nhardware: {preset: v9z}\n");
  write(dir / "m.yaml", "version: 1\nmeasurements:\n  - {name: a, scenario: broken.yaml, field: x_s, measured: \"1 us\"}\n");
  const auto file = load_measurements((dir / "m.yaml").string());
  CHECK_THROWS_AS(calibrate(file, {}), InputError);
  // The CLI: exit status 2 and the located message.
  const auto cli = podsim_test::run_podsim("calibrate " + (dir / "m.yaml").string() + " -o " + (dir / "p.yaml").string());
  CHECK(cli.exit_code == 2);
  CHECK(cli.err.find("broken.yaml") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "p.yaml"));
  // More parameters than measurements cannot be identified: refused, naming --fit.
  const auto underdetermined = podsim_test::run_podsim(
      "calibrate " + source_path("scenarios/profiles/v4_llama_decode.measurements.yaml") +
      " --fit hbm_efficiency,compute_overhead -o " + (dir / "p.yaml").string());
  CHECK(underdetermined.exit_code == 2);
  CHECK(underdetermined.err.find("'--fit'") != std::string::npos);
  CHECK(underdetermined.err.find("more parameters than the 1 measurements") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "p.yaml"));
}

TEST_CASE("calibrate recovers compute parameters from generated decode steps", "[calibrate]") {
  // HBM efficiency and a fixed cost per compute op, generated on LLaMA-2 7B decode steps of
  // four batch sizes and contexts on a v4 2x2 (memory-bound at small batches, less so at 512).
  const fs::path dir = scratch("compute");
  const std::string scenario = source_path("scenarios/profiles/v4_llama_7b_decode.yaml");
  const std::vector<std::string> sets = {"{workload.batch: 1}", "{workload.batch: 32, workload.context_length: 1024}",
                                         "{workload.batch: 128}", "{workload.batch: 512, workload.context_length: 64}"};
  auto file_text = [&](const std::vector<double>& measured) {
    std::string out = "version: 1\nmeasurements:\n";
    for (size_t i = 0; i < sets.size(); ++i)
      out += "  - {name: d" + std::to_string(i) + ", scenario: " + scenario + ", set: " + sets[i] +
             ", field: decode_step_time_s, measured: \"" +
             std::to_string(i < measured.size() ? measured[i] * 1e6 : 1.0) + " us\"}\n";
    return out;
  };
  write(dir / "m.yaml", file_text({}));
  auto truth = calibration_parameters();
  for (auto& p : truth) {
    p.fitted = p.name == "hbm_efficiency" || p.name == "compute_overhead";
    if (p.name == "hbm_efficiency") p.value = 0.7;
    if (p.name == "compute_overhead") p.value = 10e-6;
  }
  std::vector<double> measured;
  for (const auto& m : load_measurements((dir / "m.yaml").string()).measurements)
    measured.push_back(predict(m, HopModel::Floor, truth));
  write(dir / "m.yaml", file_text(measured));
  CalibrationOptions options;
  options.fit = {"hbm_efficiency", "compute_overhead"};
  options.hop_model = HopModel::Floor;
  options.leave_one_out = false;
  const auto result = calibrate(load_measurements((dir / "m.yaml").string()), options);
  for (const auto& p : result.profiles.front().parameters) {
    if (!p.fitted) continue;
    INFO(p.name << " fitted " << p.value);
    CHECK(p.value == Approx(p.name == "hbm_efficiency" ? 0.7 : 10e-6).epsilon(0.01));
  }
  CHECK(result.errors.rms_default > 0.1);
}

TEST_CASE("validate --measured prints and writes each measurement against the ideal machine and a profile",
          "[calibrate]") {
  const fs::path dir = scratch("validate");
  const auto result = podsim_test::run_podsim(
      "validate --measured " + source_path("scenarios/profiles/v5e_book.measurements.yaml") + " --profile " +
      source_path("scenarios/profiles/v5e_book.yaml") + " --csv " + (dir / "m.csv").string());
  REQUIRE(result.exit_code == 0);
  CHECK(result.out.find("book-23") != std::string::npos);
  std::ifstream in(dir / "m.csv");
  std::string header, line;
  std::getline(in, header);
  CHECK(header == "name,profile,field,measured,default_predicted,default_error,profile_predicted,profile_error,published,"
                  "group,sole_evidence,low_80,high_80,low_95,high_95,moe");
  int rows = 0;
  while (std::getline(in, line)) {
    ++rows;
    if (line.rfind("book-23,", 0) == 0) {
      // #23 (measured 8 us) under the profile: a 4-chip line, 3 additive hops of a 32,768 B
      // message, 3 (T_hop + b / (efficiency W)), from the profile's own parameters.
      const auto profile = load_profile(source_path("scenarios/profiles/v5e_book.yaml"));
      REQUIRE(profile.hop_model == HopModel::Additive);
      const double predicted = 3 * (profile.parameters.at("hop_latency") + 32768 / (profile.parameters.at("link_efficiency") * 4.5e10));
      // The eighth column (profile_error).
      std::string cell;
      std::stringstream cells(line);
      for (int column = 0; column < 8; ++column) std::getline(cells, cell, ',');
      const double profile_error = std::stod(cell);
      CHECK(profile_error == Approx(predicted / 8e-6 - 1).epsilon(1e-6));
    }
  }
  CHECK(rows == 19);
  if (std::system("python3 -c 'import matplotlib' 2>/dev/null") == 0) {
    const std::string plot = "python3 " + source_path("scripts/plot_measured.py") + " " + (dir / "m.csv").string() +
                             " -o " + (dir / "m.png").string() + " > /dev/null";
    CHECK(std::system(plot.c_str()) == 0);
    CHECK(fs::file_size(dir / "m.png") > 1000);
  }
  // podsim runs the python3 on its PATH; a test runner's may lack matplotlib where Debian's has it.
  if (std::system("/usr/bin/python3 -c 'import matplotlib' 2>/dev/null") == 0) {
    // --plot draws it in the same run, from a CSV it removes after (none given).
    const auto drawn = podsim_test::run_podsim("validate --measured " +
                                               source_path("scenarios/profiles/v5e_book.measurements.yaml") +
                                               " --profile " + source_path("scenarios/profiles/v5e_book.yaml") +
                                               " --plot " + (dir / "drawn.png").string());
    REQUIRE(drawn.exit_code == 0);
    CHECK(drawn.out.find("wrote " + (dir / "drawn.png").string()) != std::string::npos);
    CHECK(fs::file_size(dir / "drawn.png") > 1000);
    CHECK_FALSE(fs::exists(dir / "drawn.png.csv"));
  }
  // A plot of measurements needs the measurements.
  const auto alone = podsim_test::run_podsim("validate --plot " + (dir / "x.png").string());
  CHECK(alone.exit_code == 2);
  CHECK(alone.err.find("--plot") != std::string::npos);
}

TEST_CASE("calibrate --shared alone fits what it names: the default --fit is for a fit that names nothing",
          "[calibrate]") {
  // One row: the default --fit's three parameters and a shared one would be four for one row.
  const fs::path dir = scratch("shared-alone");
  const auto cli = podsim_test::run_podsim("calibrate " +
                                           source_path("scenarios/profiles/v4_llama_decode.measurements.yaml") +
                                           " --shared hbm_efficiency --no-leave-one-out -o " + (dir / "p.yaml").string());
  INFO(cli.err);
  REQUIRE(cli.exit_code == 0);
  const auto profile = load_profile((dir / "p.yaml").string());
  CHECK(profile.parameters.count("hbm_efficiency") == 1);
  CHECK(profile.parameters.count("hop_latency") == 0);
  // Named explicitly, the default's parameters are fitted as before (and here refused: too many).
  const auto both = podsim_test::run_podsim("calibrate " +
                                            source_path("scenarios/profiles/v4_llama_decode.measurements.yaml") +
                                            " --fit hop_latency --shared hbm_efficiency -o " + (dir / "q.yaml").string());
  CHECK(both.exit_code == 2);
}

TEST_CASE("calibrate --start moves where the fit starts, not where it ends, with located errors", "[calibrate]") {
  const fs::path dir = scratch("start");
  const std::string file = source_path("scenarios/profiles/v4_llama_decode.measurements.yaml");
  auto fitted = [&](const std::string& extra, const std::string& out) {
    const auto cli = podsim_test::run_podsim("calibrate " + file + " --fit hbm_efficiency --no-leave-one-out " + extra +
                                             " -o " + (dir / out).string());
    INFO(cli.err);
    REQUIRE(cli.exit_code == 0);
    return load_profile((dir / out).string()).parameters.at("hbm_efficiency");
  };
  // The one decode row is matched exactly by HBM efficiencies 0.6258 to 0.6270 (the step is not
  // memory time alone): from either side the fit ends inside that stretch.
  const double from_ideal = fitted("", "a.yaml");
  CHECK(fitted("--start hbm_efficiency=0.4", "b.yaml") == Approx(from_ideal).epsilon(0.005));
  CHECK(fitted("--start v4-llama-decode:hbm_efficiency=0.9", "c.yaml") == Approx(from_ideal).epsilon(0.005));
  auto error_of = [&](const std::string& extra) {
    const auto cli = podsim_test::run_podsim("calibrate " + file + " --fit hbm_efficiency " + extra + " -o " +
                                             (dir / "x.yaml").string());
    CHECK(cli.exit_code == 2);
    return cli.err;
  };
  CHECK(error_of("--start matmul_efficiency=0.5").find("--start") != std::string::npos);
  CHECK(error_of("--start hbm_efficiency=2").find("--start hbm_efficiency") != std::string::npos);
  CHECK(error_of("--start nowhere:hbm_efficiency=0.5").find("no profile 'nowhere'") != std::string::npos);
  CHECK(error_of("--start hbm_efficiency").find("expected NAME=VALUE") != std::string::npos);
}

TEST_CASE("a profile says what was not estimated instead of writing 0", "[calibrate][adversarial]") {
  // One measurement, one parameter: no residual degrees of freedom for an sd, no leave-one-out.
  const fs::path dir = scratch("not-estimated");
  const auto cli = podsim_test::run_podsim("calibrate " +
                                           source_path("scenarios/profiles/v4_llama_decode.measurements.yaml") +
                                           " --fit hbm_efficiency -o " + (dir / "p.yaml").string());
  REQUIRE(cli.exit_code == 0);
  const std::string profile = podsim_test::read_file(dir / "p.yaml");
  CHECK(profile.find("# sd 0") == std::string::npos);
  CHECK(profile.find("sd not estimated") != std::string::npos);
  CHECK(profile.find("max_leave_one_out_error: null") != std::string::npos);
  CHECK(profile.find("max_leave_one_out_error: 0") == std::string::npos);
  // It still loads as a profile.
  CHECK_NOTHROW(load_profile((dir / "p.yaml").string()));
}
