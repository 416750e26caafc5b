#pragma once
// What a run's trace.json holds (collectives, training and inference runs; serving streams its
// own: serving_files.hpp). The format is perfetto_trace.hpp's.
//
// One process per slice, one track per chip for compute and one or more for communication
// (Perfetto nests X events on a track, so overlapping spans take further tracks), a span per
// op per chip, inside a collective's span a "wait for peers" slice where a late peer added to
// it (its last wait_for_peers_s); hops when asked. Pods above kMaxTracedChips chips trace one
// chip per symmetry class (the chips that were simulated), as the others repeat them exactly;
// where those are still too many (a perturbed pod: every chip a class of its own), the trace
// keeps TraceOptions::keep_chips, the perturbed chips, and an even sample of the rest up to
// kMaxTracedChips chips and kMaxTracedSpans spans, and its otherData says how many it left out.
// Flow arrows (Chrome trace "s"/"f" events bound to the slices they leave and enter): one per
// pipeline send, sender's send span to the receiver's span that waits for it, and with hop
// detail one per hop, source chip's span of the op to the hop on the destination's track
// (up to max_hop_flows, in record order; the trace's otherData says how many were left out).
// Counter tracks on a "pod" process: link utilisation per axis or, without hop records,
// collective activity per axis (trace_counters.hpp), and HBM used per chip when given.
#include <cstddef>
#include <string>
#include <vector>

#include "sim/engine/run.hpp"

namespace podsim {

enum class TraceDetail { Collectives, Hops };

constexpr int kMaxTracedChips = 256;

// A trace of more chips than this many spans (events of ops on chips) keeps only some chips:
// Perfetto's web UI stops near 2M events in a ~300 MB file (about 150 bytes an event here).
constexpr size_t kMaxTracedSpans = 1500000;

struct TraceOptions {
  size_t max_hop_flows = 100000;     // Perfetto slows down with millions of arrows
  double hbm_used_bytes = -1;        // per chip (training or inference memory report); < 0: no counter
  // Chips a trace keeps first when it cannot keep them all (kMaxTracedChips chips, or
  // kMaxTracedSpans spans): chip 0, the slowest, the critical chip (training_report's views).
  std::vector<ChipId> keep_chips;
};
struct TraceStats {
  size_t chips_traced = 0;
  size_t chips_left_out = 0;         // chips with timings of their own the trace does not draw
  size_t send_flows = 0;
  size_t hop_flows = 0;
  size_t hop_flows_omitted = 0;      // beyond max_hop_flows, or with no traced sender to start from
};
std::string trace_json(const RunResult& run, TraceDetail detail, const TraceOptions& options = {},
                       TraceStats* stats = nullptr);

}  // namespace podsim
