#pragma once
// Rules both replays (chip_loop.cpp on SimGrid, native_replay.cpp on the fluid network) apply
// to a message, written once so the two cannot drift apart.
#include <algorithm>
#include <cmath>
#include <cstdint>

namespace podsim {

// SimGrid never completes a host-to-host transfer of 0 bytes; a block smaller than a byte
// (1 KiB spread over 4,096 chips) still costs a byte on the wire.
inline uint64_t wire_bytes(double bytes) { return std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(bytes))); }

// Mailboxes are keyed by what flows through them, so that the messages of one mailbox arrive in
// the order they were sent (one chain of a ring phase, or one point-to-point send). A chain's
// messages cross one at a time: each moves from the later of its send and the landing of the
// one before it (or the chain's start), so which of two chips acting at one instant acts first
// never matters (docs/modelling.md, "A message waits for its chain").
inline uint64_t chain_key(int op, int rep, int part, int phase, int direction) {
  return (static_cast<uint64_t>(op) << 36) | (static_cast<uint64_t>(rep) << 16) |
         (static_cast<uint64_t>(part) << 11) | (static_cast<uint64_t>(phase) << 2) |
         (static_cast<uint64_t>(direction > 0 ? 1 : 0) << 1);
}
inline uint64_t send_key(int op, int rep) {
  return (static_cast<uint64_t>(op) << 36) | (static_cast<uint64_t>(rep) << 16) | 1;
}

// When a message that has landed at `now` is usable by its receiver. Under the floor hop model:
// at max(arrival, sent + hops * T_min + the extra latency of perturbed links on its route).
// Under the additive model: `route_latency_s` after it lands (route_latency_s in
// platform.hpp: T_min per ICI link, T_min / 2 per NIC, plus perturbed links' extra). Links
// carry no latency in either engine: in SimGrid's CM02 a flow's latency also weighs its share
// of bandwidth (flows with longer routes get less, TCP's round-trip unfairness), and SimGrid
// 3.32 re-solves the shares of a flow whose latency ends at a date when another change has
// already marked its first link without the rest of its route (System::enable_var marks from
// the first constraint only), which can carry a link above its bandwidth. Landing first and
// waiting after gives the same latency + bytes / bandwidth for a flow alone, and shares equal.
inline double usable_s(bool floor_model, double floor_s, double now, double sent_s, int hops, double extra_latency_s,
                       double route_latency_s) {
  return floor_model ? std::max(now, sent_s + hops * floor_s + extra_latency_s) : now + route_latency_s;
}

}  // namespace podsim
