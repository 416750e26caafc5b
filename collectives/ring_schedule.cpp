#include "collectives/ring_schedule.hpp"

#include <algorithm>

namespace podsim {
namespace {

std::vector<RingAxis> rotated(const std::vector<RingAxis>& axes, size_t by) {
  std::vector<RingAxis> out;
  for (size_t i = 0; i < axes.size(); ++i) out.push_back(axes[(i + by) % axes.size()]);
  return out;
}

// AllGather phases: the chip's block grows by the axis size each phase.
void append_gather(PartSchedule& part, const std::vector<RingAxis>& order, double part_bytes) {
  double product = 1;
  for (const auto& a : order) product *= a.size;
  double block = part_bytes / product;
  for (const auto& a : order) {
    part.push_back({a, block, true});
    block *= a.size;
  }
}

// ReduceScatter phases: each phase sends 1/size of the chip's current partial sums.
void append_scatter(PartSchedule& part, const std::vector<RingAxis>& order, double part_bytes) {
  double block = part_bytes;
  for (const auto& a : order) {
    block /= a.size;
    part.push_back({a, block, false});
  }
}

// A wrapped ring of even size: the only shape whose two directions carry different loads.
bool uneven_ring(const RingAxis& a) { return a.axis != kDcnAxis && a.wraparound && a.size % 2 == 0; }

// Two half-size copies of `parts`, the second with the long way reversed on every axis: each
// direction of an even wrapped ring then carries (X/2 + X/2 - 1) / 2 = (X-1)/2 shards.
std::vector<PartSchedule> split_antipodal(std::vector<PartSchedule> parts) {
  std::vector<PartSchedule> out;
  for (PartSchedule& part : parts) {
    bool uneven = false;
    for (const RingPhase& phase : part) uneven = uneven || uneven_ring(phase.axis);
    if (!uneven) {
      out.push_back(std::move(part));
      continue;
    }
    for (RingPhase& phase : part) phase.message_bytes /= 2;
    PartSchedule mirrored = part;
    for (RingPhase& phase : mirrored) phase.axis.long_way = -phase.axis.long_way;
    out.push_back(std::move(part));
    out.push_back(std::move(mirrored));
  }
  return out;
}

}  // namespace

std::vector<PartSchedule> ring_parts(CollectiveKind kind, const std::vector<RingAxis>& axes,
                                     double bytes, const RingAxis* dcn, bool antipodal_split) {
  std::vector<PartSchedule> parts;
  if ((axes.empty() && dcn == nullptr) || bytes <= 0) return parts;
  const size_t part_count = std::max<size_t>(axes.size(), 1);
  const double part_bytes = bytes / static_cast<double>(part_count);
  for (size_t p = 0; p < part_count; ++p) {
    auto scatter_order = axes.empty() ? axes : rotated(axes, p);
    auto gather_order = scatter_order;
    std::reverse(gather_order.begin(), gather_order.end());
    if (dcn != nullptr) {
      scatter_order.push_back(*dcn);
      gather_order.insert(gather_order.begin(), *dcn);
    }
    PartSchedule part;
    switch (kind) {
      case CollectiveKind::AllGather: {
        // An AllGather starts across slices, where blocks are smallest, then runs the ICI axes.
        auto order = axes.empty() ? axes : rotated(axes, p);
        if (dcn != nullptr) order.insert(order.begin(), *dcn);
        append_gather(part, order, part_bytes);
        break;
      }
      case CollectiveKind::ReduceScatter: append_scatter(part, scatter_order, part_bytes); break;
      case CollectiveKind::AllReduce: {
        append_scatter(part, scatter_order, part_bytes);
        append_gather(part, gather_order, part_bytes);
        break;
      }
      case CollectiveKind::AllToAll: return {};  // not a ring collective
    }
    parts.push_back(std::move(part));
  }
  return antipodal_split ? split_antipodal(std::move(parts)) : parts;
}

std::vector<ChainShape> ring_chains(const RingAxis& axis, int position, bool bidirectional) {
  const int n = axis.size;
  std::vector<ChainShape> chains;
  if (n <= 1) return chains;
  if (!bidirectional) {
    // One way round: every chip sends its own shard and forwards all but the last it receives.
    const bool closing = !axis.wraparound && position == n - 1;
    chains.push_back({+1, true, n - 1, n - 2, closing ? n - 1 : 1});
    return chains;
  }
  if (axis.wraparound) {
    const int right = n / 2;          // floor(n/2) steps carry shards the long way
    const int left = n - 1 - right;   // the rest come the other way
    chains.push_back({axis.long_way, true, right, right - 1, 1});
    if (left > 0) chains.push_back({-axis.long_way, true, left, left - 1, 1});
    return chains;
  }
  // A line: every shard crosses to both ends. The chip at i passes rightwards the i shards
  // from its left plus its own; leftwards the n-1-i from its right plus its own.
  const int from_left = position;
  const int from_right = n - 1 - position;
  const bool has_right = position < n - 1;
  const bool has_left = position > 0;
  ChainShape right{+1, has_right, from_left, has_right ? from_left : 0, 1};
  ChainShape left{-1, has_left, from_right, has_left ? from_right : 0, 1};
  if (right.sends() + right.receives > 0) chains.push_back(right);
  if (left.sends() + left.receives > 0) chains.push_back(left);
  return chains;
}

}  // namespace podsim
