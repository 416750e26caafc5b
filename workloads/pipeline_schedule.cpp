#include "workloads/pipeline_schedule.hpp"

#include <algorithm>
#include <stdexcept>

namespace podsim {
namespace {

std::vector<PipelinePass> one_f_one_b(int stage, int stages, int microbatches) {
  std::vector<PipelinePass> order;
  const int warmup = std::min(stages - 1 - stage, microbatches);
  int next_forward = 0, next_backward = 0;
  for (; next_forward < warmup; ++next_forward) order.push_back({PipelinePass::Forward, 0, next_forward});
  while (next_backward < microbatches) {
    if (next_forward < microbatches) order.push_back({PipelinePass::Forward, 0, next_forward++});
    order.push_back({PipelinePass::Backward, 0, next_backward++});
  }
  return order;
}

// Megatron-LM's forward_backward_pipelining_with_interleaving: the k-th forward runs chunk
// (k mod Pv) / P of microbatch (k / Pv) P + k mod P (backwards take the chunks in reverse);
// stage s warms up with 2(P-1-s) + (v-1)P forwards, then alternates, then drains.
std::vector<PipelinePass> interleaved(int stage, int stages, int microbatches, int v) {
  const int total = microbatches * v;
  auto pass = [&](PipelinePass::Kind kind, int k) {
    const int chunk = (k % (stages * v)) / stages;
    return PipelinePass{kind, kind == PipelinePass::Forward ? chunk : v - 1 - chunk,
                        (k / (stages * v)) * stages + k % stages};
  };
  const int warmup = std::min(2 * (stages - 1 - stage) + (v - 1) * stages, total);
  std::vector<PipelinePass> order;
  int forward = 0, backward = 0;
  for (; forward < warmup; ++forward) order.push_back(pass(PipelinePass::Forward, forward));
  while (backward < total) {
    if (forward < total) order.push_back(pass(PipelinePass::Forward, forward++));
    order.push_back(pass(PipelinePass::Backward, backward++));
  }
  return order;
}

// ZB-H1: 1F1B's F and B order, each B followed by the W of the microbatch `stage` back, so
// every stage holds P microbatches' activations at most (the first stage's 1F1B peak); the
// remaining W passes fill the drain, where 1F1B's stages idle.
std::vector<PipelinePass> zero_bubble_h1(int stage, int stages, int microbatches) {
  std::vector<PipelinePass> order;
  int next_w = 0;
  for (const auto& p : one_f_one_b(stage, stages, microbatches)) {
    order.push_back(p);
    if (p.kind == PipelinePass::Backward && p.microbatch - stage >= 0) {
      order.push_back({PipelinePass::WeightGradient, 0, next_w++});
    }
  }
  while (next_w < microbatches) order.push_back({PipelinePass::WeightGradient, 0, next_w++});
  return order;
}

}  // namespace

std::string check_pipeline_schedule(PipelineSchedule schedule, int stages, int microbatches, int virtual_stages) {
  if (stages < 1 || microbatches < 1) return "stages and microbatches must be at least 1";
  if (schedule == PipelineSchedule::Interleaved1F1B) {
    if (virtual_stages < 2) return "interleaved 1F1B needs at least 2 virtual stages per device";
    if (microbatches % stages != 0) {
      return "interleaved 1F1B needs microbatches (" + std::to_string(microbatches) +
             ") to be a multiple of the pipeline stages (" + std::to_string(stages) + ")";
    }
  } else if (virtual_stages != 1) {
    return std::string("virtual stages need the interleaved schedule; ") + schedule_name(schedule) +
           " runs one chunk per device";
  }
  return "";
}

std::vector<PipelinePass> stage_order(PipelineSchedule schedule, int stage, int stages, int microbatches,
                                      int virtual_stages) {
  if (const auto why = check_pipeline_schedule(schedule, stages, microbatches, virtual_stages); !why.empty()) {
    throw std::invalid_argument(why);
  }
  if (stage < 0 || stage >= stages) throw std::invalid_argument("stage out of range");
  switch (schedule) {
    case PipelineSchedule::GPipe: {
      std::vector<PipelinePass> order;
      for (int m = 0; m < microbatches; ++m) order.push_back({PipelinePass::Forward, 0, m});
      for (int m = 0; m < microbatches; ++m) order.push_back({PipelinePass::Backward, 0, m});
      return order;
    }
    case PipelineSchedule::OneFOneB: return one_f_one_b(stage, stages, microbatches);
    case PipelineSchedule::Interleaved1F1B: return interleaved(stage, stages, microbatches, virtual_stages);
    case PipelineSchedule::ZeroBubbleH1: return zero_bubble_h1(stage, stages, microbatches);
  }
  return {};
}

double peak_passes_in_flight(PipelineSchedule schedule, int stages, int microbatches, int virtual_stages) {
  const auto frees = schedule == PipelineSchedule::ZeroBubbleH1 ? PipelinePass::WeightGradient : PipelinePass::Backward;
  int peak = 0;
  for (int s = 0; s < stages; ++s) {
    int live = 0;
    for (const auto& p : stage_order(schedule, s, stages, microbatches, virtual_stages)) {
      if (p.kind == PipelinePass::Forward) peak = std::max(peak, ++live);
      if (p.kind == frees) --live;
    }
  }
  return static_cast<double>(peak) / virtual_stages;
}

const char* schedule_name(PipelineSchedule schedule) {
  switch (schedule) {
    case PipelineSchedule::GPipe: return "GPipe";
    case PipelineSchedule::OneFOneB: return "1F1B";
    case PipelineSchedule::Interleaved1F1B: return "interleaved 1F1B";
    case PipelineSchedule::ZeroBubbleH1: return "ZB-H1";
  }
  return "?";
}

}  // namespace podsim
