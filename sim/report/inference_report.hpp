#pragma once
// What an inference step's timeline says: its time, throughput, and how much of it the
// model-parallel collectives (latency-bound at decode sizes) added to the rooflines.
#include "sim/engine/run.hpp"
#include "workloads/inference.hpp"

namespace podsim {

struct InferenceReport {
  bool decode = true;
  double step_time_s = 0;        // decode_step_time_s or prefill_time_s
  double compute_time_s = 0;     // the rooflines, summed (one chip)
  double exposed_comm_s = 0;     // step - compute: the collectives on the critical path
  double tokens_per_s = 0;       // decode: batch / step; prefill: prompt tokens / step
  double tokens_per_s_per_chip = 0;
  InferenceLayout layout;
};

InferenceReport inference_report(const InferencePlan& plan, const InferenceLayout& layout, const Program& program,
                                 const RunResult& run);

}  // namespace podsim
