// Serving through the CLI: the prefill:generate ratio found by simulation (acceptance 4 of the
// inference issue), and bad serving input.
#include <catch2/catch.hpp>
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <nlohmann/json.hpp>

#include "cli_helpers.hpp"
#include "sim/report/serving_files.hpp"
#include "sim/scenario/scenario.hpp"

using namespace podsim_test;

namespace {

// sweep.csv rows as maps from column name to text (no quoted commas in the columns used here).
std::vector<std::map<std::string, std::string>> read_csv(const std::string& text) {
  std::vector<std::map<std::string, std::string>> rows;
  std::istringstream in(text);
  std::string line;
  std::vector<std::string> header;
  auto split = [](const std::string& l) {
    std::vector<std::string> cells;
    std::string cell;
    bool quoted = false;
    for (char c : l) {
      if (c == '"') quoted = !quoted;
      else if (c == ',' && !quoted) cells.push_back(cell), cell.clear();
      else cell += c;
    }
    cells.push_back(cell);
    return cells;
  };
  while (std::getline(in, line)) {
    const auto cells = split(line);
    if (header.empty()) {
      header = cells;
      continue;
    }
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < header.size() && i < cells.size(); ++i) row[header[i]] = cells[i];
    rows.push_back(row);
  }
  return rows;
}

std::string serving_scenario(const std::string& workload_extra, const std::string& requests) {
  return "version: 1\nhardware: {preset: v5e}\ntopology: {mesh: {X: 4, Y: 4}}\nworkload:\n  kind: serving\n"
         "  model: llama3-70b\n  weights: int8\n  kv_cache: int8\n" +
         workload_extra + "  requests:\n" + requests;
}

CommandResult run_text(const std::string& name, const std::string& text) {
  const auto dir = fresh_dir(name);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "s.yaml") << text;
  return run_podsim("run " + (dir / "s.yaml").string() + " -o " + (dir / "out").string());
}

}  // namespace

TEST_CASE("disaggregated serving: the prefill servers one generate server needs, by simulation", "[serving]") {
  // applied-inference.md:L271-L275: P / T_prefill = B G / (T_step x decode steps), so
  // P / G = T_prefill B / (T_step (output - 1)), about 3 at the book's latencies.
  const auto out = fresh_dir("disaggregated-ratio");
  const auto result = run_podsim("sweep " + source_path("scenarios/serving_llama3_70b_disaggregated_v5e.yaml") +
                                 " --set workload.prefill.servers=1,2,3,4,5 -o " + out.string());
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  const auto rows = read_csv(read_file(out / "sweep.csv"));
  REQUIRE(rows.size() == 5);
  std::vector<double> rps;
  for (const auto& r : rows) {
    REQUIRE(r.at("status") == "ok");
    rps.push_back(std::stod(r.at("requests_per_s")));
  }
  // Prefill-bound: each prefill server adds its own 1 / T_prefill.
  const double prefill_s = std::stod(rows[0].at("prefill_time_s"));
  for (int p = 1; p <= 3; ++p) CHECK(rps[p - 1] == Approx(p / prefill_s).epsilon(0.05));
  // Generate-bound from 4 on: more prefill servers add nothing.
  CHECK(rps[4] == Approx(rps[3]).epsilon(0.01));
  const double ratio = rps[4] / rps[0];
  const double step_s = std::stod(rows[4].at("decode_step_time_s"));
  const double formula = prefill_s * 32 / (step_s * (512 - 1));
  INFO("simulated ratio " << ratio << ", formula with simulated step times " << formula);
  CHECK(ratio == Approx(formula).epsilon(0.05));
  CHECK(ratio > 2.5);
  CHECK(ratio < 3.5);
}

TEST_CASE("bad serving input: one clear message and exit 2", "[serving]") {
  const std::string poisson = "    poisson: {rate: \"2 /s\", count: 10, prompt_tokens: 1024, output_tokens: 64}\n";
  SECTION("a zero arrival rate") {
    const auto r = run_text("zero-rate", serving_scenario("", "    poisson: {rate: \"0 /s\", count: 10, "
                                                               "prompt_tokens: 1024, output_tokens: 64}\n"));
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("workload.requests.poisson.rate") != std::string::npos);
    CHECK(r.err.find("positive") != std::string::npos);
  }
  SECTION("a batch that cannot fit") {
    const auto r = run_text("no-fit", serving_scenario("  max_batch: 5000\n", poisson));
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("workload.max_batch") != std::string::npos);
    CHECK(r.err.find("expected at most") != std::string::npos);
  }
  SECTION("a context longer than the model allows") {
    const auto r = run_text("too-long", serving_scenario("", "    poisson: {rate: \"2 /s\", count: 10, "
                                                             "prompt_tokens: 8000, output_tokens: 512}\n"));
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("max_sequence_length of 8192") != std::string::npos);
  }
  SECTION("a malformed trace") {
    const auto dir = fresh_dir("bad-trace");
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "trace.csv") << "arrival_s,prompt_tokens,output_tokens\n0.0,100,10\n0.5,abc,10\n";
    std::ofstream(dir / "s.yaml") << serving_scenario("", "    trace: trace.csv\n");
    const auto r = run_podsim("run " + (dir / "s.yaml").string() + " -o " + (dir / "out").string());
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("trace.csv:3:2") != std::string::npos);
    CHECK(r.err.find("prompt_tokens") != std::string::npos);
    CHECK(r.err.find("'abc'") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(dir / "out" / "summary.json"));
  }
  SECTION("a trace out of order, or missing a column") {
    const auto dir = fresh_dir("bad-trace-2");
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "order.csv") << "arrival_s,prompt_tokens,output_tokens\n1.0,100,10\n0.5,100,10\n";
    std::ofstream(dir / "column.csv") << "arrival_s,prompt_tokens\n1.0,100\n";
    std::ofstream(dir / "a.yaml") << serving_scenario("", "    trace: order.csv\n");
    std::ofstream(dir / "b.yaml") << serving_scenario("", "    trace: column.csv\n");
    const auto a = run_podsim("run " + (dir / "a.yaml").string() + " -o " + (dir / "out").string());
    CHECK(a.exit_code == 2);
    CHECK(a.err.find("order.csv:3:1") != std::string::npos);
    CHECK(a.err.find("non-decreasing") != std::string::npos);
    const auto b = run_podsim("run " + (dir / "b.yaml").string() + " -o " + (dir / "out").string());
    CHECK(b.exit_code == 2);
    CHECK(b.err.find("no column output_tokens") != std::string::npos);
  }
  SECTION("a trace request longer than the model allows") {
    const auto dir = fresh_dir("bad-trace-3");
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "long.csv") << "arrival_s,prompt_tokens,output_tokens\n0,100,10\n1.0,8100,500\n";
    std::ofstream(dir / "s.yaml") << serving_scenario("", "    trace: long.csv\n");
    const auto r = run_podsim("run " + (dir / "s.yaml").string() + " -o " + (dir / "out").string());
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("long.csv:3") != std::string::npos);
    CHECK(r.err.find("max_sequence_length") != std::string::npos);
  }
  SECTION("context parallelism on a server") {
    const auto r = run_text("context-server", serving_scenario("  parallelism: {model: [Y], context: X}\n", poisson));
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("workload.parallelism.context") != std::string::npos);
    CHECK(r.err.find("a decode step has one new token per sequence, nothing for a ring to split") !=
          std::string::npos);
  }
  SECTION("2D weight-stationary sharding of an MoE server") {
    std::string text = serving_scenario("  parallelism: {model: [Y], model_d: [X]}\n", poisson);
    text.replace(text.find("llama3-70b"), 10, "mixtral-8x7b");
    const auto r = run_text("model-d-moe-server", text);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("workload.parallelism.model_d") != std::string::npos);
    CHECK(r.err.find("2D weight-stationary sharding of a mixture-of-experts model is not supported") !=
          std::string::npos);
  }
  SECTION("prefill settings on a colocated policy") {
    const auto r = run_text("prefill-colocated", serving_scenario("  prefill: {servers: 2}\n", poisson));
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("applies to policy: disaggregated") != std::string::npos);
  }
}

TEST_CASE("a serving trace runs and gives byte-identical outputs", "[serving]") {
  const auto dir = fresh_dir("trace-run");
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "t.csv") << "# arrivals in seconds\narrival_s,prompt_tokens,output_tokens\n0,1000,20\n"
                                  "0.01,300,5\n0.5,2000,1\n";
  std::ofstream(dir / "s.yaml") << serving_scenario("  policy: interleaved\n", "    trace: t.csv\n");
  const auto a = run_podsim("run " + (dir / "s.yaml").string() + " -o " + (dir / "a").string() + " --reproducible");
  const auto b = run_podsim("run " + (dir / "s.yaml").string() + " -o " + (dir / "b").string() + " --reproducible");
  INFO(a.err);
  REQUIRE(a.exit_code == 0);
  for (const char* name : {"summary.json", "requests.csv", "steps.csv", "trace.json"})
    CHECK(read_file(dir / "a" / name) == read_file(dir / "b" / name));
  const auto summary = nlohmann::json::parse(read_file(dir / "a" / "summary.json"));
  CHECK(summary.at("requests") == 3);
  // A one-token response ends at its prefill.
  CHECK(summary.at("ttft_s").at("max").get<double>() > 0);
}

TEST_CASE("vLLM benchmark conventions: all at once, std beside mean, token totals and throughputs", "[serving]") {
  const auto dir = fresh_dir("vllm-metrics");
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "s.yaml") << serving_scenario(
      "", "    poisson: {rate: \"inf /s\", count: 40, prompt_tokens: [100, 300], output_tokens: [2, 20], seed: 3}\n");
  const auto r = run_podsim("run " + (dir / "s.yaml").string() + " -o " + (dir / "out").string() + " --reproducible");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto summary = nlohmann::json::parse(read_file(dir / "out" / "summary.json"));
  // Every request at time 0, so the requests.csv arrivals are all 0.
  double prompt_total = 0, output_total = 0;
  std::vector<double> ttft;
  for (const auto& row : read_csv(read_file(dir / "out" / "requests.csv"))) {
    CHECK(std::stod(row.at("arrival_s")) == 0.0);
    prompt_total += std::stod(row.at("prompt_tokens"));
    output_total += std::stod(row.at("output_tokens"));
    ttft.push_back(std::stod(row.at("ttft_s")));
  }
  REQUIRE(ttft.size() == 40);
  CHECK(summary.at("total_input_tokens").get<double>() == prompt_total);
  CHECK(summary.at("total_output_tokens").get<double>() == output_total);
  const double span = summary.at("total_time_s").get<double>();
  CHECK(summary.at("output_token_throughput_per_s").get<double>() == Approx(output_total / span));
  CHECK(summary.at("total_token_throughput_per_s").get<double>() == Approx((output_total + prompt_total) / span));
  CHECK(summary.at("request_throughput_per_s").get<double>() == Approx(40 / span));
  // Population standard deviation, as numpy (and vLLM) compute it.
  double mean = 0, squares = 0;
  for (double t : ttft) mean += t / ttft.size();
  for (double t : ttft) squares += (t - mean) * (t - mean);
  CHECK(summary.at("ttft_s").at("std").get<double>() == Approx(std::sqrt(squares / ttft.size())).epsilon(1e-6));
  CHECK(summary.at("ttft_s").at("std").get<double>() > 0);
}

TEST_CASE("goodput under a latency SLO counts the requests that meet every bound", "[serving]") {
  const auto dir = fresh_dir("goodput");
  std::filesystem::create_directories(dir);
  const std::string requests =
      "    poisson: {rate: \"2 /s\", count: 60, prompt_tokens: [100, 2000], output_tokens: [2, 40], seed: 5}\n";
  auto run = [&](const std::string& name, const std::string& slo) {
    std::ofstream(dir / (name + ".yaml")) << serving_scenario(slo, requests);
    const auto r = run_podsim("run " + (dir / (name + ".yaml")).string() + " -o " + (dir / name).string());
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return nlohmann::json::parse(read_file(dir / name / "summary.json"));
  };
  const auto loose = run("loose", "  slo: {ttft: \"3600 s\", tpot: \"10 s\"}\n");
  CHECK(loose.at("slo_attainment").get<double>() == 1.0);
  CHECK(loose.at("goodput_requests_per_s").get<double>() == Approx(loose.at("request_throughput_per_s").get<double>()));
  // A TTFT bound at the median: about half the requests meet it, counted from requests.csv. The
  // bound is written to round-trip exactly: requests that find the server idle share one TTFT (a
  // lone prompt's prefill), so a bound rounded below the median would drop them all.
  const double median = loose.at("ttft_s").at("p50").get<double>();
  char bound[64];
  std::snprintf(bound, sizeof bound, "  slo: {ttft: \"%.17g s\"}\n", median);
  const auto half = run("half", bound);
  size_t within = 0, total = 0;
  for (const auto& row : read_csv(read_file(dir / "half" / "requests.csv"))) {
    within += std::stod(row.at("ttft_s")) <= median;
    ++total;
  }
  CHECK(half.at("slo_attainment").get<double>() == Approx(static_cast<double>(within) / total));
  CHECK(half.at("slo_attainment").get<double>() >= 0.5);
  CHECK(half.at("slo_attainment").get<double>() < 1.0);
  // A bound that is not a time, or no bound at all, is refused.
  std::ofstream(dir / "bad.yaml") << serving_scenario("  slo: {}\n", requests);
  const auto bad = run_podsim("run " + (dir / "bad.yaml").string() + " -o " + (dir / "bad").string());
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("at least one of ttft, tpot, latency") != std::string::npos);
}

TEST_CASE("selectable percentiles: each distribution reports the ones asked for, expectations may name them",
          "[serving]") {
  const auto dir = fresh_dir("percentiles");
  std::filesystem::create_directories(dir);
  const std::string requests =
      "    poisson: {rate: \"2 /s\", count: 50, prompt_tokens: [100, 2000], output_tokens: [2, 40], seed: 5}\n";
  std::ofstream(dir / "s.yaml") << serving_scenario("  metric_percentiles: [25, 99.9]\n", requests);
  const auto r = run_podsim("run " + (dir / "s.yaml").string() + " -o " + (dir / "out").string());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto summary = nlohmann::json::parse(read_file(dir / "out" / "summary.json"));
  std::vector<double> ttft;
  for (const auto& row : read_csv(read_file(dir / "out" / "requests.csv"))) ttft.push_back(std::stod(row.at("ttft_s")));
  std::sort(ttft.begin(), ttft.end());
  const auto& d = summary.at("ttft_s");
  CHECK(d.contains("p25"));
  CHECK(d.contains("p99.9"));
  CHECK_FALSE(d.contains("p90"));
  CHECK(d.at("median").get<double>() == Approx((ttft[24] + ttft[25]) / 2));   // numpy's, of 50 values
  CHECK(d.at("p25").get<double>() == Approx(ttft[12] + 0.25 * (ttft[13] - ttft[12])));   // position 0.25 x 49
  CHECK(r.out.find(" p99.9") != std::string::npos);
  // A percentile not asked for is not a field; a bad list is refused where it is written.
  auto with_expectation = [&](const std::string& percentiles, const std::string& field) {
    return serving_scenario("  metric_percentiles: " + percentiles + "\n", requests) + "expect:\n  - {field: " + field +
           ", value: \"1 s\", source: \"x\"}\n";
  };
  CHECK_NOTHROW(podsim::load_scenario_text(with_expectation("[25, 99.9]", "ttft_s.p99.9"), "p999.yaml"));
  CHECK_NOTHROW(podsim::load_scenario_text(with_expectation("[25]", "ttft_s.median"), "median.yaml"));
  CHECK_THROWS_WITH(podsim::load_scenario_text(with_expectation("[25]", "ttft_s.p90"), "p90.yaml"),
                    Catch::Contains("add them to workload.metric_percentiles"));
  for (const auto& [list, message] : std::vector<std::pair<std::string, std::string>>{
           {"[]", "expected 1 to 20 percentiles"},
           {"[50, 100]", "expected a percentile between 0 and 100"},
           {"[99, 99]", "listed twice"}}) {
    INFO(list);
    const auto bad = run_text("percentiles-bad", serving_scenario("  metric_percentiles: " + list + "\n", requests));
    CHECK(bad.exit_code == 2);
    CHECK(bad.err.find(message) != std::string::npos);
    CHECK(bad.err.find("metric_percentiles") != std::string::npos);
  }
}

// [sanitizer-skip]: under AddressSanitizer the bound below measures ASan's allocator (shadow
// memory, redzones, a quarantine of freed blocks), not the run's records; and it takes 3 minutes.
TEST_CASE("a long serving run streams its records: memory does not grow with the request count",
          "[serving][sanitizer-skip]") {
  // 200,000 requests: holding ~40 KB each, as serving once did, would take 8 GB. Streamed, the
  // run keeps what is in flight; the bound below leaves room for the step-cost replay and the
  // request list itself (32 B per request).
  const auto dir = fresh_dir("streamed");
  const auto r = run_podsim("run " + source_path("scenarios/serving_llama3_70b_continuous_v5e_4x4.yaml") + " -o " +
                            (dir / "out").string() + " -q --set workload.requests.poisson.count=200000 --set expect=null");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  rusage usage{};
  getrusage(RUSAGE_CHILDREN, &usage);
  CHECK(usage.ru_maxrss < 400 * 1024);   // KiB
  const auto summary = nlohmann::json::parse(read_file(dir / "out" / "summary.json"));
  CHECK(summary.at("requests") == 200000);
  CHECK(summary.at("peak_requests_in_memory").get<int>() < 2000);
  const auto csv = read_file(dir / "out" / "requests.csv");
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 200001);
  // The trace holds an event a line, as many as the summary says: the whole run, or up to the
  // cap and a time before the run's end.
  const auto trace = summary.at("trace");
  if (trace.at("complete") == false)
    CHECK(trace.at("until_s").get<double>() < summary.at("total_time_s").get<double>());
  const auto text = read_file(dir / "out" / "trace.json");
  CHECK(std::count(text.begin(), text.end(), '\n') == trace.at("events").get<long long>() + 2);
  CHECK(text.substr(text.size() - 4) == "\n]}\n");
}

TEST_CASE("a serving trace past its cap stops at an event boundary, stays valid JSON and says where", "[serving]") {
  const auto scenario = podsim::load_scenario_text(
      serving_scenario("", "    poisson: {rate: \"2 /s\", count: 5, prompt_tokens: 100, output_tokens: 3, seed: 1}\n"),
      "cap.yaml");
  const auto dir = fresh_dir("trace-cap");
  std::filesystem::create_directories(dir);
  podsim::OutputFiles files(dir.string());
  podsim::ServingFileSink sink(scenario, files, 6);   // 3 metadata events, then 3 more
  for (int i = 0; i < 4; ++i)
    sink.step({podsim::StepKind::Decode, false, 0, 0.1 * i, 0.1 * i + 0.05, 1, 1});
  const auto extent = sink.finish();
  files.add("summary.json", "{}\n");
  files.commit();
  CHECK_FALSE(extent.complete);
  CHECK(extent.events == 6);
  // Step 1's span went in, its counter did not: the trace ends where step 1 began.
  CHECK(extent.until_s == Approx(0.1));
  const auto trace = nlohmann::json::parse(read_file(dir / "trace.json"));
  CHECK(trace.at("traceEvents").size() == 6);
  // The CSV has every step.
  const auto steps = read_file(dir / "steps.csv");
  CHECK(std::count(steps.begin(), steps.end(), '\n') == 5);
}
