// Every scenario in scenarios/ runs through the CLI and meets the expectations it states;
// outputs are structured and byte-identical across runs.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "cli_helpers.hpp"
#include "trace_checks.hpp"
#include "sim/report/summary_fields.hpp"
#include "sim/scenario/scenario.hpp"

namespace {
void check_spans_nest(const nlohmann::json& trace);
}  // namespace

using namespace podsim_test;
namespace fs = std::filesystem;

namespace {

// "total_time_s" or "operations.<name>.<field>" in summary.json.
double summary_value(const nlohmann::json& summary, const std::string& field) {
  return podsim::summary_field_value(summary, field);
}

std::vector<fs::path> scenario_files() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(source_path("scenarios"))) {
    if (entry.path().extension() == ".yaml") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

TEST_CASE("every scenario meets its stated expectations", "[scenarios]") {
  const auto files = scenario_files();
  REQUIRE(files.size() >= 5);
  for (const auto& file : files) {
    DYNAMIC_SECTION(file.filename().string()) {
      const auto scenario = podsim::load_scenario(file.string());
      const auto out = fresh_dir(file.stem().string());
      const auto result = run_podsim("run " + file.string() + " -o " + out.string() + " --reproducible");
      INFO(result.err);
      REQUIRE(result.exit_code == 0);
      const auto summary = nlohmann::json::parse(read_file(out / "summary.json"));
      CHECK_FALSE(scenario.expectations.empty());
      for (const auto& expect : scenario.expectations) {
        INFO(expect.field << " from " << expect.source << "; band -" << expect.rel_tolerance << " +"
                          << expect.rel_tolerance_above << " (" << expect.tolerance_reason << ")");
        const double simulated = summary_value(summary, expect.field);
        INFO("simulated " << simulated << ", expected " << expect.value);
        CHECK(expect.accepts(simulated));
      }
      if (scenario.kind() == podsim::WorkloadKind::Serving) {
        // One requests.csv row per request; a trace span per step of every server.
        const auto requests = read_file(out / "requests.csv");
        CHECK(static_cast<size_t>(std::count(requests.begin(), requests.end(), '\n')) ==
              scenario.serving().requests.size() + 1);
        for (const char* key : {"ttft_s", "tpot_s", "latency_s"}) {
          for (const char* stat : {"mean", "p50", "p90", "p99"}) CHECK(summary.at(key).contains(stat));
        }
        const auto trace = nlohmann::json::parse(read_file(out / "trace.json"));
        check_spans_nest(trace);
        // A span per step on the server tracks, and a track per request holding its phases.
        long long spans = 0;
        std::set<int> request_tracks;
        for (const auto& e : trace.at("traceEvents")) {
          if (e.at("ph") != "X") continue;
          if (e.at("cat") == "request") request_tracks.insert(e.at("tid").get<int>());
          else spans += 1;
        }
        const auto steps = read_file(out / "steps.csv");
        CHECK(spans == std::count(steps.begin(), steps.end(), '\n') - 1);
        CHECK(request_tracks.size() == scenario.serving().requests.size());
        continue;
      }
      for (const char* key : {"total_time_s", "hop_model", "podsim_version", "wall_time_s", "topology", "operations"}) {
        CHECK(summary.contains(key));
      }
      for (const auto& op : summary.at("operations")) {
        if (op.at("kind") == "compute") continue;
        for (const char* key : {"name", "kind", "axes", "bytes", "time_s", "algbw_Bps", "busbw_Bps"}) {
          CHECK(op.contains(key));
        }
      }
      // The trace is Chrome Trace Event JSON with one span per operation per traced chip
      // (every chip up to 256, one per symmetry class beyond).
      const auto trace = nlohmann::json::parse(read_file(out / "trace.json"));
      check_spans_nest(trace);
      check_flows_and_counters(trace);
      size_t spans = 0;
      std::set<std::pair<int, int>> tracks;
      for (const auto& e : trace.at("traceEvents")) {
        // Waits for late peers are slices inside their collectives' spans (check_spans_nest).
        if (e.at("ph") != "X" || e.at("cat") == "wait_for_peers") continue;
        spans += 1;
        tracks.insert({e.at("pid").get<int>(), e.at("tid").get<int>() / 1000});
      }
      size_t expected = 0;
      const size_t chips = summary.at("topology").at("chips").get<size_t>();
      for (const auto& op : summary.at("operations")) {
        // An op run on some pipeline stages only has spans on their chips' tracks.
        const size_t on = op.contains("present_on_chips") ? op.at("present_on_chips").get<size_t>() : chips;
        expected += op.at("repeat").get<size_t>() * on * tracks.size() / chips;
      }
      if (chips <= 256) CHECK(tracks.size() == chips);
      CHECK(spans == expected);
    }
  }
}

namespace {

// Perfetto's rule: on one track (pid, tid) spans nest or are disjoint. Times are read back to
// whole nanoseconds, as the trace writes them.
void check_spans_nest(const nlohmann::json& trace) {
  std::map<std::pair<long long, long long>, std::vector<std::pair<long long, long long>>> tracks;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") != "X") continue;
    const long long ts = std::llround(e.at("ts").get<double>() * 1000);
    const long long dur = std::llround(e.at("dur").get<double>() * 1000);
    // Whole nanoseconds, to the precision of a double (a serving trace runs for an hour).
    CHECK(std::fabs(e.at("ts").get<double>() * 1000 - ts) <= 1e-12 * std::max(1e3, std::fabs(ts * 1.0)));
    tracks[{e.at("pid").get<long long>(), e.at("tid").get<long long>()}].push_back({ts, ts + dur});
  }
  size_t bad = 0;
  for (auto& [track, spans] : tracks) {
    std::sort(spans.begin(), spans.end(), [](auto a, auto b) { return a.first != b.first ? a.first < b.first : a.second > b.second; });
    std::vector<long long> open;   // ends of the spans enclosing the current one
    for (const auto& [start, end] : spans) {
      while (!open.empty() && open.back() <= start) open.pop_back();
      if (!open.empty() && end > open.back()) ++bad;   // starts inside one, ends after it
      open.push_back(end);
    }
  }
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("the same scenario gives byte-identical outputs", "[scenarios]") {
  const auto file = source_path("scenarios/v4p_4x4x4_book_question2.yaml");
  const auto a = fresh_dir("same-a"), b = fresh_dir("same-b");
  REQUIRE(run_podsim("run " + file + " -o " + a.string() + " --reproducible --trace-detail hops").exit_code == 0);
  REQUIRE(run_podsim("run " + file + " -o " + b.string() + " --reproducible --trace-detail hops").exit_code == 0);
  for (const char* name : {"summary.json", "trace.json", "operations.csv"}) {
    INFO(name);
    CHECK(read_file(a / name) == read_file(b / name));
    CHECK_FALSE(read_file(a / name).empty());
  }
}

TEST_CASE("hop detail adds every hop to the trace", "[scenarios]") {
  const auto file = source_path("scenarios/v5e_8x4_allgather_y.yaml");
  const auto out = fresh_dir("hops");
  REQUIRE(run_podsim("run " + file + " -o " + out.string() + " --trace-detail hops").exit_code == 0);
  const auto trace = nlohmann::json::parse(read_file(out / "trace.json"));
  size_t hops = 0;
  for (const auto& e : trace.at("traceEvents")) hops += e.value("cat", "") == "hop";
  // A 4-chip line: each of the 8 rings (one per X) moves 3 shards each way past every chip:
  // chip i receives i from the left and 3-i from the right, 3 per chip, 32 chips.
  CHECK(hops == 32 * 3);
}
