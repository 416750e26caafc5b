#include "collectives/hop_plan.hpp"

#include <algorithm>
#include <optional>
#include <cstdlib>
#include <stdexcept>
#include <tuple>
#include <utility>

namespace podsim {
namespace {

// Pseudo-axis of the flat ring through every chip of every slice.
constexpr int kFlatAxis = -2;


// The DCN path a -> b split at the switch: the sender's half (its PCIe, its NIC up, the
// oversubscribed core if any) and the receiver's half (its NIC down, its PCIe down).
std::pair<std::vector<DirectedLink>, std::vector<DirectedLink>> split_dcn_route(
    const Topology& topo, ChipId a, ChipId b) {
  auto route = topo.dcn_route(a, b);
  // The receiver's half is always the last two links (NIC, PCIe), whatever the core adds.
  const auto split = route.end() - 2;
  return {std::vector<DirectedLink>(route.begin(), split), std::vector<DirectedLink>(split, route.end())};
}

// A ring along (a slice of) one mesh axis: the chips `stride` apart within a block of
// `size` ring positions. The whole axis is stride 1, size n.
struct SubRing {
  int axis = 0;
  int stride = 1;
  int size = 1;
  bool wraps = false;

  int position(const Topology& topo, ChipId chip) const { return (topo.coords(chip)[axis] / stride) % size; }

  ChipId member(const Topology& topo, ChipId chip, int p) const {
    auto coords = topo.coords(chip);
    coords[axis] += (p - position(topo, chip)) * stride;
    return topo.chip_at(topo.slice_of(chip), coords);
  }

  // The links from `chip` `steps` physical hops along the axis in `direction` (wrapping only
  // where the physical axis does).
  std::vector<DirectedLink> walk(const Topology& topo, ChipId chip, int direction, int steps) const {
    std::vector<DirectedLink> route;
    for (int k = 0; k < steps; ++k) {
      const auto hop = topo.hop_route(chip, axis, direction);   // round a failed link: 3 links
      route.insert(route.end(), hop.begin(), hop.end());
      chip = *topo.neighbor(chip, axis, direction);
    }
    return route;
  }

  bool sliced = false;

  // Endpoint channel: the whole axis keeps the channel shared with point-to-point sends.
  Channel channel(int direction) const {
    return sliced ? Channel::ici(axis, direction, stride, size) : Channel::ici(axis, direction);
  }

  // The ring neighbour in `direction`, if the ring has one there (no wrap at a line's end).
  std::optional<ChipId> neighbour(const Topology& topo, ChipId chip, int direction) const {
    const int p = position(topo, chip) + direction;
    if (p >= 0 && p < size) return member(topo, chip, p);
    if (!wraps) return std::nullopt;
    return member(topo, chip, (p + size) % size);
  }

  // Where messages travelling `direction` arrive at `chip`: from the ring predecessor, or at
  // a line's end from the far end, back along the reverse links (a one-way ring's closing hop).
  int port(const Topology& topo, EndpointRegistry& registry, ChipId chip, int direction) const {
    std::vector<DirectedLink> in_route;
    int steps = stride;
    if (auto prev = neighbour(topo, chip, -direction)) {
      in_route = walk(topo, *prev, direction, stride);
    } else {
      const ChipId far = member(topo, chip, direction > 0 ? size - 1 : 0);
      steps = (size - 1) * stride;
      in_route = walk(topo, far, -direction, steps);
    }
    return registry.get(chip, channel(direction), in_route, {}, static_cast<int>(in_route.size()) - steps);
  }

  ChipId next(const Topology& topo, ChipId chip, int direction) const {
    if (auto n = neighbour(topo, chip, direction)) return *n;
    return member(topo, chip, direction > 0 ? 0 : size - 1);
  }
};

SubRing whole_axis(const Topology& topo, int axis) {
  return SubRing{axis, 1, topo.axis_size(axis), topo.wraps(axis)};
}

// The ring a collective runs over a slice of `axis` (true length `real_size`): a ring only if
// it spans the whole axis (an outer ring) of a wrapped axis; an inner block is a line.
SubRing sliced_ring(const Topology& topo, int axis, const AxisSlice& slice, int real_size) {
  const bool spans = slice.stride * slice.size == real_size;
  return SubRing{axis, slice.stride, slice.size, topo.wraps(axis) && spans, true};
}

int ici_port(const Topology& topo, EndpointRegistry& registry, ChipId chip, int axis, int direction) {
  return whole_axis(topo, axis).port(topo, registry, chip, direction);
}

ChipId same_place_in_slice(const Topology& topo, ChipId chip, int slice) {
  auto coords = topo.coords(chip);
  return topo.chip_at(slice, coords);
}

int dcn_port(const Topology& topo, EndpointRegistry& registry, ChipId chip) {
  const int slices = topo.slice_count();
  const int slice = topo.slice_of(chip);
  const ChipId prev = same_place_in_slice(topo, chip, (slice + slices - 1) % slices);
  const ChipId next = same_place_in_slice(topo, chip, (slice + 1) % slices);
  auto in_route = split_dcn_route(topo, prev, chip).second;
  auto out_route = split_dcn_route(topo, chip, next).first;
  return registry.get(chip, Channel::of(Channel::Kind::Dcn), in_route, out_route);
}

// The ring of a mesh-axis phase. Neighbours are found on the simulated mesh, which may hold
// fewer blocks than the real ring has (symmetry reduction); the schedule keeps the real length.
SubRing phase_ring(const Topology& topo, const RingAxis& axis) {
  return !axis.sliced        ? whole_axis(topo, axis.axis)
         : axis.wraparound ? SubRing{axis.axis, axis.stride, topo.axis_size(axis.axis) / axis.stride, true, true}
                           : SubRing{axis.axis, axis.stride, axis.size, false, true};
}

struct RingPlanner {
  const Topology& topo;
  const CollectiveSpec& spec;
  EndpointRegistry& registry;
  std::vector<ChipId> flat_order;     // flat ring only
  std::vector<int> flat_position;     // by chip

  std::vector<ChainPlan> chains(ChipId chip, const RingPhase& phase) const {
    std::vector<ChainPlan> out;
    const RingAxis& axis = phase.axis;
    if (axis.axis == kDcnAxis) {
      for (const auto& shape : ring_chains(axis, topo.slice_of(chip), false)) {
        const int self = dcn_port(topo, registry, chip);
        const ChipId next = same_place_in_slice(topo, chip, (topo.slice_of(chip) + 1) % topo.slice_count());
        out.push_back({self, shape.sends() > 0 ? dcn_port(topo, registry, next) : -1, shape,
                       phase.message_bytes});
      }
      return out;
    }
    if (axis.axis == kFlatAxis) {
      for (auto shape : ring_chains(axis, flat_position[chip], false)) {
        const int self = flat_port(chip);
        const ChipId next = flat_order[(flat_position[chip] + 1) % flat_order.size()];
        shape.hops = hops_between(chip, next);
        out.push_back({self, shape.sends() > 0 ? flat_port(next) : -1, shape, phase.message_bytes});
      }
      return out;
    }
    const SubRing ring = phase_ring(topo, axis);
    for (auto shape : ring_chains(axis, ring.position(topo, chip), spec.bidirectional)) {
      const int self = ring.port(topo, registry, chip, shape.direction);
      int peer = -1;
      if (shape.sends() > 0) peer = ring.port(topo, registry, ring.next(topo, chip, shape.direction), shape.direction);
      shape.hops *= ring.stride;   // each ring hop crosses `stride` links
      out.push_back({self, peer, shape, phase.message_bytes});
    }
    return out;
  }

  int hops_between(ChipId a, ChipId b) const {
    return topo.slice_of(a) == topo.slice_of(b) ? topo.hop_distance(a, b) : 1;
  }

  // The flat ring's port: in from the ring predecessor, out towards the successor.
  int flat_port(ChipId chip) const {
    const size_t n = flat_order.size();
    const ChipId prev = flat_order[(flat_position[chip] + n - 1) % n];
    const ChipId next = flat_order[(flat_position[chip] + 1) % n];
    std::vector<DirectedLink> in_route, out_route;
    if (topo.slice_of(prev) == topo.slice_of(chip)) in_route = topo.dimension_order_route(prev, chip);
    else in_route = split_dcn_route(topo, prev, chip).second;
    if (topo.slice_of(next) != topo.slice_of(chip)) out_route = split_dcn_route(topo, chip, next).first;
    return registry.get(chip, Channel::of(Channel::Kind::FlatDcn), in_route, out_route);
  }
};

bool flat_ring(const Topology& topo, const CollectiveSpec& spec) {
  return spec.over_dcn && topo.slice_count() > 1 && spec.dcn_algorithm == DcnAlgorithm::FlatRing;
}

// The ring schedule of a collective: its parts, each a list of phases over the real ring lengths.
std::vector<PartSchedule> ring_schedule(const Topology& topo, const RealExtent& real, const CollectiveSpec& spec) {
  const std::vector<int>& real_sizes = real.axes;
  if (flat_ring(topo, spec)) return ring_parts(spec.kind, {RingAxis{kFlatAxis, topo.chip_count(), true}}, spec.bytes);
  std::vector<RingAxis> axes;
  RingAxis dcn{kDcnAxis, real.slices, true};
  const bool use_dcn = spec.over_dcn && topo.slice_count() > 1;
  for (size_t i = 0; i < spec.axes.size(); ++i) {
    const int a = spec.axes[i];
    const AxisSlice* slice = spec.slices.empty() ? nullptr : &spec.slices[i];
    if (slice != nullptr && slice->size != 0) {
      const SubRing ring = sliced_ring(topo, a, *slice, real_sizes.at(a));
      if (ring.size > 1) axes.push_back({a, ring.size, ring.wraps, ring.stride, true});
    } else if (real_sizes.at(a) > 1) {
      axes.push_back({a, real_sizes[a], topo.wraps(a)});
    }
  }
  // A one-way ring has no long way to balance; the chip's profile says whether XLA's rings split it.
  return ring_parts(spec.kind, axes, spec.bytes, use_dcn ? &dcn : nullptr,
                    topo.spec().chip.antipodal_split && spec.bidirectional);
}

OpPlan plan_ring(const Topology& topo, const RealExtent& real, const CollectiveSpec& spec, EndpointRegistry& registry) {
  RingPlanner planner{topo, spec, registry, {}, {}};
  if (flat_ring(topo, spec)) {
    for (int s = 0; s < topo.slice_count(); ++s) {
      for (ChipId c : snake_order(topo, s)) planner.flat_order.push_back(c);
    }
    planner.flat_position.assign(topo.chip_count(), 0);
    for (size_t i = 0; i < planner.flat_order.size(); ++i) planner.flat_position[planner.flat_order[i]] = i;
  }
  const std::vector<PartSchedule> parts = ring_schedule(topo, real, spec);
  OpPlan plan;
  plan.chips.resize(topo.chip_count());
  for (ChipId chip = 0; chip < topo.chip_count(); ++chip) {
    auto& chip_plan = plan.chips[chip];
    for (const auto& part : parts) {
      auto& phases = chip_plan.parts.emplace_back();
      for (const auto& phase : part) {
        phases.push_back(planner.chains(chip, phase));
        for (const auto& chain : phases.back()) plan.messages += chain.shape.sends();
      }
    }
  }
  return plan;
}

namespace {

// A block's direction along each of `axes` from `from` to `target` (its coordinates on them):
// the shorter way round a wrapped axis, both where the offset is half the ring (each variant
// carries half the block), +1 one-way, toward the target on a line.
std::vector<std::vector<int>> all_to_all_directions(const Topology& topo, const std::vector<int>& axes,
                                                    const std::vector<int>& real_sizes, const std::vector<int>& from,
                                                    const std::vector<int>& target, bool bidirectional) {
  std::vector<std::vector<int>> variants{{}};
  for (size_t i = 0; i < axes.size(); ++i) {
    const int a = axes[i], n = real_sizes[a];
    const int forward = ((target[i] - from[a]) % n + n) % n;
    std::vector<int> choices;
    if (!topo.wraps(a)) choices = {target[i] >= from[a] ? +1 : -1};
    else if (!bidirectional) choices = {+1};
    else if (2 * forward == n) choices = {+1, -1};
    else choices = {2 * forward < n ? +1 : -1};
    std::vector<std::vector<int>> grown;
    for (const auto& v : variants) {
      for (int d : choices) {
        grown.push_back(v);
        grown.back().push_back(d);
      }
    }
    variants = std::move(grown);
  }
  return variants;
}

}  // namespace

// AllToAll: every chip sends each other chip of its group one block along the
// dimension-order route, all at once, so links carry the real contention. A block going
// exactly half way round a wrapped axis is split between the two directions, as the book's
// V/(4 W_bidi) assumes both directions share the load (sharding.md:L471-L479). One-way
// (`bidirectional: false`), every block goes the +1 way round a wrapped axis (sharding.md's
// unidirectional ring: each chip's blocks travel 1..n-1 hops one way).
//
// On a symmetry-reduced axis (collectives/symmetry.hpp) every simulated chip sends its blocks
// for every true offset, and each block walks the simulated ring (wrapping at its shorter
// length) for the true number of hops: its route is the image of the real route in the
// quotient, so each simulated link carries what every real link carries.
OpPlan plan_all_to_all(const Topology& topo, const std::vector<int>& real_sizes, const CollectiveSpec& spec,
                       EndpointRegistry& registry) {
  if (spec.over_dcn && topo.slice_count() > 1) {
    throw std::invalid_argument("all_to_all across slices over DCN is not supported");
  }
  OpPlan plan;
  plan.chips.resize(topo.chip_count());
  std::vector<int> axes;
  for (int a : spec.axes) {
    if (real_sizes.at(a) > 1) axes.push_back(a);
  }
  std::sort(axes.begin(), axes.end());   // dimension order
  double group = 1;
  for (int a : axes) group *= real_sizes[a];
  if (group <= 1 || (spec.bytes <= 0 && spec.pair_bytes.empty())) return plan;
  const double block = spec.bytes / (group * group);
  const bool uneven = !spec.pair_bytes.empty();
  if (uneven && spec.pair_bytes.size() != static_cast<size_t>(group * group))
    throw std::invalid_argument("all_to_all: " + std::to_string(spec.pair_bytes.size()) + " pair sizes for a group of " +
                                std::to_string(static_cast<long long>(group)));

  for (ChipId src = 0; src < topo.chip_count(); ++src) {
    const auto from = topo.coords(src);
    const int src_endpoint = registry.get(src, Channel::of(Channel::Kind::AllToAllOut), {});
    long long from_index = 0;   // the source's group position (pair_bytes' row)
    for (size_t i = axes.size(); i-- > 0;) from_index = from_index * real_sizes[axes[i]] + from[axes[i]];
    // Every destination of the real group, by its real coordinate.
    std::vector<int> target(axes.size(), 0);
    for (long long index = 0; index < static_cast<long long>(group); ++index) {
      long long rest = index;
      bool self = true;
      for (size_t i = 0; i < axes.size(); ++i) {
        target[i] = static_cast<int>(rest % real_sizes[axes[i]]);
        rest /= real_sizes[axes[i]];
        self = self && target[i] == from[axes[i]];
      }
      if (self) continue;
      const double pair = uneven ? spec.pair_bytes[from_index * static_cast<long long>(group) + index] : block;
      if (pair <= 0) continue;
      const auto variants = all_to_all_directions(topo, axes, real_sizes, from, target, spec.bidirectional);
      for (size_t v = 0; v < variants.size(); ++v) {
        std::vector<DirectedLink> route;
        ChipId at = src;
        for (size_t i = 0; i < axes.size(); ++i) {
          const int a = axes[i], n = real_sizes[a], dir = variants[v][i];
          const int forward = ((target[i] - from[a]) % n + n) % n;
          const int steps = topo.wraps(a) ? (dir > 0 ? forward : (n - forward) % n) : std::abs(target[i] - from[a]);
          // On a reduced axis a route longer than the simulated ring takes its links again.
          if (steps > topo.axis_size(a)) plan.repeats_links = true;
          for (int k = 0; k < steps; ++k) {
            const auto hop = topo.hop_route(at, a, dir);   // round a failed link: 3 links
            route.insert(route.end(), hop.begin(), hop.end());
            at = *topo.neighbor(at, a, dir);
          }
        }
        const int hops = static_cast<int>(route.size());
        // An endpoint per distinct route into `at`: blocks of other ops that take the same
        // links share it, and no two routes ever do.
        const int dst_endpoint = registry.get(at, Channel::all_to_all_in(route), route);
        plan.chips[src].flows.push_back({src_endpoint, dst_endpoint, at, pair / variants.size(), hops});
        plan.chips[at].incoming_flows += 1;
        plan.messages += 1;
      }
    }
  }
  return plan;
}

// The extra latency of perturbed links (topology/perturbation.hpp) on the route s -> d, each
// link counted in the direction the message crosses it.
double route_extra_latency_s(const Topology& topo, const Endpoint& s, const Endpoint& d) {
  double total = 0;
  for (const auto* route : {&s.out_route, &d.in_route}) {
    for (const auto& step : *route) total += topo.links()[step.link].directed_extra_latency_s(step.forward);
  }
  return total;
}

// Fills in what the plan's routes add to its messages once its endpoints exist: perturbed
// links' extra latency, and the links a detour round a failed link adds to a message's hops
// (its latency floor). A topology with neither leaves the plan as it is. An AllToAll block's
// hops are its route's links already (plan_all_to_all); its endpoint records no detour.
OpPlan with_route_effects(const Topology& topo, const EndpointRegistry& registry, OpPlan plan) {
  if (!topo.has_extra_latency() && !topo.has_failed_links()) return plan;
  const auto& endpoints = registry.endpoints();
  const bool latency = topo.has_extra_latency();
  for (auto& chip : plan.chips) {
    for (auto& part : chip.parts) {
      for (auto& phase : part) {
        for (auto& chain : phase) {
          if (chain.peer_endpoint < 0) continue;
          chain.shape.hops += endpoints[chain.peer_endpoint].in_detour_links;
          if (latency)
            chain.extra_latency_s = route_extra_latency_s(topo, endpoints[chain.endpoint], endpoints[chain.peer_endpoint]);
        }
      }
    }
    for (auto& flow : chip.flows) {
      flow.hops += endpoints[flow.dst_endpoint].in_detour_links;
      if (latency)
        flow.extra_latency_s = route_extra_latency_s(topo, endpoints[flow.src_endpoint], endpoints[flow.dst_endpoint]);
    }
  }
  return plan;
}

}  // namespace

bool Channel::operator<(const Channel& other) const {
  const auto key = [](const Channel& c) { return std::tie(c.kind, c.axis, c.direction, c.stride, c.size); };
  if (key(*this) != key(other)) return key(*this) < key(other);
  return std::lexicographical_compare(route.begin(), route.end(), other.route.begin(), other.route.end(),
                                      [](const DirectedLink& a, const DirectedLink& b) {
                                        return std::tie(a.link, a.forward) < std::tie(b.link, b.forward);
                                      });
}

std::vector<DirectedLink> route_between(const std::vector<Endpoint>& endpoints, int from, int to) {
  auto route = endpoints[from].out_route;
  route.insert(route.end(), endpoints[to].in_route.begin(), endpoints[to].in_route.end());
  return route;
}

int EndpointRegistry::get(ChipId chip, const Channel& channel, const std::vector<DirectedLink>& in_route,
                          const std::vector<DirectedLink>& out_route, int in_detour_links) {
  auto [it, inserted] = index_.try_emplace({chip, channel}, static_cast<int>(endpoints_.size()));
  if (inserted) endpoints_.push_back({chip, channel, in_route, out_route, in_detour_links});
  return it->second;
}

OpPlan plan_send(const Topology& topo, int axis, int direction, double bytes, EndpointRegistry& registry,
                 bool round_the_end) {
  OpPlan plan;
  plan.point_to_point = true;
  plan.chips.resize(topo.chip_count());
  for (ChipId chip = 0; chip < topo.chip_count(); ++chip) {
    // Round the end: one wraparound hop where the axis wraps; on a line, back along it
    // (ici_port's closing route); between slices, over DCN like any other.
    auto to = topo.step_along(chip, axis, direction);
    if (!to && round_the_end) to = topo.round_the_end(chip, axis, direction);
    if (!to) continue;   // the ends of the line send nothing
    // Between slices the data goes out through the host's PCIe and NIC and in through the
    // receiver's (the DCN ports); along a mesh axis over the ICI link.
    const bool dcn = axis == Topology::kSliceAxis;
    const int src = dcn ? dcn_port(topo, registry, chip) : registry.get(chip, Channel::of(Channel::Kind::SendOut), {});
    const int dst = dcn ? dcn_port(topo, registry, *to) : ici_port(topo, registry, *to, axis, direction);
    plan.chips[chip].flows.push_back({src, dst, *to, bytes, 1});
    plan.chips[chip].done_when_delivered = true;
    plan.messages += 1;
  }
  return with_route_effects(topo, registry, std::move(plan));
}

std::vector<ChipId> snake_order(const Topology& topo, int slice) {
  const int axes = topo.axis_count();
  std::vector<ChipId> order;
  order.reserve(topo.chips_per_slice());
  std::vector<int> coords(axes, 0);
  for (int index = 0; index < topo.chips_per_slice(); ++index) {
    // Mixed-radix digits of index, each reflected when the sum of the higher digits is odd.
    int rest = index;
    std::vector<int> digits(axes);
    for (int a = 0; a < axes; ++a) {
      digits[a] = rest % topo.axis_size(a);
      rest /= topo.axis_size(a);
    }
    int parity = 0;
    for (int a = axes - 1; a >= 0; --a) {
      coords[a] = (parity % 2 == 0) ? digits[a] : topo.axis_size(a) - 1 - digits[a];
      parity += digits[a];
    }
    order.push_back(topo.chip_at(slice, coords));
  }
  return order;
}

long long count_messages(const Topology& topo, const RealExtent& real, const CollectiveSpec& spec) {
  const std::vector<int>& real_sizes = real.axes;
  if (spec.kind == CollectiveKind::AllToAll) {
    if (spec.over_dcn && topo.slice_count() > 1)
      throw std::invalid_argument("all_to_all across slices over DCN is not supported");
    // plan_all_to_all sends, from every chip, one block per destination and direction: per
    // axis, a destination coordinate has one direction, except the one half way round a
    // wrapped axis, which splits both ways. The chip itself is no destination.
    long long per_chip = 1;
    double group = 1;
    for (int a : spec.axes) {
      const int n = real_sizes.at(a);
      if (n <= 1) continue;
      group *= n;
      per_chip *= n + (topo.wraps(a) && spec.bidirectional && n % 2 == 0 ? 1 : 0);
    }
    if (group <= 1 || (spec.bytes <= 0 && spec.pair_bytes.empty())) return 0;
    if (spec.pair_bytes.empty()) return static_cast<long long>(topo.chip_count()) * (per_chip - 1);
    // Uneven blocks: the pairs with bytes, each once or (half way round a wrapped axis) twice.
    // Axes with pair sizes are never reduced, so every simulated chip is its real self.
    std::vector<int> axes;
    for (int a : spec.axes)
      if (real_sizes.at(a) > 1) axes.push_back(a);
    std::sort(axes.begin(), axes.end());
    const long long g = static_cast<long long>(group);
    if (spec.pair_bytes.size() != static_cast<size_t>(g * g))
      throw std::invalid_argument("all_to_all: pair sizes do not match the group");
    long long messages = 0;
    for (ChipId chip = 0; chip < topo.chip_count(); ++chip) {
      const auto c = topo.coords(chip);
      long long i = 0;
      for (size_t k = axes.size(); k-- > 0;) i = i * real_sizes[axes[k]] + c[axes[k]];
      for (long long j = 0; j < g; ++j) {
        if (j == i || spec.pair_bytes[i * g + j] <= 0) continue;
        long long rest = j, variants = 1;
        for (int a : axes) {
          const int n = real_sizes[a], to = static_cast<int>(rest % n);
          rest /= n;
          const int forward = ((to - c[a]) % n + n) % n;
          if (topo.wraps(a) && spec.bidirectional && n % 2 == 0 && 2 * forward == n) variants *= 2;
        }
        messages += variants;
      }
    }
    return messages;
  }
  long long messages = 0;
  for (const auto& part : ring_schedule(topo, real, spec)) {
    for (const auto& phase : part) {
      const RingAxis& axis = phase.axis;
      if (axis.axis == kDcnAxis || axis.axis == kFlatAxis) {
        // Positions are the slices (each holding every chip of the mesh) or the flat ring's
        // order, a permutation of the chips: one-way chains.
        const int positions = axis.axis == kDcnAxis ? topo.slice_count() : topo.chip_count();
        const long long per_position = axis.axis == kDcnAxis ? topo.chips_per_slice() : 1;
        for (int p = 0; p < positions; ++p)
          for (const auto& shape : ring_chains(axis, p, false)) messages += per_position * shape.sends();
        continue;
      }
      const SubRing ring = phase_ring(topo, axis);
      for (ChipId chip = 0; chip < topo.chip_count(); ++chip)
        for (const auto& shape : ring_chains(axis, ring.position(topo, chip), spec.bidirectional)) messages += shape.sends();
    }
  }
  return messages;
}

OpPlan plan_collective(const Topology& topo, const RealExtent& real, const CollectiveSpec& spec,
                       EndpointRegistry& registry) {
  if (spec.kind == CollectiveKind::AllToAll)
    return with_route_effects(topo, registry, plan_all_to_all(topo, real.axes, spec, registry));
  return with_route_effects(topo, registry, plan_ring(topo, real, spec, registry));
}

}  // namespace podsim
