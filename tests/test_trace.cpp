// trace.json's flows, counters and gzip (issue 10): arrows pair up on existing tracks,
// counters come from the run's records, the gzipped trace is the same JSON.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <numeric>

#include "cli_helpers.hpp"
#include "meshes.hpp"
#include "program_ops.hpp"
#include "sim/engine/run.hpp"
#include "sim/report/gzip.hpp"
#include "sim/report/report.hpp"
#include "sim/report/run_trace.hpp"
#include "sim/report/trace_counters.hpp"
#include "trace_checks.hpp"

using namespace podsim_test;
namespace fs = std::filesystem;

TEST_CASE("link utilisation: an AllGather on a 4-chip line, by hand", "[trace]") {
  const podsim::TopologySpec spec = v5e_mesh({4});
  podsim::RunOptions options;
  options.record_hops = true;
  const double bytes = 4e6;
  const podsim::RunResult run =
      podsim::run_program(spec, {}, {collective_op("ag", podsim::CollectiveKind::AllGather, {0}, bytes)}, options);
  // A line (v5e wraps only an axis of 16): chip i receives i shards from the left and 3-i
  // from the right, 12 hops of a quarter each.
  REQUIRE(run.replay.hops.size() == 12);
  double hop_bytes = 0;
  for (const auto& h : run.replay.hops) hop_bytes += h.bytes;
  CHECK(hop_bytes == Approx(12 * bytes / 4));
  // Three links, both ways, at the chip's neighbour bandwidth.
  const double capacity_Bps = 3 * 2 * spec.chip.neighbor_bandwidth_Bps();
  // One bucket: all the bytes over the whole run.
  const podsim::LinkUse one = podsim::link_use_from_hops(run, 1);
  REQUIRE(one.axes == std::vector<std::string>{"X"});
  CHECK(one.capacity_Bps[0] == Approx(capacity_Bps));
  CHECK(one.bucket_s == Approx(run.total_time_s));
  CHECK(one.bytes[0][0] == Approx(hop_bytes));
  CHECK(one.utilisation(0, 0) == Approx(hop_bytes / (capacity_Bps * run.total_time_s)));
  // 500 buckets: the same bytes, spread; none beyond the links' capacity.
  const podsim::LinkUse many = podsim::link_use_from_hops(run);
  REQUIRE(many.bytes[0].size() == 500);
  CHECK(std::accumulate(many.bytes[0].begin(), many.bytes[0].end(), 0.0) == Approx(hop_bytes));
  double peak = 0;
  for (size_t b = 0; b < 500; ++b) peak = std::max(peak, many.utilisation(0, b));
  CHECK(peak > 0.5);   // a bandwidth-bound AllGather keeps the links busy
  CHECK(peak <= 1 + 1e-9);
}

TEST_CASE("hop flows: one arrow per hop, each from a span of the op to the hop", "[trace]") {
  const auto out = fresh_dir("trace-hop-flows");
  REQUIRE(run_podsim("run " + source_path("scenarios/v5e_8x4_allgather_y.yaml") + " -o " + out.string() +
                     " --trace-detail hops --reproducible")
              .exit_code == 0);
  const auto trace = nlohmann::json::parse(read_file(out / "trace.json"));
  const TraceCounts counts = check_flows_and_counters(trace);
  CHECK(counts.hop_flows == 32 * 3);   // every hop (test_scenarios.cpp counts them)
  CHECK(trace.at("otherData").at("hop_flows_omitted") == 0);
  CHECK(counts.counter_events > 0);
  // The capped case: the first N only, and the trace says how many were left out.
  podsim::RunOptions options;
  options.record_hops = true;
  const podsim::RunResult run = podsim::run_program(
      v5e_mesh({4}), {}, {collective_op("ag", podsim::CollectiveKind::AllGather, {0}, 4e6)}, options);
  podsim::TraceOptions capped;
  capped.max_hop_flows = 5;
  podsim::TraceStats stats;
  const auto small = nlohmann::json::parse(podsim::trace_json(run, podsim::TraceDetail::Hops, capped, &stats));
  CHECK(check_flows_and_counters(small).hop_flows == 5);
  CHECK(stats.hop_flows == 5);
  CHECK(stats.hop_flows_omitted == 7);
  CHECK(small.at("otherData").at("hop_flows_omitted") == 7);
}

TEST_CASE("send flows: pipeline sends point at the stage that waits for them", "[trace]") {
  const auto out = fresh_dir("trace-send-flows");
  REQUIRE(run_podsim("run " + source_path("scenarios/training_pipeline_bubble.yaml") + " -o " + out.string() +
                     " --reproducible")
              .exit_code == 0);
  const auto trace = nlohmann::json::parse(read_file(out / "trace.json"));
  const TraceCounts counts = check_flows_and_counters(trace);
  CHECK(counts.send_flows > 0);
  CHECK(counts.send_flows == trace.at("otherData").at("send_flows").get<size_t>());
  // A training run knows its memory: the HBM counter, at 0 and at the end, on every slice.
  CHECK(counts.hbm_counters == 2 * nlohmann::json::parse(read_file(out / "summary.json")).at("topology").at("slices").get<size_t>());
}

TEST_CASE("gzipped trace: --trace-gzip writes trace.json.gz holding the same JSON", "[trace]") {
  const auto file = source_path("scenarios/v5p_two_slices_hierarchical_allreduce.yaml");
  const auto plain = fresh_dir("trace-plain"), zipped = fresh_dir("trace-gzip");
  REQUIRE(run_podsim("run " + file + " -o " + plain.string() + " --reproducible --trace-detail hops").exit_code == 0);
  const auto result = run_podsim("run " + file + " -o " + zipped.string() + " --reproducible --trace-detail hops --trace-gzip");
  REQUIRE(result.exit_code == 0);
  CHECK(result.out.find("trace.json.gz") != std::string::npos);
  CHECK_FALSE(fs::exists(zipped / "trace.json"));
  const std::string gz = read_file(zipped / "trace.json.gz");
  REQUIRE(gz.size() > 2);
  CHECK(static_cast<unsigned char>(gz[0]) == 0x1f);   // the gzip magic
  CHECK(static_cast<unsigned char>(gz[1]) == 0x8b);
  const std::string json = read_file(plain / "trace.json");
  CHECK(podsim::gzip_decompress(gz) == json);
  CHECK(gz.size() < json.size());
  // Two slices: the DCN carries bytes, so its utilisation series is there.
  const auto trace = nlohmann::json::parse(json);
  check_flows_and_counters(trace);
  bool dcn = false;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") == "C" && e.at("args").contains("DCN") && e.at("args").at("DCN").get<double>() > 0) dcn = true;
  }
  CHECK(dcn);
}

TEST_CASE("gzip: round trip over several chunks, and truncated or corrupt input refused", "[trace]") {
  std::string text;
  for (int i = 0; i < 40000; ++i) text += std::to_string(i * 2654435761u) + ",";   // ~400 kB: several 64 KiB chunks
  const std::string zipped = podsim::gzip_compress(text);
  CHECK(podsim::gzip_decompress(zipped) == text);
  CHECK(podsim::gzip_decompress(podsim::gzip_compress("")).empty());
  CHECK_THROWS_WITH(podsim::gzip_decompress(zipped.substr(0, zipped.size() / 2)), "gzip: truncated input");
  std::string corrupt = zipped;
  corrupt[corrupt.size() / 2] ^= 0x55;
  corrupt[corrupt.size() / 2 + 1] ^= 0x55;
  CHECK_THROWS_WITH(podsim::gzip_decompress(corrupt), Catch::Matchers::StartsWith("gzip: "));
}
