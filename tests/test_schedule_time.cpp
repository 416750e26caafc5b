// podsim's own schedules in closed form (formulas.hpp: ring_schedule_time,
// all_to_all_route_time), the fluid model for overlapping parts (ring_fluid.hpp), and the check
// `podsim validate` makes with them (validate.hpp). Every expected value is worked out by hand
// from the schedule (docs/validation.md), never taken from a run.
#include <catch2/catch.hpp>

#include "collectives/formulas.hpp"
#include "collectives/ring_fluid.hpp"
#include "sim/commands/validate.hpp"

using namespace podsim;

namespace {

constexpr double kW = 4.5e10;   // v5e/v4p one-way ICI link (tpus.md:L203-L212)
constexpr double kT = 1e-6;     // T_min (sharding.md:L338)
constexpr double kGiB = 1024.0 * 1024 * 1024;
constexpr double kMiB = 1024.0 * 1024;

using K = CollectiveKind;

RingScheduleTime ring(K kind, std::vector<AxisInfo> axes, double v) { return ring_schedule_time(kind, axes, v, kW, kT); }
AllToAllRouteTime a2a(std::vector<AxisInfo> axes, double v) { return all_to_all_route_time(axes, v, kW, kT); }
double fluid(K kind, std::vector<AxisInfo> axes, double v) { return ring_fluid_time_s(kind, axes, v, kW, kT); }

FormulaResult book(K kind, std::vector<AxisInfo> axes, double v) {
  FormulaInputs in;
  in.kind = kind;
  in.axes = std::move(axes);
  in.bytes = v;
  in.link_bandwidth_Bps = kW;
  in.hop_latency_s = kT;
  return book_collective_time(in);
}

}  // namespace

TEST_CASE("ring schedule, one axis: steps * max(T_min, m/W)", "[schedule-time]") {
  SECTION("a 16-ring: 8 steps of V/16, the book's V/W_bidi") {
    const auto r = ring(K::AllGather, {{16, true}}, kGiB);
    CHECK(r.time_s == Approx(8 * (kGiB / 16) / kW));
    CHECK(r.time_s == Approx(kGiB / (2 * kW)));
    CHECK(r.bandwidth_time_s == Approx(r.time_s));
    CHECK_FALSE(r.parts_overlap);
    CHECK(r.phases == 1);
    CHECK(r.floored_phases == 0);
  }
  SECTION("latency-bound: 64 B messages take T_min per hop") {
    const auto r = ring(K::AllGather, {{16, true}}, 1024);
    CHECK(r.time_s == Approx(8 * kT));
    CHECK(r.bandwidth_time_s == Approx(8 * 64 / kW));
    CHECK(r.floored_phases == 1);
  }
  SECTION("a line of 8: 7 steps of V/8; AllReduce twice that") {
    CHECK(ring(K::AllGather, {{8, false}}, kGiB).time_s == Approx(7 * (kGiB / 8) / kW));
    CHECK(ring(K::ReduceScatter, {{8, false}}, kGiB).time_s == Approx(7 * (kGiB / 8) / kW));
    CHECK(ring(K::AllReduce, {{8, false}}, kGiB).time_s == Approx(14 * (kGiB / 8) / kW));
    CHECK_FALSE(ring(K::AllReduce, {{8, false}}, kGiB).parts_overlap);   // one part
  }
  SECTION("size-1 axes move nothing") {
    CHECK(ring(K::AllGather, {{1, true}, {16, true}}, kGiB).time_s == Approx(kGiB / (2 * kW)));
    CHECK(ring(K::AllGather, {{1, true}}, kGiB).time_s == 0);
  }
}

TEST_CASE("ring schedule, several axes: each part's first phases move 1/X of its share", "[schedule-time]") {
  SECTION("v4p 4x4x4, 32 MiB AllGather: 2 steps each of part/64, part/16, part/4; 1.3125 x the book") {
    const double v = 32 * kMiB, part = v / 3;
    const auto r = ring(K::AllGather, {{4, true}, {4, true}, {4, true}}, v);
    CHECK(r.time_s == Approx(2 * (part / 64 + part / 16 + part / 4) / kW));
    CHECK(r.time_s / book(K::AllGather, {{4, true}, {4, true}, {4, true}}, v).bandwidth_time_s == Approx(1.3125));
    CHECK_FALSE(r.parts_overlap);   // equal axes: phase k of every part ends together, on another axis
    CHECK(r.phases == 3);
  }
  SECTION("v4p 4x4x4, 1 MiB: the two small phases are floored at T_min per hop") {
    const double v = kMiB, part = v / 3;
    const auto r = ring(K::AllGather, {{4, true}, {4, true}, {4, true}}, v);
    CHECK(r.floored_phases == 2);
    // 87,381.3 B travel as 87,382 B on the wire.
    CHECK(r.time_s == Approx(2 * (kT + kT + std::ceil(part / 4) / kW)));
    CHECK(r.time_s == Approx(7.8836e-6).epsilon(1e-4));
  }
  SECTION("v5e 16x16: (1 + 1/16) x the book's V/(2 W_bidi)") {
    const auto r = ring(K::AllGather, {{16, true}, {16, true}}, kGiB);
    CHECK(r.time_s == Approx(kGiB / (4 * kW) * 17 / 16));
  }
  SECTION("overlap: lines longer than 2 always; rings where the parts' phases do not line up") {
    CHECK(ring(K::AllGather, {{8, false}, {4, false}}, kGiB).parts_overlap);
    CHECK(ring(K::AllGather, {{4, false}, {4, false}}, kGiB).parts_overlap);
    CHECK_FALSE(ring(K::AllGather, {{2, false}, {2, false}}, kGiB).parts_overlap);
    CHECK_FALSE(ring(K::AllReduce, {{16, true}, {16, true}}, kGiB).parts_overlap);
    // 8x16 rings, part = V/2, tau = part/(128 W). AllGather: part 0 gathers over X in 4 tau
    // and moves to Y while part 1 gathers over Y until 8 tau: they overlap. ReduceScatter:
    // the first phases (4 steps of part/8, 8 steps of part/16) both take 64 tau: they do not.
    CHECK(ring(K::AllGather, {{8, true}, {16, true}}, kGiB).parts_overlap);
    CHECK_FALSE(ring(K::ReduceScatter, {{8, true}, {16, true}}, kGiB).parts_overlap);
  }
}

TEST_CASE("AllToAll on dimension-order routes: busiest link and longest route", "[schedule-time]") {
  SECTION("a 16-ring: 32 blocks of V/256 per link, the book's V/(4 W_bidi)") {
    const auto r = a2a({{16, true}}, kGiB);
    CHECK(r.busiest_link_blocks == 32);   // n^2/8: offsets 1..7 each way plus half of offset 8
    CHECK(r.bandwidth_time_s == Approx(kGiB / (8 * kW)));
    CHECK(r.bandwidth_time_s == Approx(book(K::AllToAll, {{16, true}}, kGiB).bandwidth_time_s));
    CHECK(r.longest_route_hops == 8);
  }
  SECTION("a line of 8: the middle link carries 4 x 4 blocks of V/64, twice the book's") {
    const auto r = a2a({{8, false}}, kGiB);
    CHECK(r.busiest_link_blocks == 16);
    CHECK(r.time_s == Approx(16 * (kGiB / 64) / kW));
    CHECK(r.time_s / book(K::AllToAll, {{8, false}}, kGiB).time_s == Approx(2.0));
    CHECK(r.longest_route_hops == 7);
    CHECK(a2a({{8, false}}, 1024).time_s == Approx(7 * kT));   // latency-bound: 7 hops
  }
  SECTION("a line of 4: 2 x 2 blocks of V/16") {
    CHECK(a2a({{4, false}}, kGiB).time_s == Approx(4 * (kGiB / 16) / kW));
  }
  SECTION("odd sizes: a line of 5 carries 2 x 3 blocks, a 5-ring (25-1)/8 = 3") {
    CHECK(a2a({{5, false}}, kGiB).busiest_link_blocks == 6);
    CHECK(a2a({{5, false}}, kGiB).longest_route_hops == 4);
    CHECK(a2a({{5, true}}, kGiB).busiest_link_blocks == 3);
    CHECK(a2a({{5, true}}, kGiB).longest_route_hops == 2);
  }
  SECTION("v5e 8x4 lines: the X middle link carries 4 sources x 16 targets of V/1024") {
    const auto r = a2a({{8, false}, {4, false}}, kGiB);
    CHECK(r.busiest_link_blocks == 64);   // Y's middle: 2 x 2 x 32/4 = 32
    CHECK(r.busiest_axis == 0);
    CHECK(r.time_s == Approx(64 * (kGiB / 1024) / kW));
    CHECK(r.longest_route_hops == 10);
  }
  SECTION("v4p 4x4x4 rings: n N/8 = 32 blocks of V/4096, the book's V max(n)/(4 N W_bidi)") {
    const auto r = a2a({{4, true}, {4, true}, {4, true}}, kGiB);
    CHECK(r.busiest_link_blocks == 32);
    CHECK(r.bandwidth_time_s == Approx(book(K::AllToAll, {{4, true}, {4, true}, {4, true}}, kGiB).bandwidth_time_s));
  }
  SECTION("a ring and a line: the line's middle is busiest") {
    const auto r = a2a({{4, true}, {4, false}}, kGiB);
    CHECK(r.busiest_link_blocks == 16);   // ring axis: 16/8 x 16/4 = 8
    CHECK(r.busiest_axis == 1);
    CHECK(r.longest_route_hops == 5);
  }
}

TEST_CASE("fluid model: the closed form where parts do not overlap, more where they do", "[schedule-time]") {
  SECTION("no overlap: equal to the closed form") {
    for (double v : {1024.0, kMiB, 32 * kMiB}) {
      INFO(v);
      CHECK(fluid(K::AllGather, {{16, true}}, v) == Approx(ring(K::AllGather, {{16, true}}, v).time_s));
      CHECK(fluid(K::AllReduce, {{8, false}}, v) == Approx(ring(K::AllReduce, {{8, false}}, v).time_s));
      const std::vector<AxisInfo> cube{{4, true}, {4, true}, {4, true}};
      CHECK(fluid(K::AllReduce, cube, v) == Approx(ring(K::AllReduce, cube, v).time_s));
    }
  }
  SECTION("8x16 rings, AllGather: part 1's last 4 tau on Y shared with part 0 delay it by 4 tau") {
    // tau = part/(128 W). Part 0: X in 4 tau, then Y, 64 tau of work; part 1: Y until 8 tau,
    // then X, 64 tau. From 4 tau both share Y: part 1's 4 tau left take 8 (ends at 12), so its
    // X phase ends at 76 tau instead of 72.
    const double tau = kGiB / 2 / 128 / kW;
    CHECK(ring(K::AllGather, {{8, true}, {16, true}}, kGiB).time_s == Approx(72 * tau));
    CHECK(fluid(K::AllGather, {{8, true}, {16, true}}, kGiB) == Approx(76 * tau));
  }
  SECTION("4x4 lines, AllGather: 16 small-message times, not 15 (docs/validation.md)") {
    const double tau = kGiB / 2 / 16 / kW;
    CHECK(ring(K::AllGather, {{4, false}, {4, false}}, kGiB).time_s == Approx(15 * tau));
    CHECK(fluid(K::AllGather, {{4, false}, {4, false}}, kGiB) == Approx(16 * tau));
  }
  SECTION("never below the closed form, which is a lower bound") {
    for (K kind : {K::AllGather, K::ReduceScatter, K::AllReduce}) {
      for (const auto& axes : std::vector<std::vector<AxisInfo>>{{{8, false}, {4, false}}, {{6, false}, {4, false}},
                                                                 {{16, true}, {8, false}}}) {
        for (double v : {kMiB, kGiB}) CHECK(fluid(kind, axes, v) >= ring(kind, axes, v).time_s * (1 - 1e-12));
      }
    }
  }
}

TEST_CASE("validate's predictions name the effect and its size", "[validate]") {
  const std::vector<std::string> xy{"X", "Y"};
  SECTION("AllToAll on a line: no wraparound, +100%") {
    const auto p = predict_collective(K::AllToAll, {{8, false}}, {"X"}, kGiB, kW, kT, book(K::AllToAll, {{8, false}}, kGiB));
    REQUIRE(p.effects.size() == 1);
    CHECK(p.effects[0].find("no wraparound +100.00%") == 0);
    CHECK(p.effects[0].find("16 blocks") != std::string::npos);
    CHECK(p.method == "closed form");
  }
  SECTION("multi-axis rings over lines: the fluid model, with the closed form as lower bound") {
    const std::vector<AxisInfo> axes{{8, false}, {4, false}};
    const auto p = predict_collective(K::AllGather, axes, xy, kGiB, kW, kT, book(K::AllGather, axes, kGiB));
    CHECK(p.method == "fluid model");
    CHECK(p.lower_bound_s == Approx(ring(K::AllGather, axes, kGiB).time_s));
    CHECK(p.time_s > p.lower_bound_s);
    REQUIRE(p.effects.size() == 2);
    CHECK(p.effects[0].find("multi-axis schedule") == 0);
    CHECK(p.effects[1].find("no wraparound: parts overlap") == 0);
  }
  SECTION("single-axis ring: the book exactly, no effect") {
    const auto p = predict_collective(K::AllReduce, {{16, true}}, {"X"}, kGiB, kW, kT, book(K::AllReduce, {{16, true}}, kGiB));
    CHECK(p.effects.empty());
    CHECK(p.time_s == Approx(book(K::AllReduce, {{16, true}}, kGiB).time_s));
  }
}

TEST_CASE("a row more than 1% from its prediction is unexplained", "[validate]") {
  Prediction p;
  p.time_s = 100e-6;
  p.method = "closed form";
  p.effects = {"an effect +25.00% (why)"};
  ValidationRow row;
  row.analytic_s = 80e-6;
  auto judged = [&](double simulated) {
    ValidationRow r = row;
    r.simulated_s = simulated;
    r.rel_error = (simulated - r.analytic_s) / r.analytic_s;
    judge_row(r, p);
    return r;
  };
  CHECK(judged(100.5e-6).status == RowStatus::Explained);
  CHECK(judged(100.5e-6).note.find("an effect +25.00%") == 0);
  const auto wrong = judged(102e-6);
  CHECK(wrong.status == RowStatus::Unexplained);
  CHECK(wrong.note.find("unexplained") == 0);
  CHECK(wrong.predicted_error == Approx(0.02));
  SECTION("within 1% of the book but not of the prediction: unexplained too") {
    p.time_s = 90e-6;
    CHECK(judged(80.2e-6).status == RowStatus::Unexplained);
  }
  SECTION("below a proven lower bound: unexplained, whatever the model says") {
    p.lower_bound_s = 100.4e-6;
    CHECK(judged(100.2e-6).status == RowStatus::Unexplained);
    CHECK(judged(100.2e-6).note.find("lower bound") != std::string::npos);
  }
  SECTION("no prediction: unexplained outside the book's 1%, fine within") {
    p = Prediction{};
    CHECK(judged(90e-6).status == RowStatus::Unexplained);
    CHECK(judged(80.5e-6).status == RowStatus::Book);
  }
}
