#pragma once
// Times in Chrome Trace Event JSON (ts, dur: microseconds). Perfetto keeps whole nanoseconds
// and draws a span to ts + dur, so both come from endpoints rounded to the nanosecond: spans
// that touch or nest in the simulation touch or nest on the track (rounding ts and dur apart
// made 864 spans of a training step overlap their neighbours by ~1 ps).
#include <algorithm>
#include <cmath>

namespace podsim {

struct TraceTime {
  double ts_us;    // a whole number of nanoseconds, in microseconds
  double dur_us;   // end rounded minus start rounded
};

inline TraceTime trace_time(double start_s, double end_s) {
  const long long start_ns = std::llround(start_s * 1e9);
  const long long end_ns = std::max(start_ns, std::llround(end_s * 1e9));
  return {static_cast<double>(start_ns) / 1e3, static_cast<double>(end_ns - start_ns) / 1e3};
}

}  // namespace podsim
