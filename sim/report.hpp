#pragma once
// What a run writes: summary.json (machine-readable), trace.json (Chrome Trace Event format
// for Perfetto), operations.csv, and a short table for the terminal.
#include <string>

#include "sim/run.hpp"

namespace podsim {

enum class TraceDetail { Collectives, Hops };

struct ReportOptions {
  bool reproducible = false;   // write wall_time_s as 0 so repeated runs are byte-identical
};

std::string summary_json(const Scenario& scenario, const RunResult& run, const ReportOptions& options);
std::string operations_csv(const RunResult& run);
// One process per slice, one track per chip (more where a chip's spans overlap, since
// Perfetto nests X events on a track), a span per collective per chip; hops when asked.
std::string trace_json(const RunResult& run, TraceDetail detail);
std::string summary_table(const Scenario& scenario, const RunResult& run);

// "8.39 MB", "372.8 us", "45.0 GB/s": human figures for tables.
std::string human_bytes(double bytes);
std::string human_time(double seconds);
std::string human_bandwidth(double bytes_per_s);

}  // namespace podsim
