// The cases where the first symmetry reduction was silently wrong (an AllToAll overlapping
// other traffic), what the reduction records, and AllToAll honouring `bidirectional: false`.
#include <catch2/catch.hpp>

#include "meshes.hpp"
#include "program_ops.hpp"
#include "sim/engine/run.hpp"
#include "workloads/inference.hpp"
#include "workloads/model_spec.hpp"

using namespace podsim;
using podsim_test::collective_op;

namespace {

// Every chip's start and end of every op, reduced against full.
void require_same_spans(const RunResult& reduced, const RunResult& full, size_t ops) {
  REQUIRE(reduced.simulated.chip_count() < full.simulated.chip_count());
  for (ChipId chip = 0; chip < full.topology.chip_count(); ++chip) {
    for (size_t op = 0; op < ops; ++op) {
      INFO("chip " << full.topology.chip_name(chip) << " op " << op);
      REQUIRE(reduced.span(op, 0, chip).start_s == Approx(full.span(op, 0, chip).start_s).epsilon(1e-9));
      REQUIRE(reduced.span(op, 0, chip).end_s == Approx(full.span(op, 0, chip).end_s).epsilon(1e-9));
    }
  }
}

}  // namespace

TEST_CASE("an AllToAll concurrent with an AllReduce: reduced equals full on every chip", "[replay][fidelity]") {
  SECTION("v5e 8x8 forced wrapped: AllToAll XY 128 MiB beside AllReduce XY 40 MiB") {
    auto mesh = podsim_test::v5e_mesh({8, 8});
    for (auto& axis : mesh.axes) axis.wraparound = true;
    const Program program = {collective_op("a2a", CollectiveKind::AllToAll, {0, 1}, 128.0 * (1 << 20)),
                             collective_op("ar", CollectiveKind::AllReduce, {0, 1}, 40.0 * (1 << 20))};
    auto reduced = run_program(mesh, {}, program, {});
    auto full = run_program(mesh, {}, program, {Fidelity::Full, false, {}});
    require_same_spans(reduced, full, program.size());
    // The first reduction gave the AllReduce 710.7 us here against the full replay's 570.9 us.
    CHECK(reduced.operations[1].time_s == Approx(full.operations[1].time_s).epsilon(1e-9));
  }
  SECTION("v4p 4x4x4: AllToAll XY beside AllReduce X") {
    TopologySpec mesh;
    mesh.chip = *find_chip_preset("v4p");
    mesh.axes = {{"X", 4, true}, {"Y", 4, true}, {"Z", 4, true}};
    const Program program = {collective_op("a2a", CollectiveKind::AllToAll, {0, 1}, 64e6),
                             collective_op("ar", CollectiveKind::AllReduce, {0}, 40e6)};
    require_same_spans(run_program(mesh, {}, program, {}), run_program(mesh, {}, program, {Fidelity::Full, false, {}}),
                       program.size());
  }
  SECTION("two AllToAlls over different axes at once, one of them one-way") {
    TopologySpec mesh;
    mesh.chip = *find_chip_preset("v4p");
    mesh.axes = {{"X", 4, false}, {"Y", 4, true}, {"Z", 4, true}};
    const Program program = {collective_op("z", CollectiveKind::AllToAll, {2}, 2.3e6, false),
                             collective_op("yz", CollectiveKind::AllToAll, {1, 2}, 1.3e6)};
    require_same_spans(run_program(mesh, {}, program, {}), run_program(mesh, {}, program, {Fidelity::Full, false, {}}),
                       program.size());
  }
}

TEST_CASE("a decode step whose KV AllToAlls overlap the weight collectives: reduced equals full", "[replay][fidelity]") {
  // The case: LLaMA-3 70B on v5e 16x4 at batch 1024 (16 x 4 = 64 shards for 8 KV heads,
  // so the cache is sharded over batch and each layer runs two AllToAlls). One layer keeps the
  // test short; the collectives are the same in every layer.
  TransformerSpec model = *find_model_preset("llama3-70b");
  model.layers = 1;
  InferencePlan plan;
  plan.model_axes = {0, 1};
  plan.batch = 1024;
  plan.context_length = 2048;
  plan.weight_bytes = plan.kv_bytes = 1;
  InferenceLayout layout;
  const auto mesh = podsim_test::v5e_mesh({16, 4});
  const Program program = inference_program(model, plan, mesh, layout);
  int alltoalls = 0;
  for (const auto& op : program) alltoalls += op.is(ProgramOpKind::Collective) && op.collective().kind == CollectiveKind::AllToAll;
  REQUIRE(alltoalls > 0);
  auto reduced = run_program(mesh, {}, program, {});
  auto full = run_program(mesh, {}, program, {Fidelity::Full, false, {}});
  require_same_spans(reduced, full, program.size());
}

TEST_CASE("the reduction records each axis, its period and why", "[replay][fidelity]") {
  TopologySpec mesh;
  mesh.chip = *find_chip_preset("v4p");
  mesh.axes = {{"X", 8, true}, {"Y", 4, false}, {"Z", 8, true}};
  Program program = {collective_op("ar", CollectiveKind::AllReduce, {0, 1}, 1e6)};
  auto run = run_program(mesh, {}, program, {});
  REQUIRE(run.reduction.axes.size() == 3);
  CHECK(run.reduction.axes[0].simulated_size == 2);
  CHECK(run.reduction.axes[0].period == 1);
  CHECK(run.reduction.axes[1].simulated_size == 4);   // a line a collective uses
  CHECK_THAT(run.reduction.axes[1].reason, Catch::Contains("no wraparound"));
  CHECK(run.reduction.axes[2].simulated_size == 1);   // unused: identical independent groups
  CHECK_THAT(run.reduction.axes[2].reason, Catch::Contains("no collective uses it"));
  // An inner block of 4 along X: the period is the block, simulated as one block.
  program[0].collective().slices = {AxisSlice{1, 4}, AxisSlice{}};
  run = run_program(mesh, {}, program, {});
  CHECK(run.reduction.axes[0].period == 4);
  CHECK(run.reduction.axes[0].simulated_size == 4);
  // Pipelines keep their axis.
  ProgramOp send;
  send.name = "send";
  send.work = SendWork{1e3, 2, +1, false};
  program.push_back(send);
  run = run_program(mesh, {}, program, {});
  CHECK(run.reduction.axes[2].simulated_size == 8);
  CHECK_THAT(run.reduction.axes[2].reason, Catch::Contains("point to point"));
}

TEST_CASE("slices reduce to a ring of two where every op crossing the DCN is a ring over them", "[replay][fidelity]") {
  TopologySpec pod;
  pod.chip = *find_chip_preset("v4p");
  pod.axes = {{"X", 4, true}, {"Y", 2, false}};
  pod.slices = 6;
  pod.dcn_oversubscription = 3;   // the core every slice shares: simulated at 2/6 of its capacity
  ProgramOp dcn = collective_op("dcn_ar", CollectiveKind::AllReduce, {0}, 24e6);
  dcn.collective().over_dcn = true;
  ProgramOp ici = collective_op("ici_ag", CollectiveKind::AllGather, {0, 1}, 3e6);
  Program program = {dcn, ici};
  program[1].after = {0};
  auto reduced = run_program(pod, {}, program, {});
  auto full = run_program(pod, {}, program, {Fidelity::Full, false, {}});
  CHECK(reduced.reduction.slices.simulated_size == 2);
  CHECK(reduced.simulated.slice_count() == 2);
  CHECK_THAT(reduced.reduction.slices.reason, Catch::Contains("ring over all slices"));
  require_same_spans(reduced, full, program.size());
  SECTION("nothing crosses the DCN: one slice stands for all") {
    auto alone = run_program(pod, {}, {ici}, {});
    CHECK(alone.reduction.slices.simulated_size == 1);
    CHECK_THAT(alone.reduction.slices.reason, Catch::Contains("disjoint"));
  }
  SECTION("a perturbation on one slice keeps them whole") {
    Perturbation slow;
    slow.name = "slice2";
    slow.kind = PerturbationKind::SlowChips;
    slow.compute_slowdown = 1.5;
    ChipBox box;
    box.slices = {2, 2};
    box.axes = {{0, 3}, {0, 1}};
    slow.chips.push_back(box);
    pod.perturbations = {slow};
    ProgramOp work;
    work.name = "compute";
    work.work = ComputeWork{1e-3};
    auto run = run_program(pod, {}, {work, dcn}, {});
    CHECK(run.reduction.slices.simulated_size == 6);
    CHECK_THAT(run.reduction.slices.reason, Catch::Contains("slice2"));
  }
  SECTION("a pipeline over slices keeps them whole") {
    ProgramOp send;
    send.name = "stage_send";
    send.work = SendWork{1e3, Topology::kSliceAxis, +1, false};
    auto run = run_program(pod, {}, {dcn, send}, {});
    CHECK(run.reduction.slices.simulated_size == 6);
    CHECK_THAT(run.reduction.slices.reason, Catch::Contains("point to point"));
  }
}

TEST_CASE("a one-way AllToAll sends every block the +1 way round", "[replay]") {
  // v5e 16-ring, one-way: each chip sends a block of V/N^2 to the chip d hops on, d = 1..N-1,
  // so every link carries sum_d d = N(N-1)/2 blocks, all sharing it equally and ending
  // together: T = V (N-1) / (2 N W) = 11.18 ms for 1 GiB. Two-way routes take the shorter way
  // round (2.98 ms here), which the first engine used whatever `bidirectional` said.
  const double V = 1024.0 * 1024 * 1024;
  const double w = 4.5e10;
  const int n = 16;
  auto mesh = podsim_test::v5e_mesh({n});
  const Program one_way = {collective_op("a2a", CollectiveKind::AllToAll, {0}, V, false)};
  const Program two_way = {collective_op("a2a", CollectiveKind::AllToAll, {0}, V, true)};
  auto run1 = run_program(mesh, {}, one_way, {});
  auto run2 = run_program(mesh, {}, two_way, {});
  const double expected_one_way = V * (n - 1) / (2.0 * n * w);
  CHECK(run1.operations[0].time_s == Approx(expected_one_way).epsilon(1e-6));
  CHECK(run2.operations[0].time_s < 0.3 * run1.operations[0].time_s);
}
