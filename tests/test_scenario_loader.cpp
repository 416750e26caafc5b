// The scenario loader (sim/scenario/scenario_loader.cpp, schema in docs/scenario-schema.md): a full
// round trip, then one section per kind of bad input, each checking that the message names
// the file, the line, the key and the offending value (design.md, habits 3 and 9).
#include <catch2/catch.hpp>

#include <pthread.h>
#include <unistd.h>

#include <chrono>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <variant>

#include "sim/scenario/builtin_profiles.hpp"
#include "sim/scenario/calibration_files.hpp"
#include "sim/scenario/file_references.hpp"
#include "sim/scenario/model_loader.hpp"
#include "sim/scenario/scenario.hpp"
#include "scenario_errors.hpp"
#include "scratch.hpp"

using namespace podsim;
using namespace podsim_test;
namespace fs = std::filesystem;

namespace {

const std::string& kFile = kScenarioFile;

// A valid scenario the bad-input cases each break in one place.
const std::string kBase = R"(version: 1
name: v5e-8x4-allgather-y
hardware:
  preset: v5e
topology:
  mesh: {X: 8, Y: 4}
workload:
  kind: collectives
  operations:
    - name: ag_y
      kind: all_gather
      axes: [Y]
      array: "bf16[2048,8192]"
      sharding: "[E_Y, F]"
    - name: ar_x
      kind: all_reduce
      axes: [X]
      bytes: "34 MB"
expect:
  - field: operations.ag_y.time_s
    value: "560 us"
)";

// kBase with the first occurrence of `from` replaced by `to`.
std::string with(const std::string& from, const std::string& to, const std::string& base = kBase) {
  return replaced_in(base, from, to);
}

struct TempDir {
  fs::path path;
  TempDir() : path(podsim_test::made_dir("scenario-loader")) {}
};

}  // namespace

TEST_CASE("the base scenario loads", "[scenario]") {
  const Scenario s = load_scenario_text(kBase, "scenarios/base.yaml");
  REQUIRE(s.collectives().operations.size() == 2);
  CHECK(s.collectives().operations[0].collective.bytes == 2048.0 * 8192 * 2);   // gathered over its own sharded axis
  CHECK(s.collectives().operations[1].after == std::vector<std::string>{"ag_y"});
}

TEST_CASE("a full scenario round trips with defaults and units", "[scenario]") {
  const std::string text = R"(version: 1
description: "AllGather on a v4p cube"
hardware:
  preset: v4p
  overrides:
    ici_bandwidth: "45 GB/s"
    hop_latency: "2 us"
    hbm_bandwidth: "820 GB/s"
    hbm_capacity: "16 GiB"
    bf16_flops: "197 TFLOP/s"
    int8_ops: "394 TOP/s"
    ici_links_per_neighbor: 2
    host_shape: [2, 2, 1]
    chips_per_host: 4
    dcn_bandwidth_per_host: "200 Gbps"
    pcie_bandwidth: "16 GB/s"
topology:
  mesh: [{name: X, size: 4}, {name: Y, size: 4}, {name: Z, size: 4}]
  wraparound: {Y: false, Z: auto}
  slices: 2
  dcn_oversubscription: 2.5
simulation:
  hop_model: additive
  link_efficiency: 0.9
  launch_overhead: "5 us"
workload:
  kind: collectives
  operations:
    - kind: all_gather
      axes: [X]
      array: "bf16[1024,4096]"
      sharding: "[B_X, D_Y]"
    - name: ag_xy
      kind: all_gather
      axes: [X, Y]
      array: "bf16[1024,4096]"
      sharding: "[B_X, D_Y]"
      bidirectional: false
      repeat: 3
      after: []
    - name: ar_z
      kind: all_reduce
      axes: [Z]
      array: "bf16[1024,4096]"
      sharding: "[B_X, D_Y]{U_Z}"
      after: [op0, ag_xy]
    - name: dcn_ar
      kind: all_reduce
      dcn: true
      dcn_algorithm: flat_ring
      bytes: "1 GiB"
expect:
  - field: operations.op0.time_s
    value: "23 us"
    rel_tolerance: 0.05
    rel_tolerance_above: 0.3
    tolerance_reason: "the book rounds; the multi-axis schedule adds up to 1/X"
    source: "sharding.md:L590-L600"
  - field: total_time_s
    value: "1 ms"
  - field: operations.ag_xy.algbw_Bps
    value: "45 GB/s"
)";
  const Scenario s = load_scenario_text(text, "scenarios/v4p-cube.yaml");
  CHECK(s.path == "scenarios/v4p-cube.yaml");
  CHECK(s.version == 1);
  CHECK(s.name == "v4p-cube");   // the file stem when no name is given
  CHECK(s.description == "AllGather on a v4p cube");

  const ChipSpec& chip = s.topology.chip;
  CHECK(chip.name == "v4p");
  CHECK(chip.ici_bandwidth_Bps == Approx(4.5e10));
  CHECK(chip.hop_latency_s == Approx(2e-6));
  CHECK(chip.hbm_bandwidth_Bps == Approx(8.2e11));
  CHECK(chip.hbm_bytes == 16.0 * (1ULL << 30));
  CHECK(chip.bf16_flops_per_s == Approx(1.97e14));
  CHECK(chip.int8_ops_per_s == Approx(3.94e14));
  CHECK(chip.ici_links_per_neighbor == 2);
  CHECK(chip.host_shape == std::vector<int>{2, 2, 1});
  CHECK(chip.chips_per_host == 4);
  CHECK(chip.dcn_bandwidth_per_host_Bps == Approx(2.5e10));
  CHECK(chip.pcie_bandwidth_Bps == Approx(1.6e10));

  REQUIRE(s.topology.axes.size() == 3);
  CHECK(s.topology.axes[0].name == "X");
  CHECK(s.topology.axes[2].size == 4);
  CHECK(s.topology.axes[0].wraparound);    // unspecified: v4p's rule, a full 4x4x4 cube wraps
  CHECK_FALSE(s.topology.axes[1].wraparound);
  CHECK(s.topology.axes[2].wraparound);    // auto
  CHECK(s.topology.slices == 2);
  CHECK(s.topology.dcn_oversubscription == 2.5);

  CHECK(s.hop_model == HopModel::Additive);
  CHECK(s.link_efficiency == 0.9);
  CHECK(s.launch_overhead_s == Approx(5e-6));

  REQUIRE(s.collectives().operations.size() == 4);
  const double array_bytes = 1024.0 * 4096 * 2;
  const OperationSpec& ag_x = s.collectives().operations[0];
  CHECK(ag_x.name == "op0");
  CHECK(ag_x.collective.kind == CollectiveKind::AllGather);
  CHECK(ag_x.collective.axes == std::vector<int>{0});
  CHECK(ag_x.collective.bytes == array_bytes / 4);   // Y still shards the gathered array
  CHECK(ag_x.collective.bidirectional);
  CHECK_FALSE(ag_x.collective.over_dcn);
  CHECK(ag_x.array == "bf16[1024,4096]");
  CHECK(ag_x.sharding == "[B_X, D_Y]");
  CHECK(ag_x.repeat == 1);
  CHECK(ag_x.after.empty());
  CHECK(ag_x.where.line == line_of(text, "- kind: all_gather"));

  const OperationSpec& ag_xy = s.collectives().operations[1];
  CHECK(ag_xy.collective.axes == std::vector<int>{0, 1});
  CHECK(ag_xy.collective.bytes == array_bytes);
  CHECK_FALSE(ag_xy.collective.bidirectional);
  CHECK(ag_xy.repeat == 3);
  CHECK(ag_xy.after.empty());

  const OperationSpec& ar_z = s.collectives().operations[2];
  CHECK(ar_z.collective.kind == CollectiveKind::AllReduce);
  CHECK(ar_z.collective.bytes == array_bytes / 16);   // the book's 4BD/(X*Y*W) case
  CHECK(ar_z.after == std::vector<std::string>{"op0", "ag_xy"});

  const OperationSpec& dcn = s.collectives().operations[3];
  CHECK(dcn.collective.axes.empty());
  CHECK(dcn.collective.over_dcn);
  CHECK(dcn.collective.dcn_algorithm == DcnAlgorithm::FlatRing);
  CHECK(dcn.collective.bytes == double(1ULL << 30));
  CHECK(dcn.array.empty());
  CHECK(dcn.after == std::vector<std::string>{"ar_z"});   // default: the previous operation

  REQUIRE(s.expectations.size() == 3);
  CHECK(s.expectations[0].field == "operations.op0.time_s");
  CHECK(s.expectations[0].value == Approx(23e-6));
  CHECK(s.expectations[0].rel_tolerance == 0.05);
  CHECK(s.expectations[0].rel_tolerance_above == 0.3);
  CHECK(s.expectations[0].tolerance_reason == "the book rounds; the multi-axis schedule adds up to 1/X");
  CHECK(s.expectations[0].source == "sharding.md:L590-L600");
  // The band [value (1 - below), value (1 + above)].
  CHECK(s.expectations[0].accepts(23e-6 * 0.951));
  CHECK_FALSE(s.expectations[0].accepts(23e-6 * 0.949));
  CHECK(s.expectations[0].accepts(23e-6 * 1.299));
  CHECK_FALSE(s.expectations[0].accepts(23e-6 * 1.301));
  CHECK(s.expectations[1].rel_tolerance == 0.01);   // default
  CHECK(s.expectations[1].rel_tolerance_above == 0.01);   // the same as below unless given
  CHECK(s.expectations[1].value == Approx(1e-3));
  CHECK(s.expectations[2].value == Approx(4.5e10));
}

TEST_CASE("defaults: simulation block, wraparound rule, bidirectional", "[scenario]") {
  // The ideal machine's simulation defaults; without a profile, v5e's built-in profile sets them.
  const std::string base = with("{X: 8, Y: 4}", "{X: 8, Y: 16}");
  const Scenario real = load_scenario_text(base, "x.yaml");
  CHECK(real.profile == "v5e");
  CHECK(real.hop_model == HopModel::Additive);
  CHECK(real.link_efficiency < 1.0);
  CHECK(real.launch_overhead_s > 0.0);
  const Scenario s = load_scenario_text(with("  preset: v5e\n", "  preset: v5e\n  profile: ideal\n", base), "x.yaml");
  CHECK(s.name == "v5e-8x4-allgather-y");
  CHECK(s.hop_model == HopModel::Floor);
  CHECK(s.link_efficiency == 1.0);
  CHECK(s.launch_overhead_s == 0.0);
  CHECK(s.topology.slices == 1);
  CHECK(s.topology.dcn_oversubscription == 1.0);
  CHECK_FALSE(s.topology.axes[0].wraparound);   // v5e wraps only an axis of 16
  CHECK(s.topology.axes[1].wraparound);
  CHECK(s.collectives().operations[0].collective.bidirectional);
  CHECK(s.collectives().operations[0].after.empty());
  CHECK(s.expectations[0].rel_tolerance == 0.01);

  const Scenario all = load_scenario_text(with("{X: 8, Y: 4}", "{X: 8, Y: 4}\n  wraparound: true"), "x.yaml");
  CHECK(all.topology.axes[0].wraparound);
  CHECK(all.topology.axes[1].wraparound);

  const Scenario host = load_scenario_text(with("preset: v5e", "preset: v5e\n  overrides: {host_shape: [2, 2]}"), "x.yaml");
  CHECK(host.topology.chip.chips_per_host == 4);
}

TEST_CASE("bad scenarios name file, line, key and value", "[scenario]") {
  SECTION("malformed YAML") {
    const std::string text = with("{X: 8, Y: 4}", "{X: 8, Y: 4");
    const InputError error = error_from(text);
    CHECK(error.where().file == kFile);
    CHECK(error.where().line >= line_of(text, "{X: 8"));
    CHECK(contains(error.what(), kFile + ":" + std::to_string(error.where().line) + ":"));
    CHECK(contains(error.what(), "malformed YAML"));
  }
  SECTION("a key given twice") {
    require_error(with("name: v5e", "name: a\nname: v5e"), "name", "v5e-8x4-allgather-y", "name: v5e");
  }
  SECTION("unknown top-level key") {
    require_error(with("workload:", "topolgy: 3\nworkload:"), "topolgy", "3", "topolgy");
  }
  SECTION("unknown nested key") {
    require_error(with("preset: v5e", "preset: v5e\n  overrides:\n    ici_bandwith: \"45 GB/s\""),
                  "hardware.overrides.ici_bandwith", "45 GB/s", "ici_bandwith");
  }
  SECTION("unknown operation key") {
    require_error(with("axes: [Y]", "axis: [Y]"), "workload.operations[0].axis", "[Y]", "axis:");
  }
  SECTION("wrong type: a mesh size that is not a number") {
    require_error(with("{X: 8, Y: 4}", "{X: eight, Y: 4}"), "topology.mesh.X", "eight", "{X: eight");
  }
  SECTION("wrong type: a scalar where a mapping belongs") {
    require_error(with("hardware:\n  preset: v5e", "hardware: v5e"), "hardware", "v5e", "hardware:");
  }
  SECTION("wrong type: a boolean") {
    require_error(with("axes: [Y]", "axes: [Y]\n      bidirectional: maybe"),
                  "workload.operations[0].bidirectional", "maybe", "maybe");
  }
  SECTION("wrong type: repeat") {
    require_error(with("axes: [Y]", "axes: [Y]\n      repeat: 2.5"), "workload.operations[0].repeat", "2.5",
                  "repeat");
  }
  SECTION("wrong type: axes as a mapping") {
    require_error(with("axes: [Y]", "axes: {Y: 1}"), "workload.operations[0].axes", "{Y: 1}", "axes:");
  }
  SECTION("missing required top-level key") {
    const std::string text = with("hardware:\n  preset: v5e\n", "");
    require_error(text, "hardware", "", "version");
  }
  SECTION("missing required preset") {
    require_error(with("  preset: v5e", "  overrides: {}"), "hardware.preset", "", "overrides");
  }
  SECTION("missing operation kind") {
    require_error(with("      kind: all_gather\n", ""), "workload.operations[0].kind", "", "name: ag_y");
  }
  SECTION("version other than 1") {
    require_error(with("version: 1", "version: 2"), "version", "2", "version");
  }
  SECTION("zero mesh size") {
    require_error(with("{X: 8, Y: 4}", "{X: 8, Y: 0}"), "topology.mesh.Y", "0", "mesh");
  }
  SECTION("negative mesh size") {
    require_error(with("{X: 8, Y: 4}", "{X: -8, Y: 4}"), "topology.mesh.X", "-8", "mesh");
  }
  SECTION("zero bytes") {
    require_error(with("\"34 MB\"", "\"0 MB\""), "workload.operations[1].bytes", "0 MB", "0 MB");
  }
  SECTION("negative bytes") {
    require_error(with("\"34 MB\"", "\"-34 MB\""), "workload.operations[1].bytes", "-34 MB", "-34 MB");
  }
  SECTION("an array dimension of zero") {
    require_error(with("bf16[2048,8192]", "bf16[0,8192]"), "workload.operations[0].array", "bf16[0,8192]",
                  "bf16[0");
  }
  SECTION("bytes overflowing 64 bits") {
    require_error(with("\"34 MB\"", "\"16384 PiB\""), "workload.operations[1].bytes", "16384 PiB", "PiB");
  }
  SECTION("array bytes overflowing 64 bits") {
    const std::string text = with("bf16[2048,8192]", "bf16[4294967296,4294967296]");
    require_error(with("\"[E_Y, F]\"", "\"[E_Y, F]\"", text), "workload.operations[0].array",
                  "bf16[4294967296,4294967296]", "4294967296");
  }
  SECTION("an axis the mesh does not have") {
    require_error(with("axes: [Y]", "axes: [Z]"), "workload.operations[0].axes[0]", "Z", "axes: [Z]");
  }
  SECTION("an axis listed twice") {
    require_error(with("axes: [Y]", "axes: [Y, Y]"), "workload.operations[0].axes[1]", "Y", "axes: [Y, Y]");
  }
  SECTION("a sharding using an axis twice") {
    require_error(with("[E_Y, F]", "[E_Y, F_Y]"), "workload.operations[0].sharding", "[E_Y, F_Y]", "F_Y");
  }
  SECTION("a sharding over an axis the mesh does not have") {
    const InputError error = error_from(with("[E_Y, F]", "[E_Y, F_Z]"));
    CHECK(error.key() == "workload.operations[0].sharding");
    CHECK(contains(error.what(), "axis 'Z' is not a mesh axis"));
  }
  SECTION("a sharding of the wrong rank") {
    require_error(with("[E_Y, F]", "[E_Y]"), "workload.operations[0].sharding", "[E_Y]", "[E_Y]");
  }
  SECTION("all_gather over an axis the array is not sharded over") {
    require_error(with("[E_Y, F]", "[E_X, F]"), "workload.operations[0].sharding", "[E_X, F]", "[E_X, F]");
  }
  SECTION("all_reduce over an axis that already shards the array") {
    const std::string text = with("bytes: \"34 MB\"", "array: \"f32[64,64]\"\n      sharding: \"[A_X, B]\"");
    require_error(text, "workload.operations[1].sharding", "[A_X, B]", "[A_X, B]");
  }
  SECTION("a sharded dimension that does not split evenly") {
    require_error(with("bf16[2048,8192]", "bf16[2046,8192]"), "workload.operations[0].sharding", "[E_Y, F]",
                  "[E_Y, F]");
  }
  SECTION("both bytes and array") {
    require_error(with("bytes: \"34 MB\"", "bytes: \"34 MB\"\n      array: \"f32[4]\""),
                  "workload.operations[1].array", "f32[4]", "f32[4]");
  }
  SECTION("neither bytes nor array") {
    const std::string text = with("      bytes: \"34 MB\"\n", "");
    require_error(text, "workload.operations[1]", "{name: ar_x, kind: all_reduce, axes: [X]}", "name: ar_x");
  }
  SECTION("an absurd axis size") {
    require_error(with("{X: 8, Y: 4}", "{X: 8, Y: 8192}"), "topology.mesh.Y", "8192", "mesh");
  }
  SECTION("an absurd chip count") {
    require_error(with("{X: 8, Y: 4}", "{X: 4096, Y: 4096}"), "topology.mesh", "{X: 4096, Y: 4096}", "mesh");
  }
  SECTION("an absurd chip count through slices") {
    require_error(with("{X: 8, Y: 4}", "{X: 64, Y: 64}\n  slices: 1000"), "topology.slices", "1000", "slices");
  }
  SECTION("more axes than the chip's torus has") {
    require_error(with("{X: 8, Y: 4}", "{X: 8, Y: 4, Z: 2}"), "topology.mesh", "{X: 8, Y: 4, Z: 2}", "mesh");
  }
  SECTION("a mesh axis name used twice in the list form") {
    require_error(with("{X: 8, Y: 4}", "[{name: X, size: 8}, {name: X, size: 4}]"), "topology.mesh[1].name", "X",
                  "mesh");
  }
  SECTION("wraparound for an axis the mesh does not have") {
    require_error(with("{X: 8, Y: 4}", "{X: 8, Y: 4}\n  wraparound: {W: true}"), "topology.wraparound.W", "true",
                  "wraparound");
  }
  SECTION("slices below 1") {
    require_error(with("{X: 8, Y: 4}", "{X: 8, Y: 4}\n  slices: 0"), "topology.slices", "0", "slices");
  }
  SECTION("dcn with a single slice") {
    require_error(with("axes: [X]", "axes: [X]\n      dcn: true"), "workload.operations[1].dcn", "true", "dcn:");
  }
  SECTION("an unknown preset lists the presets") {
    const std::string text = with("preset: v5e", "preset: v9");
    require_error(text, "hardware.preset", "v9", "preset");
    CHECK(contains(error_from(text).what(), "v5e"));
    CHECK(contains(error_from(text).what(), "v4p"));
  }
  SECTION("an override without units") {
    require_error(with("preset: v5e", "preset: v5e\n  overrides:\n    ici_bandwidth: 4.5e10"),
                  "hardware.overrides.ici_bandwidth", "4.5e10", "4.5e10");
  }
  SECTION("chips_per_host inconsistent with the host shape") {
    require_error(with("preset: v5e", "preset: v5e\n  overrides: {chips_per_host: 4}"),
                  "hardware.overrides.chips_per_host", "4", "chips_per_host");
  }
  SECTION("an unknown workload kind") {
    const std::string text = with("kind: collectives", "kind: servng");
    require_error(text, "workload.kind", "servng", "kind: servng");
    CHECK(contains(error_from(text).what(), "collectives"));
    CHECK(contains(error_from(text).what(), "training"));
    CHECK(contains(error_from(text).what(), "inference"));
    CHECK(contains(error_from(text).what(), "serving"));
  }
  SECTION("an unknown operation kind") {
    require_error(with("kind: all_gather", "kind: all_gather_x"), "workload.operations[0].kind", "all_gather_x",
                  "all_gather_x");
  }
  SECTION("no operations") {
    const std::string text = with("operations:", "operations: []", kBase.substr(0, kBase.find("    - name")));
    require_error(text, "workload.operations", "[]", "operations:");
  }
  SECTION("unknown after name") {
    require_error(with("bytes: \"34 MB\"", "bytes: \"34 MB\"\n      after: [ag_x]"),
                  "workload.operations[1].after[0]", "ag_x", "after");
  }
  SECTION("operations waiting on each other in a cycle") {
    const std::string text = with("axes: [Y]", "axes: [Y]\n      after: [ar_x]");
    require_error(text, "workload.operations[0].after", "[ar_x]", "after");
    CHECK(contains(error_from(text).what(), "cycle"));
  }
  SECTION("an operation waiting on itself") {
    require_error(with("axes: [Y]", "axes: [Y]\n      after: [ag_y]"), "workload.operations[0].after", "[ag_y]",
                  "after");
  }
  SECTION("duplicate operation names") {
    require_error(with("name: ar_x", "name: ag_y"), "workload.operations[1].name", "ag_y", "name: ag_y\n      kind: all_r");
  }
  SECTION("repeat below 1") {
    require_error(with("axes: [X]", "axes: [X]\n      repeat: 0"), "workload.operations[1].repeat", "0", "repeat");
  }
  SECTION("link_efficiency of zero") {
    require_error(with("workload:", "simulation:\n  link_efficiency: 0\nworkload:"), "simulation.link_efficiency",
                  "0", "link_efficiency");
  }
  SECTION("link_efficiency above one") {
    require_error(with("workload:", "simulation:\n  link_efficiency: 1.5\nworkload:"),
                  "simulation.link_efficiency", "1.5", "link_efficiency");
  }
  SECTION("an unknown hop model") {
    require_error(with("workload:", "simulation:\n  hop_model: quadratic\nworkload:"), "simulation.hop_model",
                  "quadratic", "hop_model");
  }
  SECTION("an expectation about an unknown operation") {
    require_error(with("operations.ag_y.time_s", "operations.ag_z.time_s"), "expect[0].field",
                  "operations.ag_z.time_s", "ag_z");
  }
  SECTION("a tolerance over 1% without its reason") {
    require_error(with("    value: \"560 us\"\n", "    value: \"560 us\"\n    rel_tolerance: 0.03\n"),
                  "expect[0].rel_tolerance", "0.03", "rel_tolerance: 0.03");
    require_error(with("    value: \"560 us\"\n", "    value: \"560 us\"\n    rel_tolerance_above: 0.2\n"),
                  "expect[0].rel_tolerance_above", "0.2", "rel_tolerance_above: 0.2");
    CHECK_NOTHROW(load_scenario_text(
        with("    value: \"560 us\"\n",
             "    value: \"560 us\"\n    rel_tolerance_above: 0.2\n    tolerance_reason: \"measured 680 us\"\n"),
        kFile));
  }
  SECTION("an expected time without units") {
    require_error(with("\"560 us\"", "560"), "expect[0].value", "560", "value: 560");
  }
  SECTION("an empty file") {
    for (const std::string& text : {std::string(""), std::string("# nothing here\n")}) {
      const InputError error = error_from(text);
      CHECK(error.where().file == kFile);
      CHECK(contains(error.what(), kFile));
      CHECK(contains(error.what(), "empty"));
    }
  }
  SECTION("a top level that is not a mapping") {
    require_error("- version: 1\n", "", "[{version: 1}]", "- version");
  }
  SECTION("two YAML documents") {
    const std::string text = kBase + "---\nversion: 1\n";
    const InputError error = error_from(text);
    CHECK(error.where().line == line_of(text, "---\n"));
    CHECK(contains(error.what(), kFile + ":" + std::to_string(error.where().line) + ":"));
    CHECK(contains(error.what(), "second YAML document"));
  }
  SECTION("a stray ',' does not hang (yaml-cpp 0.7's LoadAll loops on it)") {
    for (const std::string& text : {", " + kBase, kBase + ",\n", std::string("- a\n,\n"), std::string(",")}) {
      const InputError error = error_from(text);
      CHECK(error.where().line >= 1);
      CHECK(contains(error.what(), kFile + ":" + std::to_string(error.where().line) + ":"));
    }
  }
  SECTION("an alias that contains itself does not crash") {
    const std::string text = with("axes: [Y]", "axes: &a [*a]");
    const InputError error = error_from(text);
    CHECK(error.key() == "workload.operations[0].axes[0]");
  }
}

namespace {

// A valid training scenario the bad-input cases each break in one place.
const std::string kTraining = R"(version: 1
name: llama2-13b-fsdp-tp
hardware:
  preset: v5p
topology:
  mesh: {X: 4, Y: 4, Z: 4}
workload:
  kind: training
  model: llama2-13b
  batch_tokens: 3145728
  sequence_length: 4096
  parallelism:
    data: [X, Y]
    fsdp: true
    tensor: [Z]
expect:
  - field: step_time_s
    value: "1.5 s"
)";

std::string training_with(const std::string& from, const std::string& to) { return with(from, to, kTraining); }

}  // namespace

TEST_CASE("a scenario holds one workload: its kind's accessor, and another kind's is a logic_error naming both",
          "[scenario]") {
  const Scenario training = load_scenario_text(kTraining, "scenarios/train.yaml");
  const Scenario collectives = load_scenario_text(kBase, kFile);
  CHECK(collectives.kind() == WorkloadKind::Collectives);
  CHECK(collectives.collectives().operations.size() == 2);
  CHECK(training.training().model.name == "llama2-13b");
  CHECK_THROWS_WITH(training.collectives(), "the scenario's workload is training, not collectives");
  CHECK_THROWS_WITH(collectives.training(), "the scenario's workload is collectives, not training");
  CHECK_THROWS_AS(collectives.inference(), std::logic_error);
  CHECK_THROWS_AS(collectives.serving(), std::logic_error);
  // The printed names are the ones workload.kind is written with.
  CHECK(std::string(workload_kind_name(WorkloadKind::Collectives)) == "collectives");
  CHECK(std::string(workload_kind_name(WorkloadKind::Training)) == "training");
  CHECK(std::string(workload_kind_name(WorkloadKind::Inference)) == "inference");
  CHECK(std::string(workload_kind_name(WorkloadKind::Serving)) == "serving");
  // A default scenario (tests and `podsim bench` build one by hand) is a collectives one.
  CHECK(Scenario{}.kind() == WorkloadKind::Collectives);
}

TEST_CASE("a training scenario round trips: preset, axes, defaults", "[scenario]") {
  const Scenario s = load_scenario_text(kTraining, "scenarios/train.yaml");
  CHECK(s.kind() == WorkloadKind::Training);
  CHECK(std::holds_alternative<TrainingWorkload>(s.workload));
  const TransformerSpec& model = s.training().model;
  const TransformerSpec& preset = *find_model_preset("llama2-13b");
  CHECK(model.name == "llama2-13b");
  CHECK(model.layers == preset.layers);
  CHECK(model.d_model == preset.d_model);
  CHECK(model.d_ff == preset.d_ff);
  CHECK(model.heads == preset.heads);
  CHECK(model.kv_heads == preset.kv_heads);
  CHECK(model.vocab == preset.vocab);
  CHECK(model.max_sequence_length == 4096);
  const TrainingPlan& plan = s.training().plan;
  CHECK(plan.data_axes == std::vector<int>{0, 1});
  CHECK(plan.tensor_axes == std::vector<int>{2});
  CHECK(plan.fsdp);
  CHECK(plan.global_batch_tokens == 3145728.0);
  CHECK(plan.sequence_length == 4096);
  // Defaults.
  CHECK(plan.microbatches == 1);
  CHECK(plan.checkpointing == Checkpointing::Book);
  CHECK(plan.matmul_efficiency == 1.0);
  CHECK(plan.attention_flops);
  CHECK(s.training().strict_memory);   // a plan that does not fit HBM is refused unless asked (issue 42)
  REQUIRE(s.expectations.size() == 1);
  CHECK(s.expectations[0].field == "step_time_s");
  CHECK(s.expectations[0].value == Approx(1.5));

  // No parallelism block at all: pure single-shard training, no axes.
  const std::string bare = with("  parallelism:\n    data: [X, Y]\n    fsdp: true\n    tensor: [Z]\n", "", kTraining);
  const Scenario b = load_scenario_text(bare, "x.yaml");
  CHECK(b.training().plan.data_axes.empty());
  CHECK(b.training().plan.tensor_axes.empty());
  CHECK_FALSE(b.training().plan.fsdp);
}

TEST_CASE("a training scenario round trips: overrides, every key, summary expectations", "[scenario]") {
  const std::string text = R"(version: 1
hardware:
  preset: v5p
topology:
  mesh: {X: 4, Y: 4, Z: 2}
workload:
  kind: training
  model: {preset: llama2-13b, layers: 2, d_ff: 8192, gated_mlp: false, tied_embeddings: true,
          max_sequence_length: 8192}
  batch_tokens: 3.2768e5
  sequence_length: 8192
  microbatches: 2
  parallelism:
    data: Y
    tensor: [Z, X]
  checkpointing: block
  matmul_efficiency: 0.4
  attention_flops: false
  strict_memory: false
expect:
  - field: mfu
    value: 0.45
  - field: memory_per_chip_bytes
    value: "12 GiB"
  - field: fits_hbm
    value: false
  - field: fits_hbm
    value: true
  - field: exposed_comm_by_axis_s.Z
    value: "3 ms"
  - field: per_layer.L0.attn.forward_s
    value: "2 ms"
  - field: tokens_per_s_per_chip
    value: 1200
  - field: total_time_s
    value: "2 s"
)";
  const Scenario s = load_scenario_text(text, "x.yaml");
  const TransformerSpec& model = s.training().model;
  CHECK(model.name == "llama2-13b-modified");
  CHECK(model.layers == 2);
  CHECK(model.d_model == 5120);   // from the preset
  CHECK(model.d_ff == 8192);
  CHECK_FALSE(model.gated_mlp);
  CHECK(model.tied_embeddings);
  CHECK(model.max_sequence_length == 8192);
  const TrainingPlan& plan = s.training().plan;
  CHECK(plan.data_axes == std::vector<int>{1});
  CHECK(plan.tensor_axes == std::vector<int>{2, 0});
  CHECK_FALSE(plan.fsdp);
  CHECK(plan.global_batch_tokens == 327680.0);
  CHECK(plan.sequence_length == 8192);
  CHECK(plan.microbatches == 2);
  CHECK(plan.checkpointing == Checkpointing::Block);
  CHECK(plan.matmul_efficiency == 0.4);
  CHECK_FALSE(plan.attention_flops);
  CHECK_FALSE(s.training().strict_memory);
  REQUIRE(s.expectations.size() == 8);
  CHECK(s.expectations[0].value == 0.45);
  CHECK(s.expectations[1].value == 12.0 * (1ULL << 30));
  CHECK(s.expectations[2].value == 0.0);
  CHECK(s.expectations[3].value == 1.0);
  CHECK(s.expectations[4].field == "exposed_comm_by_axis_s.Z");
  CHECK(s.expectations[4].value == Approx(3e-3));
  CHECK(s.expectations[5].value == Approx(2e-3));
  CHECK(s.expectations[6].value == 1200.0);
  CHECK(s.expectations[7].value == Approx(2.0));

  // A custom shape without a preset.
  const std::string custom = with(
      "model: {preset: llama2-13b, layers: 2, d_ff: 8192, gated_mlp: false, tied_embeddings: true,\n"
      "          max_sequence_length: 8192}",
      "model: {layers: 4, d_model: 1024, d_ff: 4096, heads: 16, kv_heads: 4, head_dim: 64, vocab: 0}", text);
  const Scenario c = load_scenario_text(custom, "x.yaml");
  CHECK(c.training().model.name == "custom");
  CHECK(c.training().model.layers == 4);
  CHECK(c.training().model.kv_heads == 4);
  CHECK(c.training().model.head_dim == 64);
  CHECK(c.training().model.vocab == 0);
  CHECK(c.training().model.gated_mlp);             // TransformerSpec default
  CHECK(c.training().model.max_sequence_length == 8192);   // no published limit: the sequence length
  const Scenario named = load_scenario_text(with("vocab: 0}", "vocab: 0, name: tiny}", custom), "x.yaml");
  CHECK(named.training().model.name == "tiny");
}

TEST_CASE("bad training scenarios name file, line, key and value", "[scenario]") {
  SECTION("an unknown model preset lists the presets") {
    const std::string text = training_with("model: llama2-13b", "model: llama9-1t");
    require_error(text, "workload.model", "llama9-1t", "llama9-1t");
    CHECK(contains(error_from(text).what(), "llama2-7b"));
    CHECK(contains(error_from(text).what(), "llama3-405b"));
  }
  SECTION("an unknown preset inside a model mapping") {
    require_error(training_with("model: llama2-13b", "model: {preset: gpt-5}"), "workload.model.preset", "gpt-5",
                  "gpt-5");
  }
  SECTION("an unknown model key") {
    require_error(training_with("model: llama2-13b", "model:\n    preset: llama2-13b\n    depth: 2"),
                  "workload.model.depth", "2", "depth");
  }
  SECTION("a custom model missing a dimension") {
    const std::string text = training_with(
        "model: llama2-13b", "model: {layers: 4, d_model: 1024, d_ff: 4096, heads: 16, kv_heads: 4, vocab: 100}");
    require_error(text, "workload.model", "{layers: 4, d_model: 1024, d_ff: 4096, heads: 16, kv_heads: 4, vocab: 100}",
                  "model:");
    CHECK(contains(error_from(text).what(), "head_dim"));
  }
  SECTION("a model override validate_transformer_spec rejects") {
    const std::string text = training_with("model: llama2-13b", "model:\n    preset: llama2-13b\n    kv_heads: 3");
    require_error(text, "workload.model.kv_heads", "3", "kv_heads");
    CHECK(contains(error_from(text).what(), "multiple of kv_heads"));
  }
  SECTION("a non-positive model dimension") {
    require_error(training_with("model: llama2-13b", "model: {preset: llama2-13b, layers: 0}"),
                  "workload.model.layers", "0", "model:");
  }
  SECTION("a data axis not in the mesh") {
    const std::string text = training_with("data: [X, Y]", "data: [X, W]");
    require_error(text, "workload.parallelism.data[1]", "W", "data:");
    CHECK(contains(error_from(text).what(), "X, Y, Z"));
  }
  SECTION("a tensor axis not in the mesh") {
    require_error(training_with("tensor: [Z]", "tensor: [Q]"), "workload.parallelism.tensor[0]", "Q", "tensor:");
  }
  SECTION("an axis in both data and tensor") {
    const std::string text = training_with("tensor: [Z]", "tensor: [Z, Y]");
    require_error(text, "workload.parallelism.tensor[1]", "Y", "tensor:");
    CHECK(contains(error_from(text).what(), "data"));
  }
  SECTION("an axis twice in one list") {
    require_error(training_with("data: [X, Y]", "data: [X, X]"), "workload.parallelism.data[1]", "X", "data:");
  }
  SECTION("an unknown parallelism key") {
    require_error(training_with("fsdp: true", "fsdp: true\n    pipeline: [X]"), "workload.parallelism.pipeline",
                  "[X]", "pipeline");
  }
  SECTION("batch_tokens not a whole number of sequences") {
    const std::string text = training_with("batch_tokens: 3145728", "batch_tokens: 3145729");
    require_error(text, "workload.batch_tokens", "3145729", "batch_tokens");
    CHECK(contains(error_from(text).what(), "4096"));
  }
  SECTION("batch_tokens not a whole number") {
    require_error(training_with("batch_tokens: 3145728", "batch_tokens: 3145728.5"), "workload.batch_tokens",
                  "3145728.5", "batch_tokens");
  }
  SECTION("batch_tokens with an SI suffix") {
    require_error(training_with("batch_tokens: 3145728", "batch_tokens: 3M"), "workload.batch_tokens", "3M",
                  "batch_tokens");
  }
  SECTION("batch_tokens of zero") {
    require_error(training_with("batch_tokens: 3145728", "batch_tokens: 0"), "workload.batch_tokens", "0",
                  "batch_tokens");
  }
  SECTION("sequences that do not divide over the data shards") {
    // 4096 * 40 tokens = 40 sequences over X=4 x Y=4 = 16 shards.
    const std::string text = training_with("batch_tokens: 3145728", "batch_tokens: 163840");
    require_error(text, "workload.batch_tokens", "163840", "batch_tokens");
    const std::string message = error_from(text).what();
    CHECK(contains(message, "40 sequences"));
    CHECK(contains(message, "16 data shards (X=4 x Y=4)"));
    CHECK(contains(message, "x 1 microbatches = 16"));
  }
  SECTION("sequences that do not divide over data shards x microbatches") {
    // 768 sequences divide over 16 shards (48 each) but not over 16 x 5 = 80.
    const std::string text = training_with("sequence_length: 4096", "sequence_length: 4096\n  microbatches: 5");
    require_error(text, "workload.microbatches", "5", "microbatches");
    const std::string message = error_from(text).what();
    CHECK(contains(message, "768 sequences"));
    CHECK(contains(message, "5 microbatches = 80"));
  }
  SECTION("sequence_length above the model's maximum") {
    const std::string text = training_with("sequence_length: 4096", "sequence_length: 32768");
    require_error(text, "workload.sequence_length", "32768", "sequence_length");
    CHECK(contains(error_from(text).what(), "max_sequence_length of 4096"));
  }
  SECTION("sequence_length of zero") {
    require_error(training_with("sequence_length: 4096", "sequence_length: 0"), "workload.sequence_length", "0",
                  "sequence_length");
  }
  SECTION("microbatches below 1") {
    require_error(training_with("sequence_length: 4096", "sequence_length: 4096\n  microbatches: 0"),
                  "workload.microbatches", "0", "microbatches");
  }
  SECTION("matmul_efficiency of zero") {
    require_error(training_with("sequence_length: 4096", "sequence_length: 4096\n  matmul_efficiency: 0"),
                  "workload.matmul_efficiency", "0", "matmul_efficiency");
  }
  SECTION("matmul_efficiency above one") {
    require_error(training_with("sequence_length: 4096", "sequence_length: 4096\n  matmul_efficiency: 1.2"),
                  "workload.matmul_efficiency", "1.2", "matmul_efficiency");
  }
  SECTION("an unknown checkpointing policy") {
    const std::string text = training_with("sequence_length: 4096", "sequence_length: 4096\n  checkpointing: full");
    require_error(text, "workload.checkpointing", "full", "checkpointing");
    CHECK(contains(error_from(text).what(), "none, block, book"));
  }
  SECTION("strict_memory not a boolean") {
    require_error(training_with("sequence_length: 4096", "sequence_length: 4096\n  strict_memory: yes"),
                  "workload.strict_memory", "yes", "strict_memory");
  }
  SECTION("operations in a training workload") {
    const std::string text = training_with("sequence_length: 4096", "sequence_length: 4096\n  operations: []");
    require_error(text, "workload.operations", "[]", "operations");
    CHECK(contains(error_from(text).what(), "collectives"));
  }
  SECTION("training keys in a collectives workload") {
    const std::string text = with("kind: collectives", "kind: collectives\n  model: llama2-13b");
    require_error(text, "workload.model", "llama2-13b", "model:");
    CHECK(contains(error_from(text).what(), "training"));
  }
  SECTION("a missing batch") {
    require_error(training_with("  batch_tokens: 3145728\n", ""), "workload.batch_tokens", "", "kind: training");
  }
  SECTION("an unknown training expectation field") {
    const std::string text = training_with("field: step_time_s", "field: step_s");
    require_error(text, "expect[0].field", "step_s", "step_s");
    CHECK(contains(error_from(text).what(), "per_layer."));
  }
  SECTION("an operations expectation in a training scenario") {
    require_error(training_with("field: step_time_s", "field: operations.ag.time_s"), "expect[0].field",
                  "operations.ag.time_s", "operations.ag");
  }
  SECTION("a training expectation in a collectives scenario") {
    require_error(with("operations.ag_y.time_s", "step_time_s"), "expect[0].field", "step_time_s", "step_time_s");
  }
  SECTION("fits_hbm that is not a boolean") {
    require_error(training_with("field: step_time_s\n    value: \"1.5 s\"", "field: fits_hbm\n    value: 1"),
                  "expect[0].value", "1", "value: 1");
  }
  SECTION("an expected step time without units") {
    require_error(training_with("\"1.5 s\"", "1.5"), "expect[0].value", "1.5", "value: 1.5");
  }
}

TEST_CASE("files: missing, a directory, empty, unreadable", "[scenario]") {
  TempDir dir;
  SECTION("a missing file") {
    const std::string path = (dir.path / "nope.yaml").string();
    try {
      load_scenario(path);
      FAIL("expected an InputError");
    } catch (const InputError& error) {
      CHECK(error.where().file == path);
      CHECK(error.where().line == 0);
      CHECK(contains(error.what(), path));
      CHECK(contains(error.what(), "cannot open"));
    }
  }
  SECTION("a directory") {
    const std::string path = dir.path.string();
    try {
      load_scenario(path);
      FAIL("expected an InputError");
    } catch (const InputError& error) {
      CHECK(error.where().line == 0);
      CHECK(contains(error.what(), path));
      CHECK(contains(error.what(), "directory"));
    }
  }
  SECTION("an empty file") {
    const std::string path = (dir.path / "empty.yaml").string();
    std::ofstream(path).close();
    try {
      load_scenario(path);
      FAIL("expected an InputError");
    } catch (const InputError& error) {
      CHECK(contains(error.what(), path));
      CHECK(contains(error.what(), "empty"));
    }
  }
  SECTION("an unreadable file") {
    const fs::path path = dir.path / "secret.yaml";
    std::ofstream(path) << kBase;
    fs::permissions(path, fs::perms::none);
    if (std::ifstream(path).is_open()) {
      WARN("running as root, which reads any file: the unreadable case cannot be staged");
    } else {
      try {
        load_scenario(path.string());
        FAIL("expected an InputError");
      } catch (const InputError& error) {
        CHECK(error.where().line == 0);
        CHECK(contains(error.what(), path.string()));
        CHECK(contains(error.what(), "cannot open"));
      }
    }
  }
  SECTION("a good file") {
    const fs::path path = dir.path / "good.yaml";
    std::ofstream(path) << kBase;
    CHECK(load_scenario(path.string()).collectives().operations.size() == 2);
  }
}

TEST_CASE("mesh splits: logical axes in a training plan", "[scenario]") {
  const std::string split = training_with("  mesh: {X: 4, Y: 4, Z: 4}\n",
                                          "  mesh: {X: 4, Y: 4, Z: 16}\n  split:\n    Z: {inner: Zi, outer: Zo, inner_size: 4}\n");
  SECTION("inner and outer parts carry one kind each") {
    const auto s = load_scenario_text(with("    data: [X, Y]\n", "    data: [X, Y, Zo]\n",
                                           with("    tensor: [Z]\n", "    tensor: [Zi]\n", split)),
                                      kFile);
    REQUIRE(s.training().plan.data_axes == std::vector<int>{0, 1, 2});
    CHECK(s.training().plan.data_slices[2].stride == 4);
    CHECK(s.training().plan.data_slices[2].size == 4);
    CHECK(s.training().plan.tensor_slices[0].stride == 1);
    CHECK(s.training().plan.tensor_slices[0].size == 4);
  }
  SECTION("a split of an axis the mesh lacks") {
    const auto text = with("    Z: {inner", "    Q: {inner", split);
    require_error(text, "topology.split.Q", "Q", "    Q: {inner");
  }
  SECTION("an inner size that does not divide the axis") {
    const auto text = with("inner_size: 4}", "inner_size: 5}", split);
    require_error(text, "topology.split.Z.inner_size", "5", "inner_size: 5");
  }
  SECTION("a logical name that is a mesh axis") {
    const auto text = with("inner: Zi", "inner: X", split);
    require_error(text, "topology.split.Z.inner", "X", "inner: X");
  }
  SECTION("the whole axis and a part of it both used") {
    const auto text = with("    tensor: [Z]\n", "    tensor: [Zi]\n", with("    data: [X, Y]\n", "    data: [X, Y, Z]\n", split));
    require_error(text, "workload.parallelism.tensor[0]", "Zi", "    tensor: [Zi]");
  }
}

TEST_CASE("pipelines: more stages than layers are refused, stages that do not divide them load", "[scenario]") {
  const std::string base = with("    data: [X, Y]\n    fsdp: true\n    tensor: [Z]\n", "    data: [X, Y]\n    pipeline: Z\n",
                                with("  model: llama2-13b\n", "  model: {preset: llama2-13b, layers: 2}\n", kTraining));
  SECTION("more stages than layers") {
    require_error(base, "workload.parallelism.pipeline", "Z", "    pipeline: Z");
    CHECK(contains(error_from(base).what(), "4 pipeline stages for 2 layers"));
  }
  SECTION("stages that do not divide the layers: ceil or floor of L/P each (pipeline.cpp)") {
    const auto text = with("layers: 2}", "layers: 6}", base);
    CHECK(load_scenario_text(text, "uneven.yaml").training().model.layers == 6);
  }
}

namespace {

const std::string kInference = R"(version: 1
name: decode
hardware:
  preset: v5e
topology:
  mesh: {X: 4, Y: 2}
workload:
  kind: inference
  model: llama3-70b
  phase: decode
  batch: 32
  context_length: 8192
  weights: int8
  kv_cache: int8
  parallelism:
    model: [X, Y]
)";

}  // namespace

TEST_CASE("an inference scenario loads, and its bad inputs are named", "[scenario]") {
  SECTION("round trip") {
    const auto s = load_scenario_text(kInference, kFile);
    REQUIRE(s.kind() == WorkloadKind::Inference);
    CHECK(s.inference().plan.batch == 32);
    CHECK(s.inference().plan.context_length == 8192);
    CHECK(s.inference().plan.weight_bytes == 1);
    CHECK(s.inference().plan.kv_bytes == 1);
    CHECK(s.inference().plan.model_axes == std::vector<int>{0, 1});
    CHECK(s.inference().model.name == "llama3-70b");
  }
  SECTION("a zero batch") {
    require_error(with("batch: 32", "batch: 0", kInference), "workload.batch", "0", "batch: 0");
  }
  SECTION("an unknown weight type") {
    require_error(with("weights: int8", "weights: int3", kInference), "workload.weights", "int3", "weights: int3");
  }
  SECTION("a prompt length on a decode step") {
    require_error(with("context_length: 8192", "context_length: 8192\n  prompt_length: 64", kInference),
                  "workload.prompt_length", "64", "prompt_length: 64");
  }
  SECTION("a context longer than the model allows") {
    require_error(with("context_length: 8192", "context_length: 100000", kInference), "workload.context_length",
                  "100000", "context_length: 100000");
  }
  SECTION("a model axis the mesh lacks") {
    require_error(with("model: [X, Y]", "model: [X, Q]", kInference), "workload.parallelism.model[1]", "Q",
                  "model: [X, Q]");
  }
  SECTION("a training key in an inference workload") {
    require_error(with("batch: 32", "batch: 32\n  batch_tokens: 8", kInference), "workload.batch_tokens", "8",
                  "batch_tokens: 8");
  }
}

TEST_CASE("text that is not UTF-8, and values too long to echo", "[scenario]") {
  SECTION("a name with bytes that are not UTF-8 fails at load, located") {
    const std::string text = with("name: v5e-8x4-allgather-y", "name: v5e-\xff\xfe-bad");
    const InputError error = error_from(text);
    CHECK(error.where().line == line_of(text, "name: v5e-"));
    CHECK(error.where().column == 11);
    CHECK(contains(error.what(), "0xff is not UTF-8"));
    // Overlong forms and surrogates are not UTF-8 either; real multi-byte text is.
    CHECK_THROWS_AS(load_scenario_text(with("name: v5e-8x4-allgather-y", "name: \xc0\xaf"), kFile), InputError);
    CHECK_THROWS_AS(load_scenario_text(with("name: v5e-8x4-allgather-y", "name: \xed\xa0\x80"), kFile), InputError);
    CHECK_NOTHROW(load_scenario_text(with("name: v5e-8x4-allgather-y", "name: \"v5e \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\""), kFile));
    CHECK_THROWS_AS(load_scenario_text(kBase, kFile, {{"name", "\xff"}}), InputError);
  }
  SECTION("a 1 MB preset name gives a short message that says how long it was") {
    const std::string huge(1 << 20, 'x');
    const InputError error = error_from(with("preset: v5e", "preset: " + huge));
    CHECK(std::string(error.what()).size() < 2500);
    CHECK(contains(error.what(), "[1048576 bytes in all]"));
    CHECK(error.value().size() == huge.size());   // the structured value stays whole
  }
  SECTION("control characters are escaped") {
    const InputError error = error_from(with("preset: v5e", "preset: \"v5e\\e[2J\""));
    CHECK(contains(error.what(), "v5e\\x1b[2J"));
    CHECK_FALSE(contains(error.what(), "\x1b"));
  }
}

TEST_CASE("hardware overrides stay within a range derived quantities survive", "[scenario]") {
  const std::string inference = R"(version: 1
hardware:
  preset: v5e
  overrides: {hbm_capacity: "16 GiB"}
topology: {mesh: {X: 4, Y: 4}}
workload:
  kind: inference
  model: llama3-70b
  phase: decode
  batch: 32
  context_length: 2048
  weights: int8
  kv_cache: int8
  parallelism: {model: [X, Y]}
)";
  // The two that broke runs: max batch -2147483648, and a SimGrid stall.
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"hbm_capacity: \"16 GiB\"", "hbm_capacity: \"15000 PiB\""},
           {"hbm_capacity: \"16 GiB\"", "ici_bandwidth: \"1e-300 B/s\""},
           {"hbm_capacity: \"16 GiB\"", "hop_latency: \"2 s\""}}) {
    INFO(to);
    const InputError error = error_from(with(from, to, inference));
    CHECK(contains(error.what(), "out of range; expected"));
    CHECK(error.key().rfind("hardware.overrides.", 0) == 0);
  }
  CHECK_NOTHROW(load_scenario_text(with("\"16 GiB\"", "\"1 PiB\"", inference), kFile));
}

namespace {

// Loads `text` on a thread with a 1 MiB stack (pthread's default is 8 MiB, and `ulimit -s
// unlimited` grows the main thread's without bound): reading must not need stack in proportion
// to the length of a list. Returns the InputError, if any.
std::optional<InputError> load_on_small_stack(const std::string& text) {
  struct Job {
    const std::string* text;
    std::exception_ptr error;
  } job{&text, nullptr};
  pthread_attr_t attributes;
  pthread_attr_init(&attributes);
  pthread_attr_setstacksize(&attributes, 1u << 20);
  pthread_t thread;
  const int created = pthread_create(
      &thread, &attributes,
      [](void* arg) -> void* {
        auto* j = static_cast<Job*>(arg);
        try {
          load_scenario_text(*j->text, kFile);
        } catch (...) {
          j->error = std::current_exception();
        }
        return nullptr;
      },
      &job);
  pthread_attr_destroy(&attributes);
  REQUIRE(created == 0);
  pthread_join(thread, nullptr);
  if (!job.error) return std::nullopt;
  try {
    std::rethrow_exception(job.error);
  } catch (const InputError& error) {
    return error;
  }
}

std::string collectives_with(const std::string& operations) {
  return "version: 1\nhardware: {preset: v5e}\ntopology: {mesh: {X: 4}}\nworkload:\n  kind: collectives\n"
         "  operations:\n" + operations;
}

}  // namespace

TEST_CASE("long lists and mappings: no recursion and no pairwise search over them", "[scenario]") {
  SECTION("operations each after the next: the cycle search walks the chain without recursing") {
    // 60,000 of these in a 4.7 MB file crashed podsim (SIGSEGV: the search recursed once per
    // operation). On a 1 MiB stack, 20,000 are plenty to show it.
    const int n = 20000;
    std::string operations;
    for (int i = 0; i < n; ++i)
      operations += "    - {name: op" + std::to_string(i) + ", kind: all_reduce, axes: [X], bytes: 1, after: [op" +
                    std::to_string((i + 1) % n) + "]}\n";
    const auto error = load_on_small_stack(collectives_with(operations));
    REQUIRE(error.has_value());
    CHECK(contains(error->what(), "operations wait on each other in a cycle: op0 after op1 after op2"));
    CHECK(error->key() == "workload.operations[0].after");
    // Without the closing edge the chain loads.
    const size_t last = operations.rfind("after: [op0]");
    REQUIRE(last != std::string::npos);
    const auto loaded = load_on_small_stack(collectives_with(operations.replace(last, 12, "after: []")));
    CHECK_FALSE(loaded.has_value());
  }
  SECTION("100,000 keys of one mapping are checked for repeats by lookup, not pairwise") {
    // Pairwise, this took 100 s to report the first unknown key; a 16 MiB file would take hours.
    std::string text = "version: 1\n";
    for (int i = 0; i < 100000; ++i) text += "k" + std::to_string(i) + ": 1\n";
    const auto start = std::chrono::steady_clock::now();
    const InputError error = error_from(text + "k7: 2\n");
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    CHECK(error.key() == "k7");
    CHECK(contains(error.what(), "key given twice (first at line 9)"));
    CHECK(seconds < 20);   // about 0.5 s; 100 s pairwise
  }
  SECTION("repeated names among many operations, afters and perturbations") {
    std::string operations;
    for (int i = 0; i < 3000; ++i)
      operations += "    - {name: op" + std::to_string(i) + ", kind: all_reduce, axes: [X], bytes: 1}\n";
    require_error(collectives_with(operations + "    - {name: op5, kind: all_reduce, axes: [X], bytes: 2}\n"),
                  "workload.operations[3000].name", "op5", "name: op5, kind: all_reduce, axes: [X], bytes: 2}");
    const InputError twice = error_from(collectives_with(operations + "    - {kind: all_reduce, axes: [X], bytes: 1, after: [op1, op2, op1]}\n"));
    CHECK(twice.key() == "workload.operations[3000].after[2]");
    CHECK(contains(twice.what(), "operation listed twice"));
    std::string perturbations = "perturbations:\n";
    for (int i = 0; i < 3000; ++i) perturbations += "  - {name: p" + std::to_string(i) + ", chips: [0], compute_slowdown: 2}\n";
    const InputError taken = error_from(collectives_with("    - {kind: all_reduce, axes: [X], bytes: 1}\n") + perturbations +
                                        "  - {name: p9, chips: [1], compute_slowdown: 2}\n");
    CHECK(taken.key() == "perturbations[3000].name");
    CHECK(contains(taken.what(), "perturbation name used twice"));
  }
}

TEST_CASE("serving: a small model beside a large HBM fits as many sequences as there can be requests", "[scenario]") {
  // 16 chips of 1 PiB hold 7e13 sequences of 2 tokens of this model (256 B each). Converting that
  // to an int was undefined (clang's UBSan: "7.03687e+13 is outside the range of representable
  // values of type 'int'"); on x86 it gave INT_MIN, and the 2-token requests "did not fit".
  const std::string text = R"(version: 1
hardware:
  preset: v5e
  overrides: {hbm_capacity: "1 PiB"}
topology: {mesh: {X: 4, Y: 4}}
workload:
  kind: serving
  model: {layers: 1, d_model: 64, d_ff: 64, heads: 1, kv_heads: 1, head_dim: 64, vocab: 0}
  kv_cache: int8
  prompt_buckets: [1]
  requests:
    poisson: {rate: "1 /s", count: 2, prompt_tokens: 1, output_tokens: 1}
)";
  const Scenario s = load_scenario_text(text, kFile);
  CHECK(s.serving().hbm_slots == 10000000);   // the most requests a workload has
  CHECK(s.serving().config.slots == 10000000);
}

TEST_CASE("serving: 2D weight-stationary servers load, their slots a multiple of the D axes' chips",
          "[scenario][serving]") {
  const std::string base = R"(version: 1
hardware: {preset: v5p}
topology: {mesh: {X: 2, Y: 2, Z: 4}}
workload:
  kind: serving
  model: llama3-70b
  weights: int8
  kv_cache: int8
  parallelism: {model: [Z], model_d: [Y], replica: [X]}
  requests:
    poisson: {rate: "1 /s", count: 4, prompt_tokens: 512, output_tokens: 64}
)";
  SECTION("beside replicas: the axes renumbered onto a replica's sub-mesh") {
    const auto s = load_scenario_text(base, kFile);
    CHECK(s.serving().replicas_per_slice == 2);
    CHECK(s.serving().generate.d_axes == std::vector<int>{0});
    CHECK(s.serving().generate.model_axes == std::vector<int>{1});
    CHECK(s.serving().hbm_slots % 2 == 0);
    CHECK(s.serving().hbm_slots > 0);
  }
  SECTION("an axis in none of model, model_d, expert and replica") {
    const auto text = with("{model: [Z], model_d: [Y], replica: [X]}", "{model: [Z], model_d: [Y]}", base);
    const podsim::InputError error = podsim_test::error_from(text);
    CHECK(std::string(error.what()).find("not in parallelism.expert, parallelism.model_d or parallelism.replica") !=
          std::string::npos);
    CHECK(error.key() == "workload.parallelism");
  }
  SECTION("without model axes") {
    const auto text = with("{model: [Z], model_d: [Y], replica: [X]}", "{model_d: [Y], replica: [X]}", base);
    require_error(text, "workload.parallelism.model_d", "[Y]", "  parallelism:");
  }
}

TEST_CASE("serving: context parallelism on disaggregated prefill servers loads, elsewhere a located refusal",
          "[scenario][serving][combinations]") {
  const std::string base = R"(version: 1
hardware: {preset: v5e}
topology: {mesh: {X: 4, Y: 4}}
workload:
  kind: serving
  model: llama3-8b
  weights: int8
  kv_cache: int8
  policy: disaggregated
  prefill: {parallelism: {model: [Y], context: X}}
  requests:
    poisson: {rate: "1 /s", count: 4, prompt_tokens: [512, 2048], output_tokens: 64}
)";
  const std::string refusal =
      "context parallelism splits a prompt's tokens, so it runs on the prefill servers of policy: disaggregated "
      "(prefill: {parallelism: {context: ...}}); a decode step has one new token per sequence, nothing for a ring to "
      "split (sharding the cache by sequence is not modelled); expected no context axis here";
  SECTION("on the prefill servers: the context axis and the model axes") {
    const auto s = load_scenario_text(base, kFile);
    CHECK(s.serving().prefill.context_axis == 0);
    CHECK(s.serving().prefill.model_axes == std::vector<int>{1});
    CHECK(s.serving().generate.context_axis == -1);
  }
  SECTION("on the generate servers") {
    const auto text = with("  prefill: {parallelism: {model: [Y], context: X}}\n",
                           "  parallelism: {model: [Y], context: X}\n", base);
    require_error(text, "workload.parallelism.context", "X", "  parallelism:");
    CHECK(std::string(podsim_test::error_from(text).what()).find(refusal) != std::string::npos);
  }
  SECTION("on colocated servers") {
    const auto text = with("  policy: disaggregated\n  prefill: {parallelism: {model: [Y], context: X}}\n",
                           "  policy: continuous\n  parallelism: {model: [Y], context: X}\n", base);
    require_error(text, "workload.parallelism.context", "X", "  parallelism:");
    CHECK(std::string(podsim_test::error_from(text).what()).find(refusal) != std::string::npos);
  }
  SECTION("the weights once per context chip: LLaMA-3 70B's do not fit four times over") {
    const auto text = with("model: llama3-8b", "model: llama3-70b", base);
    require_error(text, "workload.prefill", "{parallelism: {model: [Y], context: X}}", "  prefill:");
  }
  SECTION("a prompt bucket that does not split into 2 x CP chunks") {
    const auto text = with("  policy: disaggregated\n", "  policy: disaggregated\n  prompt_buckets: [512, 2052]\n", base);
    require_error(text, "workload.prefill.parallelism.context", "X", "  prefill:");
  }
  SECTION("a prompt longer than the largest bucket (chunked after a cached prefix)") {
    const auto text = with("  policy: disaggregated\n", "  policy: disaggregated\n  prompt_buckets: [512, 1024]\n", base);
    require_error(text, "workload.prefill.parallelism.context", "X", "  prefill:");
    CHECK(std::string(podsim_test::error_from(text).what()).find("prefilled in chunks after the largest bucket") !=
          std::string::npos);
  }
}

// ---- Mixture-of-experts models (issue 11): loaded and checked, not yet simulated ----

namespace {

// The model mapping `text` as the loader reads workload.model (no workload around it).
TransformerSpec model_from(const std::string& text) {
  return detail::parse_model_field({YAML::Load(text), "workload.model", {kFile, 1, 1}}, 4096);
}

}  // namespace

TEST_CASE("MoE and MLA model mappings", "[scenario][moe]") {
  SECTION("an MoE preset by name") {
    const TransformerSpec m = model_from("mixtral-8x7b");
    REQUIRE(m.moe.has_value());
    CHECK(m.moe->experts == 8);
    CHECK(m.moe->experts_per_token == 2);
    CHECK(find_model_preset("deepseek-v3") != nullptr);
    CHECK(model_from("deepseek-v3").attention == AttentionKind::Mla);
    CHECK(model_from("seed-moe-e16-k2").moe->experts == 16);
    CHECK(model_from("qwen3-235b-a22b").moe->expert_d_ff == 1536);
  }
  SECTION("overriding one MoE key of a preset") {
    const TransformerSpec m = model_from("{preset: mixtral-8x7b, moe: {experts_per_token: 1}}");
    CHECK(m.name == "mixtral-8x7b-modified");
    CHECK(m.moe->experts == 8);
    CHECK(m.moe->experts_per_token == 1);
    CHECK(m.moe->expert_d_ff == 14336);
  }
  SECTION("a dense preset made MoE: the seed's Question 5") {
    const TransformerSpec m = model_from(
        "{layers: 64, d_model: 4096, d_ff: 16384, heads: 32, kv_heads: 8, head_dim: 256, vocab: 32128,\n"
        " tied_embeddings: true, moe: {experts: 16, experts_per_token: 2, expert_d_ff: 16384}}");
    REQUIRE(m.moe.has_value());
    CHECK(m.moe->shared_experts == 0);
    CHECK(m.moe->dense_layers == 0);
    CHECK(param_count(m) == Approx(param_count(*find_model_preset("seed-moe-e16-k2"))));
    CHECK(activated_param_count(m) == Approx(31.2e9).epsilon(0.01));
  }
  SECTION("MLA attention on a custom shape, and back to GQA") {
    const TransformerSpec m = model_from(
        "{preset: llama2-7b, attention: {kind: mla, kv_lora_rank: 512, qk_nope_head_dim: 128,\n"
        " qk_rope_head_dim: 64, v_head_dim: 128}}");
    CHECK(m.attention == AttentionKind::Mla);
    CHECK(m.mla.q_lora_rank == 0);
    CHECK(kv_cache_elements_per_token(m) == 32 * (512 + 64));
    CHECK(model_from("{preset: deepseek-v3, attention: {kind: gqa}}").attention == AttentionKind::Gqa);
    CHECK(model_from("{preset: deepseek-v3, attention: {kv_lora_rank: 256}}").mla.kv_lora_rank == 256);
  }
}

TEST_CASE("bad MoE and MLA models name file, line, key and value", "[scenario][moe]") {
  SECTION("more experts per token than experts") {
    const std::string text = training_with(
        "model: llama2-13b",
        "model:\n    preset: llama2-13b\n    moe:\n      experts: 2\n      experts_per_token: 3\n      expert_d_ff: 4096");
    require_error(text, "workload.model.moe.experts_per_token", "3", "experts_per_token");
    CHECK(contains(error_from(text).what(), "moe.experts_per_token (3) must be at most moe.experts (2)"));
  }
  SECTION("a preset's experts cut below its experts per token blames experts") {
    const std::string text = training_with("model: llama2-13b", "model:\n    preset: mixtral-8x7b\n    moe: {experts: 1}");
    require_error(text, "workload.model.moe.experts", "1", "moe:");
    CHECK(contains(error_from(text).what(), "must be at most moe.experts (1)"));
  }
  SECTION("more dense layers than layers") {
    const std::string text =
        training_with("model: llama2-13b", "model:\n    preset: deepseek-v3\n    moe: {dense_layers: 62}");
    require_error(text, "workload.model.moe.dense_layers", "62", "moe:");
    CHECK(contains(error_from(text).what(), "at most layers (61)"));
    // Cutting the layers below the preset's dense ones blames layers.
    require_error(training_with("model: llama2-13b", "model:\n    preset: deepseek-v3\n    layers: 2"),
                  "workload.model.layers", "2", "layers:");
  }
  SECTION("an expert width that is not positive") {
    require_error(training_with("model: llama2-13b", "model:\n    preset: mixtral-8x7b\n    moe: {expert_d_ff: 0}"),
                  "workload.model.moe.expert_d_ff", "0", "moe:");
  }
  SECTION("a dense model made MoE without its expert width") {
    const std::string text =
        training_with("model: llama2-13b", "model:\n    preset: llama2-13b\n    moe: {experts: 8, experts_per_token: 2}");
    require_error(text, "workload.model.moe", "{experts: 8, experts_per_token: 2}", "moe:");
    CHECK(contains(error_from(text).what(), "expert_d_ff"));
  }
  SECTION("an unknown MoE key") {
    require_error(training_with("model: llama2-13b", "model:\n    preset: mixtral-8x7b\n    moe: {top_k: 2}"),
                  "workload.model.moe.top_k", "2", "moe:");
  }
  SECTION("an unknown attention kind, and MLA dims on GQA") {
    const std::string text =
        training_with("model: llama2-13b", "model:\n    preset: llama2-13b\n    attention: {kind: linear}");
    require_error(text, "workload.model.attention.kind", "linear", "attention:");
    CHECK(contains(error_from(text).what(), "gqa, mla"));
    require_error(training_with("model: llama2-13b", "model:\n    preset: llama2-13b\n    attention: {kv_lora_rank: 512}"),
                  "workload.model.attention.kv_lora_rank", "512", "attention:");
    const std::string partial =
        training_with("model: llama2-13b", "model:\n    preset: llama2-13b\n    attention: {kind: mla, kv_lora_rank: 512}");
    require_error(partial, "workload.model.attention", "{kind: mla, kv_lora_rank: 512}", "attention:");
    CHECK(contains(error_from(partial).what(), "qk_nope_head_dim"));
  }
}

TEST_CASE("set overrides reach list elements by index, and only existing ones", "[scenario]") {
  // What `podsim sweep` and a calibration's measurements set: the second operation's size.
  const auto s = load_scenario_text(kBase, kFile, {{"workload.operations.1.bytes", "\"1 MB\""}});
  REQUIRE(s.collectives().operations.size() == 2);
  CHECK(s.collectives().operations[1].collective.bytes == 1e6);
  CHECK(s.collectives().operations[0].array == "bf16[2048,8192]");
  const auto replaced = load_scenario_text(kBase, kFile, {{"workload.operations.0.array", "\"bf16[256,256]\""}});
  CHECK(replaced.collectives().operations[0].collective.bytes == 256 * 256 * 2);
  for (const char* key : {"workload.operations.2.bytes", "workload.operations.x.bytes", "workload.operations.-1.bytes"}) {
    INFO(key);
    try {
      load_scenario_text(kBase, kFile, {{key, "\"1 MB\""}});
      FAIL("accepted " << key);
    } catch (const InputError& e) {
      CHECK(contains(e.what(), "is not an index of a list of 2"));
      CHECK(contains(e.what(), key));
    }
  }
}

TEST_CASE("Cloud TPU accelerator types as mesh shapes: v5p-2048, v5litepod-256, v6e-256", "[scenario][topology]") {
  auto mesh_of = [](const std::string& preset, const std::string& mesh) {
    const std::string text = "version: 1\nhardware: {preset: " + preset + "}\ntopology: {mesh: " + mesh +
                             "}\nworkload:\n  kind: collectives\n  operations:\n"
                             "    - {name: ag, kind: all_gather, axes: [X], bytes: \"1 MB\"}\n";
    return podsim::load_scenario_text(text, podsim_test::kScenarioFile).topology;
  };
  const auto v5p = mesh_of("v5p", "v5p-2048");   // 2048 TensorCores: 1024 chips
  REQUIRE(v5p.axes.size() == 3);
  CHECK(v5p.axes[0].size == 8);
  CHECK(v5p.axes[1].size == 8);
  CHECK(v5p.axes[2].size == 16);
  CHECK(v5p.axes[2].name == "Z");
  CHECK(v5p.chips_per_slice() == 1024);
  CHECK(mesh_of("v5e", "v5litepod-256").chips_per_slice() == 256);
  CHECK(mesh_of("v6e", "v6e-8").axes[1].size == 4);
  const std::string wrong_chip = "version: 1\nhardware: {preset: v5e}\ntopology: {mesh: v5p-2048}\nworkload:\n"
                                 "  kind: collectives\n  operations:\n    - {name: ag, kind: all_gather, axes: [X], bytes: \"1 MB\"}\n";
  podsim_test::require_error(wrong_chip, "topology.mesh", "v5p-2048", "topology:");
  CHECK(podsim_test::contains(podsim_test::error_from(wrong_chip).expected(), "expected hardware.preset: v5p"));
  const std::string unknown = podsim_test::replaced_in(wrong_chip, "v5p-2048", "v5p-2000");
  CHECK(podsim_test::contains(podsim_test::error_from(unknown).expected(), "not a listed Cloud TPU accelerator type"));
}

TEST_CASE("a token budget and a chip price: read, and refused out of range where written", "[scenario][training]") {
  const std::string text = training_with("    tensor: [Z]\n", "    tensor: [Z]\n  token_budget: 15e12\n");
  const Scenario s = load_scenario_text(
      with("  preset: v5p\n", "  preset: v5p\n  overrides: {chip_hour_price_usd: 4.2}\n", text), kScenarioFile);
  CHECK(s.training().token_budget == 15e12);
  CHECK(s.topology.chip.chip_hour_price_usd == 4.2);
  CHECK(s.topology.chip.chip_hour_price_source == "hardware.overrides.chip_hour_price_usd");
  // Without the override, the preset's list price, with its source and date.
  const Scenario listed = load_scenario_text(text, kScenarioFile);
  CHECK(listed.topology.chip.chip_hour_price_usd == 4.20);
  CHECK(podsim_test::contains(listed.topology.chip.chip_hour_price_source, "Feb 2025"));
  // Less than one batch, and a price of nothing.
  require_error(with("15e12", "1000", text), "workload.token_budget", "1000", "token_budget:");
  require_error(with("  preset: v5p\n", "  preset: v5p\n  overrides: {chip_hour_price_usd: 0}\n", kTraining),
                "hardware.overrides.chip_hour_price_usd", "0", "overrides:");
}

TEST_CASE("pipeline schedules: interleaving and its conditions are located errors", "[scenario]") {
  const std::string base = with("    data: [X, Y]\n    fsdp: true\n    tensor: [Z]\n",
                                "    data: [X]\n    tensor: [Y]\n    pipeline: Z\n    schedule: interleaved_1f1b\n",
                                with("  model: llama2-13b\n", "  model: {preset: llama2-13b, layers: 16}\n", kTraining));
  SECTION("virtual stages without the interleaved schedule") {
    const auto text = with("schedule: interleaved_1f1b\n", "schedule: 1f1b\n    virtual_stages: 2\n", base);
    require_error(text, "workload.parallelism.virtual_stages", "2", "    virtual_stages: 2");
  }
  SECTION("more chunks than layers") {
    const auto text = with("schedule: interleaved_1f1b\n", "schedule: interleaved_1f1b\n    virtual_stages: 5\n", base);
    require_error(text, "workload.parallelism.virtual_stages", "5", "    virtual_stages: 5");
    CHECK(contains(error_from(text).what(), "20 pipeline chunks"));
  }
  SECTION("microbatches that are not a multiple of the stages") {
    const auto text = with("  batch_tokens:", "  microbatches: 6\n  batch_tokens:", base);
    require_error(text, "workload.microbatches", "6", "  microbatches: 6");
    CHECK(contains(error_from(text).what(), "multiple of the pipeline stages"));
  }
  SECTION("an unknown schedule") {
    const auto text = with("interleaved_1f1b", "zb_h2", base);
    require_error(text, "workload.parallelism.schedule", "zb_h2", "    schedule: zb_h2");
  }
}

TEST_CASE("context parallelism: its conditions are located errors", "[scenario]") {
  const std::string base = with("    data: [X, Y]\n    fsdp: true\n    tensor: [Z]\n",
                                "    data: [Y]\n    tensor: [Z]\n    context: X\n",
                                with("  model: llama2-13b\n", "  model: llama3.1-8b\n", kTraining));
  SECTION("a valid plan loads, the context axis a data axis that does not split the batch") {
    const Scenario s = load_scenario_text(base, "cp.yaml");
    CHECK(s.training().plan.context_axis == 0);
    CHECK(s.training().plan.data_axes == std::vector<int>{1, 0});
  }
  SECTION("a sequence that does not split into 2 x CP chunks") {
    const auto text = with("sequence_length: 4096", "sequence_length: 4100", base);
    require_error(text, "workload.sequence_length", "4100", "  sequence_length: 4100");
    CHECK(contains(error_from(text).what(), "2 x 4 = 8 equal chunks"));
  }
  SECTION("the context axis also a data axis") {
    const auto text = with("    data: [Y]\n", "    data: [X, Y]\n", base);
    require_error(text, "workload.parallelism.context", "X", "    context: X");
  }
  SECTION("with collective matmuls: the ring between the block's halves") {
    const auto text = with("    tensor: [Z]\n", "    tensor: [Z]\n    tensor_overlap: true\n", base);
    CHECK(load_scenario_text(text, "cp.yaml").training().plan.tensor_overlap);
  }
  SECTION("with an MoE model: the ring in attention, the experts in the MLP blocks") {
    const auto text = with("model: llama3.1-8b", "model: mixtral-8x7b", base);
    CHECK(load_scenario_text(text, "cp.yaml").training().plan.context_axis == 0);
  }
}

TEST_CASE("2D weight-stationary inference: model_d loads, and its conditions are located errors", "[scenario]") {
  const std::string base = with("    model: [X, Y]\n", "    model: [Y]\n    model_d: [X]\n", kInference);
  SECTION("round trip") {
    const auto s = load_scenario_text(base, kFile);
    CHECK(s.inference().plan.model_axes == std::vector<int>{1});
    CHECK(s.inference().plan.d_axes == std::vector<int>{0});
  }
  SECTION("without model axes") {
    const auto text = with("    model: [Y]\n    model_d: [X]\n", "    model_d: [X]\n", base);
    require_error(text, "workload.parallelism.model_d", "[X]", "    model_d: [X]");
  }
  SECTION("an axis in both") {
    const auto text = with("model_d: [X]", "model_d: [Y]", base);
    require_error(text, "workload.parallelism.model_d[0]", "Y", "    model_d: [Y]");
  }
  SECTION("a batch that does not split over the D axes") {
    const auto text = with("batch: 32", "batch: 30", base);
    require_error(text, "workload.batch", "30", "  batch: 30");
  }
  SECTION("KV heads that do not split over the model axes") {
    const auto text = with("mesh: {X: 4, Y: 2}", "mesh: {X: 4, Y: 16}", base);
    require_error(text, "workload.parallelism.model_d", "[X]", "    model_d: [X]");
  }
  SECTION("with collective matmuls (refused before: now the gather and scatter beside the block's ends)") {
    const auto text = with("  kv_cache: int8\n", "  kv_cache: int8\n  collective_matmul: true\n", base);
    const auto s = load_scenario_text(text, podsim_test::kScenarioFile);
    CHECK(s.inference().plan.collective_matmul);
    CHECK_FALSE(s.inference().plan.d_axes.empty());
  }
}

TEST_CASE("ZeRO and mixed-precision keys load, and their conflicts are located errors", "[scenario]") {
  const std::string base = with("    data: [X, Y]\n    fsdp: true\n    tensor: [Z]\n",
                                "    data: [X, Y]\n    zero: 2\n    tensor: [Z]\n", kTraining);
  SECTION("round trip") {
    const auto s = load_scenario_text(with("  sequence_length: 4096\n",
                                           "  sequence_length: 4096\n  master_weights: true\n  gradients: fp32\n", base),
                                      "z.yaml");
    CHECK(s.training().plan.zero_stage == 2);
    CHECK(s.training().model.master_weight_bytes_per_param == 4);
    CHECK(s.training().model.gradient_bytes_per_param == 4);
  }
  SECTION("zero beside fsdp") {
    const auto text = with("    zero: 2\n", "    fsdp: true\n    zero: 2\n", base);
    require_error(text, "workload.parallelism.zero", "2", "    zero: 2");
  }
  SECTION("stage 3 is fsdp") {
    require_error(with("zero: 2", "zero: 3", base), "workload.parallelism.zero", "3", "    zero: 3");
  }
  SECTION("without data axes") {
    const auto text = with("    data: [X, Y]\n    zero: 2\n", "    zero: 2\n", base);
    require_error(text, "workload.parallelism.zero", "2", "    zero: 2");
  }
  SECTION("an unknown gradient dtype") {
    const auto text = with("  sequence_length: 4096\n", "  sequence_length: 4096\n  gradients: fp8\n", base);
    require_error(text, "workload.gradients", "fp8", "  gradients: fp8");
  }
}

TEST_CASE("fp8 compute on a chip without an fp8 rate is a located error", "[scenario]") {
  const auto text = with("  kv_cache: int8\n", "  kv_cache: fp8\n  compute: fp8\n", kInference);
  require_error(text, "workload.compute", "fp8", "  compute: fp8");
  CHECK(contains(error_from(text).what(), "fp8_flops"));
  const auto given = with("  preset: v5e\n", "  preset: v5e\n  overrides: {fp8_flops: \"394 TFLOP/s\"}\n", text);
  const auto s = load_scenario_text(given, kFile);
  CHECK(s.inference().plan.fp8_compute);
  CHECK(s.inference().plan.kv_bytes == 1.0);
}

TEST_CASE("inference replicas: the batch must divide, and serving refuses them", "[scenario]") {
  const std::string base = with("    model: [X, Y]\n", "    model: [X]\n    replica: [Y]\n", kInference);
  CHECK(load_scenario_text(base, kFile).inference().plan.replica_axes == std::vector<int>{1});
  require_error(with("batch: 32", "batch: 31", base), "workload.batch", "31", "  batch: 31");
  require_error(with("    replica: [Y]\n", "    replica: [X]\n", base), "workload.parallelism.replica[0]", "X",
                "    replica: [X]");
}

TEST_CASE("the files a scenario names: one list, resolved beside it, made absolute for a copy elsewhere",
          "[scenario][files]") {
  const YAML::Node document = YAML::Load(
      "hardware: {preset: v5e, profile: profiles/p.yaml}\n"
      "workload: {requests: {trace: /data/t.csv, sharegpt: {path: lengths.csv}}, routing: {loads: loads.csv}}\n");
  const auto files = named_files(document, "dir/s.yaml");
  REQUIRE(files.size() == file_references().size());
  CHECK(files[0].key == "hardware.profile");
  CHECK(files[0].path == "dir/profiles/p.yaml");
  CHECK(files[1].path == "/data/t.csv");
  CHECK(files[2].path == "dir/lengths.csv");
  CHECK(files[3].path == "dir/loads.csv");
  // Absent or malformed keys name nothing (the loader reports them); nothing is added to the document.
  const YAML::Node sparse = YAML::Load("hardware: v5e\nworkload: {routing: {loads: [a, b]}}\n");
  CHECK(named_files(sparse, "s.yaml").empty());
  CHECK(!sparse["workload"]["requests"].IsDefined());

  YAML::Node copy = YAML::Clone(document);
  CHECK(make_file_references_absolute(copy, "", "/base"));
  CHECK(copy["hardware"]["profile"].Scalar() == "/base/profiles/p.yaml");
  CHECK(copy["workload"]["requests"]["trace"].Scalar() == "/data/t.csv");
  CHECK(copy["workload"]["requests"]["sharegpt"]["path"].Scalar() == "/base/lengths.csv");
  CHECK(copy["workload"]["routing"]["loads"].Scalar() == "/base/loads.csv");
  // An override's value, placed at its key: the scalar itself, or a mapping above the file key.
  YAML::Node scalar = YAML::Load("q.yaml");
  CHECK(make_file_references_absolute(scalar, "hardware.profile", "/base"));
  CHECK(scalar.Scalar() == "/base/q.yaml");
  YAML::Node hardware = YAML::Load("{preset: v5e, profile: q.yaml}");
  CHECK(make_file_references_absolute(hardware, "hardware", "/base"));
  CHECK(hardware["profile"].Scalar() == "/base/q.yaml");
  YAML::Node unrelated = YAML::Load("8");
  CHECK_FALSE(make_file_references_absolute(unrelated, "workload.batch", "/base"));
  CHECK_FALSE(make_file_references_absolute(unrelated, "hardware.profile.x", "/base"));
}

TEST_CASE("every key of file_references() is a file the loader reads, taken from beside the scenario",
          "[scenario][files]") {
  // One scenario per key that reads it; each names a file that is not there, so the load fails
  // naming the resolved path: a key misspelt in the list, or no longer read, fails here.
  const std::string serving = "version: 1\nhardware: {preset: v5e}\ntopology: {mesh: {X: 4, Y: 4}}\n"
                              "workload: {kind: serving, model: llama3-70b, weights: int8, kv_cache: int8,\n"
                              "           requests: {trace: t.csv}}\n";
  const std::string moe = "version: 1\nhardware: {preset: v5e}\ntopology: {mesh: {X: 2}}\n"
                          "workload:\n  kind: inference\n  batch: 2\n  context_length: 64\n"
                          "  model: {layers: 2, d_model: 256, d_ff: 1024, heads: 4, kv_heads: 4, head_dim: 64, vocab: 0,\n"
                          "          moe: {experts: 4, experts_per_token: 2, expert_d_ff: 512}}\n"
                          "  routing: {distribution: loads, loads: l.csv}\n";
  const std::string sharegpt = "version: 1\nhardware: {preset: v5e}\ntopology: {mesh: {X: 4, Y: 4}}\n"
                               "workload: {kind: serving, model: llama3-70b, weights: int8, kv_cache: int8,\n"
                               "           requests: {sharegpt: {path: l.csv, count: 10}}}\n";
  const std::map<std::string, std::string> reader = {{"hardware.profile", kBase},
                                                     {"workload.requests.trace", serving},
                                                     {"workload.requests.sharegpt.path", sharegpt},
                                                     {"workload.routing.loads", moe}};
  const std::string path = "/nowhere/podsim/s.yaml";   // only labels messages and resolves paths
  for (const auto& reference : file_references()) {
    INFO(reference.key);
    REQUIRE(reader.count(reference.key) == 1);
    try {
      load_scenario_text(reader.at(reference.key), path, {{reference.key, "absent/file.txt"}});
      FAIL("loaded a scenario naming a file that is not there");
    } catch (const InputError& e) {
      CHECK(std::string(e.what()).find("/nowhere/podsim/absent/file.txt") != std::string::npos);
    }
  }
}

TEST_CASE("hardware.profile: ideal and the built-in profiles are names, not files", "[scenario][files][profiles]") {
  const std::string base = "version: 1\nhardware: {preset: v5e, profile: ideal}\ntopology: {mesh: {X: 4}}\n"
                           "workload:\n  kind: collectives\n  operations:\n    - {kind: all_gather, axes: [X], bytes: \"1 MB\"}\n";
  // ideal: the preset as the book gives it, said so in the summary.
  const Scenario ideal = load_scenario_text(base, kFile);
  CHECK(ideal.profile == "ideal");
  CHECK(ideal.topology.chip.matmul_efficiency == 1.0);
  CHECK(ideal.topology.chip.hbm_efficiency == 1.0);
  // A name is not a file: a sweep neither hashes nor moves it.
  CHECK(named_files(YAML::Load("hardware: {preset: v5e, profile: ideal}"), "dir/s.yaml").empty());
  YAML::Node copy = YAML::Load("hardware: {preset: v5e, profile: v5e}");
  CHECK_FALSE(make_file_references_absolute(copy, "", "/base"));
  CHECK(copy["hardware"]["profile"].Scalar() == "v5e");
  // Every shipped profile loads by name, on its own chip.
  for (const auto& name : builtin_profile_names()) {
    const CalibrationProfile p = load_profile_text(*builtin_profile_text(name), "built-in profile " + name);
    CHECK(p.name == name);
    const Scenario s = load_scenario_text(with("v5e, profile: ideal", p.chip + ", profile: " + name, base), kFile);
    CHECK(s.profile == name);
  }
  // An unknown name lists the ones there are.
  require_error(with("profile: ideal", "profile: v5f", base), "hardware.profile", "v5f", "hardware:");
  CHECK(contains(error_from(with("profile: ideal", "profile: v5f", base)).what(), "expected one of ideal"));
}

TEST_CASE("a preset without hardware.profile runs its built-in profile, ideal where none ships", "[scenario][profiles]") {
  const std::string base = "version: 1\nhardware: {preset: v5e, profile: ideal}\ntopology: {mesh: {X: 4}}\n"
                           "workload:\n  kind: collectives\n  operations:\n    - {kind: all_gather, axes: [X], bytes: \"1 MB\"}\n";
  // One built-in profile per chip, and each is its chip's default: the same machine as naming it.
  std::set<std::string> chips;
  for (const auto& name : builtin_profile_names()) {
    const CalibrationProfile p = load_profile_text(*builtin_profile_text(name), "built-in profile " + name);
    CHECK(chips.insert(p.chip).second);
    REQUIRE(builtin_profile_for_chip(p.chip) == name);
    const Scenario by_default = load_scenario_text(with("v5e, profile: ideal", p.chip, base), kFile);
    const Scenario named = load_scenario_text(with("v5e, profile: ideal", p.chip + ", profile: " + name, base), kFile);
    CHECK(by_default.profile == name);
    CHECK(by_default.profile_source == ProfileSource::Default);
    CHECK(named.profile_source == ProfileSource::Named);
    CHECK(by_default.topology.chip.matmul_efficiency == named.topology.chip.matmul_efficiency);
    CHECK(by_default.topology.chip.hbm_efficiency == named.topology.chip.hbm_efficiency);
    CHECK(by_default.topology.chip.compute_model == named.topology.chip.compute_model);
    CHECK(by_default.link_efficiency == named.link_efficiency);
    CHECK(by_default.launch_overhead_s == named.launch_overhead_s);
    CHECK(by_default.hop_model == named.hop_model);
    CHECK(by_default.topology.chip.matmul_efficiency < 1.0);
  }
  // The scenario's own overrides still win over the default profile.
  const Scenario overridden = load_scenario_text(
      with("v5e, profile: ideal", "v5e, overrides: {matmul_efficiency: 0.5}", base), kFile);
  CHECK(overridden.topology.chip.matmul_efficiency == 0.5);
  CHECK(overridden.profile == "v5e");
  // v3 ships no profile: the book's machine, and the summary says ideal.
  CHECK_FALSE(builtin_profile_for_chip("v3"));
  const Scenario v3 = load_scenario_text(with("v5e, profile: ideal", "v3", base), kFile);
  CHECK(v3.profile == "ideal");
  CHECK(v3.topology.chip.matmul_efficiency == 1.0);
}
