#pragma once
// Chrome Trace Event JSON, the format Perfetto UI and chrome://tracing open ("Trace Event
// Format", Google doc 1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU): the one writer of every
// workload's trace.json. It owns the framing, the kinds of event podsim writes, how times,
// numbers and names are printed, and the cap on events; what a trace holds is its callers'
// (run_trace.cpp for collectives, training and inference; serving_files.cpp for serving).
//
// The text: {"displayTimeUnit":..,"traceEvents":[ then one event a line, keys in a fixed
// order (name, cat, ph, ts, dur, pid, tid, args), then ]} with otherData when given.
#include <cstdint>
#include <limits>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>

namespace podsim {

// Times (ts, dur: microseconds). Perfetto keeps whole nanoseconds and draws a span to ts + dur,
// so both come from endpoints rounded to the nanosecond: spans that touch or nest in the
// simulation touch or nest on the track (rounding ts and dur apart made 864 spans of a
// training step overlap their neighbours by ~1 ps).
long long trace_ns(double time_s);
// A whole-nanosecond time or duration as ts and dur print it: microseconds, trace_number's text
// (1500 ns: 1.5; 1 ns: 0.001; 2 s: 2000000.0).
std::string trace_us(long long ns);

// A number as the trace prints it: nlohmann-json's text of a double, the shortest that reads
// back the same (1.001, not 1.000999...; 8192.0; null for NaN and infinities).
std::string trace_number(double value);
// `text` as a JSON string, quotes included: '"', '\\' and control characters escaped (\n, \t,
// ... or \u00XX), every other byte as it is (names come from UTF-8 input: input_file.hpp).
std::string json_quoted(std::string_view text);

// An event's args, or a trace's otherData: "key":value pairs in the order added.
class TraceArgs {
 public:
  TraceArgs& add(std::string_view key, double value);   // trace_number
  // All 17 significant digits, integral values without ".0" (byte counts: 8192).
  TraceArgs& add_g17(std::string_view key, double value);
  TraceArgs& add(std::string_view key, std::string_view value);
  template <typename Int, std::enable_if_t<std::is_integral_v<Int> && !std::is_same_v<Int, bool>, int> = 0>
  TraceArgs& add(std::string_view key, Int value) {
    return add_text(key, std::to_string(value));
  }
  const std::string& text() const { return text_; }

 private:
  TraceArgs& add_text(std::string_view key, std::string_view json_value);
  std::string text_;
};

// How much of the run a trace holds (it stops at a cap).
struct TraceExtent {
  uint64_t events = 0;
  bool complete = true;
  double until_s = 0;   // incomplete: the time of the first event left out
};

// One end of a flow arrow: the track and the whole nanosecond it binds at.
struct FlowEnd {
  int pid = 0;
  int tid = 0;
  long long ns = 0;
};

// Streams one trace.json into a string or an ostream. Past `max_events` every event is dropped
// (the text stays valid JSON and finish() says where it stopped). Each event method returns
// false when it was dropped; `at_s` places an event that has no time of its own (metadata)
// for the extent.
class PerfettoTrace {
 public:
  static constexpr uint64_t kNoCap = std::numeric_limits<uint64_t>::max();
  // display_time_unit: "ns" or "ms", how the UI shows times (the file's are microseconds).
  PerfettoTrace(std::string& out, std::string_view display_time_unit, uint64_t max_events = kNoCap);
  PerfettoTrace(std::ostream& out, std::string_view display_time_unit, uint64_t max_events = kNoCap);
  PerfettoTrace(const PerfettoTrace&) = delete;
  PerfettoTrace& operator=(const PerfettoTrace&) = delete;

  // Metadata ("M"): names of a process, a thread (a track), and a track's place among its
  // process's tracks.
  bool process_name(int pid, std::string_view name, double at_s = 0);
  bool thread_name(int pid, int tid, std::string_view name, double at_s = 0);
  bool thread_sort_index(int pid, int tid, int sort_index, double at_s = 0);
  // A complete span ("X") from start_s to end_s (seconds), on the nanosecond grid.
  bool span(std::string_view name, std::string_view cat, int pid, int tid, double start_s, double end_s,
            const TraceArgs& args);
  // A counter sample ("C") at time_s (rounded to the nanosecond): each arg is a series.
  bool counter(std::string_view name, int pid, double time_s, const TraceArgs& series);
  // A flow arrow: an "s" and an "f" with bp "e" (bound to the slice enclosing ts, not the next
  // one to begin on the track). Perfetto pairs them by (id, cat, name) (json_trace_parser: flow
  // v1); ids count up from 1 in the order written, so they are unique and the same on every
  // run. Both ends go in or neither.
  bool flow(std::string_view name, std::string_view cat, FlowEnd from, FlowEnd to);

  bool accepting() const { return extent_.complete; }
  // Close the JSON (once), with otherData or without; what the trace holds.
  TraceExtent finish();
  TraceExtent finish(const TraceArgs& other_data);

 private:
  bool admit(uint64_t count, double at_s);   // the cap's bookkeeping
  TraceExtent close(const TraceArgs* other_data);
  bool metadata(std::string_view name, int pid, std::optional<int> tid, const TraceArgs& args, double at_s);
  void write_event();                        // event_ to the sink
  void write_flow_end(std::string_view name, std::string_view cat, std::string_view ph, unsigned long long id,
                      FlowEnd end);
  void begin(std::string_view name, std::optional<std::string_view> cat, std::string_view ph);
  void append_pid_tid(int pid, int tid);
  void append_args(const TraceArgs& args);
  void put(std::string_view text);

  std::string* text_ = nullptr;
  std::ostream* stream_ = nullptr;
  uint64_t max_events_;
  TraceExtent extent_;
  unsigned long long next_flow_id_ = 1;
  std::string event_;   // the event being built (kept to reuse its buffer)
};

}  // namespace podsim
