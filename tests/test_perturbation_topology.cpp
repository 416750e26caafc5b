// Perturbations on the Topology (topology/perturbation.hpp): what each selects and applies to
// the link data and the per-chip compute slowdown, how effects compose, what Topology refuses,
// and which axes they make differ (what the symmetry reduction must keep whole).
#include <catch2/catch.hpp>

#include <algorithm>
#include <stdexcept>

#include "topology/topology.hpp"

using namespace podsim;

namespace {

// v4p 4x4x4 (wrapped: full cubes; hosts of 2x2x1 chips), `slices` of them.
TopologySpec v4p_cube(int slices = 1) {
  TopologySpec t;
  t.chip = *find_chip_preset("v4p");
  t.axes = {{"X", 4, true}, {"Y", 4, true}, {"Z", 4, true}};
  t.slices = slices;
  return t;
}

ChipBox box(PositionRange x, PositionRange y, PositionRange z, PositionRange slices = {0, 0}) {
  return ChipBox{{x, y, z}, slices};
}

const PositionRange kAll{0, 3};

Perturbation slow(const std::string& name, ChipBox where, double factor) {
  Perturbation p;
  p.name = name;
  p.kind = PerturbationKind::SlowChips;
  p.chips = {where};
  p.compute_slowdown = factor;
  return p;
}

Perturbation links(const std::string& name, ChipBox where, int axis, int direction, double scale, double latency_s = 0) {
  Perturbation p;
  p.name = name;
  p.kind = PerturbationKind::Links;
  p.chips = {where};
  p.axis = axis;
  p.direction = direction;
  p.bandwidth_scale = scale;
  p.extra_latency_s = latency_s;
  return p;
}

int perturbed_directions(const Topology& topo) {
  int n = 0;
  for (const auto& link : topo.links()) {
    for (int side = 0; side < 2; ++side) n += link.bandwidth_scale[side] != 1.0 || link.extra_latency_s[side] != 0.0;
  }
  return n;
}

std::vector<int> differing_axes(const Topology& topo) {
  std::vector<int> axes;
  for (const auto& d : perturbation_differences(topo)) axes.push_back(d.axis);
  return axes;
}

}  // namespace

TEST_CASE("a slow chip, and slowdowns that compose", "[topology][perturbation]") {
  auto spec = v4p_cube();
  spec.perturbations = {slow("one", box({1, 1}, {2, 2}, {3, 3}), 1.5), slow("row", box(kAll, {2, 2}, {3, 3}), 2.0)};
  const Topology topo(spec);
  const std::vector<int> at{1, 2, 3}, beside{0, 2, 3}, elsewhere{0, 0, 0};
  CHECK(topo.compute_slowdown(topo.chip_at(0, at)) == 3.0);   // both select it: 1.5 x 2
  CHECK(topo.compute_slowdown(topo.chip_at(0, beside)) == 2.0);
  CHECK(topo.compute_slowdown(topo.chip_at(0, elsewhere)) == 1.0);
  CHECK(perturbation_target_count(topo, 0) == 1);
  CHECK(perturbation_target_count(topo, 1) == 4);
  CHECK(perturbed_directions(topo) == 0);
  CHECK_FALSE(topo.has_extra_latency());
  // "row" is invariant along X; "one" is not, nor along Y and Z (the names say which).
  const auto diffs = perturbation_differences(topo);
  REQUIRE(diffs.size() == 5);
  CHECK(diffs[0].perturbation == "one");
  CHECK(differing_axes(topo) == std::vector<int>{0, 1, 2, 1, 2});
}

TEST_CASE("links: one direction, both ways, every link of an axis", "[topology][perturbation]") {
  SECTION("the link from chip (0,0,0) toward +X, that way only") {
    auto spec = v4p_cube();
    spec.perturbations = {links("bad", box({0, 0}, {0, 0}, {0, 0}), 0, +1, 0.5, 2e-6)};
    const Topology topo(spec);
    const std::vector<int> origin{0, 0, 0};
    const auto link = *topo.link_toward(topo.chip_at(0, origin), 0, +1);
    const LinkInfo& info = topo.links()[link.link];
    CHECK(info.directed_bandwidth_Bps(link.forward) == 0.5 * info.bandwidth_Bps);
    CHECK(info.directed_bandwidth_Bps(!link.forward) == info.bandwidth_Bps);
    CHECK(info.directed_extra_latency_s(link.forward) == 2e-6);
    CHECK(info.directed_extra_latency_s(!link.forward) == 0.0);
    CHECK(perturbed_directions(topo) == 1);
    CHECK(topo.has_extra_latency());
    CHECK(differing_axes(topo) == std::vector<int>{0, 1, 2});
  }
  SECTION("toward -X: the link into (0,0,0) from (3,0,0), traversed backward") {
    auto spec = v4p_cube();
    spec.perturbations = {links("bad", box({0, 0}, {0, 0}, {0, 0}), 0, -1, 0.5)};
    const Topology topo(spec);
    const std::vector<int> origin{0, 0, 0};
    const auto link = *topo.link_toward(topo.chip_at(0, origin), 0, -1);
    CHECK(topo.links()[link.link].is_wraparound);
    CHECK(topo.links()[link.link].directed_bandwidth_Bps(link.forward) == 0.5 * topo.links()[link.link].bandwidth_Bps);
    CHECK(perturbed_directions(topo) == 1);
  }
  SECTION("both ways of the cable to the +X neighbour") {
    auto spec = v4p_cube();
    spec.perturbations = {links("cable", box({0, 0}, {0, 0}, {0, 0}), 0, 0, 0.5)};
    const Topology topo(spec);
    CHECK(perturbed_directions(topo) == 2);
    CHECK(perturbation_target_count(topo, 0) == 2);
  }
  SECTION("every link of Y, both ways: invariant along every axis") {
    auto spec = v4p_cube();
    spec.perturbations = {links("y", box(kAll, kAll, kAll), 1, 0, 0.9)};
    const Topology topo(spec);
    CHECK(perturbed_directions(topo) == 2 * 64);
    CHECK(differing_axes(topo).empty());
  }
  SECTION("the links of X at Y = 1 only: chips differ along Y") {
    auto spec = v4p_cube();
    spec.perturbations = {links("x", box(kAll, {1, 1}, kAll), 0, +1, 0.9)};
    CHECK(differing_axes(Topology(spec)) == std::vector<int>{1});
  }
  SECTION("a line's end chip has no link beyond it; a line's own links are not compared") {
    auto spec = v4p_cube();
    spec.axes[0].wraparound = false;
    spec.perturbations = {links("x", box(kAll, kAll, kAll), 0, +1, 0.9)};
    const Topology topo(spec);
    CHECK(perturbed_directions(topo) == 3 * 16);
    CHECK(differing_axes(topo).empty());
  }
}

TEST_CASE("a degraded NIC: both directions of one host's link to the switch", "[topology][perturbation]") {
  auto spec = v4p_cube(2);
  Perturbation p;
  p.name = "nic";
  p.kind = PerturbationKind::Nics;
  p.chips = {box({0, 1}, {0, 1}, {0, 0}, {1, 1})};   // host 0 of slice 1
  p.bandwidth_scale = 0.25;
  spec.perturbations = {p};
  const Topology topo(spec);
  const int host = topo.hosts_per_slice();   // slice 1's first host
  const LinkInfo& nic = topo.links()[topo.nic_link(host)];
  CHECK(nic.kind == LinkKind::Nic);
  CHECK(nic.directed_bandwidth_Bps(true) == 0.25 * nic.bandwidth_Bps);
  CHECK(nic.directed_bandwidth_Bps(false) == 0.25 * nic.bandwidth_Bps);
  CHECK(perturbed_directions(topo) == 2);
  CHECK(perturbation_target_count(topo, 0) == 1);
  // Host 0 holds chips (0-1, 0-1, 0): chips differ along every axis, and from slice to slice.
  CHECK(differing_axes(topo) == std::vector<int>{0, 1, 2, Topology::kSliceAxis});
}

TEST_CASE("Topology refuses perturbations it cannot apply", "[topology][perturbation]") {
  auto spec = v4p_cube();
  spec.perturbations = {slow("far", box({1, 1}, {2, 2}, {4, 4}), 1.5)};
  CHECK_THROWS_WITH(Topology(spec), Catch::Contains("perturbation 'far'") && Catch::Contains("axis Z range 4-4"));
  spec.perturbations = {slow("zero", box(kAll, kAll, kAll), 0.0)};
  CHECK_THROWS_AS(Topology(spec), std::invalid_argument);
  spec.perturbations = {links("axis", box(kAll, kAll, kAll), 3, +1, 0.5)};
  CHECK_THROWS_WITH(Topology(spec), Catch::Contains("not a mesh axis"));
  spec.perturbations = {links("latency", box(kAll, kAll, kAll), 0, +1, 0.5, -1e-6)};
  CHECK_THROWS_WITH(Topology(spec), Catch::Contains("extra_latency_s"));
  spec.perturbations = {slow("two", ChipBox{{kAll, kAll}, {0, 0}}, 1.5)};
  CHECK_THROWS_WITH(Topology(spec), Catch::Contains("2 coordinates for 3 mesh axes"));
}

TEST_CASE("a reduced mesh keeps the part of each selection it holds", "[topology][perturbation]") {
  const std::vector<Perturbation> all = {slow("row", box(kAll, {2, 2}, kAll), 2.0),
                                         slow("high", box({2, 3}, {0, 0}, {0, 0}), 2.0)};
  const auto kept = restrict_perturbations(all, {2, 4, 1}, 1);
  REQUIRE(kept.size() == 1);   // "high" lies beyond the first two X positions
  CHECK(kept[0].name == "row");
  CHECK(kept[0].chips[0].axes[0].last == 1);
  CHECK(kept[0].chips[0].axes[1].first == 2);
  CHECK(kept[0].chips[0].axes[2].last == 0);
}

TEST_CASE("a failed link: hops round it take the detour ICI routing takes", "[topology][perturbation]") {
  const std::vector<int> origin{0, 0, 0};
  auto at = [](const Topology& topo, std::vector<int> c) { return topo.chip_at(0, c); };
  SECTION("off along the lowest other axis (+1 first), across beside it, and back") {
    auto spec = v4p_cube();
    spec.perturbations = {links("dead", box({0, 0}, {0, 0}, {0, 0}), 0, +1, 0.0)};
    const Topology topo(spec);
    CHECK(topo.has_failed_links());
    const ChipId o = at(topo, origin);
    const auto route = topo.hop_route(o, 0, +1);
    const std::vector<DirectedLink> expected{*topo.link_toward(o, 1, +1), *topo.link_toward(at(topo, {0, 1, 0}), 0, +1),
                                             *topo.link_toward(at(topo, {1, 1, 0}), 1, -1)};
    CHECK(route == expected);
    // The other direction of the link is alive: one link, as any other hop.
    CHECK(topo.hop_route(at(topo, {1, 0, 0}), 0, -1) == std::vector<DirectedLink>{*topo.link_toward(at(topo, {1, 0, 0}), 0, -1)});
    // And so is every other hop.
    CHECK(topo.hop_route(o, 1, +1).size() == 1);
    // A dimension-order route through it takes the detour: 3 links for 1 hop.
    CHECK(topo.dimension_order_route(o, at(topo, {2, 0, 0})).size() == 4);
  }
  SECTION("the next way round when the first is gone too") {
    auto spec = v4p_cube();
    spec.perturbations = {links("dead", box({0, 0}, {0, 0}, {0, 0}), 0, +1, 0.0),
                          links("beside", box({0, 0}, {1, 1}, {0, 0}), 0, +1, 0.0)};
    const Topology topo(spec);
    const auto route = topo.hop_route(at(topo, origin), 0, +1);
    REQUIRE(route.size() == 3);
    CHECK(route[0] == *topo.link_toward(at(topo, origin), 1, -1));   // -Y: the row Y = 3
    CHECK(route[1] == *topo.link_toward(at(topo, {0, 3, 0}), 0, +1));
  }
  SECTION("no way round on a ring of one axis: the reason") {
    TopologySpec spec;
    spec.chip = *find_chip_preset("v5e");
    spec.axes = {{"X", 16, true}};
    Perturbation p = links("dead", ChipBox{{{0, 0}}, {0, 0}}, 0, +1, 0.0);
    spec.perturbations = {p};
    const Topology topo(spec);
    const std::vector<int> zero{0};
    CHECK_THROWS_WITH(topo.hop_route(topo.chip_at(0, zero), 0, +1), Catch::Contains("no route goes round it"));
  }
}
