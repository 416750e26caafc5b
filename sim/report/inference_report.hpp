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
  double exposed_comm_s = 0;     // step - compute - wait: the collectives on the critical path
  // Chip 0's time blocked in collectives for peers that entered late, and after its last op
  // for the step's last chip (chip_breakdown.hpp); 0 where chips run alike.
  double wait_for_peers_s = 0;
  double tokens_per_s = 0;       // decode: batch / step; prefill: prompt tokens / step
  double tokens_per_s_per_chip = 0;
  // MoE models (ops of category "experts"): the routed experts' compute over the step on a chip
  // of mean load and on each layer's busiest chip, and chip 0's time in the dispatch and combine
  // AllToAlls (bytes: what one chip sends others at one dispatch, mean over layers).
  bool moe = false;
  double expert_compute_mean_s = 0;
  double expert_compute_busiest_s = 0;
  double all_to_all_time_s = 0;
  double dispatch_bytes_per_chip = 0;
  InferenceLayout layout;
};

InferenceReport inference_report(const InferencePlan& plan, const InferenceLayout& layout, const Program& program,
                                 const RunResult& run);

}  // namespace podsim
