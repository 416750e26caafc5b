#pragma once
// When the last chip of each collective instance entered it, and which chip that was. A chip
// that entered earlier cannot finish before its last peer has joined: the difference is its
// wait for peers, the time a late peer (a slow chip, or one held up by one) adds to the chip's
// span, apart from the collective's own transfer (docs/modelling.md, "Waiting for peers").
// An instance is the chips one collective's messages join (a ring over its axes, an AllToAll
// group, a hierarchical ring across slices), read off the op's plan, so every collective kind
// and split or reduced mesh is covered alike.
#include <cstddef>
#include <vector>

#include "collectives/hop_plan.hpp"
#include "sim/engine/replay.hpp"
#include "workloads/program.hpp"

namespace podsim {

struct PeerEntries {
  // Chips joined by one plan's messages: each simulated chip's instance, and how many there are.
  struct Instances {
    std::vector<int> of_chip;
    int count = 0;
  };
  std::vector<int> instances_of_op;   // by op: index in `instances`, -1 for compute and sends
  std::vector<Instances> instances;
  // By (op, repetition, instance), from first[op]: the latest entry among the chips where the
  // op is present, and the simulated chip that made it (lowest chip on ties).
  std::vector<size_t> first;
  std::vector<double> entered_s;
  std::vector<ChipId> last_chip;

  // The entry of the instance that simulated `chip` belongs to; false for an op with none.
  bool latest_entry(int op, int repetition, ChipId chip, double& entered, ChipId& last) const;
};

// The instances of every collective of `program` from its plans (`plans[op]`, null for
// compute), `endpoint_chip` the chip of each endpoint the plans name, and the latest entry of
// each instance from the replay's spans (sorted by op, repetition, simulated chip).
PeerEntries peer_entries(const Program& program, const std::vector<const OpPlan*>& plans,
                         const std::vector<ChipId>& endpoint_chip, const Topology& simulated,
                         const std::vector<SpanRecord>& spans);

}  // namespace podsim
