// `podsim perf`: nccl-tests' size flags, its table, and rows that are real simulations agreeing
// with the book's formulas where the collective is bandwidth-bound.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "cli_helpers.hpp"
#include "collectives/formulas.hpp"
#include "sim/commands/perf.hpp"
#include "sim/report/csv_text.hpp"

using namespace podsim;
using namespace podsim_test;
namespace fs = std::filesystem;

namespace {

// A wrapped 16-ring of v5e (an axis of 16 wraps), one operation of each kind over it; sizes in
// the file are replaced by the sweep's.
const char* kRing = R"(version: 1
name: v5e-16-ring
hardware: {preset: v5e, profile: ideal}
topology: {mesh: {X: 16}}
workload:
  kind: collectives
  operations:
    - {name: ag, kind: all_gather, axes: [X], array: "bf16[1024,1024]", sharding: "[E_X, F]"}
    - {name: ar, kind: all_reduce, axes: [X], bytes: "1 MiB"}
    - {name: a2a, kind: all_to_all, axes: [X], array: "int8[4096,256]", sharding: "[E_X, F]"}
expect:
  - {field: operations.ag.time_s, value: "1 s", source: "ignored by perf"}
)";

fs::path write_file(const std::string& name, const std::string& text) {
  const auto dir = fresh_dir("perf-inputs");
  fs::create_directories(dir);
  std::ofstream(dir / name) << text;
  return dir / name;
}

PerfSizeFlags flags(std::string b, std::string e, std::string f, std::string i = "") {
  PerfSizeFlags s;
  s.begin = std::move(b);
  s.end = std::move(e);
  s.factor = std::move(f);
  s.increment = std::move(i);
  return s;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::vector<std::string> split(const std::string& text, char by) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, by);) out.push_back(item);
  return out;
}

}  // namespace

TEST_CASE("perf sizes: nccl-tests' units and podsim's", "[perf]") {
  CHECK(parse_perf_size("-b", "8") == 8);
  CHECK(parse_perf_size("-b", "1K") == 1024);
  CHECK(parse_perf_size("-b", "1k") == 1024);
  CHECK(parse_perf_size("-e", "128M") == 128ull << 20);
  CHECK(parse_perf_size("-e", "1G") == 1ull << 30);
  CHECK(parse_perf_size("-e", "1.5K") == 1536);
  CHECK(parse_perf_size("-e", "8 MiB") == 8ull << 20);
  CHECK(parse_perf_size("-e", "1 GB") == 1000000000ull);   // podsim's decimal GB; nccl-tests' G is binary
  CHECK(error_of([] { parse_perf_size("-b", "0"); }).find("-b: value '0': must be positive") == 0);
  CHECK(error_of([] { parse_perf_size("-b", "0.3K"); }).find("not a whole number of bytes") != std::string::npos);
  CHECK(error_of([] { parse_perf_size("-i", "lots"); }).find("-i: value 'lots'") == 0);
  CHECK(error_of([] { parse_perf_size("-e", "99999999999G"); }).find("too large") != std::string::npos);
}

TEST_CASE("perf sizes progress as -b, -e, -f and -i say", "[perf]") {
  const auto doubling = perf_sizes(flags("8", "128M", "2"));
  REQUIRE(doubling.sizes_bytes.size() == 25);   // 2^3 .. 2^27
  for (size_t k = 0; k < doubling.sizes_bytes.size(); ++k) CHECK(doubling.sizes_bytes[k] == 8ull << k);
  CHECK(doubling.step == "2(factor)");
  // Not a power of the factor: the last size is the last one <= -e (nccl-tests' loop).
  CHECK(perf_sizes(flags("3", "100", "3")).sizes_bytes == std::vector<uint64_t>{3, 9, 27, 81});
  // Without -f, nccl-tests steps by -i, 1M by default.
  CHECK(perf_sizes(flags("1M", "4M", "")).sizes_bytes ==
        std::vector<uint64_t>{1ull << 20, 2ull << 20, 3ull << 20, 4ull << 20});
  CHECK(perf_sizes(flags("100", "400", "", "150")).sizes_bytes == std::vector<uint64_t>{100, 250, 400});
  CHECK(perf_sizes(flags("100", "400", "", "150")).step == "150(bytes)");
  CHECK(perf_sizes(flags("32M", "32M", "")).sizes_bytes == std::vector<uint64_t>{32ull << 20});
  // Near 2^64 the next size would overflow; the sweep stops at -e.
  CHECK(perf_sizes(flags("8G", "16777215 TiB", "2")).sizes_bytes.back() <= (16777215ull << 40));

  CHECK(error_of([] { perf_sizes(flags("1G", "128M", "2")); }) ==
        "-b: value '1G': 1 GiB is more than -e 128M (128 MiB); expected -b <= -e");
  CHECK(error_of([] { perf_sizes(flags("8", "128M", "1")); }).find("-f: value '1': expected a multiplication factor "
                                                                   "of 2 or more") == 0);
  CHECK(error_of([] { perf_sizes(flags("8", "128M", "2", "1M")); }).find("not both") != std::string::npos);
  CHECK(error_of([] { perf_sizes(flags("8", "128M", "two")); }).find("-f: value 'two'") == 0);
  CHECK(error_of([] { perf_sizes(flags("1", "128M", "", "1")); }).find("-i: value '1': more than 1000 sizes") == 0);
}

TEST_CASE("perf: a v5e 16-ring's rows are simulations that meet the book at large sizes", "[perf]") {
  const Scenario scenario = load_scenario_text(kRing, "ring.yaml");
  PerfOptions options;
  options.sizes = flags("16K", "1G", "4");
  std::vector<int> progress;
  options.on_progress = [&](int finished, int total, double) {
    CHECK(total == 3 * 9);
    progress.push_back(finished);
  };
  const PerfResult result = run_perf(scenario, options);
  CHECK(progress.front() == 0);
  CHECK(progress.back() == 27);
  REQUIRE(result.operations.size() == 3);
  const auto& chip = scenario.topology.chip;
  for (const auto& op : result.operations) {
    INFO(op.name);
    CHECK(op.group_size == 16);
    CHECK(op.fidelity == "reduced");
    REQUIRE(op.rows.size() == 9);   // 16 KiB, 64 KiB, ..., 1 GiB
    double busbw_sum = 0;
    for (size_t k = 0; k < op.rows.size(); ++k) {
      const PerfRow& r = op.rows[k];
      INFO("size " << r.size_bytes);
      CHECK(r.size_bytes == (16ull << 10) << (2 * k));
      // nccl-tests' factors, exactly as busbw_Bps applies them to algbw = size / time.
      const double n = 16;
      const double factor = op.kind == CollectiveKind::AllReduce ? 2 * (n - 1) / n : (n - 1) / n;
      CHECK(r.algbw_Bps == double(r.size_bytes) / r.time_s);
      CHECK(r.busbw_Bps == r.algbw_Bps * factor);
      busbw_sum += r.busbw_Bps;
      // The book's closed form for the whole array (tests/test_formulas.cpp checks these):
      // bandwidth-bound from 16 MiB on, where the simulated ring equals it.
      FormulaInputs in;
      in.kind = op.kind;
      in.axes = {{16, true}};
      in.bytes = bytes_for_nccl_size(op.kind, double(r.size_bytes), 16);
      in.link_bandwidth_Bps = chip.neighbor_bandwidth_Bps();
      in.hop_latency_s = chip.hop_latency_s;
      const FormulaResult book = book_collective_time(in);
      CHECK(r.analytic_s == Approx(book.time_s).epsilon(1e-12));
      if (r.size_bytes >= (16ull << 20)) {
        CHECK(book.regime == "bandwidth-bound");
        CHECK(r.time_s == Approx(book.time_s).epsilon(1e-6));
      }
    }
    CHECK(op.avg_busbw_Bps == Approx(busbw_sum / 9).epsilon(1e-15));
  }
  // The types: the array's dtype under nccl-tests' name, or nccl-tests' default float.
  CHECK(result.operations[0].type == "bfloat16");
  CHECK(result.operations[0].rows[0].count == (16u << 10) / 2 / 16);   // per rank
  CHECK(result.operations[1].type == "float");
  CHECK(result.operations[1].redop == "sum");
  CHECK(result.operations[1].rows[0].count == (16u << 10) / 4);        // the whole buffer
  CHECK(result.operations[2].type == "int8");
  CHECK(result.operations[2].rows[0].count == (16u << 10) / 16);       // to each peer
  // An AllGather's busbw at 1 GiB: (n-1)/n of W_bidi = 15/16 x 90 GB/s, the book's V/W_bidi.
  CHECK(result.operations[0].rows.back().busbw_Bps == Approx(15.0 / 16 * 2 * chip.neighbor_bandwidth_Bps()).epsilon(1e-6));

  // -d replaces every operation's type; sizes must then split into its elements.
  options.datatype = "double";
  options.sizes = flags("2K", "2K", "2");
  options.on_progress = nullptr;
  const PerfResult doubles = run_perf(scenario, options);
  CHECK(doubles.operations[0].type == "double");
  CHECK(doubles.operations[0].rows[0].count == 2048 / 8 / 16);
}

TEST_CASE("perf: sizes round down to whole elements on every rank, as nccl-tests' do", "[perf]") {
  // A bf16 AllGather over 16 ranks: a size must hold 16 x 2 B; nccl-tests' default sweep
  // (-b 8 -e 128M -f 2) starts below that.
  const Scenario scenario = load_scenario_text(kRing, "ring.yaml");
  PerfOptions options;
  options.sizes = flags("8", "256", "2");
  options.on_progress = nullptr;
  const PerfResult r = run_perf(scenario, options);
  const auto& op = r.operations.at(0);
  CHECK(op.unit_bytes == 32);
  CHECK(op.below_unit == 2);   // 8 and 16 B
  std::vector<uint64_t> sizes;
  for (const auto& row : op.rows) sizes.push_back(row.size_bytes);
  CHECK(sizes == std::vector<uint64_t>{32, 64, 128, 256});
  CHECK(perf_table(r).find("# sizes rounded down to a multiple of 32 B (whole bfloat16 elements on every rank), "
                           "2 size(s) below that left out") != std::string::npos);
  options.sizes = flags("1K", "8K", "", "100");
  const PerfResult stepped = run_perf(scenario, options);
  CHECK(stepped.operations.at(0).rows.at(1).size_bytes == 1120);   // 1124 rounded down to 32 B
}

TEST_CASE("perf: bad input is one located message", "[perf]") {
  const Scenario scenario = load_scenario_text(kRing, "ring.yaml");
  PerfOptions options;
  options.sizes = flags("1K", "8K", "2");
  options.datatype = "quaternion";
  CHECK(error_of([&] { run_perf(scenario, options); }).find("-d: value 'quaternion': expected a type") == 0);
  const Scenario training = load_scenario(source_path("scenarios/training_pipeline_bubble.yaml"));
  options.datatype = "";
  CHECK(error_of([&] { run_perf(training, options); }).find("key 'workload.kind': value 'training': ") !=
        std::string::npos);
}

TEST_CASE("podsim perf prints nccl-tests' table and writes the same rows to perf.csv", "[perf][cli]") {
  const auto input = write_file("ring.yaml", kRing);
  const auto out = fresh_dir("perf-out");
  const std::string args = "perf " + input.string() + " -b 64K -e 64M -f 8 -o " + out.string();
  const auto r = run_podsim(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());   // no progress off a terminal
  const std::string csv = read_file(out / "perf.csv");
  // Rows of the table: the lines that are not comments, as nccl-tests' parsers read them.
  std::vector<std::vector<std::string>> table;
  for (const auto& line : split(r.out, '\n')) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> fields;
    std::stringstream in(line);
    for (std::string f; in >> f;) fields.push_back(f);
    table.push_back(fields);
  }
  const auto csv_lines = split(csv, '\n');
  REQUIRE(csv_lines.size() == 1 + 3 * 4);
  REQUIRE(table.size() == 3 * 4);
  CHECK(csv_lines[0] == "operation,kind,axes,group_size,size_bytes,count,type,redop,root,time_s,algbw_Bps,busbw_Bps,analytic_s");
  for (size_t k = 0; k < table.size(); ++k) {
    const auto cells = split(csv_lines[k + 1], ',');
    const auto& row = table[k];
    INFO(csv_lines[k + 1]);
    REQUIRE(row.size() == 9);   // size count type redop root time algbw busbw #wrong
    CHECK(row[0] == cells[4]);
    CHECK(row[1] == cells[5]);
    CHECK(row[2] == cells[6]);
    CHECK(row[3] == cells[7]);
    CHECK(row[4] == "-1");
    auto two = [](const std::string& v, double scale) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.2f", std::stod(v) * scale);
      return std::string(buf);
    };
    CHECK(row[5] == two(cells[9], 1e6));
    CHECK(row[6] == two(cells[10], 1e-9));
    CHECK(row[7] == two(cells[11], 1e-9));
    CHECK(row[8] == "N/A");
  }
  CHECK(r.out.find("#       size         count      type   redop    root     time   algbw   busbw  #wrong\n") !=
        std::string::npos);
  CHECK(r.out.find("# Avg bus bandwidth    : ") != std::string::npos);
  CHECK(r.out.find("# minBytes 65536 maxBytes 67108864 step: 8(factor)") != std::string::npos);
  // Deterministic: the same flags give the same table and file.
  const auto again = run_podsim(args);
  CHECK(again.out == r.out);
  CHECK(read_file(out / "perf.csv") == csv);
}

TEST_CASE("podsim perf: bad flags exit 2 with one message and write nothing", "[perf][cli]") {
  const auto input = write_file("ring.yaml", kRing).string();
  struct Case {
    std::string args, expect;
  };
  for (const auto& c : std::vector<Case>{
           {input + " -b 1G -e 128M -f 2", "-b: value '1G': 1 GiB is more than -e 128M"},
           {input + " -b 1K -e 128M -f 1", "-f: value '1': expected a multiplication factor of 2 or more"},
           {input + " -b 1K -e 1M -f 2 -d nosuch", "-d: value 'nosuch'"},
           {input + " -b 1K -e 1M -f 2 --set topology.mesh.X=0", "key 'topology.mesh.X'"},
           {source_path("scenarios/training_pipeline_bubble.yaml") + " -b 1K -e 1M -f 2",
            "key 'workload.kind': value 'training': podsim perf sweeps the sizes of collectives"}}) {
    INFO(c.args);
    const auto out = fresh_dir("perf-bad");
    const auto r = run_podsim("perf " + c.args + " -o " + out.string());
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(c.expect) != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(r.out.empty());
    CHECK_FALSE(fs::exists(out / "perf.csv"));
  }
}
