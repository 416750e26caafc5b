// Perturbations felt through the simulation (topology/perturbation.hpp, docs/modelling.md "Chips that
// differ"): collectives keep their algorithm, and a degraded link, a raised latency or a slow
// chip changes the replayed times by what the formulas say.
#include <catch2/catch.hpp>

#include "meshes.hpp"
#include "program_ops.hpp"
#include "sim/engine/run.hpp"

using namespace podsim;
using podsim_test::collective_op;

namespace {

Perturbation link_from_chip0(int direction, double scale, double latency_s = 0) {
  Perturbation p;
  p.name = "bad_link";
  p.kind = PerturbationKind::Links;
  p.chips = {ChipBox{{{0, 0}}, {0, 0}}};
  p.axis = 0;
  p.direction = direction;
  p.bandwidth_scale = scale;
  p.extra_latency_s = latency_s;
  return p;
}

constexpr double kGiB = 1073741824.0;
constexpr double kW = 4.5e10;   // v5e ICI, one direction of one link (tpus.md:L203-L212)

}  // namespace

TEST_CASE("a degraded link in a bandwidth-bound 16-ring AllReduce", "[replay][perturbation]") {
  // podsim's bidirectional ring on a wrapped 16-ring (collectives/ring_schedule.hpp): every
  // shard of V/16 goes 8 hops the + way and 7 the - way, in the ReduceScatter and again in the
  // AllGather. So the + direction of each link carries 16 messages of V/16, the - direction
  // 14: undisturbed, T = 16 (V/16) / W = V/W. A link degraded to f W in one direction carries
  // its 16 (or 14) messages in 16 (V/16)/(f W) = V/(f W) (or 14/16 of it); for f <= 1/2 the
  // other 15 links feed it faster than it drains, it is never idle and nothing follows its last
  // message, so the ring takes exactly that long.
  const auto mesh = podsim_test::v5e_mesh({16});
  const Program program = {collective_op("ar", CollectiveKind::AllReduce, {0}, kGiB)};
  const double base = run_program(mesh, {}, program, {}).total_time_s;
  CHECK(base == Approx(kGiB / kW).epsilon(1e-9));
  for (const double f : {0.25, 0.5}) {
    auto degraded = mesh;
    degraded.perturbations = {link_from_chip0(+1, f)};
    const auto run = run_program(degraded, {}, program, {});
    INFO("f = " << f);
    CHECK(run.fidelity == "full");
    CHECK(run.total_time_s == Approx(kGiB / (f * kW)).epsilon(1e-9));
    degraded.perturbations = {link_from_chip0(-1, f)};
    CHECK(run_program(degraded, {}, program, {}).total_time_s == Approx(14.0 / 16 * kGiB / (f * kW)).epsilon(1e-9));
    // Both ways: the - direction's 14 messages take 14/16 of the + direction's time, and a
    // chain's messages queue for its link one behind the other (docs/modelling.md), so the +
    // direction is still never idle: the same V/(f W). (When a chain's waiting messages
    // crossed together, sharing the link, its first arrival came late and the + direction
    // idled: +1.3% at f = 1/4, +6.7% at f = 1/2.)
    degraded.perturbations = {link_from_chip0(0, f)};
    CHECK(run_program(degraded, {}, program, {}).total_time_s == Approx(kGiB / (f * kW)).epsilon(1e-9));
  }
  // Above f = 1/2 the ring's dependency chains leave the link idle at times: the link's own work
  // is a lower bound, and the ring is still slower than undisturbed.
  auto mild = mesh;
  mild.perturbations = {link_from_chip0(+1, 0.75)};
  const double t = run_program(mild, {}, program, {}).total_time_s;
  CHECK(t >= kGiB / (0.75 * kW) * (1 - 1e-9));
  CHECK(t < base / 0.5);
}

TEST_CASE("every link of an axis degraded alike: the ring scales by 1/f and stays reduced", "[replay][perturbation]") {
  auto mesh = podsim_test::v5e_mesh({16});
  Perturbation p = link_from_chip0(0, 0.5);
  p.chips = {ChipBox{{{0, 15}}, {0, 0}}};
  mesh.perturbations = {p};
  const Program program = {collective_op("ar", CollectiveKind::AllReduce, {0}, kGiB)};
  const auto run = run_program(mesh, {}, program, {});
  CHECK(run.fidelity == "reduced");
  CHECK(run.simulated.chip_count() == 2);
  CHECK(run.total_time_s == Approx(kGiB / (0.5 * kW)).epsilon(1e-9));
}

TEST_CASE("extra latency on one link of a latency-bound ring", "[replay][perturbation]") {
  // An AllGather of 16 KiB on the 16-ring: 8 steps the + way, each a message of 1 KiB (23 ns at
  // W, far below T_min = 1 us). A chain of 8 consecutive hops crosses the link from chip 0 to
  // chip 1 at most once, so the last chip ends L later than undisturbed:
  //   floor model:    8 T_min + L;
  //   additive model: 8 (T_min + b/W) + L.
  const auto mesh = podsim_test::v5e_mesh({16});
  const Program program = {collective_op("ag", CollectiveKind::AllGather, {0}, 16384)};
  const double L = 2e-6, T_min = 1e-6, b = 1024;
  auto slow = mesh;
  slow.perturbations = {link_from_chip0(+1, 1.0, L)};
  SimulationSettings floor, additive;
  additive.hop_model = HopModel::Additive;
  CHECK(run_program(mesh, floor, program, {}).total_time_s == Approx(8 * T_min).epsilon(1e-9));
  CHECK(run_program(slow, floor, program, {}).total_time_s == Approx(8 * T_min + L).epsilon(1e-9));
  CHECK(run_program(mesh, additive, program, {}).total_time_s == Approx(8 * (T_min + b / kW)).epsilon(1e-9));
  CHECK(run_program(slow, additive, program, {}).total_time_s == Approx(8 * (T_min + b / kW) + L).epsilon(1e-9));
}

TEST_CASE("a slow chip: its compute stretches, and a collective after it waits for it", "[replay][perturbation]") {
  auto mesh = podsim_test::v5e_mesh({16});
  Perturbation p;
  p.name = "slow_chip";
  p.kind = PerturbationKind::SlowChips;
  p.chips = {ChipBox{{{5, 5}}, {0, 0}}};
  p.compute_slowdown = 2.0;
  mesh.perturbations = {p};
  ProgramOp compute;
  compute.name = "matmul";
  compute.work = ComputeWork{1e-3, 0, {}, {}};
  ProgramOp ar = collective_op("ar", CollectiveKind::AllReduce, {0}, 16e6);
  ar.after = {0};
  const Program program = {compute, ar};
  const auto run = run_program(mesh, {}, program, {});
  REQUIRE(run.reduction.axes.size() == 1);
  CHECK(run.reduction.axes[0].simulated_size == 16);
  CHECK(run.reduction.axes[0].reason == "kept: perturbation 'slow_chip' makes chips differ along it");
  for (ChipId chip = 0; chip < 16; ++chip) {
    const auto& span = run.span(0, 0, chip);
    CHECK(span.end_s - span.start_s == Approx(chip == 5 ? 2e-3 : 1e-3).epsilon(1e-12));
    // No chip finishes the AllReduce before the slow chip has even started it.
    CHECK(run.span(1, 0, chip).end_s > 2e-3);
  }
  // Reduced and full agree (the slow chip keeps X whole, so both are the full replay).
  const auto full = run_program(mesh, {}, program, {Fidelity::Full, false, {}});
  CHECK(full.total_time_s == Approx(run.total_time_s).epsilon(1e-12));
}

TEST_CASE("perturbations invariant along the mesh: the reduced replay equals the full one, either hop model",
          "[replay][perturbation][fidelity]") {
  // Every X link 0.8x and 3 us slower both ways, every NIC of slice 1 at half bandwidth and 5 us
  // slower: nothing differs along X, Y or Z, so the reduction shortens the mesh and keeps its
  // part of each selection; the slices differ, so they stay whole.
  TopologySpec mesh;
  mesh.chip = *find_chip_preset("v4p");
  mesh.axes = {{"X", 4, true}, {"Y", 4, true}, {"Z", 4, true}};
  mesh.slices = 2;
  const PositionRange all{0, 3};
  Perturbation x;
  x.name = "x_links";
  x.kind = PerturbationKind::Links;
  x.chips = {ChipBox{{all, all, all}, {0, 1}}};
  x.axis = 0;
  x.bandwidth_scale = 0.8;
  x.extra_latency_s = 3e-6;
  Perturbation nics;
  nics.name = "slice1_nics";
  nics.kind = PerturbationKind::Nics;
  nics.chips = {ChipBox{{all, all, all}, {1, 1}}};
  nics.bandwidth_scale = 0.5;
  nics.extra_latency_s = 5e-6;
  mesh.perturbations = {x, nics};
  ProgramOp ar = collective_op("ar", CollectiveKind::AllReduce, {0}, 64e6);
  ar.collective().over_dcn = true;
  const Program program = {ar, collective_op("ag", CollectiveKind::AllGather, {0, 1}, 32e6)};
  for (const HopModel model : {HopModel::Floor, HopModel::Additive}) {
    SimulationSettings settings;
    settings.hop_model = model;
    const auto reduced = run_program(mesh, settings, program, {});
    const auto full = run_program(mesh, settings, program, {Fidelity::Full, false, {}});
    INFO(to_string(model));
    REQUIRE(reduced.simulated.chip_count() < full.simulated.chip_count());
    CHECK_THAT(reduced.reduction.slices.reason, Catch::Contains("perturbation 'slice1_nics'"));
    for (ChipId chip = 0; chip < full.topology.chip_count(); ++chip) {
      for (size_t op = 0; op < program.size(); ++op) {
        INFO("chip " << full.topology.chip_name(chip) << " op " << op);
        REQUIRE(reduced.span(op, 0, chip).start_s == Approx(full.span(op, 0, chip).start_s).epsilon(1e-9));
        REQUIRE(reduced.span(op, 0, chip).end_s == Approx(full.span(op, 0, chip).end_s).epsilon(1e-9));
      }
    }
    // And the perturbations are felt: slower than the same program undisturbed.
    auto plain = mesh;
    plain.perturbations.clear();
    CHECK(full.total_time_s > run_program(plain, settings, program, {}).total_time_s * 1.05);
  }
}
