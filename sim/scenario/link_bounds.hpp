#pragma once
// What SimGrid may be given for a link, after every factor a scenario multiplies in (the chip's
// bandwidth, a profile's or simulation.link_efficiency, a perturbation's bandwidth_scale). Each
// factor in its own range can still take the product out of the range SimGrid handles: 1e298
// times a link's bandwidth made it abort ("The Impossible Did Happen"), 1e-320 deadlocked it.
// The bounds are far outside any hardware and far inside double's range.
#include <cstdio>
#include <string>

namespace podsim {

constexpr double kMinLinkBandwidth_Bps = 1e3;    // 1 kB/s
constexpr double kMaxLinkBandwidth_Bps = 1e18;   // 1 EB/s
constexpr double kMaxLinkLatency_s = 1.0;        // a hop's latency and any extra latency added to it

// A value far out of range as a message shows it ("4.5e+307 B/s"): human_bandwidth's units
// stop at TB/s.
inline std::string link_bandwidth_text(double value, const char* unit = " B/s") {
  char text[48];
  std::snprintf(text, sizeof text, "%.3g%s", value, unit);
  return text;
}

}  // namespace podsim
