#pragma once
// The order each pipeline stage runs its passes in: the schedule a framework fixes before the
// step starts. Timings are not decided here; the simulation replays these orders, so bubbles
// and exposed sends come out of the timeline.
#include <string>
#include <vector>

namespace podsim {

enum class PipelineSchedule {
  GPipe,             // all microbatches forward, then all backward (Huang et al. 2019)
  OneFOneB,          // 1F1B: P-1-s warm-up forwards, then one forward and one backward at a time
                     // (Narayanan et al., PipeDream-Flush)
  Interleaved1F1B,   // Megatron's interleaved 1F1B: each device holds v model chunks (virtual
                     // stages) d, d+P, ...; bubble (P-1)/(vM+P-1) (Narayanan et al. 2021, sec. 2.2)
  ZeroBubbleH1,      // ZB-H1: 1F1B with each backward split into B (input gradients) and W
                     // (weight gradients), stage s holding its W passes s microbatches back;
                     // bubble (P-1)(T_F+T_B-T_W) (Qi et al. 2024, sec. 2.1)
};

struct PipelinePass {
  enum Kind { Forward, Backward, WeightGradient } kind = Forward;
  int chunk = 0;        // the device's virtual stage: model chunk chunk x P + stage
  int microbatch = 0;
};

// The passes stage `stage` of `stages` runs, in order, for `microbatches` microbatches and
// `virtual_stages` chunks per device (1 but for Interleaved1F1B). Every (kind, chunk,
// microbatch) appears once; Backward covers the weight gradients too unless the schedule is
// ZeroBubbleH1. Throws std::invalid_argument for an impossible combination (see
// check_pipeline_schedule).
std::vector<PipelinePass> stage_order(PipelineSchedule schedule, int stage, int stages, int microbatches,
                                      int virtual_stages = 1);

// Empty when the schedule can run these counts, or the reason it cannot: interleaving needs
// v >= 2 and a microbatch count that is a multiple of the stages (Megatron's condition); the
// others take v = 1.
std::string check_pipeline_schedule(PipelineSchedule schedule, int stages, int microbatches, int virtual_stages);

// The most passes' activations a stage holds at once, in whole-stage units (a chunk counts
// 1/v): forwards begun less the passes that free them (Backward, or WeightGradient under
// ZB-H1), the peak over the order, the largest over the stages.
double peak_passes_in_flight(PipelineSchedule schedule, int stages, int microbatches, int virtual_stages);

const char* schedule_name(PipelineSchedule schedule);

}  // namespace podsim
