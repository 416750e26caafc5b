// Issue 42's silent traps: inputs that loaded and ran without a word while meaning something the
// user did not. Far-off hardware overrides and meshes no cloud slice has are warnings (the loader
// collects them, `podsim run` logs them); uneven head splits and the weaker messages are errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>

#include "cli_helpers.hpp"
#include "scenario_errors.hpp"
#include "sim/scenario/far_overrides.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/scenario/units.hpp"
#include "topology/chip_spec.hpp"
#include "topology/cloud_slices.hpp"

using namespace podsim;
using namespace podsim_test;

namespace {

const std::string kTraining = R"(version: 1
hardware:
  preset: v5p
topology:
  mesh: {X: 4, Y: 4, Z: 4}
workload:
  kind: training
  model: llama3-70b
  batch_tokens: 1048576
  sequence_length: 8192
  parallelism:
    data: [X, Y]
    fsdp: true
    tensor: Z
)";

std::filesystem::path write_scenario(const std::string& name, const std::string& text) {
  const auto path = made_dir("traps-inputs-" + name) / name;
  std::ofstream(path) << text;
  return path;
}

bool warned(const Scenario& s, const std::string& part) {
  for (const auto& w : s.warnings)
    if (contains(w, part)) return true;
  return false;
}

}  // namespace

TEST_CASE("an override far from its preset is a warning naming both, and bits for bytes", "[scenario][traps]") {
  const double ici = find_chip_preset("v5p")->ici_bandwidth_Bps;
  // "100Gbps" is 12.5e9 B/s: 8 times it is within 20% of the preset, so it reads as bits.
  const double value = 100e9 / 8;
  REQUIRE(ici / value > kFarOverrideFactor);
  REQUIRE(std::abs(value * 8 / ici - 1) <= kBitsTolerance);
  const auto bits = far_override_warning("hardware.overrides.ici_bandwidth", value, ici, "v5p", OverrideQuantity::Bandwidth);
  REQUIRE(bits);
  INFO(*bits);
  char factor[32];
  std::snprintf(factor, sizeof factor, "%.3gx below", ici / value);
  CHECK(contains(*bits, "hardware.overrides.ici_bandwidth is " + human_bandwidth(value) + ", " + factor +
                            " the v5p preset's " + human_bandwidth(ici)));
  CHECK(contains(*bits, "it looks like bits where bytes were meant (100 Gbit/s is " + human_bandwidth(value) + ")"));
  // The reverse slip, and a far value no factor of 8 explains.
  const auto bytes = far_override_warning("k", ici * 8, ici, "v5p", OverrideQuantity::Bandwidth);
  REQUIRE(bytes);
  CHECK(contains(*bytes, "8x above"));
  CHECK(contains(*bytes, "bytes where bits were meant"));
  const auto far = far_override_warning("k", ici * 20, ici, "v5p", OverrideQuantity::Bandwidth);
  REQUIRE(far);
  CHECK_FALSE(contains(*far, "bits"));
  // FLOP rates have no bits; within the factor, and a preset without the figure, say nothing.
  CHECK_FALSE(contains(*far_override_warning("k", 8e15, 1e15, "v5p", OverrideQuantity::Flops), "bits"));
  CHECK_FALSE(far_override_warning("k", ici * kFarOverrideFactor, ici, "v5p", OverrideQuantity::Bandwidth));
  CHECK_FALSE(far_override_warning("k", ici / kFarOverrideFactor, ici, "v5p", OverrideQuantity::Bandwidth));
  CHECK_FALSE(far_override_warning("k", 1e15, 0, "v5p", OverrideQuantity::Flops));

  // The loader keeps the value and the warning, located at the override.
  const std::string text = replaced_in(kTraining, "  preset: v5p\n", "  preset: v5p\n  overrides:\n    ici_bandwidth: \"100Gbps\"\n");
  const Scenario s = load_scenario_text(text, kScenarioFile);
  CHECK(s.topology.chip.ici_bandwidth_Bps == value);
  REQUIRE(s.warnings.size() == 1);
  CHECK(contains(s.warnings[0], kScenarioFile + ":" + std::to_string(line_of(text, "ici_bandwidth")) + ": "));
  CHECK(contains(s.warnings[0], "bits where bytes"));
  CHECK(load_scenario_text(kTraining, kScenarioFile).warnings.empty());
}

TEST_CASE("podsim run prints a far override's warning on stderr and runs", "[cli][traps]") {
  const auto path = write_scenario(
      "far-override.yaml",
      R"(version: 1
hardware: {preset: v5e, overrides: {ici_bandwidth: "45Gbps"}}
topology: {mesh: {X: 4, Y: 4}}
workload:
  kind: collectives
  operations:
    - {name: ag, kind: all_gather, axes: [X], array: "bf16[1024,4096]", sharding: "[B_X, D]"}
)");
  const auto r = run_podsim("run " + path.string() + " -o " + fresh_dir("far-override").string());
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(contains(r.err, "podsim: warning: " + path.string() + ":2: hardware.overrides.ici_bandwidth is"));
  CHECK(contains(r.err, "it looks like bits where bytes were meant"));
}

TEST_CASE("tensor parallelism that splits heads unevenly is refused, a mesh no cloud slice has is a warning",
          "[scenario][traps]") {
  // Issue 42: v5p 3x5x7, tensor over the 7 (llama3-70b's 64 query heads over 7 chips).
  const std::string odd = replaced_in(replaced_in(kTraining, "{X: 4, Y: 4, Z: 4}", "{X: 3, Y: 5, Z: 7}"),
                                      "batch_tokens: 1048576", "batch_tokens: 1966080");
  require_error(odd, "workload.parallelism.tensor", "Z", "tensor: Z");
  const std::string message = error_from(odd).what();
  CHECK(contains(message, "7 chips of tensor parallelism split the 64 query heads of llama3-70b unevenly"));
  CHECK(contains(message, "expected a degree among 1, 2, 4, 8, 16, 32, 64"));
  // 8 KV heads over 16 chips: each copied twice, as vLLM pads them; allowed.
  const std::string sixteen = replaced_in(replaced_in(kTraining, "{X: 4, Y: 4, Z: 4}", "{X: 4, Y: 4, Z: 16}"),
                                          "batch_tokens: 1048576", "batch_tokens: 131072");
  CHECK_NOTHROW(load_scenario_text(sixteen, kScenarioFile));
  // Inference's model axes split heads the same way.
  const std::string inference = R"(version: 1
hardware: {preset: v5e}
topology: {mesh: {X: 3}}
workload: {kind: inference, model: llama3-8b, batch: 1, context_length: 1024, parallelism: {model: [X]}}
)";
  require_error(inference, "workload.parallelism.model", "[X]", "parallelism");

  // The mesh: 3x5x7 (with tensor over a whole-head axis) warns; listed and whole-cube shapes do not.
  const std::string data_only = replaced_in(replaced_in(odd, "    tensor: Z\n", ""), "data: [X, Y]", "data: [X, Y, Z]");
  const Scenario s = load_scenario_text(replaced_in(data_only, "batch_tokens: 1966080", "batch_tokens: 860160"),
                                        kScenarioFile);
  CHECK(warned(s, "topology.mesh 3x5x7 is no Cloud TPU v5p slice"));
  CHECK(load_scenario_text(kTraining, kScenarioFile).warnings.empty());
  CHECK(cloud_offers_shape("v5p", {4, 4, 4}) == true);
  CHECK(cloud_offers_shape("v5p", {2, 2}) == true);          // v5p-8, 2x2x1
  CHECK(cloud_offers_shape("v5p", {8, 12, 16}) == true);     // whole cubes
  CHECK(cloud_offers_shape("v5p", {16, 20, 28}) == false);   // the whole pod: beyond the largest job
  CHECK(cloud_offers_shape("v5e", {8, 4}) == true);
  CHECK(cloud_offers_shape("v5e", {8, 2}) == false);
  CHECK_FALSE(cloud_offers_shape("v3", {3, 5}).has_value());   // no slices listed: nothing to judge by
}

TEST_CASE("weaker messages say what was meant: tabs, bare byte counts, percentages", "[scenario][traps]") {
  // A tab in the indentation: the message points at its line and says so.
  const std::string tabbed = replaced_in(kTraining, "  kind: training", "\tkind: training");
  const InputError tab = error_from(tabbed);
  INFO(tab.what());
  CHECK(tab.where().line == line_of(tabbed, "\tkind"));
  CHECK(contains(tab.what(), "indented with a tab; YAML indents with spaces only"));
  // hbm_capacity: 95 is 95 bytes.
  const std::string bare = replaced_in(kTraining, "  preset: v5p\n", "  preset: v5p\n  overrides: {hbm_capacity: 95}\n");
  require_error(bare, "hardware.overrides.hbm_capacity", "95", "hbm_capacity");
  CHECK(contains(error_from(bare).what(), "a number without a unit is in B (95 is 95 B): give the unit, e.g. \"95 GB\""));
  // compute_slowdown: 30% means 1.3.
  const std::string percent = kTraining + "perturbations:\n  - chips: [[0, 0, 1]]\n    compute_slowdown: 30%\n";
  require_error(percent, "perturbations[0].compute_slowdown", "30%", "compute_slowdown");
  CHECK(contains(error_from(percent).what(), "30% slower is compute_slowdown: 1.3"));
}

TEST_CASE("hbm_headroom is a hardware parameter: each preset's share, an override, the usable HBM",
          "[scenario][traps][memory]") {
  for (const ChipSpec& chip : chip_presets()) {
    INFO(chip.name);
    CHECK(chip.hbm_headroom == 0.05);   // between the runtime's reservation and measured runs (chip_presets.cpp)
    CHECK(chip.usable_hbm_bytes() == chip.hbm_bytes * (1 - 0.05));
  }
  const std::string zero = replaced_in(kTraining, "  preset: v5p\n", "  preset: v5p\n  overrides: {hbm_headroom: 0}\n");
  CHECK(load_scenario_text(zero, kScenarioFile).topology.chip.usable_hbm_bytes() == 96e9);
  const std::string too_much = replaced_in(kTraining, "  preset: v5p\n", "  preset: v5p\n  overrides: {hbm_headroom: 0.95}\n");
  require_error(too_much, "hardware.overrides.hbm_headroom", "0.95", "hbm_headroom");
  CHECK(human_hbm(96e9, 0.05) == human_bytes(96e9) + " HBM less 5% headroom");
  CHECK(human_hbm(96e9, 0) == human_bytes(96e9) + " HBM");
}
