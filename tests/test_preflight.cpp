// The preflight estimate (sim/engine/preflight.hpp): its message counts against the plans the
// replay builds and the messages it moves, on generated collectives and programs, and the
// estimate's model against runs measured on this machine.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <optional>

#include "cli_helpers.hpp"
#include "collectives/hop_plan.hpp"
#include "meshes.hpp"
#include "program_ops.hpp"
#include "seeded_rng.hpp"
#include "sim/engine/preflight.hpp"

using namespace podsim;
using podsim_test::collective_op;
using podsim_test::source_path;

namespace {

// A small pod: 1-3 axes (v5e: 1-2) of 1-8 chips, each wrapped or not, 1-3 slices.
TopologySpec generated_pod(podsim_test::Rng& rng) {
  TopologySpec t;
  const bool v5e = rng.chance(0.5);
  t.chip = *find_chip_preset(v5e ? "v5e" : "v5p");
  const int axes = 1 + rng.below(v5e ? 2 : 3);   // a v5e is a 2D torus
  const char* names[] = {"X", "Y", "Z"};
  for (int a = 0; a < axes; ++a) t.axes.push_back({names[a], 1 + rng.below(8), rng.chance(0.5)});
  t.slices = rng.chance(0.3) ? 2 + rng.below(2) : 1;
  return t;
}

// A collective over a random subset of the axes (some as slices of an axis), maybe over DCN.
ProgramOp generated_collective(podsim_test::Rng& rng, const TopologySpec& t, int index) {
  const CollectiveKind kinds[] = {CollectiveKind::AllGather, CollectiveKind::ReduceScatter, CollectiveKind::AllReduce,
                                  CollectiveKind::AllToAll};
  const CollectiveKind kind = kinds[rng.below(4)];
  std::vector<int> axes;
  for (int a = 0; a < static_cast<int>(t.axes.size()); ++a)
    if (rng.chance(0.6)) axes.push_back(a);
  ProgramOp op = collective_op("op" + std::to_string(index), kind, axes, 1e6 * (1 + rng.below(64)), rng.chance(0.8));
  if (kind != CollectiveKind::AllToAll && rng.chance(0.3)) {
    // A block of the axis (inner) or the ring over blocks (outer), where the length factors.
    for (int a : axes) {
      const int n = t.axes[a].size;
      std::vector<int> divisors;
      for (int d = 1; d <= n; ++d)
        if (n % d == 0) divisors.push_back(d);
      const int block = divisors[rng.below(static_cast<int>(divisors.size()))];
      op.collective().slices.push_back(rng.chance(0.5) ? AxisSlice{1, block} : AxisSlice{block, n / block});
    }
  }
  if (kind == CollectiveKind::AllToAll && rng.chance(0.4)) {
    // Uneven blocks (MoE routing), a fifth of them empty.
    long long g = 1;
    for (int a : axes) g *= t.axes[a].size;
    op.collective().bytes = 0;
    for (long long k = 0; k < g * g; ++k) {
      op.collective().pair_bytes.push_back(rng.chance(0.2) ? 0.0 : 1e3 * (1 + rng.below(100)));
      op.collective().bytes += op.collective().pair_bytes.back();
    }
  }
  if (kind != CollectiveKind::AllToAll && t.slices > 1 && rng.chance(0.5)) {
    op.collective().over_dcn = true;
    op.collective().dcn_algorithm = rng.chance(0.5) ? DcnAlgorithm::Hierarchical : DcnAlgorithm::FlatRing;
  }
  op.repeat = 1 + rng.below(3);
  return op;
}

}  // namespace

TEST_CASE("preflight: counted messages equal the planned ones on generated collectives", "[preflight]") {
  const uint64_t seed = static_cast<uint64_t>(podsim_test::env_int("PODSIM_PREFLIGHT_SEED", 20261124));
  const int cases = podsim_test::env_int("PODSIM_PREFLIGHT_CASES", 400);
  for (int c = 0; c < cases; ++c) {
    auto rng = podsim_test::case_rng(seed, c);
    const TopologySpec pod = generated_pod(rng);
    const ProgramOp op = generated_collective(rng, pod, 0);
    const bool full = rng.chance(0.5);
    const auto reduction = reduce_program(pod, {}, {op}, full ? Fidelity::Full : Fidelity::Auto);
    const Topology simulated(reduction.reduced);
    INFO("case " << c << " (PODSIM_PREFLIGHT_CASE), " << to_string(op.collective().kind) << " on "
                 << simulated.chip_count() << " simulated chips");
    EndpointRegistry registry;
    for (ChipId chip = 0; chip < simulated.chip_count(); ++chip) registry.get(chip, Channel::of(Channel::Kind::Chip), {});
    long long planned = -1;
    try {
      planned = plan_collective(simulated, reduction.real, op.collective(), registry).messages;
    } catch (const std::invalid_argument&) {
      CHECK_THROWS_AS(count_messages(simulated, reduction.real, op.collective()), std::invalid_argument);
      continue;
    }
    CHECK(count_messages(simulated, reduction.real, op.collective()) == planned);
  }
}

TEST_CASE("preflight: the estimate counts the messages and spans a run moves and records", "[preflight]") {
  // Whole programs run on SimGrid: the replay's own count of messages (every repetition) is
  // what the estimate predicts, exactly.
  const uint64_t seed = static_cast<uint64_t>(podsim_test::env_int("PODSIM_PREFLIGHT_SEED", 20261124));
  for (int c = 0; c < 30; ++c) {
    auto rng = podsim_test::case_rng(seed + 1, c);
    const TopologySpec pod = generated_pod(rng);
    Program program;
    const int ops = 1 + rng.below(4);
    for (int i = 0; i < ops; ++i) {
      program.push_back(generated_collective(rng, pod, i));
      if (i > 0) program.back().after = {i - 1};
    }
    const Fidelity fidelity = rng.chance(0.5) ? Fidelity::Full : Fidelity::Auto;
    INFO("case " << c);
    std::optional<RunResult> result;
    try {
      RunOptions options;
      options.fidelity = fidelity;
      result.emplace(run_program(pod, {}, program, options));
    } catch (const std::invalid_argument&) {
      continue;   // AllToAll over DCN: refused by both
    }
    const RunResult& run = *result;
    const auto estimate = estimate_simulation(pod, {}, program, fidelity);
    CHECK(estimate.simulated_chips == run.simulated.chip_count());
    CHECK(estimate.messages == static_cast<long long>(run.replay.messages));
    CHECK(estimate.spans == static_cast<long long>(run.replay.spans.size()));
  }
}

namespace {

podsim_test::CommandResult run_yaml(const std::string& name, const std::string& text, const std::string& flags = "") {
  const auto dir = podsim_test::fresh_dir(name);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "s.yaml") << text;
  return podsim_test::run_podsim("run " + (dir / "s.yaml").string() + " -o " + (dir / "out").string() + " " + flags);
}

const std::string kSlices = R"(version: 1
hardware: {preset: v5e}
topology: {mesh: {X: 4, Y: 4}, slices: 15625}
workload:
  kind: collectives
  operations:
    - {name: a, kind: all_reduce, axes: [X, Y], dcn: true, bytes: "1 GiB"}
)";

}  // namespace

TEST_CASE("preflight: a run beyond the machine is refused before it starts, naming the key", "[preflight]") {
  SECTION("15,625 slices in full: a DCN ring of 1.6e10 messages, 43 h and hundreds of GB") {
    // (The default fidelity simulates 2 slices of them: 0.7 s.)
    const auto r = run_yaml("pf-slices", kSlices, "--fidelity full");
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("s.yaml:3:") != std::string::npos);
    CHECK(r.err.find("key 'topology.slices': value '15625'") != std::string::npos);
    CHECK(r.err.find("limit on memory (--max-memory)") != std::string::npos);   // 1.6e10 DCN messages held
  }
  SECTION("a 1M-chip AllToAll: 8e6 blocks whose routes need more memory than the machine has") {
    const auto r = run_yaml("pf-a2a", R"(version: 1
hardware: {preset: v5p}
topology: {mesh: {X: 100, Y: 100, Z: 100}}
workload:
  kind: collectives
  operations:
    - {name: shuffle, kind: all_to_all, axes: [X, Y, Z], bytes: "1 GiB"}
)");
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("key 'workload.operations[0]': value 'shuffle'") != std::string::npos);
    CHECK(r.err.find("(--max-memory)") != std::string::npos);
  }
  SECTION("a million microbatches: the op timings dominate") {
    const auto r = run_yaml("pf-microbatches", R"(version: 1
hardware: {preset: v5p}
topology: {mesh: {X: 4}, wraparound: {X: false}}
workload:
  kind: training
  model: {preset: llama2-7b, layers: 8, vocab: 256}
  batch_tokens: 4096000000
  sequence_length: 1024
  microbatches: 1000000
  parallelism: {pipeline: X, schedule: 1f1b}
)", "--max-time \"60 s\"");
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("s.yaml:9:") != std::string::npos);
    CHECK(r.err.find("key 'workload.microbatches': value '1000000'") != std::string::npos);
  }
  SECTION("the limits are the flags': a small run under a tiny limit is refused, bad limits are input errors") {
    const std::string small = source_path("scenarios/v5e_8x4_allgather_y.yaml");
    const auto dir = podsim_test::fresh_dir("pf-small");
    CHECK(podsim_test::run_podsim("run " + small + " -o " + dir.string()).exit_code == 0);
    const auto tight = podsim_test::run_podsim("run " + small + " -o " + dir.string() + " --max-memory \"1 MiB\"");
    CHECK(tight.exit_code == 2);
    CHECK(tight.err.find("1 MiB limit on memory") != std::string::npos);
    const auto bad = podsim_test::run_podsim("run " + small + " -o " + dir.string() + " --max-time lots");
    CHECK(bad.exit_code == 2);
    CHECK(bad.err.find("--max-time") != std::string::npos);
  }
}

TEST_CASE("preflight: the estimate is within a factor of 3 of measured runs", "[preflight]") {
  // Peak memory measured on the reference machine (RSS of the whole run; docs/modelling.md,
  // "Preflight"), against the estimate: a model, so a band, but one that fails if a term goes
  // missing (no AllToAll term: 12^3 would be 0.05 GB).
  struct Measured {
    const char* mesh;
    CollectiveKind kind;
    Fidelity fidelity;
    double rss_bytes;
  };
  const Measured cases[] = {{"12x12x12", CollectiveKind::AllToAll, Fidelity::Auto, 94e6},
                            {"16x16x16", CollectiveKind::AllToAll, Fidelity::Auto, 211e6},
                            {"16x16", CollectiveKind::AllToAll, Fidelity::Full, 325e6},
                            {"16x16x16", CollectiveKind::AllGather, Fidelity::Full, 235e6}};
  // A ring across 1,000 slices of 4x4 (over DCN), the slices kept whole: 2.5 GB measured. (A
  // slow box over all of slice 0 keeps them whole, as it did when slices were never reduced;
  // a collectives program computes nothing, so it changes no timing.)
  {
    TopologySpec pod = podsim_test::v5e_mesh({4, 4});
    pod.slices = 1000;
    Perturbation slow;
    slow.name = "slice0";
    slow.compute_slowdown = 2;
    slow.chips.push_back({{{0, 3}, {0, 3}}, {0, 0}});
    pod.perturbations = {slow};
    ProgramOp op = collective_op("op", CollectiveKind::AllReduce, {0, 1}, 1 << 30);
    op.collective().over_dcn = true;
    const auto e = estimate_simulation(pod, {}, {op}, Fidelity::Auto);
    CHECK(e.memory_bytes > 2.5e9 / 3);
    CHECK(e.memory_bytes < 2.5e9 * 3);
  }
  for (const auto& m : cases) {
    INFO(m.mesh << " " << to_string(m.kind));
    const std::string mesh = m.mesh;
    std::vector<int> sizes;
    for (size_t at = 0; at < mesh.size();) {
      const size_t x = mesh.find('x', at);
      sizes.push_back(std::stoi(mesh.substr(at, x - at)));
      at = x == std::string::npos ? mesh.size() : x + 1;
    }
    const TopologySpec pod = sizes.size() == 3 ? podsim_test::v5p_mesh(sizes) : podsim_test::v5e_mesh(sizes);
    std::vector<int> axes = {0};
    if (m.kind == CollectiveKind::AllToAll)
      for (int a = 1; a < static_cast<int>(sizes.size()); ++a) axes.push_back(a);
    const auto e = estimate_simulation(pod, {}, {collective_op("op", m.kind, axes, 1 << 30)}, m.fidelity);
    CHECK(e.memory_bytes > m.rss_bytes / 3);
    CHECK(e.memory_bytes < m.rss_bytes * 3);
  }
}

TEST_CASE("preflight: a program too long to build is refused from its counts, naming the key", "[preflight][adversarial]") {
  const std::string scenario = source_path("scenarios/training_llama2_13b_fsdp1024_tp4.yaml");
  const auto dir = podsim_test::fresh_dir("pf-layers");
  // Grew to 6.8 GB in 10 s (a billion layers) or died of std::bad_alloc (3,000,000) before the
  // preflight ran: now refused before anything is built, at the --set that gave the model.
  for (const std::string model : {"{preset: llama3-8b, layers: 1073741824, d_model: 1073741824}",
                                  "{preset: llama3-8b, layers: 3000000}"}) {
    INFO(model);
    const auto r = podsim_test::run_podsim("run " + scenario + " -o " + dir.string() + " --set 'workload.model=" + model + "'");
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("(--set workload.model=") != std::string::npos);
    CHECK(r.err.find("key 'workload.model.layers'") != std::string::npos);
    CHECK(r.err.find("its program alone would hold") != std::string::npos);
  }
  // Past the check from counts, the preflight proper names the layers too, not topology.mesh
  // (100,000 layers did): the same model at 2,000 layers, under a limit it exceeds.
  const auto r = podsim_test::run_podsim("run " + scenario + " -o " + dir.string() +
                                         " --set 'workload.model={preset: llama3-8b, layers: 2000}' --max-memory \"200 MiB\"");
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("key 'workload.model.layers': value '2000'") != std::string::npos);
  CHECK(r.err.find("the run would need about") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir / "summary.json"));
}
