#pragma once
// What a run writes: summary.json (machine-readable), trace.json (Chrome Trace Event format
// for Perfetto), operations.csv, and a short table for the terminal.
#include <nlohmann/json.hpp>
#include <string>

#include "sim/engine/run.hpp"
#include "sim/report/inference_report.hpp"
#include "sim/report/training_report.hpp"
#include "sim/scenario/scenario.hpp"

namespace podsim {

enum class TraceDetail { Collectives, Hops };

struct ReportOptions {
  bool reproducible = false;   // write wall_time_s as 0 so repeated runs are byte-identical
};

// `training` adds the training step's figures (null for a collectives workload); the fields are
// summary_field_table.hpp's rows.
std::string summary_json(const Scenario& scenario, const RunResult& run, const ReportOptions& options,
                         const TrainingReport* training = nullptr, const InferenceReport* inference = nullptr);
std::string operations_csv(const RunResult& run);
// One process per slice, one track per chip for compute and one or more for communication
// (Perfetto nests X events on a track, so overlapping spans take further tracks), a span per
// op per chip; hops when asked. Pods above kMaxTracedChips chips trace one chip per
// symmetry class (the chips that were simulated), as the others repeat them exactly.
constexpr int kMaxTracedChips = 256;
// Flow arrows (Chrome trace "s"/"f" events bound to the slices they leave and enter): one per
// pipeline send, sender's send span to the receiver's span that waits for it, and with hop
// detail one per hop, source chip's span of the op to the hop on the destination's track
// (up to max_hop_flows, in record order; the trace's otherData says how many were left out).
// Counter tracks on a "pod" process: link utilisation per axis or, without hop records,
// collective activity per axis (trace_counters.hpp), and HBM used per chip when given.
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
std::string summary_table(const Scenario& scenario, const RunResult& run);
std::string training_table(const Scenario& scenario, const RunResult& run, const TrainingReport& report);
std::string inference_table(const Scenario& scenario, const RunResult& run, const InferenceReport& report);

}  // namespace podsim
