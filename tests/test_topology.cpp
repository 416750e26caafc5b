// Unit tests for topology/: chip presets, wraparound rules, chip ids, ICI links and routes,
// graph metrics, hosts and DCN routes. Expectations come from the book's figures
// (docs/reference/hardware.md) or from the mesh/torus formulas, not from earlier runs.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "topology/chip_spec.hpp"
#include "topology/topology.hpp"

using namespace podsim;

namespace {

const ChipSpec& preset(const std::string& name) {
  const ChipSpec* chip = find_chip_preset(name);
  REQUIRE(chip != nullptr);
  return *chip;
}

// A one-slice (unless told) topology of the preset with the chip's default wraparound.
Topology make_topology(const std::string& chip_name, const std::vector<int>& sizes, int slices = 1,
                       double oversubscription = 1.0) {
  TopologySpec spec;
  spec.chip = preset(chip_name);
  const std::vector<bool> wrap = default_wraparound(spec.chip, sizes);
  for (std::size_t i = 0; i < sizes.size(); ++i) spec.axes.push_back({"", sizes[i], wrap[i]});
  spec.slices = slices;
  spec.dcn_oversubscription = oversubscription;
  return Topology(spec);
}

// Follows a route from `from`, requiring it to be a walk (each step starts where the last ended);
// returns the vertex it ends on.
int walk_end(const Topology& topo, int from, const std::vector<DirectedLink>& route) {
  int at = from;
  for (const DirectedLink& step : route) {
    const LinkInfo& link = topo.links().at(step.link);
    const int start = step.forward ? link.a : link.b;
    REQUIRE(start == at);
    at = step.forward ? link.b : link.a;
  }
  return at;
}

}  // namespace

TEST_CASE("chip presets carry the book's figures", "[topology]") {
  // hardware.md s1 (tpus.md:L192-L199), s2 (tpus.md:L203-L212), s4 (tpus.md:L136, L164, L214).
  CHECK(preset("v5p").ici_bandwidth_Bps == 9e10);
  CHECK(preset("v5p").bf16_flops_per_s == 4.59e14);
  CHECK(preset("v5p").int8_ops_per_s == 9.18e14);
  CHECK(preset("v5p").hbm_bytes == 96e9);
  CHECK(preset("v5p").dcn_bandwidth_per_host_Bps == 2.5e10);  // training.md:L572
  CHECK(preset("v5e").hbm_bandwidth_Bps == 8.2e11);
  CHECK(preset("v5e").hbm_bytes == 16e9);
  CHECK(preset("v5e").bf16_flops_per_s == 1.97e14);
  CHECK(preset("v5e").ici_bandwidth_Bps == 4.5e10);
  CHECK(preset("v5e").dcn_bandwidth_per_host_Bps == 8 * 3.125e9);
  CHECK(preset("v6e").pcie_bandwidth_Bps == 3.2e10);
  CHECK(preset("v6e").dcn_bandwidth_per_host_Bps == 8 * 12.5e9);
  CHECK(preset("v4p").ici_bandwidth_Bps == 4.5e10);
  CHECK(preset("v4p").hbm_bytes == 32e9);
  CHECK(preset("v3").ici_bandwidth_Bps == 1e11);
  CHECK(preset("v3").hbm_bandwidth_Bps == 9e11);
  // On-demand list prices a chip-hour, not the book's (docs/modelling.md, "Prices").
  CHECK(preset("v4p").chip_hour_price_usd == 3.22);
  CHECK(preset("v5p").chip_hour_price_usd == 4.20);
  CHECK(preset("v5e").chip_hour_price_usd == 1.20);
  CHECK(preset("v6e").chip_hour_price_usd == 2.70);
  CHECK(preset("v3").chip_hour_price_usd == 0);
  // The book's FLOPs per dollar (applied-inference.md:L97-L101, book-cases.md row 78):
  // bf16 FLOPs/s x 3600 / price.
  CHECK(preset("v5p").bf16_flops_per_s * 3600 / preset("v5p").chip_hour_price_usd == Approx(3.9e17).epsilon(0.01));
  // v5e: 1.97e14 x 3600 / 1.2 = 5.91e17, 1.9% above the book's rounded 5.8e17.
  CHECK(preset("v5e").bf16_flops_per_s * 3600 / preset("v5e").chip_hour_price_usd == Approx(5.91e17).epsilon(0.001));
  CHECK(preset("v5e").bf16_flops_per_s * 3600 / preset("v5e").chip_hour_price_usd == Approx(5.8e17).epsilon(0.02));

  CHECK(preset("v5p").max_torus_dims == 3);
  CHECK(preset("v5e").max_torus_dims == 2);
  CHECK(preset("v5p").wrap_rule == WrapRule::FullCubes);
  CHECK(preset("v6e").wrap_rule == WrapRule::Size16);
  CHECK(find_chip_preset("v9000") == nullptr);

  for (const ChipSpec& chip : chip_presets()) {
    INFO(chip.name);
    CHECK_FALSE(chip.source.empty());
    // A price comes with its source and the date it was stated (docs/modelling.md, "Prices").
    CHECK((chip.chip_hour_price_usd > 0) == !chip.chip_hour_price_source.empty());
    if (chip.chip_hour_price_usd > 0) CHECK(chip.chip_hour_price_source.find("20") != std::string::npos);
    CHECK(chip.hop_latency_s == 1e-6);  // sharding.md:L338
    CHECK(chip.neighbor_bandwidth_Bps() == chip.ici_bandwidth_Bps * chip.ici_links_per_neighbor / chip.cores_per_chip);
    int block = 1;
    for (int extent : chip.host_shape) block *= extent;
    CHECK(block == chip.chips_per_host);  // the host block holds exactly the host's chips
    CHECK(find_chip_preset(chip.name) == &chip);
  }
}

TEST_CASE("default wraparound follows the chip's rule", "[topology]") {
  using V = std::vector<bool>;
  // tpus.md:L150 footnote, L212: v5e wraps only axes of size 16.
  CHECK(default_wraparound(preset("v5e"), {8, 4}) == V{false, false});
  CHECK(default_wraparound(preset("v5e"), {16, 16}) == V{true, true});
  CHECK(default_wraparound(preset("v5e"), {8, 16}) == V{false, true});
  // tpus.md:L150: v4p/v5p wrap all axes only on full 4x4x4 cubes.
  CHECK(default_wraparound(preset("v4p"), {4, 4, 4}) == V{true, true, true});
  CHECK(default_wraparound(preset("v4p"), {4, 4, 8}) == V{true, true, true});
  CHECK(default_wraparound(preset("v4p"), {2, 2, 4}) == V{false, false, false});
  CHECK(default_wraparound(preset("v4p"), {2, 2, 1}) == V{false, false, false});
  CHECK(default_wraparound(preset("v5p"), {16, 20, 28}) == V{true, true, true});
  CHECK(default_wraparound(preset("v5p"), {4, 4}) == V{false, false});
}

TEST_CASE("chip ids and coordinates round-trip", "[topology]") {
  const Topology topo = make_topology("v5p", {4, 2, 3}, 2);
  REQUIRE(topo.chips_per_slice() == 24);
  REQUIRE(topo.chip_count() == 48);
  for (ChipId chip = 0; chip < topo.chip_count(); ++chip) {
    const std::vector<int> c = topo.coords(chip);
    CHECK(topo.chip_at(topo.slice_of(chip), c) == chip);
    CHECK(topo.vertex_of_chip(chip) == chip);
  }
  // Axis 0 varies fastest; slices follow each other.
  const std::vector<int> c = {3, 1, 2};
  CHECK(topo.chip_at(1, c) == 24 + 3 + 1 * 4 + 2 * 8);
  CHECK(topo.chip_name(topo.chip_at(1, c)) == "s1/chip(3,1,2)");
  CHECK(topo.spec().axes[0].name == "X");
  CHECK(topo.spec().axes[2].name == "Z");
  const std::vector<int> bad = {4, 0, 0};
  CHECK_THROWS_AS(topo.chip_at(0, bad), std::out_of_range);
}

TEST_CASE("neighbours with and without wraparound", "[topology]") {
  SECTION("4x4 mesh: edges have no neighbour beyond them") {
    const Topology topo = make_topology("v5e", {4, 4});
    REQUIRE_FALSE(topo.wraps(0));
    const std::vector<int> origin = {0, 0}, right = {1, 0}, up = {0, 1}, far = {3, 3};
    const ChipId c0 = topo.chip_at(0, origin);
    CHECK(topo.neighbor(c0, 0, +1) == topo.chip_at(0, right));
    CHECK(topo.neighbor(c0, 1, +1) == topo.chip_at(0, up));
    CHECK_FALSE(topo.neighbor(c0, 0, -1).has_value());
    CHECK_FALSE(topo.neighbor(c0, 1, -1).has_value());
    CHECK_FALSE(topo.neighbor(topo.chip_at(0, far), 0, +1).has_value());
    // 2 axes x 4 lines x 3 links.
    CHECK(std::count_if(topo.links().begin(), topo.links().end(),
                        [](const LinkInfo& l) { return l.kind == LinkKind::Ici; }) == 24);
  }
  SECTION("16x16 torus: the edges wrap") {
    const Topology topo = make_topology("v5e", {16, 16});
    REQUIRE(topo.wraps(0));
    REQUIRE(topo.wraps(1));
    const std::vector<int> origin = {0, 0}, last_x = {15, 0}, last_y = {0, 15};
    const ChipId c0 = topo.chip_at(0, origin);
    CHECK(topo.neighbor(c0, 0, -1) == topo.chip_at(0, last_x));
    CHECK(topo.neighbor(c0, 1, -1) == topo.chip_at(0, last_y));
    CHECK(topo.neighbor(topo.chip_at(0, last_x), 0, +1) == c0);
    const auto wrap = topo.link_toward(c0, 0, -1);
    REQUIRE(wrap.has_value());
    CHECK(topo.links()[wrap->link].is_wraparound);
    CHECK_FALSE(wrap->forward);
    // Every chip has one plus link per axis: 2 x 256.
    CHECK(std::count_if(topo.links().begin(), topo.links().end(),
                        [](const LinkInfo& l) { return l.kind == LinkKind::Ici; }) == 512);
    for (const LinkInfo& l : topo.links())
      if (l.kind == LinkKind::Ici) CHECK(l.bandwidth_Bps == preset("v5e").neighbor_bandwidth_Bps());
  }
  SECTION("size-1 axes have no links and never wrap") {
    TopologySpec spec;
    spec.chip = preset("v5p");
    spec.axes = {{"X", 4, true}, {"Y", 1, true}, {"Z", 4, true}};
    const Topology topo(spec);
    CHECK_FALSE(topo.wraps(1));
    CHECK_FALSE(topo.neighbor(0, 1, +1).has_value());
    CHECK_FALSE(topo.link_toward(0, 1, -1).has_value());
  }
}

TEST_CASE("a wrapped axis of size 2 has two distinct links", "[topology]") {
  TopologySpec spec;
  spec.chip = preset("v5e");
  spec.axes = {{"X", 2, true}};
  const Topology topo(spec);
  REQUIRE(topo.wraps(0));
  const auto c0_plus = topo.link_toward(0, 0, +1), c1_plus = topo.link_toward(1, 0, +1);
  const auto c0_minus = topo.link_toward(0, 0, -1), c1_minus = topo.link_toward(1, 0, -1);
  REQUIRE((c0_plus && c1_plus && c0_minus && c1_minus));
  CHECK(c0_plus->link != c1_plus->link);
  // c0 +1: direct link forward; c1 +1: wrap link forward (1 -> 0).
  CHECK_FALSE(topo.links()[c0_plus->link].is_wraparound);
  CHECK(topo.links()[c1_plus->link].is_wraparound);
  CHECK(c0_plus->forward);
  CHECK(c1_plus->forward);
  // c0 -1: wrap link backward; c1 -1: direct link backward.
  CHECK(*c0_minus == DirectedLink{c1_plus->link, false});
  CHECK(*c1_minus == DirectedLink{c0_plus->link, false});
  CHECK(topo.neighbor(0, 0, +1) == 1);
  CHECK(topo.neighbor(0, 0, -1) == 1);
  CHECK(topo.bisection_links() == 2);  // both parallel links must be cut
  CHECK(topo.diameter() == 1);
}

TEST_CASE("ring order lists an axis line by position", "[topology]") {
  const Topology topo = make_topology("v5p", {4, 4, 4});
  const std::vector<int> member = {2, 1, 3};
  const ChipId m = topo.chip_at(0, member);
  for (int axis = 0; axis < 3; ++axis) {
    const std::vector<ChipId> ring = topo.ring_order(m, axis);
    REQUIRE(ring.size() == 4);
    CHECK(std::find(ring.begin(), ring.end(), m) != ring.end());
    for (int i = 0; i < 4; ++i) {
      std::vector<int> c = member;
      c[axis] = i;
      CHECK(ring[i] == topo.chip_at(0, c));
      // Consecutive ring members are ICI neighbours (and the ends are, on a torus).
      CHECK(topo.neighbor(ring[i], axis, +1) == ring[(i + 1) % 4]);
    }
  }
}

TEST_CASE("dimension-order routes", "[topology]") {
  SECTION("v5e 4x4 without wrap: (0,0)->(3,3) is 6 hops (tpus.md:L278)") {
    const Topology topo = make_topology("v5e", {4, 4});
    const std::vector<int> from = {0, 0}, to = {3, 3};
    const ChipId a = topo.chip_at(0, from), b = topo.chip_at(0, to);
    const auto route = topo.dimension_order_route(a, b);
    CHECK(route.size() == 6);
    CHECK(topo.hop_distance(a, b) == 6);
    CHECK(walk_end(topo, a, route) == b);
    // X first, then Y.
    for (int i = 0; i < 6; ++i) CHECK(topo.links()[route[i].link].axis == (i < 3 ? 0 : 1));
    CHECK(topo.dimension_order_route(a, a).empty());
  }
  SECTION("16-ring with wrap: the shorter way round, ties go +1") {
    const Topology topo = make_topology("v5e", {16});
    const auto back = topo.dimension_order_route(0, 15);
    REQUIRE(back.size() == 1);
    CHECK_FALSE(back[0].forward);  // the wrap link 15 -> 0, taken backward
    CHECK(topo.links()[back[0].link].is_wraparound);
    CHECK(walk_end(topo, 0, back) == 15);
    const auto half = topo.dimension_order_route(0, 8);
    CHECK(half.size() == 8);
    for (const DirectedLink& step : half) CHECK(step.forward);
    CHECK(walk_end(topo, 0, half) == 8);
    CHECK(topo.hop_distance(0, 8) == 8);
    CHECK(topo.hop_distance(3, 14) == 5);  // 3 -> 2 -> 1 -> 0 -> 15 -> 14
  }
  SECTION("routes stay inside a slice") {
    const Topology topo = make_topology("v5e", {4, 4}, 2);
    CHECK_THROWS_AS(topo.dimension_order_route(0, 16), std::invalid_argument);
  }
  SECTION("every route's length is the hop distance") {
    const Topology topo = make_topology("v5e", {8, 16});
    for (ChipId a = 0; a < topo.chip_count(); a += 7)
      for (ChipId b = 0; b < topo.chip_count(); b += 5) {
        const auto route = topo.dimension_order_route(a, b);
        CHECK(static_cast<int>(route.size()) == topo.hop_distance(a, b));
        CHECK(walk_end(topo, a, route) == b);
      }
  }
}

TEST_CASE("diameter is the largest hop distance", "[topology]") {
  // Per axis floor(n/2) on a ring, n-1 on a line (tpus.md:L144).
  CHECK(make_topology("v5e", {4, 4}).diameter() == 6);
  CHECK(make_topology("v5e", {16, 16}).diameter() == 16);
  CHECK(make_topology("v4p", {4, 4, 4}).diameter() == 6);
  CHECK(make_topology("v5e", {8, 16}).diameter() == 7 + 8);
  // Cross-check the formula against brute force on small shapes.
  for (const auto& sizes : std::vector<std::vector<int>>{{4, 4}, {8, 16}, {5}}) {
    const Topology topo = make_topology("v5e", sizes);
    int worst = 0;
    for (ChipId a = 0; a < topo.chip_count(); ++a)
      for (ChipId b = 0; b < topo.chip_count(); ++b) worst = std::max(worst, topo.hop_distance(a, b));
    CHECK(worst == topo.diameter());
  }
}

TEST_CASE("bisection counts the links a middle cut crosses", "[topology]") {
  // (wraps ? 2 : 1) x product of the other axes, minimised over axes.
  CHECK(make_topology("v5e", {16, 16}).bisection_links() == 32);
  CHECK(make_topology("v5e", {8, 4}).bisection_links() == 4);
  CHECK(make_topology("v4p", {4, 4, 4}).bisection_links() == 32);
  // Cut across X (line of 8): 1 x 16; across Y (ring of 16): 2 x 8. Both 16.
  CHECK(make_topology("v5e", {8, 16}).bisection_links() == 16);
  CHECK(make_topology("v5e", {16, 4}).bisection_links() == 8);  // X ring of 16: 2 x 4 beats Y line of 4: 1 x 16
  CHECK(make_topology("v5e", {1}).bisection_links() == 0);
}

TEST_CASE("hosts own blocks of chips", "[topology]") {
  SECTION("v5e 16x16 pod: 32 hosts of 8 chips (tpus.md:L234)") {
    const Topology topo = make_topology("v5e", {16, 16});
    CHECK(topo.host_count() == 32);
    for (int h = 0; h < topo.host_count(); ++h) {
      const auto chips = topo.chips_of_host(h);
      CHECK(chips.size() == 8);
      for (ChipId c : chips) CHECK(topo.host_of(c) == h);
    }
    // A host is a 4x2 block: chips (0..3, 0..1).
    const auto first = topo.chips_of_host(0);
    CHECK(first == std::vector<ChipId>{0, 1, 2, 3, 16, 17, 18, 19});
  }
  SECTION("v5p 4x4x4 cube: 16 hosts of 4 chips, two slices") {
    const Topology topo = make_topology("v5p", {4, 4, 4}, 2);
    CHECK(topo.hosts_per_slice() == 16);
    CHECK(topo.host_count() == 32);
    std::set<ChipId> seen;
    for (int h = 0; h < topo.host_count(); ++h) {
      const auto chips = topo.chips_of_host(h);
      CHECK(chips.size() == 4);
      for (ChipId c : chips) {
        CHECK(topo.slice_of(c) == h / 16);
        seen.insert(c);
      }
    }
    CHECK(static_cast<int>(seen.size()) == topo.chip_count());
    // chips, hosts, one DCN switch.
    CHECK(topo.vertex_count() == 128 + 32 + 1);
    CHECK(topo.vertex_of_host(0) == 128);
  }
  SECTION("axes shorter than the host block clamp it; partial blocks at the edge") {
    const Topology small = make_topology("v5e", {2, 2});
    CHECK(small.host_count() == 1);
    CHECK(small.chips_of_host(0).size() == 4);
    const Topology ragged = make_topology("v5e", {6, 2});  // blocks of 4: one full, one of 2x2
    CHECK(ragged.host_count() == 2);
    CHECK(ragged.chips_of_host(1).size() == 4);
  }
}

TEST_CASE("DCN routes go chip -> host -> NIC -> (core) -> NIC -> host -> chip", "[topology]") {
  SECTION("non-blocking") {
    const Topology topo = make_topology("v5e", {4, 4}, 2);
    const ChipId a = 5, b = 16 + 10;
    const auto route = topo.dcn_route(a, b);
    REQUIRE(route.size() == 4);
    const std::vector<LinkKind> kinds = {LinkKind::Pcie, LinkKind::Nic, LinkKind::Nic, LinkKind::Pcie};
    const std::vector<bool> forward = {true, true, false, false};
    for (int i = 0; i < 4; ++i) {
      CHECK(topo.links()[route[i].link].kind == kinds[i]);
      CHECK(route[i].forward == forward[i]);
    }
    CHECK(walk_end(topo, a, route) == b);
    CHECK(topo.links()[route[0].link].bandwidth_Bps == preset("v5e").pcie_bandwidth_Bps);
    CHECK(topo.links()[route[1].link].bandwidth_Bps == preset("v5e").dcn_bandwidth_per_host_Bps);
    CHECK(topo.links()[route[1].link].a == topo.vertex_of_host(topo.host_of(a)));
    CHECK(topo.links()[route[2].link].a == topo.vertex_of_host(topo.host_of(b)));
    CHECK_THROWS_AS(topo.dcn_route(0, 3), std::invalid_argument);
    CHECK(std::none_of(topo.links().begin(), topo.links().end(),
                       [](const LinkInfo& l) { return l.kind == LinkKind::DcnCore; }));
  }
  SECTION("oversubscribed: one shared core link carrying all NICs / k") {
    const Topology topo = make_topology("v5p", {4, 4, 4}, 3, 4.0);
    const auto route = topo.dcn_route(0, 2 * 64 + 7);
    REQUIRE(route.size() == 5);
    const LinkInfo& core = topo.links()[route[2].link];
    CHECK(core.kind == LinkKind::DcnCore);
    CHECK(route[2].forward);
    CHECK(core.bandwidth_Bps == Approx(topo.host_count() * preset("v5p").dcn_bandwidth_per_host_Bps / 4.0));
    CHECK(walk_end(topo, 0, route) == 2 * 64 + 7);
    // Every cross-slice route shares the same core link.
    CHECK(topo.dcn_route(70, 1)[2].link == route[2].link);
  }
}

TEST_CASE("impossible topologies are rejected", "[topology]") {
  auto spec_of = [](const std::string& chip, std::vector<MeshAxis> axes) {
    TopologySpec spec;
    spec.chip = preset(chip);
    spec.axes = std::move(axes);
    return spec;
  };
  SECTION("zero-size axis") {
    CHECK_THROWS_AS(Topology(spec_of("v5p", {{"X", 0, false}})), std::invalid_argument);
  }
  SECTION("no axes / four axes") {
    CHECK_THROWS_AS(Topology(spec_of("v5p", {})), std::invalid_argument);
    CHECK_THROWS_AS(Topology(spec_of("v5p", {{"X", 2}, {"Y", 2}, {"Z", 2}, {"W", 2}})), std::invalid_argument);
  }
  SECTION("more axes than the chip's torus") {
    CHECK_THROWS_AS(Topology(spec_of("v5e", {{"X", 2}, {"Y", 2}, {"Z", 2}})), std::invalid_argument);
  }
  SECTION("a million chips on one axis") {
    CHECK_THROWS_AS(Topology(spec_of("v5e", {{"X", 1'000'000}})), std::invalid_argument);
  }
  SECTION("too many chips in all") {
    CHECK_THROWS_AS(Topology(spec_of("v5p", {{"X", 128}, {"Y", 128}, {"Z", 128}})), std::invalid_argument);
    auto spec = spec_of("v5e", {{"X", 16}, {"Y", 16}});
    spec.slices = 4000;  // 1,024,000 chips
    CHECK_THROWS_AS(Topology(spec), std::invalid_argument);
  }
  SECTION("slices, oversubscription and bandwidths") {
    auto spec = spec_of("v5e", {{"X", 4}});
    spec.slices = 0;
    CHECK_THROWS_AS(Topology(spec), std::invalid_argument);
    spec = spec_of("v5e", {{"X", 4}});
    spec.dcn_oversubscription = 0.5;
    CHECK_THROWS_AS(Topology(spec), std::invalid_argument);
    spec = spec_of("v5e", {{"X", 4}});
    spec.chip.ici_bandwidth_Bps = 0;
    CHECK_THROWS_AS(Topology(spec), std::invalid_argument);
    spec = spec_of("v5e", {{"X", 4}});
    spec.chip.pcie_bandwidth_Bps = -1;
    CHECK_THROWS_AS(Topology(spec), std::invalid_argument);
    spec = spec_of("v5e", {{"X", 4}});
    spec.chip.dcn_bandwidth_per_host_Bps = 0;
    CHECK_THROWS_AS(Topology(spec), std::invalid_argument);
  }
}
