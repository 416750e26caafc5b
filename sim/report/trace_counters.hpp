#pragma once
// Counter tracks of trace.json, each derived from the run's records (nothing is modelled here).
//
// Link utilisation (with --trace-detail hops): time is cut into buckets of equal width
// (total time / kLinkBuckets); a hop's bytes are spread evenly over its record's [start, end]
// and counted once per link of an axis its route crosses (dimension-order within a slice, the
// NICs across DCN: the routes the replay plans). Utilisation of an axis in a bucket is
//   bytes moved over links of the axis in the bucket / (sum of the axis's directed link
//   bandwidths, as perturbed, x bucket width),
// on the simulated mesh (hops are recorded there). The bandwidth is the nominal one, before
// link_efficiency, so a run at efficiency e peaks near e.
//
// Collective activity (without hop records): per axis, the fraction of traced chips with a
// collective or send on that axis in flight, a step function that changes at span ends.
#include <string>
#include <vector>

#include "sim/engine/run.hpp"

namespace podsim {

constexpr int kLinkBuckets = 500;

struct LinkUse {
  std::vector<std::string> axes;                 // mesh axis names that have links, then "DCN" if any
  std::vector<double> capacity_Bps;              // per axis: directed link bandwidths summed
  double bucket_s = 0;
  std::vector<std::vector<double>> bytes;        // [axis][bucket]: bytes moved over its links
  double utilisation(size_t axis, size_t bucket) const {
    return capacity_Bps[axis] > 0 && bucket_s > 0 ? bytes[axis][bucket] / (capacity_Bps[axis] * bucket_s) : 0.0;
  }
};

// From run.replay.hops; `buckets` buckets over [0, max(total time, last hop end)].
LinkUse link_use_from_hops(const RunResult& run, int buckets = kLinkBuckets);

struct ActivityStep {
  double time_s = 0;
  double fraction = 0;   // of the traced chips
};

struct AxisActivity {
  std::string axis;                 // a mesh axis name or "DCN"
  std::vector<ActivityStep> steps;  // in time order, one per change, ending at 0
};

// Over the real chips with traced[chip] (run_trace.hpp's choice of chips).
std::vector<AxisActivity> collective_activity(const RunResult& run, const std::vector<bool>& traced);

}  // namespace podsim
