#pragma once
// What each chip spent on an op, as the run's per-op figures report it once chips differ (a
// slow chip, a degraded link, a late peer): the median chip and the chip that spent the most,
// each chip's time being its span less its wait for peers (docs/modelling.md, "Waiting for
// peers"), and the wait itself. The spread from the first chip's start to the last chip's end
// mixes the chips' skew into the op's time and is not reported as its time.
#include "sim/engine/run.hpp"

namespace podsim {

struct ChipTimes {
  // The op's time: compute, the median chip's; a collective, its slowest instance from its
  // last chip's entry to its last chip's end (the whole group working: what nccl-tests and the
  // book time), averaged over repetitions.
  double time_s = 0;
  double median_s = 0;       // over the chips where it runs (every real chip counted)
  double max_s = 0;
  ChipId max_chip = 0;       // a real chip, the lowest of those that spent max_s
  double wait_median_s = 0;  // collectives: the wait for peers, likewise
  double wait_max_s = 0;
  ChipId wait_max_chip = 0;
};

// The chip times of op `op` of `program` in `run` (whose spans, peers and class maps are set).
ChipTimes chip_times(const Program& program, const RunResult& run, int op);

}  // namespace podsim
