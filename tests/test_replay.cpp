// Simulated collectives against the book's formulas where the physics is exact, and the
// symmetry-reduced replay against the full one.
#include <catch2/catch.hpp>
#include <csignal>

#include "collectives/formulas.hpp"
#include "collectives/ring_fluid.hpp"
#include "sim/commands/scenario_run.hpp"
#include "sim/engine/run.hpp"

using namespace podsim;

namespace {

Scenario make_scenario(const std::string& preset, std::vector<int> sizes, std::vector<CollectiveSpec> ops,
                       std::vector<int> wrap = {}) {
  Scenario s;
  s.path = "<test>";
  s.topology.chip = *find_chip_preset(preset);
  std::vector<bool> wraps = default_wraparound(s.topology.chip, sizes);
  const char* names[] = {"X", "Y", "Z"};
  for (size_t i = 0; i < sizes.size(); ++i) {
    bool w = wrap.empty() ? wraps[i] : wrap[i] != 0;
    s.topology.axes.push_back({names[i], sizes[i], w});
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    OperationSpec op;
    op.name = "op" + std::to_string(i);
    op.collective = ops[i];
    if (i > 0) op.after = {"op" + std::to_string(i - 1)};
    s.collectives().operations.push_back(op);
  }
  return s;
}

CollectiveSpec collective(CollectiveKind kind, std::vector<int> axes, double bytes, bool bidir = true) {
  CollectiveSpec c;
  c.kind = kind;
  c.axes = std::move(axes);
  c.bytes = bytes;
  c.bidirectional = bidir;
  return c;
}

}  // namespace

TEST_CASE("bandwidth-bound AllGather on a wrapped 16-ring equals V/W_bidi", "[replay]") {
  const double V = 2048.0 * 8192 * 2;
  auto s = make_scenario("v5e", {16}, {collective(CollectiveKind::AllGather, {0}, V)});
  auto run = run_scenario(s, {});
  const double w = 4.5e10;
  // 8 steps of one 1/16 shard each at W: V/(2W) (sharding.md:L326-L332).
  CHECK(run.operations[0].time_s == Approx(V / (2 * w)).epsilon(1e-9));
}

TEST_CASE("v5e 8x4 AllGather over Y without wraparound crosses the line", "[replay]") {
  const double V = 2048.0 * 8192 * 2;
  auto s = make_scenario("v5e", {8, 4}, {collective(CollectiveKind::AllGather, {1}, V)});
  auto run = run_scenario(s, {});
  CHECK(run.operations[0].time_s == Approx(3 * (V / 4) / 4.5e10).epsilon(1e-9));
}

TEST_CASE("symmetry-reduced replay matches the full replay", "[replay]") {
  const double V = 64e6;
  auto s = make_scenario("v4p", {4, 4, 4},
                         {collective(CollectiveKind::AllReduce, {0, 1, 2}, V),
                          collective(CollectiveKind::AllGather, {1}, V / 7),
                          collective(CollectiveKind::ReduceScatter, {0, 2}, 1e3)});
  auto reduced = run_scenario(s, {});
  auto full = run_scenario(s, {Fidelity::Full, false, {}});
  REQUIRE(reduced.fidelity == "reduced");
  REQUIRE(full.fidelity == "full");
  for (ChipId c = 0; c < full.topology.chip_count(); ++c) {
    for (int op = 0; op < 3; ++op) {
      CHECK(reduced.span(op, 0, c).start_s == Approx(full.span(op, 0, c).start_s).epsilon(1e-12));
      CHECK(reduced.span(op, 0, c).end_s == Approx(full.span(op, 0, c).end_s).epsilon(1e-12));
    }
  }
}

TEST_CASE("reduced replay equals the full replay on meshes up to 8x8x8", "[replay][fidelity]") {
  struct Case {
    std::string label, preset;
    std::vector<int> sizes;
    std::vector<CollectiveSpec> ops;
  };
  const double V = 96e6;
  const std::vector<Case> cases = {
      {"v4p 8x8x8 AllReduce XYZ then AllGather Y", "v4p", {8, 8, 8},
       {collective(CollectiveKind::AllReduce, {0, 1, 2}, V), collective(CollectiveKind::AllGather, {1}, V / 3)}},
      {"v5e 16x8 (X wraps, Y is a line) ReduceScatter XY", "v5e", {16, 8},
       {collective(CollectiveKind::ReduceScatter, {0, 1}, V), collective(CollectiveKind::AllReduce, {0}, 4e3)}},
      {"v4p 8x4x8 unidirectional AllGather Z", "v4p", {8, 4, 8},
       {collective(CollectiveKind::AllGather, {2}, V, false)}},
  };
  for (const auto& c : cases) {
    DYNAMIC_SECTION(c.label) {
      auto s = make_scenario(c.preset, c.sizes, c.ops);
      auto reduced = run_scenario(s, {});
      auto full = run_scenario(s, {Fidelity::Full, false, {}});
      REQUIRE(reduced.simulated.chip_count() < full.simulated.chip_count());
      for (ChipId chip = 0; chip < full.topology.chip_count(); ++chip) {
        for (int op = 0; op < static_cast<int>(c.ops.size()); ++op) {
          REQUIRE(reduced.span(op, 0, chip).start_s == Approx(full.span(op, 0, chip).start_s).epsilon(1e-9));
          REQUIRE(reduced.span(op, 0, chip).end_s == Approx(full.span(op, 0, chip).end_s).epsilon(1e-9));
        }
      }
    }
  }
}

TEST_CASE("reduced replay equals the full replay across slices over DCN", "[replay][fidelity]") {
  auto s = make_scenario("v5p", {4, 4, 4}, {collective(CollectiveKind::AllReduce, {0, 1}, 64e6)});
  s.topology.slices = 2;
  s.collectives().operations[0].collective.over_dcn = true;
  auto reduced = run_scenario(s, {});
  auto full = run_scenario(s, {Fidelity::Full, false, {}});
  REQUIRE(reduced.simulated.chip_count() < full.simulated.chip_count());
  for (ChipId chip = 0; chip < full.topology.chip_count(); ++chip) {
    REQUIRE(reduced.span(0, 0, chip).end_s == Approx(full.span(0, 0, chip).end_s).epsilon(1e-9));
  }
}

TEST_CASE("hop models: floor is max(T_min, b/W), additive is T_min + b/W", "[replay]") {
  // 16-ring, 8 steps; pick a shard right at the crossover so the two models differ most.
  const double w = 4.5e10, t_min = 1e-6;
  const double shard = w * t_min;   // b/W == T_min
  auto s = make_scenario("v5e", {16}, {collective(CollectiveKind::AllGather, {0}, 16 * shard)});
  CHECK(run_scenario(s, {}).operations[0].time_s == Approx(8 * t_min).epsilon(1e-9));
  s.hop_model = HopModel::Additive;
  CHECK(run_scenario(s, {}).operations[0].time_s == Approx(8 * 2 * t_min).epsilon(1e-9));
}

TEST_CASE("unidirectional ring: V/W (X-1)/X", "[replay]") {
  const double V = 64e6, w = 4.5e10;
  auto s = make_scenario("v5e", {16}, {collective(CollectiveKind::AllGather, {0}, V, false)});
  CHECK(run_scenario(s, {}).operations[0].time_s == Approx(V / w * 15 / 16).epsilon(1e-9));
}

TEST_CASE("concurrent collectives on the same links share them, on other axes they do not", "[replay]") {
  const double V = 64e6, w = 4.5e10;
  auto same = make_scenario("v5e", {16, 16}, {collective(CollectiveKind::AllGather, {0}, V),
                                               collective(CollectiveKind::AllGather, {0}, V)});
  same.collectives().operations[1].after = {};   // both start at t=0
  auto run = run_scenario(same, {});
  CHECK(run.total_time_s == Approx(2 * V / (2 * w)).epsilon(1e-9));
  auto other = make_scenario("v5e", {16, 16}, {collective(CollectiveKind::AllGather, {0}, V),
                                                collective(CollectiveKind::AllGather, {1}, V)});
  other.collectives().operations[1].after = {};
  CHECK(run_scenario(other, {}).total_time_s == Approx(V / (2 * w)).epsilon(1e-9));
}

TEST_CASE("link efficiency and launch overhead", "[replay]") {
  const double V = 64e6, w = 4.5e10;
  auto s = make_scenario("v5e", {16}, {collective(CollectiveKind::AllGather, {0}, V)});
  s.link_efficiency = 0.95;
  s.launch_overhead_s = 5e-6;
  s.collectives().operations[0].repeat = 3;
  auto run = run_scenario(s, {});
  CHECK(run.operations[0].time_s == Approx(5e-6 + V / (2 * w * 0.95)).epsilon(1e-9));
  CHECK(run.total_time_s == Approx(3 * (5e-6 + V / (2 * w * 0.95))).epsilon(1e-9));
}

TEST_CASE("antipodal split: an AllGather on a wrapped even ring takes X/2 T_min + V (X-1)/(2 X W)", "[replay]") {
  // Each direction carries (X-1)/2 shards (ring_schedule.hpp); the book's schedule X/2 of them.
  const double w = 4.5e10, t_min = 1e-6;
  for (int n : {4, 16}) {
    const double V = 64e6;
    auto s = make_scenario("v5e", {n}, {collective(CollectiveKind::AllGather, {0}, V)}, {1});
    s.topology.chip.antipodal_split = true;
    CHECK(run_scenario(s, {}).operations[0].time_s == Approx(V * (n - 1) / (2.0 * n * w)).epsilon(1e-9));
    // Additive hops: X/2 steps, each a T_min; the steps before the last carry two half shards
    // at once (W/2 each), the last one half shard alone.
    s.hop_model = HopModel::Additive;
    CHECK(run_scenario(s, {}).operations[0].time_s ==
          Approx(n / 2 * t_min + V * (n - 1) / (2.0 * n * w)).epsilon(1e-9));
  }
  // A line has no long way: unchanged (#22's 3 shards over the last link).
  const double V = 2048.0 * 8192 * 2;
  auto line = make_scenario("v5e", {8, 4}, {collective(CollectiveKind::AllGather, {1}, V)});
  line.topology.chip.antipodal_split = true;
  CHECK(run_scenario(line, {}).operations[0].time_s == Approx(3 * (V / 4) / w).epsilon(1e-9));
}

TEST_CASE("antipodal split: a 2D AllReduce over a 16x16 torus takes 2 (V/2) (X-1)/X (1 + 1/X) / (2 W) per axis pair",
          "[replay]") {
  // C1's shape (a psum over every chip of a v6e 16x16): each part (V/2) scatters over one axis,
  // then the other, and gathers back; the two parts use both axes at once.
  const double V = 256e6, w = 9e10, n = 16;
  auto s = make_scenario("v6e", {16, 16}, {collective(CollectiveKind::AllReduce, {0, 1}, V)});
  s.topology.chip.antipodal_split = true;
  const double per_phase_first = (V / 2) * (n - 1) / (2 * n * w);    // scatter V/2 over 16
  const double per_phase_second = per_phase_first / n;               // then V/32 over the other 16
  CHECK(run_scenario(s, {}).operations[0].time_s ==
        Approx(2 * (per_phase_first + per_phase_second)).epsilon(1e-9));
  // The reduced replay (one chip per class) equals the full one.
  auto full = run_scenario(s, {Fidelity::Full, false, {}});
  CHECK(full.operations[0].time_s == Approx(run_scenario(s, {}).operations[0].time_s).epsilon(1e-9));
}

TEST_CASE("AllToAll on a wrapped ring equals V/(4 W_bidi), without wraparound it is slower", "[replay]") {
  const double V = 256e6, w = 4.5e10;
  auto ring = make_scenario("v5e", {16}, {collective(CollectiveKind::AllToAll, {0}, V)});
  const auto ring_run = run_scenario(ring, {});
  CHECK(ring_run.operations[0].time_s == Approx(V / (4 * 2 * w)).epsilon(1e-6));
  // nccl-tests' convention: size is one rank's send buffer (V/16), algbw = size / time, and
  // busbw = algbw (n-1)/n.
  const CollectiveResult& figures = ring_run.operations[0].collective();
  CHECK(figures.size_bytes == V / 16);
  CHECK(figures.algbw_Bps == Approx(V / 16 / ring_run.operations[0].time_s).epsilon(1e-12));
  CHECK(figures.busbw_Bps == Approx(figures.algbw_Bps * 15 / 16).epsilon(1e-12));
  auto line = make_scenario("v5e", {8}, {collective(CollectiveKind::AllToAll, {0}, V)});
  // A line of 8: the middle links carry 4*4 of the 64 blocks each way: V*16/64 / W.
  CHECK(run_scenario(line, {}).operations[0].time_s == Approx(V * 16 / 64 / w).epsilon(1e-6));
}

TEST_CASE("DCN: per-chip share of the NIC, oversubscribed core, flat ring", "[replay][dcn]") {
  const double V = 256.0 * 1024 * 1024;
  const ChipSpec& v5p = *find_chip_preset("v5p");
  const double per_chip = v5p.dcn_bandwidth_per_host_Bps / v5p.chips_per_host;
  auto s = make_scenario("v5p", {4, 4, 4}, {collective(CollectiveKind::AllReduce, {}, V)});
  s.topology.slices = 2;
  s.collectives().operations[0].collective.over_dcn = true;
  // Two slices, one-way ring: ReduceScatter and AllGather each move V/2 per chip.
  CHECK(run_scenario(s, {}).operations[0].time_s == Approx(2 * (V / 2) / per_chip).epsilon(1e-6));
  s.topology.dcn_oversubscription = 4;
  CHECK(run_scenario(s, {}).operations[0].time_s == Approx(4 * 2 * (V / 2) / per_chip).epsilon(1e-6));

  auto hier = make_scenario("v5p", {4, 4, 4}, {collective(CollectiveKind::AllReduce, {0, 1, 2}, V)});
  hier.topology.slices = 2;
  hier.collectives().operations[0].collective.over_dcn = true;
  auto flat = hier;
  flat.collectives().operations[0].collective.dcn_algorithm = DcnAlgorithm::FlatRing;
  const double n = 128;
  const double bound = 2 * V * (n - 1) / n / std::min(v5p.pcie_bandwidth_Bps, v5p.dcn_bandwidth_per_host_Bps);
  const double flat_s = run_scenario(flat, {}).operations[0].time_s;
  INFO("flat ring " << flat_s << " s, bound " << bound << " s");
  CHECK(flat_s >= bound * (1 - 1e-9));
  CHECK(flat_s <= 1.25 * bound);   // plus the drain between its two halves
  CHECK(run_scenario(hier, {}).operations[0].time_s < flat_s / 10);
}

TEST_CASE("reduced AllToAll equals the full replay", "[replay][fidelity]") {
  struct Case {
    std::string label, preset;
    std::vector<int> sizes;
    std::vector<int> axes;
  };
  const std::vector<Case> cases = {
      {"v4p 4x4x4 over XYZ", "v4p", {4, 4, 4}, {0, 1, 2}},
      {"v4p 4x4x8 over XZ", "v4p", {4, 4, 8}, {0, 2}},
      {"v5e 16x4 over XY (X wraps, Y is a line)", "v5e", {16, 4}, {0, 1}},
  };
  for (const auto& c : cases) {
    DYNAMIC_SECTION(c.label) {
      auto s = make_scenario(c.preset, c.sizes, {collective(CollectiveKind::AllToAll, c.axes, 512e6),
                                                 collective(CollectiveKind::AllToAll, c.axes, 4e3)});
      auto reduced = run_scenario(s, {});
      auto full = run_scenario(s, {Fidelity::Full, false, {}});
      REQUIRE(reduced.simulated.chip_count() < full.simulated.chip_count());
      for (ChipId chip = 0; chip < full.topology.chip_count(); ++chip) {
        for (int op = 0; op < 2; ++op) {
          REQUIRE(reduced.span(op, 0, chip).start_s == Approx(full.span(op, 0, chip).start_s).epsilon(1e-9));
          REQUIRE(reduced.span(op, 0, chip).end_s == Approx(full.span(op, 0, chip).end_s).epsilon(1e-9));
        }
      }
    }
  }
}

TEST_CASE("a reduced AllToAll whose routes take links again runs in bounded memory", "[replay][fidelity]") {
  // 16x16x16 folds onto 2x2x2: 39,312 routes, most taking a link several times. Declared in a
  // full zone (a table of every pair of endpoints) this took 12 GB; each block's time is the
  // book's latency floor, 24 hops of T_min (8 per axis).
  auto s = make_scenario("v4p", {16, 16, 16}, {collective(CollectiveKind::AllToAll, {0, 1, 2}, 1024)});
  const auto run = run_scenario(s, {});
  REQUIRE(run.simulated.chip_count() == 8);
  CHECK(run.replay.peak_rss_bytes < 1e9);
  CHECK(run.operations[0].time_s == Approx(24 * s.topology.chip.hop_latency_s).epsilon(1e-9));
}

TEST_CASE("slices of an axis: inner blocks are lines, outer rings share the links", "[replay][slices]") {
  // A wrapped 16-axis split 4 x 4, as a device mesh reshape does (e.g. TP over 4
  // neighbours, FSDP over the 4 blocks).
  const double V = 64e6, w = 4.5e10;
  auto inner = make_scenario("v5e", {16}, {collective(CollectiveKind::AllGather, {0}, V)});
  inner.collectives().operations[0].collective.slices = {{1, 4}};
  // Four chips in a row, no wraparound among them: 3 shards cross the line one way.
  CHECK(run_scenario(inner, {}).operations[0].time_s == Approx(3 * (V / 4) / w).epsilon(1e-9));
  auto outer = make_scenario("v5e", {16}, {collective(CollectiveKind::AllGather, {0}, V)});
  outer.collectives().operations[0].collective.slices = {{4, 4}};
  // A wrapped 4-ring: 2 steps of a V/4 shard one way, but every hop crosses 4 links and the
  // 4 outer rings (one per inner position) cross each link at once: W/4 each.
  CHECK(run_scenario(outer, {}).operations[0].time_s == Approx(2 * (V / 4) / (w / 4)).epsilon(1e-9));
  auto reduced = run_scenario(outer, {});
  auto full = run_scenario(outer, {Fidelity::Full, false, {}});
  for (ChipId c = 0; c < full.topology.chip_count(); ++c) {
    CHECK(reduced.span(0, 0, c).end_s == Approx(full.span(0, 0, c).end_s).epsilon(1e-12));
  }
}

TEST_CASE("split axis: blocks and outer rings reduced equal the full replay", "[replay][slices][fidelity]") {
  const double V = 32e6;
  auto s = make_scenario("v4p", {4, 16}, {collective(CollectiveKind::AllGather, {1}, V),
                                          collective(CollectiveKind::AllReduce, {0, 1}, V),
                                          collective(CollectiveKind::ReduceScatter, {1}, V / 3)});
  s.collectives().operations[0].collective.slices = {{1, 4}};           // inner block
  s.collectives().operations[1].collective.slices = {{1, 0}, {4, 4}};   // X whole, Y's outer ring
  s.collectives().operations[2].after = {};                             // concurrent: shares links with both
  s.collectives().operations[2].collective.slices = {{4, 4}};
  s.topology.axes[0].wraparound = s.topology.axes[1].wraparound = true;
  auto reduced = run_scenario(s, {});
  auto full = run_scenario(s, {Fidelity::Full, false, {}});
  REQUIRE(reduced.simulated.chip_count() < full.simulated.chip_count());
  for (ChipId c = 0; c < full.topology.chip_count(); ++c) {
    for (int op = 0; op < 3; ++op) {
      REQUIRE(reduced.span(op, 0, c).end_s == Approx(full.span(op, 0, c).end_s).epsilon(1e-9));
    }
  }
}

TEST_CASE("the replay equals the schedule's closed forms and fluid model off the validate grid", "[replay][validate]") {
  const double w = 4.5e10, t_min = 1e-6;
  auto simulate = [](std::vector<int> sizes, std::vector<int> wrap, CollectiveKind kind, double v) {
    std::vector<int> axes;
    for (size_t a = 0; a < sizes.size(); ++a) axes.push_back(static_cast<int>(a));
    return run_scenario(make_scenario("v4p", sizes, {collective(kind, axes, v)}, wrap), {}).operations[0].time_s;
  };
  auto info = [](std::vector<int> sizes, std::vector<int> wrap) {
    std::vector<AxisInfo> axes;
    for (size_t a = 0; a < sizes.size(); ++a) axes.push_back({sizes[a], wrap[a] != 0});
    return axes;
  };
  struct Case {
    std::vector<int> sizes, wrap;
  };
  SECTION("AllToAll: busiest link and longest route") {
    for (const Case& c : std::vector<Case>{{{5}, {0}}, {{5}, {1}}, {{6, 3}, {0, 0}}, {{4, 4}, {1, 0}}, {{4, 2, 3}, {0, 0, 0}}}) {
      for (double v : {1024.0, 1024.0 * 1024, 256.0 * 1024 * 1024}) {
        INFO(c.sizes.size() << " axes, first " << c.sizes[0] << ", V " << v);
        CHECK(simulate(c.sizes, c.wrap, CollectiveKind::AllToAll, v) ==
              Approx(all_to_all_route_time(info(c.sizes, c.wrap), v, w, t_min).time_s).epsilon(1e-4));
      }
    }
  }
  SECTION("rings without overlapping parts: the closed form") {
    for (const Case& c : std::vector<Case>{{{6}, {0}}, {{5, 5}, {1, 1}}}) {
      for (double v : {1024.0, 1024.0 * 1024, 256.0 * 1024 * 1024}) {
        const auto closed = ring_schedule_time(CollectiveKind::AllReduce, info(c.sizes, c.wrap), v, w, t_min);
        REQUIRE_FALSE(closed.parts_overlap);
        CHECK(simulate(c.sizes, c.wrap, CollectiveKind::AllReduce, v) == Approx(closed.time_s).epsilon(1e-6));
      }
    }
    // 8x16 rings, ReduceScatter: the first phases (4 steps of part/8, 8 of part/16) line up
    // when bandwidth-bound (not when floored: 4 T_min against 8).
    const double v = 256.0 * 1024 * 1024;
    const auto closed = ring_schedule_time(CollectiveKind::ReduceScatter, info({8, 16}, {1, 1}), v, w, t_min);
    REQUIRE_FALSE(closed.parts_overlap);
    CHECK(simulate({8, 16}, {1, 1}, CollectiveKind::ReduceScatter, v) == Approx(closed.time_s).epsilon(1e-6));
  }
  SECTION("rings whose parts overlap: the fluid model") {
    CHECK(simulate({8, 16}, {1, 1}, CollectiveKind::AllGather, 1 << 30) ==
          Approx(ring_fluid_time_s(CollectiveKind::AllGather, info({8, 16}, {1, 1}), 1 << 30, w, t_min)).epsilon(1e-6));
    CHECK(simulate({4, 4}, {0, 0}, CollectiveKind::AllGather, 1 << 30) ==
          Approx(ring_fluid_time_s(CollectiveKind::AllGather, info({4, 4}, {0, 0}), 1 << 30, w, t_min)).epsilon(1e-6));
    CHECK(simulate({16, 8}, {1, 0}, CollectiveKind::AllReduce, 1 << 20) ==
          Approx(ring_fluid_time_s(CollectiveKind::AllReduce, info({16, 8}, {1, 0}), 1 << 20, w, t_min)).epsilon(1e-6));
  }
}

TEST_CASE("a simulation process that dies is described in words", "[replay]") {
  // Wait statuses as waitpid gives them: a signal in the low 7 bits, an exit code above.
  CHECK(describe_simulation_exit(SIGKILL, 12.3e9).find("out-of-memory killer") != std::string::npos);
  CHECK(describe_simulation_exit(SIGKILL, 12.3e9).find("12.3 GB") != std::string::npos);
  CHECK(describe_simulation_exit(SIGSEGV, 0).find("crashed") != std::string::npos);
  CHECK(describe_simulation_exit(4 << 8, 0) == "the simulation failed (its message is above)");
  CHECK(describe_simulation_exit(3 << 8, 0) == "the simulation exited with status 3");
}
