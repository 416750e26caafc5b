// Serving on chips that differ (docs/modelling.md, "Serving on chips that differ"): a slow chip
// inside a server slows that server's steps by its factor on their compute, through the step's
// replay on the server's perturbed chips, and leaves the other servers' requests exactly as on
// a uniform slice; the perturbations a serving scenario may not have are located.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <string>

#include "cli_helpers.hpp"
#include "scenario_errors.hpp"
#include "sim/commands/scenario_run.hpp"
#include "sim/engine/serving_costs.hpp"
#include "sim/report/serving_report.hpp"
#include "sim/scenario/scenario.hpp"
#include "topology/sub_mesh.hpp"
#include "whole_step_replay.hpp"

using namespace podsim;

namespace {

// Two replicas of LLaMA-3 8B (TP 2 over X) on a v5e 2x2, one a Y row; chip (0, 1) is in
// replica 1. Eight prompts of 256 tokens at time 0, four a static batch: one batch a server.
const std::string kUniform = R"(version: 1
hardware: {preset: v5e}
topology: {mesh: {X: 2, Y: 2}}
workload:
  kind: serving
  model: llama3-8b
  weights: int8
  kv_cache: int8
  policy: static
  max_batch: 4
  prompt_buckets: [256]
  parallelism: {model: [X], replica: [Y]}
  requests:
    poisson: {rate: "inf /s", count: 8, prompt_tokens: 256, output_tokens: 16}
)";
constexpr double kSlowdown = 2.5;
const std::string kSlowChip = "perturbations:\n  - chips: [0, 1]\n    compute_slowdown: 2.5\n";

// The step's compute on one chip of the server, as the uniform pricing has it: L layers of
// attention and MLP, then the unembedding, and the ReduceScatters' additions on the core
// (the preset's real profile reduces on the TensorCore).
double step_compute_s(const ServingWorkload& w, const StepShape& shape) {
  const StepCompute c = chip_step_compute(w.model, w.generate, w.generate_topology, shape);
  double reductions = 0;
  for (const auto& op : inference_step_program(w.model, w.generate, w.generate_topology, shape))
    if (op.role == OpRole::CollectiveReduction) reductions += op.compute().compute_s;
  return w.model.layers * (c.attention_s + c.mlp_s) + c.unembed_s + reductions;
}

class Records : public ServingSink {
 public:
  void request(const RequestRecord& r) override { by_id[r.request.id] = r; }
  std::map<int, RequestRecord> by_id;
};

}  // namespace

TEST_CASE("a slow chip's server: each step grows by (f - 1) x its compute, through the replay", "[serving][perturbations]") {
  const Scenario s = load_scenario_text(kUniform + kSlowChip, "slow.yaml");
  const ServingWorkload& w = s.serving();
  TopologySpec server = w.generate_topology;
  server.perturbations = sub_mesh_perturbations(s.topology, {0}, {0, 1});
  REQUIRE(server.perturbations.size() == 1);
  CHECK(sub_mesh_perturbations(s.topology, {0}, {0, 0}).empty());   // replica 0 holds no slow chip
  ServingCostModel uniform(w.model, server_role(w.generate_topology, w.prefill),
                           server_role(w.generate_topology, w.generate), {});
  ServingCostModel slow(w.model, server_role(server, w.prefill), server_role(server, w.generate), {});
  for (ServingCostModel* costs : {&uniform, &slow}) costs->prepare(w.config, w.requests, true);
  CHECK(slow.replays_every_step());
  CHECK_FALSE(uniform.replays_every_step());
  // Every compute op of a blocking step is followed by a collective over both chips, so the
  // slow chip's compute is on the path of every op: f x compute + the same collectives.
  const double prefill_u = uniform.prefill_s(4, 256, 0), prefill_p = slow.prefill_s(4, 256, 0);
  const double prefill_compute = step_compute_s(w, prefill_shape(4, 256, 0));
  INFO("prefill: uniform " << prefill_u << " s, slow " << prefill_p << " s, compute " << prefill_compute << " s");
  CHECK(prefill_p == Approx(prefill_u + (kSlowdown - 1) * prefill_compute).epsilon(podsim_test::kExact).margin(1e-9));
  // A decode step's compute is short beside its collectives' latency, and part of one
  // collective can pass while the slow chip is late (measured: 0.64 us of 5.7 ms, the same for
  // f from 1.5 to 8): each further unit of f adds the compute exactly, and the step is within
  // one block's collectives of f x compute + the uniform collectives.
  StepShape decode = decode_shape(4, 0);
  decode.attended_tokens = decode.kv_tokens = 4 * 260;
  const double decode_u = uniform.decode_s(4, 4 * 260), decode_p = slow.decode_s(4, 4 * 260);
  TopologySpec slower = server;
  slower.perturbations[0].compute_slowdown = 2 * kSlowdown;
  ServingCostModel slower_costs(w.model, server_role(slower, w.prefill), server_role(slower, w.generate), {});
  slower_costs.prepare(w.config, w.requests, true);
  const double decode_2p = slower_costs.decode_s(4, 4 * 260);
  const double decode_compute = step_compute_s(w, decode);
  const double block_collectives = (decode_u - decode_compute) / (2 * w.model.layers);
  INFO("decode: uniform " << decode_u << " s, slow " << decode_p << " s, twice as slow " << decode_2p << " s, compute "
                          << decode_compute << " s");
  CHECK(decode_2p - decode_p == Approx(kSlowdown * decode_compute).epsilon(podsim_test::kExact).margin(1e-9));
  CHECK(std::fabs(decode_p - (decode_u + (kSlowdown - 1) * decode_compute)) <= block_collectives);
  CHECK(slow.steps_replayed() == 2);
}

TEST_CASE("a slow chip's server: the other server serves as on a uniform slice, this one slower by its compute",
          "[serving][perturbations]") {
  const Scenario uniform = load_scenario_text(kUniform, "uniform.yaml");
  const Scenario slow = load_scenario_text(kUniform + kSlowChip, "slow.yaml");
  Records u, p;
  run_serving(uniform, &u);
  const ServingRun run = run_serving(slow, &p);
  REQUIRE(run.server_costs.size() == 2);
  CHECK_FALSE(run.server_costs[0]);
  REQUIRE(run.server_costs[1]);
  REQUIRE(p.by_id.size() == 8);
  const double prefill_compute = step_compute_s(slow.serving(), prefill_shape(4, 256, 0));
  int on_slow = 0;
  for (const auto& [id, r] : p.by_id) {
    const RequestRecord& same = u.by_id.at(id);
    INFO("request " << id << " on server " << r.server);
    REQUIRE(r.server == same.server);
    if (r.server == 0) {
      CHECK(r.first_token_s == same.first_token_s);
      CHECK(r.end_s == same.end_s);
    } else {
      ++on_slow;
      CHECK(r.first_token_s == Approx(same.first_token_s + (kSlowdown - 1) * prefill_compute).epsilon(1e-9));
      CHECK(r.end_s > same.end_s);
    }
  }
  CHECK(on_slow == 4);
}

TEST_CASE("the shipped slow-chip scenario: replica 1's first tokens later by its prefill's compute, replica 0's as "
          "on a uniform slice", "[serving][perturbations][scenario]") {
  const std::string path = podsim_test::source_path("scenarios/serving_llama3_8b_slow_chip_replicas_v5e_2x2.yaml");
  const Scenario slow = load_scenario(path);
  const Scenario uniform = load_scenario(path, {{"perturbations", "[]"}});
  REQUIRE(uniform.topology.perturbations.empty());
  Records u, p;
  run_serving(uniform, &u);
  run_serving(slow, &p);
  const double f = slow.topology.perturbations.at(0).compute_slowdown;
  const double prefill_compute = step_compute_s(slow.serving(), prefill_shape(4, 256, 0));
  for (const auto& [id, r] : p.by_id) {
    INFO("request " << id << " on server " << r.server);
    if (r.server == 0) CHECK(r.end_s == u.by_id.at(id).end_s);
    else CHECK(r.first_token_s == Approx(u.by_id.at(id).first_token_s + (f - 1) * prefill_compute).epsilon(1e-9));
  }
}

TEST_CASE("sub-mesh perturbations: boxes at the server's position, links along its own axes", "[serving][perturbations]") {
  TopologySpec slice;
  slice.axes = {{"X", 4}, {"Y", 2}, {"Z", 2}};
  Perturbation chips;
  chips.name = "slow";
  chips.chips = {ChipBox{{{1, 2}, {1, 1}, {0, 1}}, {0, 0}}};
  chips.compute_slowdown = 2;
  Perturbation along_x = chips, along_y = chips;
  along_x.kind = along_y.kind = PerturbationKind::Links;
  along_x.axis = 0;
  along_y.axis = 1;
  slice.perturbations = {chips, along_x, along_y};
  // Servers over X and Z, replicas over Y: the one at Y = 1 keeps the X and Z ranges.
  const auto at_one = sub_mesh_perturbations(slice, {0, 2}, {0, 1, 0});
  REQUIRE(at_one.size() == 2);   // the link along Y joins two replicas: dropped
  CHECK(at_one[0].chips == std::vector<ChipBox>{ChipBox{{{1, 2}, {0, 1}}, {0, 0}}});
  CHECK(at_one[1].kind == PerturbationKind::Links);
  CHECK(at_one[1].axis == 0);
  CHECK(sub_mesh_perturbations(slice, {0, 2}, {0, 0, 0}).empty());
  Perturbation nic = chips;
  nic.kind = PerturbationKind::Nics;
  slice.perturbations = {nic};
  CHECK_THROWS_AS(sub_mesh_perturbations(slice, {0, 2}, {0, 1, 0}), std::invalid_argument);
}

TEST_CASE("serving perturbations: bad input located", "[serving][perturbations][scenario]") {
  using podsim_test::require_error;
  SECTION("a chip outside the mesh") {
    const auto text = kUniform + "perturbations:\n  - chips: [0, 2]\n    compute_slowdown: 2\n";
    const auto error = podsim_test::error_from(text);
    INFO(error.what());
    CHECK(error.where().line == podsim_test::line_of(text, "chips: [0, 2]"));
    CHECK(error.key().rfind("perturbations[0].chips", 0) == 0);
    CHECK(podsim_test::contains(error.what(), "bad.yaml:"));
  }
  SECTION("a NIC") {
    const auto text = kUniform + "perturbations:\n  - nics: {host: 0}\n    bandwidth_scale: 0.5\n";
    require_error(text, "perturbations[0].nics", "{host: 0}", "nics: {host: 0}");
    CHECK(podsim_test::contains(podsim_test::error_from(text).what(), "not modelled per server"));
  }
  SECTION("stragglers") {
    const auto text = kUniform + "perturbations:\n  - stragglers: {probability: 0.1, compute_slowdown: 2}\n";
    require_error(text, "perturbations[0].stragglers", "{probability: 0.1, compute_slowdown: 2}", "stragglers:");
  }
  SECTION("disaggregated serving") {
    const std::string text = R"(version: 1
hardware: {preset: v5e}
topology: {mesh: {X: 2, Y: 2}}
perturbations:
  - chips: [0, 1]
    compute_slowdown: 2
workload:
  kind: serving
  model: llama3-8b
  weights: int8
  kv_cache: int8
  policy: disaggregated
  prefill: {servers: 1}
  requests:
    poisson: {rate: "1 /s", count: 4, prompt_tokens: 256, output_tokens: 16}
)";
    const auto error = podsim_test::error_from(text);
    INFO(error.what());
    CHECK(error.key() == "perturbations");
    CHECK(podsim_test::contains(error.what(), "policy disaggregated"));
  }
}
