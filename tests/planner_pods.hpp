#pragma once
// The training scenario the planner's tests plan: LLaMA-2 7B cut to 2 layers on v5p chips of
// the given mesh, 64 sequences of 1024 tokens, attention FLOPs left out.
#include <string>
#include <vector>

#include "sim/scenario/scenario.hpp"

namespace podsim_test {

inline podsim::Scenario planner_pod(const std::string& name, const std::vector<podsim::MeshAxis>& axes) {
  podsim::Scenario s;
  s.path = "<test>";
  s.name = name;
  s.workload = podsim::TrainingWorkload{};
  s.topology.chip = *podsim::find_chip_preset("v5p");
  s.topology.axes = axes;
  s.training().model = *podsim::find_model_preset("llama2-7b");
  s.training().model.layers = 2;
  s.training().plan.sequence_length = 1024;
  s.training().plan.global_batch_tokens = 1024.0 * 64;
  s.training().plan.attention_flops = false;
  return s;
}

}  // namespace podsim_test
