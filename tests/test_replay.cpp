// Simulated collectives against the book's formulas where the physics is exact, and the
// symmetry-reduced replay against the full one.
#include <catch2/catch.hpp>

#include "sim/run.hpp"

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
    s.operations.push_back(op);
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
  auto full = run_scenario(s, {Fidelity::Full, false});
  REQUIRE(reduced.fidelity == "reduced");
  REQUIRE(full.fidelity == "full");
  for (ChipId c = 0; c < full.topology.chip_count(); ++c) {
    for (int op = 0; op < 3; ++op) {
      CHECK(reduced.span(op, 0, c).start_s == Approx(full.span(op, 0, c).start_s).epsilon(1e-12));
      CHECK(reduced.span(op, 0, c).end_s == Approx(full.span(op, 0, c).end_s).epsilon(1e-12));
    }
  }
}
