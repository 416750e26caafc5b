#pragma once
// A serving run's per-request and per-step files, written while it runs so that memory does not
// grow with the number of requests: requests.csv (one row per request, in request order),
// steps.csv (one row per step of every server) and trace.json (a track per server, a track
// per request, the decode batch as a counter, for Perfetto).
//
// trace.json stops after kMaxServingTraceEvents events (about 250 MB; Perfetto's UI loads
// JSON traces of that order) and says so in the summary (`trace.complete`, `trace.until_s`);
// the CSVs always hold the whole run.
#include <cstdint>
#include <ostream>

#include "sim/report/output_files.hpp"
#include "sim/report/perfetto_trace.hpp"
#include "sim/report/serving_report.hpp"

namespace podsim {

constexpr uint64_t kMaxServingTraceEvents = 2'000'000;

class ServingFileSink : public ServingSink {
 public:
  // Opens the three files in `files` (committed with the summary by the caller).
  ServingFileSink(const Scenario& scenario, OutputFiles& files, uint64_t max_trace_events = kMaxServingTraceEvents);
  void step(const StepRecord& step) override;
  void request(const RequestRecord& record) override;
  // Closes the trace's JSON; what it holds.
  TraceExtent finish();

 private:
  std::ostream& requests_;
  std::ostream& steps_;
  PerfettoTrace trace_;
  bool split_;
  uint64_t request_index_ = 0;
};

}  // namespace podsim
