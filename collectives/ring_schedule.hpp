#pragma once
// Ring algorithms as hop schedules, independent of any simulator.
//
// Single axis (scaling book, sharding.md:L326-L332): with wraparound, a bidirectional
// AllGather sends every chip's whole shard half way round the ring in each direction:
// floor(X/2) steps one way, ceil(X/2)-1 the other, one shard per step, so it takes
// floor(X/2) * max(T_min, shard/W) = V/W_bidi for even X. Without wraparound the ring is a
// line and shards must cross it edge to edge: X-1 steps each way (sharding.md:L366-L375).
// Unidirectional: X-1 steps one way; on a line the closing hop X-1 -> 0 travels back along
// the reverse links (X-1 physical hops, otherwise idle in a one-way ring).
//
// Antipodal split (ChipSpec::antipodal_split; docs/modelling.md, "Ring collectives on real
// chips"): on a wrapped ring of even X the shard the opposite chip needs goes half each way,
// so each direction carries (X-1)/2 shards in X/2 steps: V (X-1)/(2 X W_uni), the bound the
// book's measured "link BW" = bytes (X-1)/(2 X t) (sharding.md:L352-L356, F1) and nccl-tests'
// bus bandwidth assume. It runs as two half-size copies of every part, the second with the
// long way reversed (RingAxis::long_way): together both directions carry the same bytes.
//
// Several axes (sharding.md:L358-L362, "divide by N_axes"): the buffer is split into N_axes
// parts; part p runs its phases over the axes rotated by p (X,Y,Z / Y,Z,X / Z,X,Y), so in
// every phase each axis carries one part's ring and all axes' links work at once.
// ReduceScatter runs the time-reverse of AllGather (same hop count and bytes per hop);
// AllReduce is ReduceScatter then AllGather over the reversed axis order.
#include <vector>

#include "collectives/collective.hpp"

namespace podsim {

// The pseudo-axis of a ring across slices over DCN (one chip per slice, same coordinates).
constexpr int kDcnAxis = -1;

struct RingAxis {
  int axis = 0;         // mesh axis index, or kDcnAxis
  int size = 1;         // the real ring length (also when the simulated mesh is reduced)
  bool wraparound = false;
  int stride = 1;       // chips between ring neighbours along the axis (a slice of it)
  bool sliced = false;  // a slice of the axis (AxisSlice), not the whole of it
  int long_way = +1;    // the direction carrying floor(X/2) shards on a wrapped bidirectional ring
};

// One ring phase of one part: every chip sends messages of message_bytes along `axis`.
struct RingPhase {
  RingAxis axis;
  double message_bytes = 0;
  bool gather = true;   // false for the ReduceScatter half (informational)
};

// The phases of one part, in order; all parts run concurrently.
using PartSchedule = std::vector<RingPhase>;

// Parts and phases of a ring collective (AllGather, ReduceScatter, AllReduce) over `axes`
// (size-1 axes already removed). Empty when there is nothing to move.
// With `dcn` (a ring across slices, kDcnAxis) the cross-slice phase is innermost: a
// ReduceScatter ends with it and an AllGather starts with it, so DCN carries the smallest
// blocks; an AllReduce is the book's hierarchical one (training.md:L572-L592):
// ReduceScatter over ICI, AllReduce over DCN, AllGather over ICI.
// With `antipodal_split`, a part with a wrapped axis of even size runs as two half-size copies,
// the second with every axis' long way reversed (see above).
std::vector<PartSchedule> ring_parts(CollectiveKind kind, const std::vector<RingAxis>& axes,
                                     double bytes, const RingAxis* dcn = nullptr, bool antipodal_split = false);

// What one chip does in one direction of one ring phase: it first sends its own data (when
// sends_own), then forwards each of the first `forwards` messages it receives, and receives
// `receives` messages in all. Each message travels `hops` physical links.
struct ChainShape {
  int direction = +1;    // +1 or -1 along the axis
  bool sends_own = false;
  int receives = 0;
  int forwards = 0;
  int hops = 1;          // physical links per message (the line's closing hop is longer)
  int sends() const { return (sends_own ? 1 : 0) + forwards; }
};

// Chains of the chip at `position` in a ring of `axis` (0, 1 or 2 chains; chains that neither
// send nor receive are omitted).
std::vector<ChainShape> ring_chains(const RingAxis& axis, int position, bool bidirectional);

}  // namespace podsim
