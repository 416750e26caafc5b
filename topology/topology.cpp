// Topology: chips on a 1-3 axis ICI mesh/torus, hosts owning blocks of chips, and a DCN switch
// joining the hosts of all slices, all held in one Boost.Graph adjacency_list.
//
// Graph layout (vertex ids are contiguous, in this order):
//   [0, chip_count)                      chips; vertex id == ChipId
//   [chip_count, chip_count+host_count)  hosts; vertex id == chip_count + host index
//   chip_count + host_count              the DCN switch (always present, even for one slice, so
//                                        every host has its NIC and the layout never changes shape)
// Edges mirror links_ one-to-one (the edge's bundled `link` == its index in links_), in order:
//   ICI links (slice by slice, chip by chip, axis by axis: each chip's "plus" link on each axis),
//   then one PCIe link per chip (chip -> host), then one NIC link per host (host -> switch),
//   then, when dcn_oversubscription > 1, one DcnCore link.
//
// The DcnCore link is a self-loop on the switch vertex: one shared resource carrying
// (sum of all NIC bandwidth) / oversubscription that every cross-slice transfer crosses forward.
// Making it a self-loop keeps every dcn_route a walk (each step starts where the last ended).
#include "topology/topology.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include <boost/graph/adjacency_list.hpp>
#include <boost/range/iterator_range.hpp>

namespace podsim {
namespace {

// Limits that keep every id in an int32 and the graph a sensible size.
constexpr long long kMaxChips = 1'000'000;
constexpr int kMaxAxisSize = 4096;
constexpr int kMaxAxes = 4;   // three torus axes and a chip's devices (axis C)

struct EdgeProps {
  int link = -1;  // index into Topology::links_
};

// vecS out-edge lists allow parallel edges, which a wrapped axis of size 2 needs.
using BoostGraph =
    boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, boost::no_property, EdgeProps>;

[[noreturn]] void fail(const std::string& what) { throw std::invalid_argument("Topology: " + what); }

void require_positive(double value, const char* name) {
  if (!(value > 0) || !std::isfinite(value)) {
    std::ostringstream msg;
    msg << name << " must be a positive finite number, got " << value;
    fail(msg.str());
  }
}

// Distance from `from` to `to` on an axis of size n, and the direction to take.
// Wrapped: the shorter way round, exactly half goes +1 (design choice, documented in the header).
std::pair<int, int> axis_step(int from, int to, int n, bool wraps) {
  if (from == to) return {0, +1};
  if (!wraps) return {std::abs(to - from), to > from ? +1 : -1};
  const int forward = ((to - from) % n + n) % n;
  if (2 * forward <= n) return {forward, +1};
  return {n - forward, -1};
}

}  // namespace

std::vector<bool> default_wraparound(const ChipSpec& chip, const std::vector<int>& sizes) {
  std::vector<bool> wrap(sizes.size(), false);
  switch (chip.wrap_rule) {
    case WrapRule::FullCubes: {
      // tpus.md:L150: v4/v5p slices made of full 4x4x4 cubes (4x4x4, 4x4x8, ...) get wraparound
      // from the optical switches; anything smaller (2x2x1, 2x2x2, 2x2x4) gets none. The switches
      // sit on cube faces, so a slice wraps only when it is whole cubes on all three axes.
      const bool full_cubes = sizes.size() == 3 &&
                              std::all_of(sizes.begin(), sizes.end(), [](int s) { return s > 0 && s % 4 == 0; });
      std::fill(wrap.begin(), wrap.end(), full_cubes);
      break;
    }
    case WrapRule::Size16:
      // tpus.md:L150 footnote, L212: v5e/v6e wrap only along an axis of size 16
      // (an 8x16 wraps only on the 16 axis; smaller axes have no wrap).
      for (std::size_t i = 0; i < sizes.size(); ++i) wrap[i] = sizes[i] == 16;
      break;
  }
  return wrap;
}

std::vector<MeshAxis> mesh_with_cores(std::vector<MeshAxis> chip_axes, const ChipSpec& chip) {
  if (chip.cores_per_chip <= 1) return chip_axes;
  for (const MeshAxis& axis : chip_axes)
    if (axis.name == "C")
      throw std::invalid_argument("axis name C is the axis of a " + chip.name + " chip's " +
                                  std::to_string(chip.cores_per_chip) + " devices; name the mesh's axes otherwise");
  chip_axes.push_back(MeshAxis{"C", chip.cores_per_chip, false, true});
  return chip_axes;
}

// The pimpl: the Boost graph plus the index arithmetic derived once from the spec.
struct Topology::Graph {
  BoostGraph g;
  int chips_per_slice = 1;
  int hosts_per_slice = 1;
  std::array<int, kMaxAxes> stride{1, 1, 1, 1};       // chip linear-index stride per axis
  std::array<int, kMaxAxes> host_extent{1, 1, 1, 1};  // chips per host block along each axis
  std::array<int, kMaxAxes> host_blocks{1, 1, 1, 1};  // host blocks along each axis
  std::array<int, kMaxAxes> host_stride{1, 1, 1, 1};  // host linear-index stride per axis
  int first_pcie_link = -1;                        // + chip id
  int first_nic_link = -1;                         // + host index
  int core_link = -1;                              // -1 when the DCN is non-blocking
  int switch_vertex = -1;
};

Topology::Topology(TopologySpec spec) : spec_(std::move(spec)) {
  // Everything is checked before anything is built.
  const long long per_slice = validate_spec();
  lay_out(per_slice);
  add_ici_links();
  add_host_links();
  apply_perturbations();
}

long long Topology::validate_spec() {
  const ChipSpec& chip = spec_.chip;
  const int n_axes = static_cast<int>(spec_.axes.size());
  if (chip.cores_per_chip < 1) fail("chip.cores_per_chip must be >= 1, got " + std::to_string(chip.cores_per_chip));
  const bool has_cores = chip.cores_per_chip > 1;
  // The axis of a chip's devices, where the mesh has it, is the last, of cores_per_chip devices,
  // or of 1 in a reduced mesh of one core's devices (the other core's run alike beside them).
  const bool core_axis = !spec_.axes.empty() && spec_.axes.back().die_to_die;
  const int core_size = core_axis ? spec_.axes.back().size : 0;
  if (core_axis && (!has_cores || (core_size != chip.cores_per_chip && core_size != 1)))
    fail("axis " + spec_.axes.back().name + " is the die-to-die axis of a chip of " +
         std::to_string(chip.cores_per_chip) + " devices; its size must be that or 1, got " + std::to_string(core_size));
  for (int a = 0; a + 1 < n_axes; ++a)
    if (spec_.axes[a].die_to_die) fail("axis " + spec_.axes[a].name + " is a die-to-die axis; only a chip's last axis can be");
  const int torus_axes = n_axes - (core_axis ? 1 : 0);
  if (torus_axes < 1 || torus_axes > 3)
    fail("a mesh needs 1 to 3 axes, got " + std::to_string(torus_axes));
  if (torus_axes > chip.max_torus_dims)
    fail(std::to_string(torus_axes) + " axes but chip '" + chip.name + "' supports at most " +
         std::to_string(chip.max_torus_dims) + " (max_torus_dims)");
  if (core_axis) require_positive(chip.die_to_die_bandwidth_Bps, "chip.die_to_die_bandwidth_Bps");
  static const char* kDefaultNames[kMaxAxes] = {"X", "Y", "Z", "C"};
  long long per_slice = 1;
  for (int a = 0; a < n_axes; ++a) {
    MeshAxis& axis = spec_.axes[a];
    if (axis.name.empty()) axis.name = kDefaultNames[a];
    if (axis.size < 1 || axis.size > kMaxAxisSize)
      fail("axis " + axis.name + " size must be 1.." + std::to_string(kMaxAxisSize) + ", got " +
           std::to_string(axis.size));
    per_slice *= axis.size;  // <= 4096^3, fits in long long
  }
  if (spec_.slices < 1) fail("slices must be >= 1, got " + std::to_string(spec_.slices));
  if (per_slice * spec_.slices > kMaxChips)
    fail("at most " + std::to_string(kMaxChips) + " chips in all, got " +
         std::to_string(per_slice * spec_.slices));
  require_positive(chip.ici_bandwidth_Bps, "chip.ici_bandwidth_Bps");
  require_positive(chip.pcie_bandwidth_Bps, "chip.pcie_bandwidth_Bps");
  require_positive(chip.dcn_bandwidth_per_host_Bps, "chip.dcn_bandwidth_per_host_Bps");
  if (chip.ici_links_per_neighbor < 1)
    fail("chip.ici_links_per_neighbor must be >= 1, got " + std::to_string(chip.ici_links_per_neighbor));
  if (!(chip.hop_latency_s >= 0) || !std::isfinite(chip.hop_latency_s))
    fail("chip.hop_latency_s must be >= 0 and finite");
  for (std::size_t i = 0; i < chip.host_shape.size(); ++i)
    if (chip.host_shape[i] < 1)
      fail("chip.host_shape entries must be >= 1, got " + std::to_string(chip.host_shape[i]) +
           " at index " + std::to_string(i));
  if (!(spec_.dcn_oversubscription >= 1) || !std::isfinite(spec_.dcn_oversubscription))
    fail("dcn_oversubscription must be >= 1 (1 = non-blocking), got " +
         std::to_string(spec_.dcn_oversubscription));
  check_perturbations(spec_);
  return per_slice;
}

// Index arithmetic: chips' strides per axis, hosts' blocks, and the graph's vertices (chips,
// then hosts, then the DCN switch).
void Topology::lay_out(long long chips_per_slice) {
  const ChipSpec& chip = spec_.chip;
  graph_ = std::make_unique<Graph>();
  Graph& G = *graph_;
  G.chips_per_slice = static_cast<int>(chips_per_slice);
  int hosts = 1;
  for (int a = 0; a < static_cast<int>(spec_.axes.size()); ++a) {
    const int size = spec_.axes[a].size;
    G.stride[a] = a == 0 ? 1 : G.stride[a - 1] * spec_.axes[a - 1].size;
    // A host owns a host_shape block (missing entries = 1); on an axis shorter than the block the
    // block is clamped to the axis, and a mesh that does not tile leaves partial edge blocks.
    const int want = a < static_cast<int>(chip.host_shape.size()) ? chip.host_shape[a] : 1;
    G.host_extent[a] = std::min(want, size);
    G.host_blocks[a] = (size + G.host_extent[a] - 1) / G.host_extent[a];
    G.host_stride[a] = hosts;
    hosts *= G.host_blocks[a];
  }
  G.hosts_per_slice = hosts;
  G.switch_vertex = chip_count() + host_count();
  G.g = BoostGraph(static_cast<std::size_t>(G.switch_vertex) + 1);
}

void Topology::add_link(const LinkInfo& info) {
  const int index = static_cast<int>(links_.size());
  boost::add_edge(info.a, info.b, EdgeProps{index}, graph_->g);
  links_.push_back(info);
}

// ICI: each chip's plus link per axis: position i -> i+1, and n-1 -> 0 on a wrapped axis.
void Topology::add_ici_links() {
  const Graph& G = *graph_;
  const int n_chips = chip_count();
  for (ChipId c = 0; c < n_chips; ++c) {
    const int local = c % G.chips_per_slice;
    for (int a = 0; a < static_cast<int>(spec_.axes.size()); ++a) {
      const int n = spec_.axes[a].size;
      const int i = (local / G.stride[a]) % n;
      LinkInfo link;
      link.kind = LinkKind::Ici;
      link.bandwidth_Bps = spec_.axes[a].die_to_die ? spec_.chip.die_to_die_bandwidth_Bps
                                                    : spec_.chip.neighbor_bandwidth_Bps();
      link.axis = a;
      link.a = c;
      if (i + 1 < n) {
        link.b = c + G.stride[a];
      } else if (wraps(a)) {
        link.b = c - (n - 1) * G.stride[a];
        link.is_wraparound = true;
      } else {
        continue;
      }
      add_link(link);
    }
  }
}

// Each chip's PCIe link to its host, each host's NIC to the DCN switch, and the switch's core
// where the fabric is oversubscribed.
void Topology::add_host_links() {
  const ChipSpec& chip = spec_.chip;
  Graph& G = *graph_;
  const int n_chips = chip_count();
  const int n_hosts = host_count();
  G.first_pcie_link = static_cast<int>(links_.size());
  for (ChipId c = 0; c < n_chips; ++c)
    add_link({.a = c, .b = vertex_of_host(host_of(c)), .kind = LinkKind::Pcie,
              .bandwidth_Bps = chip.pcie_bandwidth_Bps});

  G.first_nic_link = static_cast<int>(links_.size());
  for (int h = 0; h < n_hosts; ++h)
    add_link({.a = vertex_of_host(h), .b = G.switch_vertex, .kind = LinkKind::Nic,
              .bandwidth_Bps = chip.dcn_bandwidth_per_host_Bps * chip.dcn_efficiency});
  // A DCN transfer's fixed cost (a calibration's dcn_latency), half on each of its two NICs, as
  // the latency a degraded NIC adds (the floor or SimGrid latency, per hop model).
  if (chip.dcn_latency_s > 0) {
    for (size_t link = G.first_nic_link; link < links_.size(); ++link)
      links_[link].extra_latency_s = {chip.dcn_latency_s / 2, chip.dcn_latency_s / 2};
    has_extra_latency_ = true;
  }

  if (spec_.dcn_oversubscription > 1) {
    // An oversubscribed fabric carries 1/k of what all NICs could inject at once.
    G.core_link = static_cast<int>(links_.size());
    add_link({.a = G.switch_vertex, .b = G.switch_vertex, .kind = LinkKind::DcnCore,
              .bandwidth_Bps = n_hosts * chip.dcn_bandwidth_per_host_Bps / spec_.dcn_oversubscription});
  }
}

// Effects compose where selections overlap: factors multiply, latencies add.
void Topology::apply_perturbations() {
  for (const Perturbation& p : spec_.perturbations) {
    auto degrade = [&](int link, bool forward) {
      const int side = forward ? 0 : 1;
      links_[link].bandwidth_scale[side] *= p.bandwidth_scale;
      has_failed_links_ = has_failed_links_ || p.bandwidth_scale == 0;
      links_[link].extra_latency_s[side] += p.extra_latency_s;
      has_extra_latency_ = has_extra_latency_ || p.extra_latency_s > 0;
    };
    switch (p.kind) {
      case PerturbationKind::SlowChips: {
        if (compute_slowdown_.empty()) compute_slowdown_.assign(chip_count(), 1.0);
        const auto chips = selected_chips(*this, p);
        for (ChipId c = 0; c < chip_count(); ++c) {
          if (chips[c]) compute_slowdown_[c] *= p.compute_slowdown;
        }
        break;
      }
      case PerturbationKind::Links:
        for (const auto& [link, forward] : selected_directed_links(*this, p)) degrade(link, forward);
        break;
      case PerturbationKind::Nics: {
        // Both directions: the host's egress to the switch and its ingress from it.
        const auto hosts = selected_hosts(*this, p);
        for (int h = 0; h < host_count(); ++h) {
          if (!hosts[h]) continue;
          degrade(nic_link(h), true);
          degrade(nic_link(h), false);
        }
        break;
      }
    }
  }
}

Topology::~Topology() = default;
Topology::Topology(Topology&&) noexcept = default;
Topology& Topology::operator=(Topology&&) noexcept = default;

bool Topology::wraps(int axis) const { return spec_.axes.at(axis).wraparound && spec_.axes[axis].size > 1; }

int Topology::chips_per_slice() const { return graph_->chips_per_slice; }
int Topology::chip_count() const { return graph_->chips_per_slice * spec_.slices; }
int Topology::hosts_per_slice() const { return graph_->hosts_per_slice; }
int Topology::host_count() const { return graph_->hosts_per_slice * spec_.slices; }

ChipId Topology::chip_at(int slice, std::span<const int> coords) const {
  if (slice < 0 || slice >= spec_.slices)
    throw std::out_of_range("Topology::chip_at: slice " + std::to_string(slice) + " out of range");
  if (static_cast<int>(coords.size()) != axis_count())
    throw std::out_of_range("Topology::chip_at: expected " + std::to_string(axis_count()) +
                            " coordinates, got " + std::to_string(coords.size()));
  int local = 0;
  for (int a = 0; a < axis_count(); ++a) {
    if (coords[a] < 0 || coords[a] >= axis_size(a))
      throw std::out_of_range("Topology::chip_at: coordinate " + std::to_string(coords[a]) +
                              " out of range on axis " + spec_.axes[a].name);
    local += coords[a] * graph_->stride[a];
  }
  return slice * graph_->chips_per_slice + local;
}

std::vector<int> Topology::coords(ChipId chip) const {
  if (chip < 0 || chip >= chip_count())
    throw std::out_of_range("Topology: chip " + std::to_string(chip) + " out of range");
  const int local = chip % graph_->chips_per_slice;
  std::vector<int> out(axis_count());
  for (int a = 0; a < axis_count(); ++a) out[a] = (local / graph_->stride[a]) % axis_size(a);
  return out;
}

int Topology::slice_of(ChipId chip) const {
  if (chip < 0 || chip >= chip_count())
    throw std::out_of_range("Topology: chip " + std::to_string(chip) + " out of range");
  return chip / graph_->chips_per_slice;
}

int Topology::host_of(ChipId chip) const {
  const std::vector<int> c = coords(chip);
  int block = 0;
  for (int a = 0; a < axis_count(); ++a) block += (c[a] / graph_->host_extent[a]) * graph_->host_stride[a];
  return slice_of(chip) * graph_->hosts_per_slice + block;
}

std::vector<ChipId> Topology::chips_of_host(int host) const {
  // The host's PCIe edges in the graph lead to exactly its chips.
  const int v = vertex_of_host(host);
  std::vector<ChipId> chips;
  for (const auto& e : boost::make_iterator_range(boost::out_edges(v, graph_->g))) {
    const LinkInfo& link = links_[graph_->g[e].link];
    if (link.kind == LinkKind::Pcie) chips.push_back(link.a);
  }
  std::sort(chips.begin(), chips.end());
  return chips;
}

std::optional<DirectedLink> Topology::link_toward(ChipId chip, int axis, int direction) const {
  if (chip < 0 || chip >= chip_count())
    throw std::out_of_range("Topology: chip " + std::to_string(chip) + " out of range");
  if (axis < 0 || axis >= axis_count())
    throw std::out_of_range("Topology: axis " + std::to_string(axis) + " out of range");
  if (direction != 1 && direction != -1)
    throw std::invalid_argument("Topology::link_toward: direction must be +1 or -1");
  // Every chip has at most one "plus" link per axis (it is that link's `a`). Stepping +1 uses
  // the chip's own plus link forward; stepping -1 uses the previous chip's plus link backward,
  // i.e. the link on this axis whose `b` is this chip. On a wrapped axis of size 2 these are two
  // distinct parallel edges (the direct one and the wraparound one).
  for (const auto& e : boost::make_iterator_range(boost::out_edges(chip, graph_->g))) {
    const int index = graph_->g[e].link;
    const LinkInfo& link = links_[index];
    if (link.kind != LinkKind::Ici || link.axis != axis) continue;
    if (direction > 0 && link.a == chip) return DirectedLink{index, true};
    if (direction < 0 && link.b == chip) return DirectedLink{index, false};
  }
  return std::nullopt;
}

std::vector<DirectedLink> Topology::hop_route(ChipId chip, int axis, int direction) const {
  const auto straight = link_toward(chip, axis, direction);
  if (!straight) return {};
  if (!failed(*straight)) return {*straight};
  for (int other = 0; other < axis_count(); ++other) {
    if (other == axis) continue;
    for (int side : {+1, -1}) {
      const auto off = link_toward(chip, other, side);
      if (!off || failed(*off)) continue;
      const ChipId beside = *neighbor(chip, other, side);
      const auto across = link_toward(beside, axis, direction);
      if (!across || failed(*across)) continue;
      // The neighbour along `other` back from beside the target is the target: coordinates
      // step independently per axis.
      const auto back = link_toward(*neighbor(beside, axis, direction), other, -side);
      if (!back || failed(*back)) continue;
      return {*off, *across, *back};
    }
  }
  throw std::invalid_argument("the link from chip " + chip_name(chip) + " toward " + (direction > 0 ? "+" : "-") +
                              spec_.axes[axis].name + " has failed and no route goes round it (no other axis "
                              "with live links beside it)");
}

std::optional<ChipId> Topology::neighbor(ChipId chip, int axis, int direction) const {
  const auto step = link_toward(chip, axis, direction);
  if (!step) return std::nullopt;
  const LinkInfo& link = links_[step->link];
  return step->forward ? link.b : link.a;
}

std::vector<ChipId> Topology::ring_order(ChipId member, int axis) const {
  if (axis < 0 || axis >= axis_count())
    throw std::out_of_range("Topology: axis " + std::to_string(axis) + " out of range");
  const int stride = graph_->stride[axis];
  const ChipId first = member - coords(member)[axis] * stride;
  std::vector<ChipId> ring(axis_size(axis));
  for (int i = 0; i < axis_size(axis); ++i) ring[i] = first + i * stride;
  return ring;
}

std::vector<DirectedLink> Topology::dimension_order_route(ChipId a, ChipId b) const {
  if (slice_of(a) != slice_of(b))
    throw std::invalid_argument("Topology::dimension_order_route: " + chip_name(a) + " and " +
                                chip_name(b) + " are in different slices (use dcn_route)");
  const std::vector<int> from = coords(a), to = coords(b);
  std::vector<DirectedLink> route;
  ChipId at = a;
  for (int axis = 0; axis < axis_count(); ++axis) {
    const auto [hops, direction] = axis_step(from[axis], to[axis], axis_size(axis), wraps(axis));
    for (int h = 0; h < hops; ++h) {
      const auto hop = hop_route(at, axis, direction);
      route.insert(route.end(), hop.begin(), hop.end());
      const DirectedLink& last = hop.back();   // a detour ends where the straight hop would
      at = last.forward ? links_[last.link].b : links_[last.link].a;
    }
  }
  return route;
}

int Topology::hop_distance(ChipId a, ChipId b) const {
  if (slice_of(a) != slice_of(b))
    throw std::invalid_argument("Topology::hop_distance: " + chip_name(a) + " and " + chip_name(b) +
                                " are in different slices");
  const std::vector<int> from = coords(a), to = coords(b);
  int hops = 0;
  for (int axis = 0; axis < axis_count(); ++axis)
    hops += axis_step(from[axis], to[axis], axis_size(axis), wraps(axis)).first;
  return hops;
}

int Topology::diameter() const {
  // Dimension-order distance is separable per axis: a ring of n has max distance floor(n/2)
  // (tpus.md:L144: a torus cuts the max distance from N to N/2), a line n-1.
  int d = 0;
  for (int axis = 0; axis < axis_count(); ++axis) {
    const int n = axis_size(axis);
    d += wraps(axis) ? n / 2 : n - 1;
  }
  return d;
}

int Topology::bisection_links() const {
  // Fewest links cut by a plane across the middle of one axis (the usual axis-aligned bisection
  // of a k-ary n-cube): the cut crosses every ring/line along that axis once per position it
  // separates: 2 links per ring on a wrapped axis (the middle link and the wraparound one;
  // for n = 2 these are the two parallel links), 1 per line otherwise. So
  //   cut(axis) = (wraps ? 2 : 1) * (product of the other axes' sizes) * ici_links_per_neighbor,
  // minimised over axes of size >= 2. A single chip has nothing to cut: 0.
  long long best = -1;
  for (int axis = 0; axis < axis_count(); ++axis) {
    if (axis_size(axis) < 2) continue;
    const long long lines = chips_per_slice() / axis_size(axis);
    const long long cut = (wraps(axis) ? 2 : 1) * lines * spec_.chip.ici_links_per_neighbor;
    if (best < 0 || cut < best) best = cut;
  }
  return best < 0 ? 0 : static_cast<int>(best);
}

std::vector<DirectedLink> Topology::dcn_route(ChipId a, ChipId b) const {
  if (slice_of(a) == slice_of(b))
    throw std::invalid_argument("Topology::dcn_route: " + chip_name(a) + " and " + chip_name(b) +
                                " are in the same slice (use dimension_order_route)");
  // tpus.md:L168: PCIe -> host -> NIC egress -> network -> target NIC -> PCIe -> HBM.
  std::vector<DirectedLink> route;
  route.push_back({graph_->first_pcie_link + a, true});
  route.push_back({graph_->first_nic_link + host_of(a), true});
  if (graph_->core_link >= 0) route.push_back({graph_->core_link, true});
  route.push_back({graph_->first_nic_link + host_of(b), false});
  route.push_back({graph_->first_pcie_link + b, false});
  return route;
}

int Topology::nic_link(int host) const {
  if (host < 0 || host >= host_count())
    throw std::out_of_range("Topology: host " + std::to_string(host) + " out of range");
  return graph_->first_nic_link + host;
}

int Topology::vertex_of_chip(ChipId chip) const {
  if (chip < 0 || chip >= chip_count())
    throw std::out_of_range("Topology: chip " + std::to_string(chip) + " out of range");
  return chip;
}

int Topology::vertex_of_host(int host) const {
  if (host < 0 || host >= host_count())
    throw std::out_of_range("Topology: host " + std::to_string(host) + " out of range");
  return chip_count() + host;
}

int Topology::vertex_count() const { return static_cast<int>(boost::num_vertices(graph_->g)); }

std::string Topology::chip_name(ChipId chip) const {
  const std::vector<int> c = coords(chip);
  std::string name = "s" + std::to_string(slice_of(chip)) + "/chip(";
  for (int a = 0; a < axis_count(); ++a) {
    if (a > 0) name += ',';
    name += std::to_string(c[a]);
  }
  return name + ")";
}

int Topology::position_along(ChipId chip, int axis) const {
  return axis == kSliceAxis ? slice_of(chip) : coords(chip).at(axis);
}

int Topology::extent_along(int axis) const { return axis == kSliceAxis ? slice_count() : axis_size(axis); }

std::optional<ChipId> Topology::step_along(ChipId chip, int axis, int direction) const {
  const int next = position_along(chip, axis) + direction;
  if (next < 0 || next >= extent_along(axis)) return std::nullopt;
  if (axis == kSliceAxis) return chip_at(next, coords(chip));
  return neighbor(chip, axis, direction);
}

std::optional<ChipId> Topology::round_the_end(ChipId chip, int axis, int direction) const {
  const int extent = extent_along(axis);
  const int next = position_along(chip, axis) + direction;
  if (next >= 0 && next < extent) return std::nullopt;
  const int other = (next + extent) % extent;
  if (axis == kSliceAxis) return chip_at(other, coords(chip));
  auto c = coords(chip);
  c[axis] = other;
  return chip_at(slice_of(chip), c);
}

}  // namespace podsim
