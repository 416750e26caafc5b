// Prediction intervals (issue 43; sim/scenario/prediction_error.hpp, sim/commands/fit_evidence.hpp,
// docs/calibration.md "Prediction intervals"): the interval's width from Student's t and the
// profile's left-out errors, a row's leverage read off its residuals, which rows inform which
// parameter, and how often measurements fall inside (coverage), all from rows built here.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli_helpers.hpp"
#include "sim/commands/fit_evidence.hpp"
#include "sim/commands/validate_measured.hpp"
#include "sim/scenario/calibration_files.hpp"
#include "sim/scenario/prediction_error.hpp"

using namespace podsim;
namespace fs = std::filesystem;
using podsim_test::source_path;

TEST_CASE("Student's t quantile matches its closed forms at 1 and 2 degrees of freedom", "[intervals]") {
  const double pi = std::acos(-1.0);
  for (double c : {0.5, 0.8, 0.95, 0.99}) {
    const double p = (1 + c) / 2;
    // 1 degree of freedom (Cauchy): F(t) = 1/2 + atan(t)/pi.
    CHECK(student_t_quantile(p, 1) == Approx(std::tan(pi * c / 2)).epsilon(1e-9));
    // 2: F(t) = 1/2 + t / (2 sqrt(2 + t^2)), so t = c sqrt(2 / (1 - c^2)).
    CHECK(student_t_quantile(p, 2) == Approx(c * std::sqrt(2 / (1 - c * c))).epsilon(1e-9));
  }
  // Many degrees of freedom: the normal's 1.2816 (80%) and 1.9600 (95%).
  CHECK(student_t_quantile(0.9, 100000) == Approx(1.281552).epsilon(1e-4));
  CHECK(student_t_quantile(0.975, 100000) == Approx(1.959964).epsilon(1e-4));
}

TEST_CASE("a row's leverage read off its residuals is least squares' hat value", "[intervals]") {
  // y = a x, fit by least squares to three rows: a = sum xy / sum x^2; without row i,
  // a_i = (sum xy - x_i y_i) / (sum x^2 - x_i^2); the hat value h_i = x_i^2 / sum x^2.
  const std::vector<double> x = {1, 2, 5}, y = {1.1, 1.9, 5.3};
  double sxy = 0, sxx = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxy += x[i] * y[i];
    sxx += x[i] * x[i];
  }
  for (size_t i = 0; i < x.size(); ++i) {
    const double a = sxy / sxx, a_i = (sxy - x[i] * y[i]) / (sxx - x[i] * x[i]);
    const ProfileResidual r{y[i], a * x[i], a_i * x[i], ""};
    REQUIRE(residual_leverage(r));
    CHECK(*residual_leverage(r) == Approx(x[i] * x[i] / sxx).epsilon(1e-9));
  }
  // No left-out prediction, or one equal to the measurement: no leverage to read.
  CHECK_FALSE(residual_leverage(ProfileResidual{1.0, 1.0, std::nullopt, ""}));
  CHECK_FALSE(residual_leverage(ProfileResidual{2.0, 2.1, 2.0, ""}));
}

TEST_CASE("which rows inform which parameter: each row's share of its information", "[intervals]") {
  // One coordinate, rows with sensitivities 1, 2, 3: without row i the information is
  // sum j^2 - j_i^2, so its share is j_i^2 / sum j^2 (1/14, 4/14, 9/14).
  const auto one = information_shares({{1}, {2}, {3}});
  REQUIRE(one.size() == 3);
  CHECK(one[0][0] == Approx(1.0 / 14));
  CHECK(one[1][0] == Approx(4.0 / 14));
  CHECK(one[2][0] == Approx(9.0 / 14));
  // Two coordinates: row 0 alone moves the first (its sole evidence: share 1, and nothing of
  // the second), rows 1 and 2 move the second equally (half each).
  const auto two = information_shares({{1, 0}, {0, 1}, {0, 1}});
  CHECK(two[0][0] == 1.0);
  CHECK(two[0][1] == 0.0);
  CHECK(two[1][1] == Approx(0.5));
  CHECK(two[2][1] == Approx(0.5));
  CHECK(two[1][0] == 0.0);
  // Correlated: rows (1, 1), (1, -1), (1, 0). V = diag(1/3, 1/2); row (1, 0) moves only the first:
  // a = (1/3)^2 / (1 - 1/3) = 1/6, share = a / (1/3 + a) = 1/3.
  const auto mixed = information_shares({{1, 1}, {1, -1}, {1, 0}});
  CHECK(mixed[2][0] == Approx(1.0 / 3));
  CHECK(mixed[2][1] == 0.0);
  // Sherman-Morrison against the variances computed directly, with and without each row.
  const std::vector<std::vector<double>> j = {{1, 0.5, 0}, {0.2, 1, 0.3}, {0.7, -0.4, 1}, {1, 1, 1}, {0.1, 0, 2}};
  const auto shares = information_shares(j);
  auto variances = [](const std::vector<std::vector<double>>& rows) {
    std::vector<std::vector<double>> jtj(3, std::vector<double>(3, 0.0));
    for (const auto& r : rows)
      for (size_t p = 0; p < 3; ++p)
        for (size_t q = 0; q < 3; ++q) jtj[p][q] += r[p] * r[q];
    return matrix_inverse(jtj);
  };
  const auto all = variances(j);
  for (size_t i = 0; i < j.size(); ++i) {
    auto without = j;
    without.erase(without.begin() + static_cast<long>(i));
    const auto v = variances(without);
    for (size_t k = 0; k < 3; ++k) CHECK(shares[i][k] == Approx(1 - all[k][k] / v[k][k]).margin(1e-12));
  }
  // Nothing identifies the second coordinate: no shares at all.
  CHECK(information_shares({{1, 0}, {2, 0}}).empty());
}

namespace {

CalibrationProfile profile_with(const std::map<std::string, ProfileResidual>& residuals,
                                const std::map<std::string, ParameterEvidence>& evidence = {}) {
  CalibrationProfile p;
  p.name = "gen";
  p.residuals = residuals;
  p.evidence = evidence;
  return p;
}

}  // namespace

TEST_CASE("a profile's prediction error: the RMS of its left-out log errors, sole-evidence rows apart", "[intervals]") {
  // Two training rows left out 4% and 5% off, and a collective the fit matches exactly that its
  // absence sends 100% off: leverage 1 - (0.0001 / 1.0) = 0.9999, the sole evidence for something.
  const std::map<std::string, ProfileResidual> residuals = {
      {"a", {10.0, 10.2, 10.4, ""}}, {"b", {20.0, 19.5, 19.0, ""}}, {"c", {1.0, 0.9999, 2.0, ""}},
      {"d", {5.0, 5.1, std::nullopt, ""}}};
  const auto e = profile_prediction_error(profile_with(residuals));
  REQUIRE(e);
  REQUIRE(e->sole_evidence.size() == 1);
  CHECK(e->sole_evidence[0].row == "c");
  CHECK(e->sole_evidence[0].parameter.empty());
  CHECK(e->rows == std::vector<std::string>{"a", "b"});
  const double da = std::log(10.0 / 10.4), db = std::log(20.0 / 19.0);
  const double s = std::sqrt((da * da + db * db) / 2);
  CHECK(e->rms_log == Approx(s).epsilon(1e-12));
  // Two degrees of freedom: t = c sqrt(2 / (1 - c^2)); the interval is predicted x exp(-+ t s).
  for (double c : kIntervalCoverages) {
    const double t = c * std::sqrt(2 / (1 - c * c));
    const auto i = prediction_interval(100.0, *e, c);
    CHECK(i.low == Approx(100 * std::exp(-t * s)).epsilon(1e-9));
    CHECK(i.high == Approx(100 * std::exp(t * s)).epsilon(1e-9));
  }
  // The fit's record decides where it has one: a share of 0.95 of link_efficiency makes "a" the
  // sole evidence, and "c" (0.5 of it) is then counted.
  ParameterEvidence link;
  link.shares = {{"a", 0.95}, {"c", 0.5}};
  const auto recorded = profile_prediction_error(profile_with(residuals, {{"link_efficiency", link}}));
  REQUIRE(recorded);
  REQUIRE(recorded->sole_evidence.size() == 1);
  CHECK(recorded->sole_evidence[0].row == "a");
  CHECK(recorded->sole_evidence[0].parameter == "link_efficiency");
  CHECK(recorded->rows == std::vector<std::string>{"b", "c"});
  // No row left out: no stated error, so no interval.
  CHECK_FALSE(profile_prediction_error(profile_with({{"d", {5.0, 5.1, std::nullopt, ""}}})));
}

TEST_CASE("a figure's interval takes its kind's errors where it has two and they are wider, else every row's",
          "[intervals]") {
  // Training rows left out 2% and 3% off; two serving TTFT checks 10% and 6% off; one TPOT check.
  CalibrationProfile p = profile_with({{"a", {10.0, 10.1, 10.2, "step_time_s"}}, {"b", {20.0, 19.8, 19.4, "mfu"}}});
  p.checks = {{"t64", {0.25, 0.275, "ttft_s.mean"}}, {"t128", {0.5, 0.53, "ttft_s.mean"}},
              {"p64", {0.025, 0.024, "tpot_s.mean"}}};
  auto d = [](double measured, double predicted) { return std::log(measured / predicted); };
  auto rms = [](std::vector<double> v) {
    double sum = 0;
    for (double x : v) sum += x * x;
    return std::sqrt(sum / static_cast<double>(v.size()));
  };
  const double all = rms({d(10, 10.2), d(20, 19.4), d(0.5, 0.53), d(0.025, 0.024), d(0.25, 0.275)});
  // The training rows agree better than the pool: their interval is the pool's, never narrower.
  const auto step = profile_prediction_error(p, "step");
  REQUIRE(step);
  CHECK(step->pooled);
  CHECK(rms({d(10, 10.2), d(20, 19.4)}) < all);
  CHECK(step->rms_log == Approx(all).epsilon(1e-12));
  const auto ttft = profile_prediction_error(p, "ttft");
  REQUIRE(ttft);
  CHECK(ttft->kind == "ttft");
  CHECK(ttft->checks == std::vector<std::string>{"t128", "t64"});
  CHECK(ttft->rms_log == Approx(rms({d(0.5, 0.53), d(0.25, 0.275)})).epsilon(1e-12));
  CHECK(ttft->rms_log > all);   // wider than the pool: its own
  // One TPOT row: every row pooled, the checks with the fit's.
  const auto tpot = profile_prediction_error(p, "tpot");
  REQUIRE(tpot);
  CHECK(tpot->pooled);
  CHECK(tpot->rows.size() == 5);
  CHECK(tpot->rms_log == Approx(all).epsilon(1e-12));
  // A check row's own interval leaves its error out: one TTFT row is left, so the pool.
  const auto without = profile_prediction_error(p, "ttft", "t64");
  REQUIRE(without);
  CHECK(without->pooled);
  CHECK(without->rows.size() == 4);
  CHECK(quantity_kind("ttft_s_mean") == "ttft");
  CHECK(quantity_kind("operations.allgather.time_s") == "collective");
  CHECK(quantity_kind("decode_step_time_s") == "step");
  CHECK(quantity_kind("output_token_throughput_per_s") == "throughput");
  CHECK(quantity_kind("kv_cache_peak_blocks") == "");
}

TEST_CASE("an MoE step's interval takes MoE rows' errors, and a dense run's pool leaves them out", "[intervals][moe]") {
  // Two dense training rows left out 2% and 3% off; two MoE step checks, one of this generation
  // (+5%) and one of another's (-30%); a TTFT check.
  CalibrationProfile p = profile_with({{"a", {10.0, 10.1, 10.2, "step_time_s"}}, {"b", {20.0, 19.8, 19.4, "mfu"}}});
  ProfileCheck mine{24.7, 26.0, "step_time_s", true, ""}, theirs{24.8, 17.2, "step_time_s", true, "v5p"};
  p.checks = {{"m1", mine}, {"m2", theirs}, {"t", {0.25, 0.26, "ttft_s.mean"}}};
  auto d = [](double measured, double predicted) { return std::log(measured / predicted); };
  auto rms = [](std::vector<double> v) {
    double sum = 0;
    for (double x : v) sum += x * x;
    return std::sqrt(sum / static_cast<double>(v.size()));
  };
  const double dense = rms({d(10, 10.2), d(20, 19.4), d(0.25, 0.26)});
  const double every = rms({d(10, 10.2), d(20, 19.4), d(0.25, 0.26), d(24.7, 26.0), d(24.8, 17.2)});
  CHECK(figure_kind("step", true) == "moe_step");
  CHECK(figure_kind("step", false) == "step");
  CHECK(figure_kind("ttft", true) == "ttft");
  // A dense run: the MoE checks are in no pool and no kind of it.
  const auto pool = profile_prediction_error(p);
  REQUIRE(pool);
  CHECK(pool->rows.size() == 3);
  CHECK(pool->rms_log == Approx(dense).epsilon(1e-12));
  const auto step = profile_prediction_error(p, "step");
  REQUIRE(step);
  CHECK(step->rms_log == Approx(dense).epsilon(1e-12));
  // An MoE run's pool has every row; its steps take the two MoE checks (wider than the pool).
  const auto moe_pool = profile_prediction_error(p, "", "", true);
  REQUIRE(moe_pool);
  CHECK(moe_pool->rows.size() == 5);
  CHECK(moe_pool->rms_log == Approx(every).epsilon(1e-12));
  const auto moe = profile_prediction_error(p, "moe_step", "", true);
  REQUIRE(moe);
  CHECK_FALSE(moe->pooled);
  CHECK(moe->kind == "moe_step");
  CHECK(moe->rows == std::vector<std::string>{"m1", "m2"});
  CHECK(moe->rms_log == Approx(rms({d(24.7, 26.0), d(24.8, 17.2)})).epsilon(1e-12));
  // The kind alone says MoE: "moe_step" without the flag is the same.
  CHECK(profile_prediction_error(p, "moe_step")->rms_log == Approx(moe->rms_log).epsilon(1e-12));
  // One MoE check left (validate's own row out): the MoE run's pool.
  const auto without = profile_prediction_error(p, "moe_step", "m2", true);
  REQUIRE(without);
  CHECK(without->pooled);
  CHECK(without->rows.size() == 4);
}

TEST_CASE("coverage: how often the measured value fell inside the stated interval, fit and held out apart",
          "[intervals]") {
  auto row = [](double measured, double predicted, bool fit) {
    MeasuredComparison r;
    r.measured = measured;
    r.profile_predicted = predicted;
    r.fit_row = fit;
    r.interval_80 = PredictionInterval{predicted * 0.9, predicted * 1.1};
    r.interval_95 = PredictionInterval{predicted * 0.8, predicted * 1.25};
    return r;
  };
  // Held out: inside both, inside the 95% only (measured 1.2x), outside both (1.3x), on the 80%
  // bound (inside); fit: one inside.
  const std::vector<MeasuredComparison> rows = {row(1.0, 1.0, false), row(1.2, 1.0, false), row(1.3, 1.0, false),
                                                row(1.1, 1.0, false), row(1.0, 1.05, true)};
  const auto held = interval_coverage(rows, false);
  CHECK(held.rows == 4);
  CHECK(held.inside_80 == 2);
  CHECK(held.inside_95 == 3);
  const auto fit = interval_coverage(rows, true);
  CHECK(fit.rows == 1);
  CHECK(fit.inside_80 == 1);
  CHECK(held.text() == "2 of 4 (50%) inside the 80% interval, 3 of 4 (75%) inside the 95%");
}

namespace {

fs::path write_profile(const std::string& name, const std::string& fit) {
  const fs::path dir = podsim_test::made_dir("intervals-" + name);
  std::ofstream(dir / "p.yaml") << "version: 1\nname: p\nchip: v5e\nparameters:\n  link_efficiency: 0.9\nfit:\n" << fit;
  return dir / "p.yaml";
}

}  // namespace

TEST_CASE("a profile's fit.residuals and fit.evidence are read, and bad ones get located errors", "[intervals]") {
  const auto good = load_profile(write_profile(
      "good", "  evidence:\n    link_efficiency: {sd: 0.02, rows: {a: 0.4, b: 0.6}}\n  residuals:\n"
              "    a: {measured: 2, fitted: 2.1, leave_one_out: 2.2}\n    b: {measured: 3, fitted: 2.9}\n").string());
  CHECK(good.residuals.at("a").leave_one_out == 2.2);
  CHECK_FALSE(good.residuals.at("b").leave_one_out);
  CHECK(good.evidence.at("link_efficiency").sd == 0.02);
  CHECK(good.evidence.at("link_efficiency").shares.at("b") == 0.6);
  const auto checked = load_profile(write_profile(
      "checked", "  residuals:\n    a: {measured: 2, fitted: 2.1, leave_one_out: 2.2, field: step_time_s}\n"
                 "  checks:\n    s: {measured: 0.25, predicted: 0.27, field: ttft_s.mean}\n").string());
  CHECK(checked.residuals.at("a").field == "step_time_s");
  CHECK(checked.checks.at("s").predicted == 0.27);
  CHECK(checked.checks.at("s").field == "ttft_s.mean");
  CHECK_FALSE(checked.checks.at("s").moe);
  const auto moe = load_profile(write_profile(
      "moe", "  residuals:\n    a: {measured: 2, fitted: 2.1, field: step_time_s, moe: true}\n"
             "  checks:\n    m: {measured: 24.8, predicted: 17.2, field: step_time_s, moe: true, profile: v5p}\n").string());
  CHECK(moe.residuals.at("a").moe);
  CHECK(moe.checks.at("m").moe);
  CHECK(moe.checks.at("m").profile == "v5p");
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"  evidence:\n    link_efficiency: {sd: 0.02, rows: {a: 1.5}}\n", "fit.evidence.link_efficiency.rows.a"},
      {"  evidence:\n    link_efficiency: 0.02\n", "fit.evidence.link_efficiency"},
      {"  residuals:\n    a: {fitted: 2.1}\n", "fit.residuals.a"},
      {"  residuals:\n    a: {measured: -1, fitted: 2.1}\n", "fit.residuals.a.measured"},
      {"  residuals:\n    a: {measured: 1, fitted: x}\n", "fit.residuals.a.fitted"},
      {"  residuals:\n    a: {measured: 1, fitted: 1, field: [x]}\n", "fit.residuals.a.field"},
      {"  checks:\n    c: {measured: 1, predicted: 1.1}\n", "fit.checks.c"},
      {"  checks:\n    c: {measured: 1, predicted: 0, field: ttft_s.mean}\n", "fit.checks.c.predicted"},
      {"  checks:\n    c: [1, 2]\n", "fit.checks.c"},
      {"  checks:\n    c: {measured: 1, predicted: 1, field: mfu, moe: yes}\n", "fit.checks.c.moe"},
      {"  checks:\n    c: {measured: 1, predicted: 1, field: mfu, profile: [v5p]}\n", "fit.checks.c.profile"},
      {"  residuals:\n    a: {measured: 1, fitted: 1, moe: 1}\n", "fit.residuals.a.moe"},
      {"  residuals:\n    c: {measured: 1, fitted: 1}\n  checks:\n    c: {measured: 1, predicted: 1, field: mfu}\n",
       "fit.checks.c"},
  };
  int i = 0;
  for (const auto& [fit, key] : bad) {
    const fs::path path = write_profile("bad" + std::to_string(i++), fit);
    try {
      load_profile(path.string());
      FAIL("accepted: " << fit);
    } catch (const InputError& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(path.string()) != std::string::npos);
      CHECK(std::string(e.what()).find(key) != std::string::npos);
    }
  }
}

TEST_CASE("a run with a profile prints and writes its intervals, the ideal machine none", "[intervals]") {
  // #23 with the book's v5e profile: 19 rows left out, t with 19 degrees of freedom.
  const auto profile = load_profile(source_path("scenarios/profiles/v5e_book.yaml"));
  const auto error = profile_prediction_error(profile);
  REQUIRE(error);
  double sum = 0;
  for (const auto& [row, r] : profile.residuals) sum += std::pow(std::log(r.measured / *r.leave_one_out), 2);
  CHECK(error->rows.size() == 19);
  CHECK(error->rms_log == Approx(std::sqrt(sum / 19)).epsilon(1e-12));

  const fs::path dir = podsim_test::made_dir("intervals-run");
  const auto run = podsim_test::run_podsim("run " + source_path("scenarios/v5e_8x4_allgather_y_small_calibrated.yaml") +
                                           " --reproducible -o " + (dir / "out").string());
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  CHECK(run.out.find("prediction intervals (profile v5e-book: 19 out-of-sample errors, 19 of its fit left out and 0 "
                    "checks in no fit") != std::string::npos);
  const auto summary = nlohmann::json::parse(podsim_test::read_file(dir / "out" / "summary.json"));
  REQUIRE(summary.contains("prediction_interval"));
  CHECK(summary["prediction_error"]["degrees_of_freedom"] == 19);
  const double total = summary["total_time_s"], high = summary["prediction_interval"]["total_time_s"]["high_80"],
               low = summary["prediction_interval"]["total_time_s"]["low_95"];
  // high_80 / predicted = exp(t s) with t the 90% point of Student's t at 19 degrees of freedom
  // (1.3277, tables), low_95 = exp(-t s) with its 97.5% point (2.0930).
  CHECK(std::log(high / total) == Approx(1.327728 * error->rms_log).epsilon(1e-5));
  CHECK(std::log(total / low) == Approx(2.093024 * error->rms_log).epsilon(1e-5));

  const auto ideal = podsim_test::run_podsim("run " + source_path("scenarios/v5e_8x4_allgather_y.yaml") +
                                             " --reproducible -o " + (dir / "ideal").string());
  REQUIRE(ideal.exit_code == 0);
  CHECK(ideal.out.find("prediction intervals") == std::string::npos);
  const auto ideal_summary = nlohmann::json::parse(podsim_test::read_file(dir / "ideal" / "summary.json"));
  CHECK_FALSE(ideal_summary.contains("prediction_interval"));
}

TEST_CASE("validate --measured --held-out refuses a row a profile was fit on, before any run", "[intervals]") {
  const auto run = podsim_test::run_podsim("validate --measured " +
                                           source_path("scenarios/profiles/v5e_book.measurements.yaml") + " --profile " +
                                           source_path("scenarios/profiles/v5e_book.yaml") + " --held-out");
  CHECK(run.exit_code == 2);
  CHECK(run.err.find("v5e_book.measurements.yaml:8") != std::string::npos);   // the first row, f1-8.2e3
  CHECK(run.err.find("f1-8.2e3") != std::string::npos);
  CHECK(run.err.find("--held-out") != std::string::npos);
  const auto alone = podsim_test::run_podsim("validate --measured " +
                                             source_path("scenarios/profiles/v5e_book.measurements.yaml") + " --held-out");
  CHECK(alone.exit_code == 2);
  CHECK(alone.err.find("--held-out") != std::string::npos);
}

// Three 256- and 512-chip training steps: tens of seconds, so not under the sanitizers.
TEST_CASE("the held-out example: rows no profile saw, each with its interval, and their coverage",
          "[intervals][sanitizer-skip]") {
  const fs::path dir = podsim_test::made_dir("intervals-held-out");
  const auto run = podsim_test::run_podsim(
      "validate --measured " + source_path("scenarios/real/held_out_example.measurements.yaml") + " --profiles " +
      source_path("scenarios/profiles/real") + " --held-out -j 2 --csv " + (dir / "rows.csv").string());
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  CHECK(run.out.find("held out (never fit):") != std::string::npos);
  CHECK(run.out.find("fit on (in its fit.residuals):") == std::string::npos);
  std::ifstream in(dir / "rows.csv");
  std::string line;
  std::getline(in, line);
  CHECK(line == "name,profile,field,measured,default_predicted,default_error,profile_predicted,profile_error,published,"
                "group,sole_evidence,low_80,high_80,low_95,high_95,moe");
  size_t rows = 0, inside_80 = 0, inside_95 = 0;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream cells_of(line);
    for (std::string cell; std::getline(cells_of, cell, ',');) cells.push_back(cell);
    REQUIRE(cells.size() == 16);
    ++rows;
    CHECK(cells[9] == "held_out");
    CHECK(cells[10].empty());
    // The interval is the profile's prediction times exp(-+ t s), s and n from the profile's file:
    // its errors of the row's kind (a step time here; T17's an MoE step's), the row's own left
    // out were it a check.
    const bool moe = cells[15] == "true";
    CHECK(moe == (cells[0] == "T17"));
    const auto error = profile_prediction_error(load_profile(source_path("scenarios/profiles/real/" + cells[1] + ".yaml")),
                                                figure_kind(quantity_kind(cells[2]), moe), cells[0], moe);
    REQUIRE(error);
    const double predicted = std::stod(cells[6]), measured = std::stod(cells[3]);
    const double w80 = student_t_quantile(0.9, static_cast<int>(error->rows.size())) * error->rms_log;
    CHECK(std::stod(cells[11]) == Approx(predicted * std::exp(-w80)).epsilon(1e-9));
    CHECK(std::stod(cells[12]) == Approx(predicted * std::exp(w80)).epsilon(1e-9));
    inside_80 += measured >= std::stod(cells[11]) && measured <= std::stod(cells[12]);
    inside_95 += measured >= std::stod(cells[13]) && measured <= std::stod(cells[14]);
  }
  CHECK(rows == 3);
  // The table's coverage line counts the same rows.
  char expected[128];
  std::snprintf(expected, sizeof expected, "%zu of 3 (%.0f%%) inside the 80%% interval, %zu of 3 (%.0f%%) inside the 95%%",
                inside_80, 100.0 * inside_80 / 3, inside_95, 100.0 * inside_95 / 3);
  CHECK(run.out.find(std::string("held-out rows: ")) != std::string::npos);
  CHECK(run.out.find(expected) != std::string::npos);
}
