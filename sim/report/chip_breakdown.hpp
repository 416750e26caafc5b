#pragma once
// One chip's step, read off its spans: its busy compute; the communication its compute units
// waited on (exposed), split by mesh axis and by what it was for; and apart from that, the time
// it waited inside collectives for peers that entered late (a slow chip, or a chip held up by
// one), which is no link's doing (docs/modelling.md, "Waiting for peers"). Which chip: chip 0,
// the slowest (the most compute) and the step's critical chip (the most compute on the path the
// step's end waited along).
#include <map>
#include <string>
#include <vector>

#include "sim/engine/run.hpp"

namespace podsim {

struct ChipBreakdown {
  std::string view;                 // "chip 0", "slowest", "critical"
  ChipId chip = 0;
  double compute_time_s = 0;        // busy time of its compute units
  // Step time its compute units waited on communication, late peers left out; split by mesh
  // axis ("X", ..., "DCN", and "pipeline_bubble" or "other": waits on compute elsewhere) and by
  // the ops' categories. The parts of each split sum to exposed_comm_s.
  double exposed_comm_s = 0;
  std::map<std::string, double> exposed_comm_by_axis_s;
  std::map<std::string, double> exposed_comm_by_category_s;
  // Step time it waited for late peers: inside collectives (by the collectives' axes) and, once
  // its own last op had ended, for the step's last chip ("step_end"). compute + exposed + wait =
  // the step.
  double wait_for_peers_s = 0;
  std::map<std::string, double> wait_for_peers_by_axis_s;
  std::map<std::string, double> wait_for_peers_by_category_s;   // by the collectives' categories
  // Between its compute ops, the waits' pipeline shares: (when, seconds), for the bubble.
  std::vector<std::pair<double, double>> pipeline_waits;
  std::vector<int> computes;        // its compute ops in time order
};

// The breakdown of `chip`; `pipeline`: waits on compute elsewhere are the pipeline's bubble.
ChipBreakdown chip_breakdown(const Program& program, const RunResult& run, ChipId chip, bool pipeline,
                             const std::string& view);

// The chip whose compute units are busiest (lowest on ties: chip 0 where all compute alike).
ChipId slowest_chip(const Program& program, const RunResult& run);

// The chip the step waited on most: walking back from the op that ends the step along what each
// op waited for last (on a chip, its latest dependency; in a collective a peer entered late, that
// peer's), the chip with the most compute on that path (lowest on ties).
ChipId critical_chip(const Program& program, const RunResult& run);

}  // namespace podsim
