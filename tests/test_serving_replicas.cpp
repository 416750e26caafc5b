// Replicas inside a serving slice (parallelism.replica): each is a server on the sub-mesh of the
// other axes. No collective crosses a replica axis, so a slice of R replicas serves exactly as R
// slices of that sub-mesh do, request by request.
#include <catch2/catch.hpp>

#include "cli_helpers.hpp"
#include "scenario_errors.hpp"
#include "sim/commands/scenario_run.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/scenario/units.hpp"
#include "workloads/model_spec.hpp"
#include "topology/sub_mesh.hpp"

using namespace podsim;
using namespace podsim_test;

namespace {

struct Records : ServingSink {
  std::vector<RequestRecord> requests;
  void request(const RequestRecord& r) override { requests.push_back(r); }
};

std::vector<RequestRecord> served(const Scenario& s) {
  Records records;
  run_serving(s, &records);
  return records.requests;
}

const std::string kServing = R"(version: 1
hardware: {preset: v5e}
topology: {mesh: {X: 8, Y: 2}}
workload:
  kind: serving
  model: llama3-70b
  weights: int8
  kv_cache: int8
  parallelism: {model: [X], replica: [Y]}
  requests:
    poisson: {rate: "4 /s", count: 60, prompt_tokens: [256, 2048], output_tokens: [16, 128], seed: 3}
)";

}  // namespace

TEST_CASE("serving replicas inside a slice serve as slices of their own would, request by request",
          "[serving][replicas]") {
  // X: 8, Y: 2 as two replicas over Y, against servers: 2 on an X: 8 mesh. Static and
  // continuous batching; every request's prefill start, first token and end equal exactly.
  for (const char* policy : {"continuous", "static"}) {
    INFO(policy);
    const std::string inside = replaced_in(kServing, "  requests:", std::string("  policy: ") + policy + "\n  requests:");
    const std::string apart = replaced_in(replaced_in(inside, "{X: 8, Y: 2}", "{X: 8}"),
                                          "{model: [X], replica: [Y]}", "{model: [X]}\n  servers: 2");
    const Scenario a = load_scenario_text(inside, kScenarioFile);
    const Scenario b = load_scenario_text(apart, kScenarioFile);
    CHECK(a.serving().config.servers == 2);
    CHECK(a.serving().replicas_per_slice == 2);
    CHECK(a.serving().config.slots == b.serving().config.slots);
    const auto ra = served(a), rb = served(b);
    REQUIRE(ra.size() == rb.size());
    for (size_t i = 0; i < ra.size(); ++i) {
      INFO("request " << i);
      CHECK(ra[i].server == rb[i].server);
      CHECK(ra[i].prefill_start_s == rb[i].prefill_start_s);
      CHECK(ra[i].first_token_s == rb[i].first_token_s);
      CHECK(ra[i].end_s == rb[i].end_s);
    }
  }
}

TEST_CASE("serving replicas: the server's mesh, the servers counted, and the axes renumbered", "[serving][replicas]") {
  // Replicas over X (the first axis): the server's mesh is Y alone and the model axis becomes 0.
  const Scenario s = load_scenario_text(
      replaced_in(replaced_in(kServing, "{X: 8, Y: 2}", "{X: 2, Y: 8}"), "{model: [X], replica: [Y]}",
                  "{model: [Y], replica: [X]}\n  servers: 3"),
      kScenarioFile);
  CHECK(s.serving().config.servers == 6);   // 3 slices x 2 replicas
  REQUIRE(s.serving().generate_topology.axes.size() == 1);
  CHECK(s.serving().generate_topology.axes[0].name == "Y");
  CHECK(s.serving().generate_topology.axes[0].size == 8);
  CHECK(s.serving().generate.model_axes == std::vector<int>{0});
  CHECK(s.topology.chips_per_slice() == 16);   // the slice itself is unchanged
  // Disaggregated: prefill servers on the workload's slice take its replicas too.
  const Scenario d = load_scenario_text(
      replaced_in(kServing, "  requests:", "  policy: disaggregated\n  prefill: {servers: 2}\n  requests:"), kScenarioFile);
  CHECK(d.serving().config.prefill_servers == 4);
  CHECK(d.serving().config.servers == 2);
  CHECK(d.serving().prefill_server_topology.chips_per_slice() == 8);
}

TEST_CASE("a sub-mesh keeps its axes' links and each chip's DCN share", "[topology][replicas]") {
  TopologySpec slice;
  slice.chip = *find_chip_preset("v5e");   // host 4x2, 8 chips
  slice.axes = {{"X", 8, false}, {"Y", 2, false}};
  const TopologySpec line = sub_mesh(slice, {0});
  REQUIRE(line.axes.size() == 1);
  CHECK(line.axes[0].size == 8);
  CHECK(line.chip.host_shape == std::vector<int>{4});
  CHECK(line.chip.chips_per_host == 4);
  // Per chip: 2.5e10 / 8 in the slice and on the sub-mesh.
  CHECK(line.chip.dcn_bandwidth_per_host_Bps / line.chip.chips_per_host == Approx(2.5e10 / 8));
  CHECK_THROWS(sub_mesh(slice, {}));
  CHECK_THROWS(sub_mesh(slice, {1, 0}));
}

TEST_CASE("serving replicas: impossible layouts are located errors", "[serving][replicas][scenario]") {
  // Model and replica axes that leave an axis out.
  const std::string three =
      replaced_in(replaced_in(kServing, "{preset: v5e}", "{preset: v5p}"), "{X: 8, Y: 2}", "{X: 4, Y: 2, Z: 2}");
  const std::string short_of = replaced_in(three, "{model: [X], replica: [Y]}", "{model: [X], replica: [Y]}");
  require_error(short_of, "workload.parallelism", "{model: [X], replica: [Y]}", "parallelism:");
  CHECK(contains(error_from(short_of).expected(), "not in parallelism.expert or parallelism.replica"));
  // Every axis a replica axis: no model axis left.
  const std::string none = replaced_in(kServing, "{model: [X], replica: [Y]}", "{replica: [X, Y]}");
  require_error(none, "workload.parallelism", "{replica: [X, Y]}", "parallelism:");
  // One replica's HBM must hold the weights: 70.55 GB of int8 on 4 chips of 16 GB does not.
  const std::string small = replaced_in(replaced_in(kServing, "{X: 8, Y: 2}", "{X: 4, Y: 4}"),
                                        "{model: [X], replica: [Y]}", "{model: [X], replica: [Y]}");
  CHECK(contains(error_from(small).what(), "the weights alone"));
  // More servers than the limit once the replicas multiply them.
  const std::string many = replaced_in(kServing, "{model: [X], replica: [Y]}", "{model: [X], replica: [Y]}\n  servers: 60000");
  require_error(many, "workload.servers", "60000", "servers:");
  CHECK(contains(error_from(many).expected(), "at most 50000 slices"));
  // A prefill batch whose KV bytes overflow an int when multiplied as ints (10^7 x 2048 tokens):
  // the HBM check, not undefined behaviour (the sanitizer job's fuzzer found it).
  const std::string huge = replaced_in(kServing, "  requests:",
                                       "  policy: disaggregated\n  prefill_batch: 10000000\n  requests:");
  require_error(huge, "workload.prefill_batch", "10000000", "prefill_batch:");
  CHECK(contains(error_from(huge).what(), "a prefill server needs"));
  // Likewise max_batch beyond what HBM holds, with a large product of slots and context.
  const std::string slots = replaced_in(kServing, "  requests:", "  max_batch: 10000000\n  requests:");
  require_error(slots, "workload.max_batch", "10000000", "max_batch:");
}

TEST_CASE("serving weights beyond a server's HBM are named, not the requests' lengths", "[serving][scenario]") {
  // Issue 42: llama3-405b in bf16 on v6e-8 was blamed on output_tokens ("shorter requests"), but its
  // weights alone, 2 bytes x its parameters, exceed 8 x 32e9 bytes of HBM less the headroom.
  const std::string big = replaced_in(
      replaced_in(replaced_in(replaced_in(kServing, "{preset: v5e}", "{preset: v6e}"), "{X: 8, Y: 2}", "{X: 8}"),
                  "model: llama3-70b\n  weights: int8\n  kv_cache: int8", "model: llama3-405b"),
      "{model: [X], replica: [Y]}", "{model: [X]}");
  const Scenario probe = load_scenario_text(replaced_in(big, "{preset: v6e}", "{preset: v6e, overrides: {hbm_capacity: \"1 TiB\"}}"),
                                            kScenarioFile);
  const double weights = 2.0 * podsim::param_count(probe.serving().model);
  const double usable = 8 * 32e9 * (1 - 0.05);
  REQUIRE(weights > usable);
  require_error(big, "workload.model", "llama3-405b", "model: llama3-405b");
  const std::string message = error_from(big).what();
  INFO(message);
  CHECK(contains(message, "the weights alone, " + podsim::human_bytes(weights) + " of llama3-405b in bf16"));
  CHECK(contains(message, podsim::human_hbm(8 * 32e9, 0.05)));
  CHECK(contains(message, "more than " + std::to_string(static_cast<int>(std::ceil(weights / (32e9 * 0.95)))) + " chips"));
  // int8 halves them, still too big for 8 chips; int4 quarters them and fits.
  CHECK(contains(message, "weights: int8 (" + podsim::human_bytes(weights / 2) + ", still too big)"));
  CHECK(contains(message, "weights: int4 (" + podsim::human_bytes(weights / 4) + ", fits)"));
  CHECK_FALSE(contains(message, "shorter requests"));
}
