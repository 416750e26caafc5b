// Waiting for late peers (sim/engine/peer_entries.hpp, chip_times.hpp, sim/report/chip_breakdown.hpp;
// docs/modelling.md, "Waiting for peers"): under a slow chip, what other chips spend blocked in
// a collective for it is reported apart from the collective's transfer, an op's time is what a
// chip spent on it (not the chips' skew), and the breakdowns name their chip.
#include <catch2/catch.hpp>

#include <array>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "meshes.hpp"
#include "program_ops.hpp"
#include "run_summary.hpp"
#include "sim/engine/run.hpp"

using namespace podsim;
using podsim_test::collective_op;

namespace {

ProgramOp compute_op(const std::string& name, double seconds, std::vector<int> after = {}) {
  ProgramOp op;
  op.name = name;
  op.work = ComputeWork{seconds, 0, {}, {}};
  op.after = std::move(after);
  return op;
}

void write_file(const std::filesystem::path& path, const std::string& text) { std::ofstream(path) << text; }

Perturbation slow_chip(std::vector<int> coords, double factor) {
  Perturbation p;
  p.name = "slow";
  p.kind = PerturbationKind::SlowChips;
  ChipBox box;
  for (int c : coords) box.axes.push_back({c, c});
  p.chips = {box};
  p.compute_slowdown = factor;
  return p;
}

}  // namespace

TEST_CASE("a chip entering a ring after a slow peer waits exactly the peer's lateness", "[peer_waits]") {
  // 1 ms of compute, then an AllGather over X on a v5e 4x4 (no wraparound: lines). Chip (1, 2)
  // computes 2x slower, so it enters the gather 1 ms after the others: the other three chips of
  // its X line (y = 2) wait 1 ms for it, and no chip of another line waits at all.
  auto mesh = podsim_test::v5e_mesh({4, 4});
  const Program program = {compute_op("c", 1e-3), collective_op("ag", CollectiveKind::AllGather, {0}, 64e6)};
  Program chained = program;
  chained[1].after = {0};
  const RunResult uniform = run_program(mesh, {}, chained, {});
  mesh.perturbations = {slow_chip({1, 2}, 2.0)};
  const RunResult run = run_program(mesh, {}, chained, {});
  const Topology& topo = run.topology;
  const std::array<int, 2> slow_at = {1, 2};
  const ChipId slow = topo.chip_at(0, slow_at);
  for (ChipId chip = 0; chip < topo.chip_count(); ++chip) {
    const double wait = run.wait_for_peers_s(1, 0, chip);
    INFO(topo.chip_name(chip));
    if (topo.coords(chip)[1] == 2 && chip != slow) {
      CHECK(wait == Approx(1e-3).epsilon(1e-12));
      CHECK(run.last_entry(1, 0, chip).second == slow);
    } else {
      CHECK(wait == 0);
    }
    CHECK(uniform.wait_for_peers_s(1, 0, chip) == 0);
  }
  // The compute op's time is the median chip's, 1 ms, not the 2 ms spread; the most, the slow
  // chip's 2 ms. The gather's time runs from its last entry: no longer than undisturbed.
  const OperationResult& c = run.operations[0];
  CHECK(c.time_s == Approx(1e-3).epsilon(1e-12));
  CHECK(c.chip_time_max_s == Approx(2e-3).epsilon(1e-12));
  CHECK(c.chip_time_max_chip == slow);
  const OperationResult& ag = run.operations[1];
  CHECK(ag.wait_for_peers_max_s == Approx(1e-3).epsilon(1e-12));
  CHECK(ag.wait_for_peers_median_s == 0);
  CHECK(ag.time_s <= uniform.operations[1].time_s * (1 + 1e-12));
  CHECK(ag.time_s > 0.5 * uniform.operations[1].time_s);
}

TEST_CASE("instances are the chips a collective's messages join", "[peer_waits]") {
  // Over X on a 4x4: the four X lines; over X and Y: one instance of all 16; an AllToAll over Y:
  // the four Y lines.
  const auto mesh = podsim_test::v5e_mesh({4, 4});
  Program program = {collective_op("x", CollectiveKind::AllGather, {0}, 1e6),
                     collective_op("xy", CollectiveKind::AllReduce, {0, 1}, 1e6),
                     collective_op("a2a", CollectiveKind::AllToAll, {1}, 1e6)};
  const RunResult run = run_program(mesh, {}, program, RunOptions{Fidelity::Full});
  const Topology& topo = run.topology;
  auto instance = [&](int op, ChipId chip) {
    const auto& peers = run.peers;
    return peers.instances[peers.instances_of_op[op]].of_chip[chip];
  };
  for (ChipId a = 0; a < topo.chip_count(); ++a) {
    for (ChipId b = 0; b < topo.chip_count(); ++b) {
      CHECK((instance(0, a) == instance(0, b)) == (topo.coords(a)[1] == topo.coords(b)[1]));
      CHECK(instance(1, a) == instance(1, b));
      CHECK((instance(2, a) == instance(2, b)) == (topo.coords(a)[0] == topo.coords(b)[0]));
    }
  }
}

TEST_CASE("LLaMA-3 8B on a v5p 4x4x4 with a slow chip: per-chip times and waits apart", "[peer_waits][scenario]") {
  // The review's case: FSDP over X, Y and tensor parallelism over Z, chip (1, 2, 3) 1.3x slow.
  // Before, a compute op showed 23.5x its undisturbed time (the chips' skew) and the waits for
  // the slow chip showed as Z communication.
  const std::string base =
      "version: 1\nname: slow-8b\nhardware: {preset: v5p}\ntopology: {mesh: {X: 4, Y: 4, Z: 4}}\n"
      "workload:\n  kind: training\n  model: llama3-8b\n  batch_tokens: 262144\n  sequence_length: 4096\n"
      "  parallelism: {data: [X, Y], fsdp: true, tensor: [Z]}\n";
  const std::string slow = base + "perturbations:\n  - {name: slow, chips: [1, 2, 3], compute_slowdown: 1.3}\n";
  const auto dir = podsim_test::made_dir("peer-waits-8b");
  write_file(dir / "uniform.yaml", base);
  write_file(dir / "slow.yaml", slow);
  auto run = [&](const std::string& name) {
    const auto r = podsim_test::run_podsim("run " + (dir / (name + ".yaml")).string() + " -q -o " + (dir / name).string());
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return nlohmann::json::parse(podsim_test::read_file(dir / name / "summary.json"));
  };
  const auto u = run("uniform");
  const auto s = run("slow");
  std::map<std::string, nlohmann::json> uniform_ops;
  for (const auto& op : u.at("operations")) uniform_ops[op.at("name")] = op;
  int computes = 0;
  for (const auto& op : s.at("operations")) {
    if (op.at("kind") != "compute") continue;
    const double t = uniform_ops.at(op.at("name")).at("time_s");
    INFO(op.at("name"));
    CHECK(op.at("time_s").get<double>() == Approx(t).epsilon(1e-9));
    CHECK(op.at("chip_time_max_s").get<double>() <= 1.3 * t * (1 + 1e-9));
    ++computes;
  }
  CHECK(computes > 100);
  const double step = s.at("step_time_s");
  // Chip 0 (not the slow chip): its links no busier than undisturbed, the slow chip's lateness
  // reported as its wait for peers, and the three adding up to the step.
  const auto& views = s.at("chip_views");
  REQUIRE(views.size() == 3);
  const auto& chip0 = views[0];
  CHECK(chip0.at("chip") == "s0/chip(0,0,0)");
  CHECK(chip0.at("exposed_comm_s").get<double>() <= 1.35 * u.at("exposed_comm_s").get<double>());
  CHECK(chip0.at("wait_for_peers_s").get<double>() > 0.1 * (step - u.at("step_time_s").get<double>()));
  CHECK(chip0.at("compute_time_s").get<double>() == Approx(u.at("compute_time_s").get<double>()).epsilon(1e-9));
  CHECK(chip0.at("compute_time_s").get<double>() + chip0.at("exposed_comm_s").get<double>() +
            chip0.at("wait_for_peers_s").get<double>() == Approx(step).epsilon(1e-9));
  CHECK(u.at("wait_for_peers_s").get<double>() == 0);
  CHECK(s.at("per_layer").at("attn").at("t_math_s").get<double>() ==
        Approx(u.at("per_layer").at("attn").at("t_math_s").get<double>()).epsilon(1e-9));
  // The slowest and the critical chip are the slow one: it computes 1.3x, waits for no one,
  // and its exposed communication at most the undisturbed step's: the backward's TP scatters
  // run beside its weight-gradient matmuls, which last 1.3x as long there and hide more of them
  // (at most the 0.3x more compute). The headline is the critical chip's.
  CHECK(s.at("breakdown_chip") == "s0/chip(1,2,3)");
  CHECK(s.at("exposed_comm_s").get<double>() <= 1.35 * u.at("exposed_comm_s").get<double>());
  for (int i : {1, 2}) {
    INFO(views[i].at("view"));
    CHECK(views[i].at("chip") == "s0/chip(1,2,3)");
    CHECK(views[i].at("compute_time_s").get<double>() == Approx(1.3 * u.at("compute_time_s").get<double>()).epsilon(1e-6));
    CHECK(views[i].at("exposed_comm_s").get<double>() <= 1.01 * u.at("exposed_comm_s").get<double>());
    CHECK(views[i].at("exposed_comm_s").get<double>() >=
          u.at("exposed_comm_s").get<double>() - 0.3 * u.at("compute_time_s").get<double>());
    CHECK(views[i].at("wait_for_peers_s").get<double>() < 0.01 * step);
  }
  // By category too: chip 0 waits in the FSDP gathers and the tensor-parallel collectives.
  CHECK(chip0.at("wait_for_peers_by_category_s").size() >= 2);
  // One Z link at half bandwidth instead: the ring that crosses it is slower, and that is link
  // time on its own chips (the critical chip's Z); chip 0, whose rings do not cross it, waits
  // for them and is exposed no more than undisturbed.
  const std::string link = base + "perturbations:\n  - {name: half, links: {chip: [1, 2, 3], direction: \"+Z\"}, "
                                  "bandwidth_scale: 0.5}\n";
  write_file(dir / "link.yaml", link);
  const auto l = run("link");
  const auto& link_chip0 = l.at("chip_views")[0];
  CHECK(link_chip0.at("exposed_comm_s").get<double>() <= 1.35 * u.at("exposed_comm_s").get<double>());
  CHECK(link_chip0.at("wait_for_peers_s").get<double>() > 0.5 * (l.at("step_time_s").get<double>() - u.at("step_time_s").get<double>()));
  CHECK(l.at("exposed_comm_by_axis_s").at("Z").get<double>() > 1.5 * u.at("exposed_comm_by_axis_s").at("Z").get<double>());
  // The trace draws the waits inside the collectives, naming the chip that entered last.
  const auto trace = nlohmann::json::parse(podsim_test::read_file(dir / "slow" / "trace.json"));
  int waits = 0;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.value("cat", "") != "wait_for_peers") continue;
    ++waits;
    CHECK(e.at("args").contains("last_to_enter"));
  }
  CHECK(waits > 0);
}

TEST_CASE("a perturbed pod's trace keeps chip 0, the slow chip and a sample", "[peer_waits][trace]") {
  // 512 chips, each its own class under a slow chip: the trace keeps 256 (kMaxTracedChips),
  // the slow chip among them, and says how many it left out.
  const std::string scenario =
      "version: 1\nname: capped\nhardware: {preset: v5p}\ntopology: {mesh: {X: 8, Y: 8, Z: 8}}\n"
      "perturbations:\n  - {name: slow, chips: [5, 6, 7], compute_slowdown: 1.2}\n"
      "workload:\n  kind: training\n  model: {preset: llama3-8b, layers: 1}\n  batch_tokens: 1048576\n"
      "  sequence_length: 2048\n  parallelism: {data: [X, Y, Z], fsdp: true}\n";
  const auto dir = podsim_test::made_dir("peer-waits-cap");
  write_file(dir / "capped.yaml", scenario);
  const auto r = podsim_test::run_podsim("run " + (dir / "capped.yaml").string() + " -o " + (dir / "out").string());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("256 left out") != std::string::npos);
  const auto trace = nlohmann::json::parse(podsim_test::read_file(dir / "out" / "trace.json"));
  CHECK(trace.at("otherData").at("chips_traced") == 256);
  CHECK(trace.at("otherData").at("chips_left_out") == 256);
  std::set<std::string> named;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") == "M" && e.at("name") == "thread_name") named.insert(e.at("args").at("name").get<std::string>());
  }
  CHECK(named.count("s0/chip(0,0,0) compute") == 1);
  CHECK(named.count("s0/chip(5,6,7) compute") == 1);
}

TEST_CASE("a decode step with a slow chip: the others' wait is not collective time", "[peer_waits][scenario]") {
  // LLaMA-3 70B decode on a v5e 4x2, model parallel over all 8 chips, chip (1, 1) 1.3x slow: the
  // step grows by about 0.3 of the rooflines, and chip 0 spends it waiting for the slow chip at
  // each layer's collectives, not in them.
  const auto uniform = podsim_test::run_summary("inference_llama3_70b_decode_v5e_4x2", "-q", "peer-waits-decode-u");
  const auto slow = podsim_test::run_summary("inference_llama3_70b_decode_v5e_4x2",
                                             "-q --set 'perturbations=[{chips: [1, 1], compute_slowdown: 1.3}]'",
                                             "peer-waits-decode-s");
  const double compute = uniform.at("compute_time_s");
  CHECK(uniform.at("wait_for_peers_s").get<double>() == 0);
  CHECK(slow.at("compute_time_s").get<double>() == Approx(compute).epsilon(1e-9));
  CHECK(slow.at("exposed_comm_s").get<double>() <= uniform.at("exposed_comm_s").get<double>() * (1 + 1e-9));
  CHECK(slow.at("wait_for_peers_s").get<double>() > 0.2 * compute);
  CHECK(slow.at("wait_for_peers_s").get<double>() <= 0.3 * compute * (1 + 1e-9));
  CHECK(slow.at("compute_time_s").get<double>() + slow.at("exposed_comm_s").get<double>() +
            slow.at("wait_for_peers_s").get<double>() == Approx(slow.at("decode_step_time_s").get<double>()).epsilon(1e-9));
}
