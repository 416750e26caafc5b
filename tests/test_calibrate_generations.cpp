// podsim calibrate across chip generations (issue 26): one measurement file with rows of several
// profiles, fit jointly with parameters per profile and shared; published figures (tokens/s and
// TFLOP/s per chip) as measurements; validate --measured with a profile per row.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "cli_helpers.hpp"
#include "sim/commands/calibrate.hpp"
#include "sim/commands/calibration_report.hpp"
#include "sim/commands/memory_fit.hpp"
#include "sim/commands/run_command.hpp"
#include "sim/scenario/calibration_files.hpp"
#include "sim/scenario/published_figures.hpp"
#include "sim/scenario/scenario.hpp"
#include "workloads/flop_conventions.hpp"

using namespace podsim;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) { return podsim_test::made_dir("calibrate-generations-" + name); }

void write(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

std::string exact(double v) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.17g", v);
  return buffer;
}

// A 2-layer LLaMA-shaped training step (D 1024, F 2816: ops of a few us, so a cost per op shows), data parallel over a 2x2 (its gradients reduced under the
// backward, so compute shows): milliseconds to simulate.
std::string training_scenario(const std::string& chip) {
  return "version: 1\nhardware: {preset: " + chip +
         "}\ntopology: {mesh: {X: 2, Y: 2}}\nworkload:\n  kind: training\n"
         "  model: {preset: llama2-7b, name: small, layers: 2, d_model: 1024, d_ff: 2816, heads: 8, kv_heads: 8, vocab: 1024}\n  batch_tokens: 2048\n"
         "  sequence_length: 512\n  parallelism: {data: [X, Y]}\n";
}

// Batches and sequences from memory-bound (256 tokens a chip) to compute-bound (8192).
const std::vector<std::string> kSets = {"{workload.batch_tokens: 1024, workload.sequence_length: 256}",
                                        "{workload.batch_tokens: 2048}", "{workload.batch_tokens: 32768}",
                                        "{workload.batch_tokens: 8192, workload.sequence_length: 2048}"};

// Rows of v5e.yaml under profile gen-e and v5p.yaml under gen-p, each set once per chip; a row's
// measured quantity is `quantity(i)` (the key and value of its YAML), placeholders when empty.
std::string generations_file(const std::function<std::string(size_t)>& quantity) {
  std::string out = "version: 1\nname: generations\nmeasurements:\n";
  for (size_t i = 0; i < 2 * kSets.size(); ++i) {
    const bool e = i < kSets.size();
    out += "  - {name: r" + std::to_string(i) + ", profile: " + (e ? "gen-e" : "gen-p") + ", scenario: " +
           (e ? "v5e.yaml" : "v5p.yaml") + ", set: " + kSets[i % kSets.size()] + ", " + quantity(i) + "}\n";
  }
  return out;
}

struct Truth {
  double hbm, matmul;
};

std::vector<CalibrationParameter> truth_parameters(const Truth& t, double compute_overhead_s) {
  auto parameters = calibration_parameters();
  for (auto& p : parameters) {
    p.fitted = p.name == "hbm_efficiency" || p.name == "matmul_efficiency" || p.name == "compute_overhead";
    if (p.name == "hbm_efficiency") p.value = t.hbm;
    if (p.name == "matmul_efficiency") p.value = t.matmul;
    if (p.name == "compute_overhead") p.value = compute_overhead_s;
  }
  return parameters;
}

}  // namespace

TEST_CASE("calibrate recovers two generations' profiles and a shared cost per op from one file",
          "[calibrate][generations]") {
  const fs::path dir = scratch("recover");
  write(dir / "v5e.yaml", training_scenario("v5e"));
  write(dir / "v5p.yaml", training_scenario("v5p"));
  const std::map<std::string, Truth> truth = {{"gen-e", {0.7, 0.55}}, {"gen-p", {0.8, 0.65}}};
  const double overhead_s = 8e-6;
  write(dir / "m.yaml", generations_file([](size_t) { return std::string("field: step_time_s, measured: \"1 s\""); }));
  std::vector<double> step_s;
  for (const auto& m : load_measurements((dir / "m.yaml").string()).measurements)
    step_s.push_back(predict(m, HopModel::Floor, truth_parameters(truth.at(m.profile), overhead_s)));
  // Two rows as publications give them: tokens/s/chip (global batch / 4 chips / step) and
  // TFLOP/s/chip in podsim's count; the rest as step times.
  write(dir / "m.yaml", generations_file([&](size_t i) {
          if (i == 1) return "tokens_per_s_per_chip: " + exact(2048.0 / 4 / step_s[i]);
          if (i == 6) {
            Measurement row = load_measurements((dir / "m.yaml").string()).measurements[i];
            const Scenario s = load_measurement_scenario(row);
            return "tflops_per_chip: " + exact(convention_flops_per_chip("podsim", s, row.where) / step_s[i] / 1e12) +
                   ", flop_convention: podsim";
          }
          return "field: step_time_s, measured: \"" + exact(step_s[i]) + " s\"";
        }));
  const MeasurementFile file = load_measurements((dir / "m.yaml").string());
  REQUIRE(file.profile_names() == std::vector<std::string>{"gen-e", "gen-p"});
  CalibrationOptions options;
  options.fit = {"hbm_efficiency", "matmul_efficiency"};
  options.shared = {"compute_overhead"};
  options.hop_model = HopModel::Floor;
  options.jobs = 2;   // simulations side by side: the fit is the same for any jobs
  const CalibrationResult result = calibrate(file, options);
  REQUIRE(result.profiles.size() == 2);
  for (const auto& profile : result.profiles) {
    for (const auto& p : profile.parameters) {
      if (!p.fitted) continue;
      const double expected = p.name == "hbm_efficiency"    ? truth.at(profile.name).hbm
                              : p.name == "matmul_efficiency" ? truth.at(profile.name).matmul
                                                              : overhead_s;
      INFO(profile.name << " " << p.name << " fitted " << p.value << ", generated with " << expected);
      CHECK(p.value == Approx(expected).epsilon(0.01));
      CHECK(p.shared == (p.name == "compute_overhead"));
      CHECK_FALSE(p.at_bound());
    }
    CHECK(profile.rows.size() == 4);
  }
  // fit.evidence (fit_evidence.hpp): each fitted parameter is informed by rows of its own
  // profile (gen-e: r0-r3), the shared cost per op by rows of both. (Through the shared
  // coordinate the other profile's rows move a per-profile parameter's variance too.)
  for (const auto& profile : result.profiles)
    for (const auto& p : profile.parameters) {
      if (!p.fitted) continue;
      INFO(profile.name << " " << p.name);
      bool own = false, other = false;
      for (const auto& [row, share] : p.evidence) {
        CHECK(share >= 0);
        CHECK(share <= 1);
        if (share >= 0.01) ((row < "r4") == (profile.name == "gen-e") ? own : other) = true;
      }
      CHECK(own);
      if (p.shared) CHECK(other);
    }
  CHECK(result.profile("gen-e").chip == "v5e");
  CHECK(result.profile("gen-p").chip == "v5p");
  CHECK(result.errors.max_abs_fitted < 1e-3);
  CHECK(result.errors.rms_default > 0.1);   // the ideal machine misses them: the fit had work to do
  // Leave-one-out ran over every row (3 rows of a profile still identify its 2 parameters).
  REQUIRE(result.errors.max_abs_leave_one_out);
  CHECK(*result.errors.max_abs_leave_one_out < 0.01);
  CHECK(result.rows[1].published.find("tokens/s/chip") != std::string::npos);
  CHECK(result.rows[6].published.find("(podsim)") != std::string::npos);
}

TEST_CASE("simulations side by side give each scenario's summary to the byte, in order, for any jobs",
          "[calibrate][generations]") {
  const fs::path dir = scratch("side-by-side");
  write(dir / "v5e.yaml", training_scenario("v5e"));
  write(dir / "v5p.yaml", training_scenario("v5p"));
  std::vector<Scenario> scenarios;
  for (const char* chip : {"v5e.yaml", "v5p.yaml"})
    for (const auto& set : kSets) {
      const YAML::Node sets = YAML::Load(set);
      std::vector<ScenarioOverride> overrides;
      for (const auto& kv : sets) overrides.push_back({kv.first.Scalar(), kv.second.Scalar()});
      scenarios.push_back(load_scenario((dir / chip).string(), overrides));
    }
  RunCommandOptions run;
  run.reproducible = true;
  std::vector<std::string> one_by_one;
  for (const auto& s : scenarios) one_by_one.push_back(simulate_summary_json(s, run));
  for (int jobs : {1, 2, 3, 16}) {
    INFO("jobs " << jobs);
    CHECK(simulate_summaries_json(scenarios, run, jobs) == one_by_one);
  }
  // A plan refused before its run throws as it does alone, whatever runs beside it.
  std::vector<Scenario> bad = scenarios;
  bad[3].topology.chip.hbm_bytes = 1e6;
  CHECK_THROWS_AS(simulate_summary_json(bad[3], run), DoesNotFitHbm);
  CHECK_THROWS_AS(simulate_summaries_json(bad, run, 2), DoesNotFitHbm);
}

TEST_CASE("published figures convert to the step time their scenario implies", "[calibrate][generations]") {
  const fs::path dir = scratch("convert");
  write(dir / "v5e.yaml", training_scenario("v5e"));
  write(dir / "m.yaml",
        "version: 1\nmeasurements:\n"
        "  - {name: tokens, scenario: v5e.yaml, tokens_per_s_per_chip: 1000}\n"
        "  - {name: maxtext, scenario: v5e.yaml, tflops_per_chip: 100, flop_convention: maxtext-2023}\n"
        "  - {name: podsim, scenario: v5e.yaml, tflops_per_chip: 100, flop_convention: podsim}\n");
  MeasurementFile file = load_measurements((dir / "m.yaml").string());
  REQUIRE(file.measurements[0].field == "step_time_s");
  for (auto& m : file.measurements) load_measurement_scenario(m);
  // 2048 tokens over 4 chips at 1000 tokens/s a chip.
  CHECK(file.measurements[0].measured == Approx(2048.0 / 4 / 1000).epsilon(1e-12));
  // MaxText 2023: 6 N per token, N every parameter of the 2-layer model, 512 tokens a chip.
  const Scenario s = load_scenario((dir / "v5e.yaml").string());
  CHECK(file.measurements[1].measured == Approx(6 * param_count(s.training().model) * 512 / 100e12).epsilon(1e-12));
  // podsim's convention is what summary.json's tflops_per_s_per_chip counts: its figure converts
  // back to the simulated step time.
  RunCommandOptions run;
  run.reproducible = true;
  const auto summary = nlohmann::json::parse(simulate_summary_json(s, run));
  PublishedFigure figure;
  figure.kind = PublishedFigure::Kind::TflopsPerChip;
  figure.convention = "podsim";
  figure.value = summary["tflops_per_s_per_chip"].get<double>();
  CHECK(published_step_time_s(figure, s) == Approx(summary["step_time_s"].get<double>()).epsilon(1e-12));
  CHECK(published_text(figure).find("TFLOP/s/chip (podsim)") != std::string::npos);
  // A figure on a scenario that is not a training step: located at its key.
  write(dir / "decode.yaml", podsim_test::read_file(podsim_test::source_path("scenarios/profiles/v4_llama_7b_decode.yaml")));
  write(dir / "bad.yaml", "version: 1\nmeasurements:\n  - name: d\n    scenario: decode.yaml\n    tokens_per_s_per_chip: 10\n");
  MeasurementFile bad = load_measurements((dir / "bad.yaml").string());
  try {
    load_measurement_scenario(bad.measurements[0]);
    FAIL("a tokens/s figure on a decode scenario was accepted");
  } catch (const InputError& e) {
    CHECK(e.key() == "tokens_per_s_per_chip");
    CHECK(e.where().line == 5);
    CHECK(std::string(e.what()).find("expected a training scenario") != std::string::npos);
  }
}

TEST_CASE("one profile's rows on two machines (ring schedule, reductions) are refused, naming both rows", "[calibrate][generations]") {
  const fs::path dir = scratch("machines");
  write(dir / "v5e.yaml", training_scenario("v5e"));
  for (const std::string key : {"antipodal_split", "reductions_on_tensor_core"}) {
    write(dir / "m.yaml",
          "version: 1\nname: machines\nmeasurements:\n"
          "  - {name: plain, scenario: v5e.yaml, field: step_time_s, measured: \"20 ms\"}\n"
          "  - {name: other, scenario: v5e.yaml, set: {hardware.overrides." + key +
              ": true}, field: step_time_s, measured: \"20 ms\"}\n");
    try {
      calibrate(load_measurements((dir / "m.yaml").string()), {});
      FAIL("a profile of two machines was accepted: " << key);
    } catch (const InputError& e) {
      CHECK(e.where().line == 5);
      const std::string what = e.what();
      CHECK(what.find("'other' of profile") != std::string::npos);
      CHECK(what.find("runs " + key + " true, but row 'plain' (line 4) runs false") != std::string::npos);
    }
  }
}

TEST_CASE("one profile's rows on two chips are refused, naming both rows", "[calibrate][generations]") {
  const fs::path dir = scratch("mixed");
  write(dir / "v5e.yaml", training_scenario("v5e"));
  write(dir / "v5p.yaml", training_scenario("v5p"));
  write(dir / "m.yaml",
        "version: 1\nname: mixed\nmeasurements:\n"
        "  - {name: on-e, scenario: v5e.yaml, field: step_time_s, measured: \"20 ms\"}\n"
        "  - {name: on-p, scenario: v5p.yaml, field: step_time_s, measured: \"10 ms\"}\n");
  try {
    calibrate(load_measurements((dir / "m.yaml").string()), {});
    FAIL("a profile of two chips was accepted");
  } catch (const InputError& e) {
    CHECK(e.where().file == (dir / "m.yaml").string());
    CHECK(e.where().line == 5);
    const std::string what = e.what();
    CHECK(what.find("'on-p'") != std::string::npos);
    CHECK(what.find("'on-e' (line 4)") != std::string::npos);
    CHECK(what.find("one chip preset per profile") != std::string::npos);
  }
  // validate --measured refuses it too, before any run.
  const auto validate = podsim_test::run_podsim("validate --measured " + (dir / "m.yaml").string());
  CHECK(validate.exit_code == 2);
  CHECK(validate.err.find("one chip preset per profile") != std::string::npos);
  // The same rows under a profile each are two generations: accepted.
  write(dir / "m.yaml",
        "version: 1\nname: mixed\nmeasurements:\n"
        "  - {name: on-e, profile: e, scenario: v5e.yaml, field: step_time_s, measured: \"20 ms\"}\n"
        "  - {name: on-p, profile: p, scenario: v5p.yaml, field: step_time_s, measured: \"10 ms\"}\n");
  CalibrationOptions options;
  options.fit = {"matmul_efficiency"};
  options.hop_model = HopModel::Floor;
  CHECK(calibrate(load_measurements((dir / "m.yaml").string()), options).profiles.size() == 2);
}

TEST_CASE("the new measurement keys get located errors", "[calibrate][generations]") {
  const fs::path dir = scratch("bad");
  write(dir / "v5e.yaml", training_scenario("v5e"));
  struct Case {
    std::string name, row, key, expected;
  };
  const std::vector<Case> cases = {
      {"a profile name with a slash", "profile: a/b, field: step_time_s, measured: \"1 s\"", "measurements[0].profile",
       "letters, digits"},
      {"TFLOP/s without a convention", "tflops_per_chip: 300", "measurements[0].flop_convention", "maxtext-76bd53b"},
      {"an unknown convention", "tflops_per_chip: 300, flop_convention: megatron", "measurements[0].flop_convention",
       "unknown FLOP convention"},
      {"a convention alone", "field: step_time_s, measured: \"1 s\", flop_convention: podsim",
       "measurements[0].flop_convention", "without tflops_per_chip"},
      {"two quantities", "tokens_per_s_per_chip: 7138.9, field: step_time_s", "measurements[0].field",
       "a second measured quantity"},
      {"tokens and TFLOP/s", "tokens_per_s_per_chip: 7138.9, tflops_per_chip: 413", "measurements[0].tflops_per_chip",
       "a second measured quantity"},
      {"a negative rate", "tokens_per_s_per_chip: -3", "measurements[0].tokens_per_s_per_chip", "positive number"},
      {"a rate with a unit", "tflops_per_chip: 300 TFLOP/s, flop_convention: podsim", "measurements[0].tflops_per_chip",
       "positive number"},
      {"no quantity", "source: x", "measurements[0].field", "missing"}};
  for (const auto& c : cases) {
    INFO(c.name);
    write(dir / "bad.yaml", "version: 1\nmeasurements:\n  - {name: a, scenario: v5e.yaml, " + c.row + "}\n");
    try {
      load_measurements((dir / "bad.yaml").string());
      FAIL("accepted");
    } catch (const InputError& e) {
      CHECK(e.key() == c.key);
      CHECK(std::string(e.what()).find(c.expected) != std::string::npos);
      CHECK(e.where().file == (dir / "bad.yaml").string());
      CHECK(e.where().line == 3);
    }
  }
}

TEST_CASE("a value fitted at its bound is flagged in the table and the profile", "[calibrate][generations]") {
  // LLaMA 7B decode on a v4 2x2 measured at 2 ms, faster than the ideal machine's 3.04 ms: HBM
  // efficiency would have to exceed 1, so the fit ends at its upper bound.
  const fs::path dir = scratch("bound");
  write(dir / "m.yaml", "version: 1\nmeasurements:\n  - {name: fast, scenario: " +
                            podsim_test::source_path("scenarios/profiles/v4_llama_7b_decode.yaml") +
                            ", field: decode_step_time_s, measured: \"2 ms\"}\n");
  const auto cli = podsim_test::run_podsim("calibrate " + (dir / "m.yaml").string() + " --fit hbm_efficiency -o " +
                                           (dir / "p.yaml").string());
  REQUIRE(cli.exit_code == 0);
  CHECK(cli.out.find("at bound") != std::string::npos);
  const std::string profile = podsim_test::read_file(dir / "p.yaml");
  CHECK(profile.find("at_bound: [hbm_efficiency]") != std::string::npos);
  CHECK(load_profile((dir / "p.yaml").string()).parameters.at("hbm_efficiency") > 0.99);
  // The flag itself: within 1% of the range's width of either bound, and only when fitted.
  CalibrationParameter p;
  p.low = 0.3;
  p.high = 1.0;
  p.fitted = true;
  p.value = 0.995;
  CHECK(p.at_bound());
  p.value = 0.306;
  CHECK(p.at_bound());
  p.value = 0.9;
  CHECK_FALSE(p.at_bound());
  p.value = 1.0;
  p.fitted = false;
  CHECK_FALSE(p.at_bound());
}

TEST_CASE("calibrate writes a profile per generation and validate --measured predicts each row with its own",
          "[calibrate][generations]") {
  const fs::path dir = scratch("cli");
  write(dir / "v5e.yaml", training_scenario("v5e"));
  write(dir / "v5p.yaml", training_scenario("v5p"));
  write(dir / "m.yaml", generations_file([](size_t i) {
          return "field: step_time_s, measured: \"" + std::to_string(i < 4 ? 30 + 10 * i : 10 + 5 * i) + " ms\"";
        }));
  // A profile with more fitted parameters than its rows is refused before any fit.
  const auto too_many = podsim_test::run_podsim("calibrate " + (dir / "m.yaml").string() +
                                                " --fit hbm_efficiency,matmul_efficiency,roofline_overlap,compute_overhead,"
                                                "hop_latency -o " + (dir / "out").string());
  CHECK(too_many.exit_code == 2);
  CHECK(too_many.err.find("more parameters than the 4 measurements of profile gen-e") != std::string::npos);
  // --name has no meaning for several profiles.
  CHECK(podsim_test::run_podsim("calibrate " + (dir / "m.yaml").string() + " --name x -o " + (dir / "out").string())
            .exit_code == 2);
  const auto fit = podsim_test::run_podsim("calibrate " + (dir / "m.yaml").string() +
                                           " --fit matmul_efficiency --shared compute_overhead --hop-model floor "
                                           "--no-leave-one-out -o " +
                                           (dir / "out").string());
  REQUIRE(fit.exit_code == 0);
  CHECK(fit.out.find("profile gen-e (v5e): 4 measurements") != std::string::npos);
  CHECK(fit.out.find("profile gen-p (v5p): 4 measurements") != std::string::npos);
  CHECK(fit.out.find("overall: rms default") != std::string::npos);
  REQUIRE(fs::is_regular_file(dir / "out" / "gen-e.yaml"));
  REQUIRE(fs::is_regular_file(dir / "out" / "gen-p.yaml"));
  CHECK(fit.out.find("compute_overhead     (shared)") != std::string::npos);
  // Each profile carries the shared value, saying so.
  const CalibrationProfile e = load_profile((dir / "out" / "gen-e.yaml").string());
  const CalibrationProfile p = load_profile((dir / "out" / "gen-p.yaml").string());
  CHECK(p.chip == "v5p");
  CHECK(e.parameters.at("compute_overhead") == p.parameters.at("compute_overhead"));
  CHECK(podsim_test::read_file(dir / "out" / "gen-e.yaml").find("shared by every profile") != std::string::npos);
  // fit.evidence is written for each fitted parameter (here empty: placeholder rows the fit
  // cannot match put both at a bound, where nothing identifies them).
  CHECK(e.evidence.count("matmul_efficiency") == 1);
  CHECK(e.evidence.count("compute_overhead") == 1);
  const auto validate = podsim_test::run_podsim("validate --measured " + (dir / "m.yaml").string() + " --profiles " +
                                                (dir / "out").string() + " --csv " + (dir / "m.csv").string());
  REQUIRE(validate.exit_code == 0);
  std::ifstream in(dir / "m.csv");
  std::string line;
  std::getline(in, line);
  std::map<std::string, int> by_profile;
  while (std::getline(in, line)) {
    ++by_profile[line.substr(line.find(',') + 1, 5)];
    CHECK(line.find("\",fit,") != std::string::npos);   // each row is one its profile was fit on
  }
  CHECK(by_profile == std::map<std::string, int>{{"gen-e", 4}, {"gen-p", 4}});
  // One profile file for rows of two profiles is refused; so is a directory missing one of them.
  CHECK(podsim_test::run_podsim("validate --measured " + (dir / "m.yaml").string() + " --profile " +
                                (dir / "out" / "gen-e.yaml").string())
            .exit_code == 2);
  fs::remove(dir / "out" / "gen-p.yaml");
  const auto missing = podsim_test::run_podsim("validate --measured " + (dir / "m.yaml").string() + " --profiles " +
                                               (dir / "out").string());
  CHECK(missing.exit_code == 2);
  CHECK(missing.err.find("gen-p.yaml") != std::string::npos);
  CHECK(missing.err.find("m.yaml:8") != std::string::npos);
}

TEST_CASE("calibrate --fix applies values measured elsewhere and writes them, with the machine the rows ran",
          "[calibrate][generations]") {
  const fs::path dir = scratch("fix");
  // Rows on the kernels model with MXU padding: the profiles must say so, or they would predict
  // with the book's model the fit never saw.
  auto kernels = [](std::string text) {
    const std::string preset = text.substr(text.find("preset: ") + 8, 3);
    return text.replace(text.find("{preset: " + preset + "}"), 13,
                        "{preset: " + preset + ", overrides: {compute_model: kernels, mxu_padding: true}}");
  };
  write(dir / "v5e.yaml", kernels(training_scenario("v5e")));
  write(dir / "v5p.yaml", kernels(training_scenario("v5p")));
  write(dir / "m.yaml", generations_file([](size_t) { return std::string("field: step_time_s, measured: \"1 s\""); }));
  const std::map<std::string, Truth> truth = {{"gen-e", {0.7, 0.55}}, {"gen-p", {0.8, 0.65}}};
  std::vector<std::string> measured;
  for (const auto& m : load_measurements((dir / "m.yaml").string()).measurements)
    measured.push_back(exact(predict(m, HopModel::Floor, truth_parameters(truth.at(m.profile), 0))));
  write(dir / "m.yaml", generations_file([&](size_t i) { return "field: step_time_s, measured: \"" + measured[i] + " s\""; }));
  // Each generation's HBM efficiency given (as a copy benchmark would): the matmul efficiencies
  // are recovered from the steps alone.
  CalibrationOptions options;
  options.fit = {"matmul_efficiency"};
  options.hop_model = HopModel::Floor;
  options.leave_one_out = false;
  parse_fixed_parameters("gen-e:hbm_efficiency=0.7,gen-p:hbm_efficiency=0.8", options);
  REQUIRE(options.fixed.size() == 2);
  const CalibrationResult result = calibrate(load_measurements((dir / "m.yaml").string()), options);
  for (const auto& profile : result.profiles)
    for (const auto& p : profile.parameters) {
      if (p.name == "matmul_efficiency") CHECK(p.value == Approx(truth.at(profile.name).matmul).epsilon(0.01));
      if (p.name == "hbm_efficiency") {
        CHECK(p.fixed);
        CHECK_FALSE(p.fitted);
        CHECK(p.value == truth.at(profile.name).hbm);
      }
    }
  CHECK(result.errors.max_abs_fitted < 1e-3);
  const CalibrationProfile written =
      load_profile_text(calibration_profile_yaml(load_measurements((dir / "m.yaml").string()), result,
                                                 result.profile("gen-p"), "gen-p"),
                        "gen-p.yaml");
  CHECK(written.parameters.at("hbm_efficiency") == 0.8);
  CHECK(written.compute_model == ComputeModel::Kernels);
  CHECK(written.mxu_padding == true);

  // A --fit parameter fixed for one profile: gen-p keeps the value given (its generated truth),
  // gen-e's is fitted; with a --start for every profile, the fixed one still holds its value.
  CalibrationOptions one;
  one.fit = {"matmul_efficiency"};
  one.hop_model = HopModel::Floor;
  one.leave_one_out = false;
  parse_fixed_parameters("gen-e:hbm_efficiency=0.7,gen-p:hbm_efficiency=0.8,gen-p:matmul_efficiency=" +
                             exact(truth.at("gen-p").matmul),
                         one);
  parse_start_values("matmul_efficiency=0.5", one);
  const CalibrationResult partly = calibrate(load_measurements((dir / "m.yaml").string()), one);
  for (const auto& p : partly.profile("gen-p").parameters)
    if (p.name == "matmul_efficiency") {
      CHECK(p.fixed);
      CHECK_FALSE(p.fitted);
      CHECK(p.value == Approx(truth.at("gen-p").matmul).epsilon(1e-12));
    }
  for (const auto& p : partly.profile("gen-e").parameters)
    if (p.name == "matmul_efficiency") {
      CHECK(p.fitted);
      CHECK(p.value == Approx(truth.at("gen-e").matmul).epsilon(0.01));
    }
  CHECK(partly.errors.max_abs_fitted < 1e-3);

  // Malformed entries, unknown names and profiles, out-of-range values, and a parameter both
  // fixed (for every profile) and fitted are located errors (exit 2).
  for (const char* bad : {"hbm_efficiency", "bogus=1", "hbm_efficiency=2", "hbm_efficiency=fast"}) {
    CalibrationOptions o;
    INFO(bad);
    CHECK_THROWS_AS(parse_fixed_parameters(bad, o), InputError);
  }
  const std::string file = (dir / "m.yaml").string();
  const auto both = podsim_test::run_podsim("calibrate " + file + " --fit hbm_efficiency --fix hbm_efficiency=0.7 -o " +
                                            (dir / "out").string());
  CHECK(both.exit_code == 2);
  CHECK(both.err.find("both fixed and fitted") != std::string::npos);
  const auto unknown = podsim_test::run_podsim("calibrate " + file + " --fit matmul_efficiency --fix v9:hbm_efficiency=0.7 -o " +
                                               (dir / "out").string());
  CHECK(unknown.exit_code == 2);
  CHECK(unknown.err.find("no profile 'v9'") != std::string::npos);
  // --rows fits the rows it names (globs): here gen-e's alone, so one profile to one file.
  const auto some = podsim_test::run_podsim("calibrate " + file + " --rows 'r[0-3]' --fit matmul_efficiency "
                                            "--fix hbm_efficiency=0.7 --hop-model floor --no-leave-one-out -o " +
                                            (dir / "e.yaml").string());
  REQUIRE(some.exit_code == 0);
  CHECK(some.out.find("4 measurements") != std::string::npos);
  CHECK(some.out.find("gen-p") == std::string::npos);
  CHECK(load_profile((dir / "e.yaml").string()).parameters.at("matmul_efficiency") == Approx(0.55).epsilon(0.01));
  const auto none = podsim_test::run_podsim("calibrate " + file + " --rows 'x*' --fit matmul_efficiency -o " +
                                            (dir / "x.yaml").string());
  CHECK(none.exit_code == 2);
  CHECK(none.err.find("'--rows': value 'x*'") != std::string::npos);
}
