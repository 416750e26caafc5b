// Ops present at some positions only (ProgramOp::present_at_position): where absent an op
// ends as soon as its dependencies allow, so the program behaves there as if it were removed.
#include <catch2/catch.hpp>

#include "meshes.hpp"
#include "program_ops.hpp"
#include "sim/engine/run.hpp"
#include "workloads/op_presence.hpp"

using namespace podsim;
using podsim_test::collective_op;

namespace {

ProgramOp compute(const std::string& name, double seconds, std::vector<int> after) {
  ProgramOp op;
  op.name = name;
  op.work = ComputeWork{seconds, 1e12 * seconds, {}, {}};
  op.after = std::move(after);
  return op;
}

// A (compute) -> X (an AllReduce over Y, the axis stages do not differ along) -> C (compute),
// on an 4 x 4 mesh whose X axis stands for pipeline stages; X present on `mask` (empty: all).
Program three_ops(std::vector<char> mask, bool with_x = true) {
  Program p;
  p.push_back(compute("A", 1e-3, {}));
  if (!with_x) {
    p.push_back(compute("C", 2e-3, {0}));
    return p;
  }
  ProgramOp x = collective_op("X", CollectiveKind::AllReduce, {1}, 64e6);
  x.after = {0};
  x.position_axis = 0;
  x.present_at_position = std::move(mask);
  p.push_back(x);
  p.push_back(compute("C", 2e-3, {1}));
  return p;
}

}  // namespace

TEST_CASE("an op present at one position only runs there, and elsewhere as if removed", "[replay][presence]") {
  const auto topo = podsim_test::v5e_mesh({4, 4});
  const SimulationSettings settings;
  const RunOptions full{Fidelity::Full, false, {}};
  const auto masked = run_program(topo, settings, three_ops({0, 0, 1, 0}), full);
  const auto everywhere = run_program(topo, settings, three_ops({}), full);
  const auto removed = run_program(topo, settings, three_ops({}, false), full);
  const Topology real(topo);
  for (ChipId chip = 0; chip < real.chip_count(); ++chip) {
    const bool stage2 = real.position_along(chip, 0) == 2;
    // C is op 1 of the program without X, op 2 of the others.
    const auto& c = masked.span(2, 0, chip);
    const auto& expected = stage2 ? everywhere.span(2, 0, chip) : removed.span(1, 0, chip);
    CHECK(c.start_s == expected.start_s);
    CHECK(c.end_s == expected.end_s);
    CHECK(masked.present(1, chip) == stage2);
    if (!stage2) CHECK(masked.span(1, 0, chip).end_s == masked.span(1, 0, chip).start_s);
  }
  // X's figures count stage 2's chips only, which run it as every stage does when present.
  CHECK(masked.operations[1].time_s == everywhere.operations[1].time_s);
  CHECK(masked.operations[1].start_s == everywhere.operations[1].start_s);
  CHECK(masked.operations[1].end_s == everywhere.operations[1].end_s);
  CHECK(masked.total_time_s == everywhere.total_time_s);
  CHECK(masked.replay.messages * 4 == everywhere.replay.messages);
}

TEST_CASE("an op absent everywhere gives the results of the program without it", "[replay][presence]") {
  const auto topo = podsim_test::v5e_mesh({4, 4});
  const RunOptions full{Fidelity::Full, false, {}};
  const auto masked = run_program(topo, {}, three_ops({0, 0, 0, 0}), full);
  const auto removed = run_program(topo, {}, three_ops({}, false), full);
  CHECK(masked.total_time_s == removed.total_time_s);
  CHECK(masked.replay.messages == 0);
  CHECK(masked.operations[2].time_s == removed.operations[1].time_s);
  CHECK(masked.operations[1].time_s == 0);
}

TEST_CASE("a masked program replays the same reduced as full", "[replay][presence][symmetry]") {
  const auto topo = podsim_test::v5p_mesh({4, 8});   // wrapped: Y reduces
  const auto program = three_ops({1, 0, 1, 0});
  const auto full = run_program(topo, {}, program, {Fidelity::Full, false, {}});
  const auto reduced = run_program(topo, {}, program, {Fidelity::Auto, false, {}});
  CHECK(reduced.simulated.chip_count() < full.simulated.chip_count());
  CHECK(reduced.total_time_s == Approx(full.total_time_s).epsilon(1e-12));
  for (ChipId chip = 0; chip < full.topology.chip_count(); ++chip) {
    for (int op = 0; op < 3; ++op) {
      CHECK(reduced.span(op, 0, chip).start_s == Approx(full.span(op, 0, chip).start_s).epsilon(1e-12));
      CHECK(reduced.span(op, 0, chip).end_s == Approx(full.span(op, 0, chip).end_s).epsilon(1e-12));
    }
  }
}

TEST_CASE("a collective over the position axis must be present at all positions or none", "[replay][presence]") {
  const Topology topo(podsim_test::v5e_mesh({4, 4}));
  ProgramOp op = collective_op("over_stages", CollectiveKind::AllGather, {0}, 1e6);
  op.position_axis = 0;
  op.present_at_position = {1, 1, 0, 1};
  REQUIRE_THROWS_WITH(check_presence(op, topo), Catch::Contains("over_stages"));
  op.present_at_position = {1, 1, 1};
  REQUIRE_THROWS_AS(check_presence(op, topo), std::logic_error);
  op.present_at_position = {0, 0, 0, 0};
  CHECK_NOTHROW(check_presence(op, topo));
  op.collective().axes = {1};
  op.present_at_position = {1, 0, 1, 0};
  CHECK_NOTHROW(check_presence(op, topo));
}
