// `podsim capacity` (sim/commands/capacity.hpp): the rate it finds meets every SLO and the next
// rate of its grid does not, each checked by a `podsim run` of its own at that rate; the CSV is
// the same from run to run; bad SLOs, rates and scenarios give located errors (exit 2).
//
// The scenario is one chip serving a small model, so no step is replayed (a one-chip server
// has no collectives): a simulation takes milliseconds and the search about a second.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_helpers.hpp"
#include "scratch.hpp"
#include "sim/commands/capacity.hpp"
#include "sim/report/csv_text.hpp"
#include "sim/scenario/input_error.hpp"

using namespace podsim;
using podsim_test::made_dir;
using podsim_test::read_file;
using podsim_test::run_podsim;

namespace {

const std::string kScenario = R"(version: 1
name: capacity-test
hardware: {preset: v5e}
topology: {mesh: {X: 1}}
workload:
  kind: serving
  model: llama3-8b
  weights: int8
  kv_cache: int8
  policy: continuous
  prefill_batch: 4
  requests:
    poisson: {rate: "4 /s", count: 200, prompt_tokens: [128, 512], output_tokens: [16, 96], seed: 7}
)";

const char* kSlos = " --slo 'ttft_p99<=300ms' --slo 'tpot_p99<=30ms'";

std::string scenario_file(const std::string& name, const std::string& text) {
  const auto dir = made_dir("capacity-scenario-" + name);
  const auto path = dir / "scenario.yaml";
  std::FILE* f = std::fopen(path.c_str(), "w");
  REQUIRE(f != nullptr);
  std::fputs(text.c_str(), f);
  std::fclose(f);
  return path.string();
}

// `podsim run` at one rate: its summary.json.
nlohmann::json run_at(const std::string& scenario, double rate, const std::string& dir_name) {
  const auto dir = made_dir(dir_name);
  char set[128];
  std::snprintf(set, sizeof set, "--set 'workload.requests.poisson.rate=%.17g /s'", rate);
  const auto r = run_podsim("run " + scenario + " " + set + " -o " + dir.string());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(read_file(dir / "summary.json"));
}

bool meets(const nlohmann::json& summary) {
  return summary["ttft_s"]["p99"].get<double>() <= 0.300 && summary["tpot_s"]["p99"].get<double>() <= 0.030;
}

}  // namespace

TEST_CASE("capacity: the rate found meets every SLO, the next rate up does not, and the CSV is deterministic",
          "[capacity][cli]") {
  const std::string scenario = scenario_file("search", kScenario);
  const auto a = made_dir("capacity-a"), b = made_dir("capacity-b");
  const auto first = run_podsim("capacity " + scenario + kSlos + " --precision 0.1 -o " + a.string());
  INFO(first.err);
  REQUIRE(first.exit_code == 0);
  const auto second = run_podsim("capacity " + scenario + kSlos + " --precision 0.1 -o " + b.string());
  REQUIRE(second.exit_code == 0);
  const std::string csv = read_file(a / "capacity.csv");
  CHECK(csv == read_file(b / "capacity.csv"));
  const auto result = nlohmann::json::parse(read_file(a / "capacity.json"))["results"][0];
  INFO(csv);
  REQUIRE(result["limit"] == "found");
  const double found = result["max_rate_per_s"].get<double>(), next = result["next_rate_per_s"].get<double>();
  // The grid: 4 /s x 1.1^k; the next rate is one step up.
  CHECK(next == Approx(found * 1.1).epsilon(1e-12));
  CHECK(std::fabs(std::log(found / 4) / std::log(1.1) - std::round(std::log(found / 4) / std::log(1.1))) < 1e-9);
  // The same arrivals scaled (one seed), run on their own: the claims hold.
  CHECK(meets(run_at(scenario, found, "capacity-found")));
  CHECK_FALSE(meets(run_at(scenario, next, "capacity-next")));
  // One CSV row a simulation, and every tested rate up to the answer met the SLOs.
  const auto rows = nlohmann::json::parse(read_file(a / "capacity.json"))["results"][0]["simulations"].get<int>();
  CHECK(std::count(csv.begin(), csv.end(), '\n') == rows + 1);
  size_t at = csv.find('\n') + 1;
  while (at < csv.size()) {
    const size_t end = csv.find('\n', at);
    const std::string row = csv.substr(at, end - at);
    const double rate = std::stod(row.substr(row.find(',', row.find(',') + 1) + 1));
    const std::string meets_found = row.substr(row.rfind(',', row.rfind(',') - 1) + 1);   // meets_slos,found
    if (rate <= found * (1 + 1e-12)) CHECK(meets_found.rfind("true,", 0) == 0);
    CHECK((meets_found.substr(meets_found.find(',') + 1) == "true") == (std::fabs(rate - found) <= 1e-9 * found));
    at = end + 1;
  }
}

TEST_CASE("capacity: more servers sustain a higher rate", "[capacity][cli]") {
  // Two servers of the same queue take twice the work at once: at the one-server answer the
  // two-server fleet meets the SLOs, so its search goes higher.
  const std::string scenario = scenario_file("servers", kScenario);
  const auto dir = made_dir("capacity-servers");
  const auto r = run_podsim("capacity " + scenario + kSlos + " --precision 0.2 --servers 1,2 -o " + dir.string());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto results = nlohmann::json::parse(read_file(dir / "capacity.json"))["results"];
  REQUIRE(results.size() == 2);
  CHECK(results[0]["model_servers"] == 1);
  CHECK(results[1]["model_servers"] == 2);
  CHECK(results[1]["max_rate_per_s"].get<double>() > results[0]["max_rate_per_s"].get<double>());
}

TEST_CASE("capacity: SLO strings parsed, with their units", "[capacity]") {
  const LatencySlo a = parse_latency_slo("ttft_p99<=200ms");
  CHECK(a.metric == "ttft");
  CHECK(a.statistic == "p99");
  CHECK(a.percent == 99);
  CHECK(a.bound_s == Approx(0.2).epsilon(1e-15));
  const LatencySlo b = parse_latency_slo("e2e_mean <= 2.5 s");
  CHECK(b.metric == "e2e");
  CHECK(b.percent == 0);
  CHECK(b.bound_s == 2.5);
  CHECK(parse_latency_slo("itl_p99.9<=40 us").percent == 99.9);
  CHECK(parse_latency_slo("tpot_median<=1ms").percent == 50);
}

TEST_CASE("capacity: bad SLOs, rates and scenarios give located errors", "[capacity][cli]") {
  for (const char* bad : {"ttft_p99=200ms", "ttfx_p99<=200ms", "ttft_q99<=200ms", "ttft_p100<=1s",
                                 "ttft_p99<=200", "ttft_p99<=0 ms", "ttft<=1s", "ttft_p9x<=1s"}) {
    INFO(bad);
    try {
      parse_latency_slo(bad);
      FAIL("accepted");
    } catch (const InputError& e) {
      CHECK(e.key() == "--slo");
      CHECK(e.value() == std::string(bad));
      CHECK(std::string(e.what()).find("expected METRIC_STATISTIC<=TIME") != std::string::npos);
    }
  }
  const std::string scenario = scenario_file("errors", kScenario);
  const auto out = made_dir("capacity-errors");
  struct Case {
    std::string args, key, value;
  };
  const std::string closed = scenario_file(
      "closed", kScenario + "    max_concurrency: 8\n");
  const std::string at_once = scenario_file("at-once", R"(version: 1
hardware: {preset: v5e}
topology: {mesh: {X: 1}}
workload:
  kind: serving
  model: llama3-8b
  weights: int8
  requests:
    random: {count: 10, input_len: 64, output_len: 8}
)");
  const std::string trace_dir = made_dir("capacity-trace").string();
  {
    std::FILE* f = std::fopen((trace_dir + "/trace.csv").c_str(), "w");
    REQUIRE(f != nullptr);
    std::fputs("arrival_s,prompt_tokens,output_tokens\n0,64,8\n0.5,64,8\n", f);
    std::fclose(f);
  }
  const std::string traced = scenario_file("trace", R"(version: 1
hardware: {preset: v5e}
topology: {mesh: {X: 1}}
workload:
  kind: serving
  model: llama3-8b
  weights: int8
  requests:
    trace: )" + trace_dir + "/trace.csv\n");
  for (const auto& c : std::vector<Case>{
           {traced + " --slo 'ttft_p99<=1s'", "workload.requests.trace", trace_dir + "/trace.csv"},
           {scenario + " --slo 'ttft_p99<200ms'", "--slo", "ttft_p99<200ms"},
           {scenario + " --slo 'ttft_p99<=1s' --rate-max '20 Hz'", "--rate-max", "20 Hz"},
           {scenario + " --slo 'ttft_p99<=1s' --rate-max '2 /s'", "--rate-start", "4 /s"},
           {scenario + " --slo 'ttft_p99<=1s' --precision 0", "--precision", "0"},
           {closed + " --slo 'ttft_p99<=1s'", "workload.requests.max_concurrency", "8"},
           {at_once + " --slo 'ttft_p99<=1s'", "workload.requests.random.request_rate", "inf"},
           {podsim_test::source_path("scenarios/v5e_16_alltoall.yaml") + " --slo 'ttft_p99<=1s'", "workload.kind",
            "collectives"}}) {
    INFO(c.args);
    const auto r = run_podsim("capacity " + c.args + " -o " + out.string());
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("key '" + c.key + "'") != std::string::npos);
    CHECK(r.err.find("value '" + c.value + "'") != std::string::npos);
    INFO(r.err);
  }
  CHECK_FALSE(std::filesystem::exists(out / "capacity.csv"));
}
