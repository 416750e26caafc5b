#pragma once
// What a run's trace.json holds (collectives, training and inference runs; serving streams its
// own: serving_files.hpp). The format is perfetto_trace.hpp's.
//
// One process per slice, one track per chip for compute and one or more for communication
// (Perfetto nests X events on a track, so overlapping spans take further tracks), a span per
// op per chip; hops when asked. Pods above kMaxTracedChips chips trace one chip per
// symmetry class (the chips that were simulated), as the others repeat them exactly.
// Flow arrows (Chrome trace "s"/"f" events bound to the slices they leave and enter): one per
// pipeline send, sender's send span to the receiver's span that waits for it, and with hop
// detail one per hop, source chip's span of the op to the hop on the destination's track
// (up to max_hop_flows, in record order; the trace's otherData says how many were left out).
// Counter tracks on a "pod" process: link utilisation per axis or, without hop records,
// collective activity per axis (trace_counters.hpp), and HBM used per chip when given.
#include <cstddef>
#include <string>

#include "sim/engine/run.hpp"

namespace podsim {

enum class TraceDetail { Collectives, Hops };

constexpr int kMaxTracedChips = 256;

struct TraceOptions {
  size_t max_hop_flows = 100000;     // Perfetto slows down with millions of arrows
  double hbm_used_bytes = -1;        // per chip (training or inference memory report); < 0: no counter
};
struct TraceStats {
  size_t send_flows = 0;
  size_t hop_flows = 0;
  size_t hop_flows_omitted = 0;      // beyond max_hop_flows, or with no traced sender to start from
};
std::string trace_json(const RunResult& run, TraceDetail detail, const TraceOptions& options = {},
                       TraceStats* stats = nullptr);

}  // namespace podsim
