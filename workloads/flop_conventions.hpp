#pragma once
// FLOP conventions: the ways publications count one training step's FLOPs, so a published
// TFLOP/s/chip can be turned back into the step time it was divided by (issue 26;
// docs/calibration.md, "Derived measured quantities"). One row per convention: its name, the
// FLOPs one chip is credited with per step, and the source it cites. MaxText changed its count
// over time, so each of its conventions names the commit whose code it reads.
// Plain C++: no SimGrid, no YAML.
#include <string>
#include <string_view>
#include <vector>

#include "workloads/model_spec.hpp"

namespace podsim {

// What a convention counts from: the model, and one chip's share of the step.
struct FlopCountInputs {
  const TransformerSpec& model;
  double sequence_length = 0;   // S, tokens of one sequence
  double tokens_per_chip = 0;   // S x per-device batch x microbatches: one chip's tokens per step
  bool attention_flops = true;  // podsim's workload.attention_flops (the podsim convention only)
};

struct FlopConvention {
  std::string name;                                     // as a measurement's flop_convention names it
  double (*flops_per_chip)(const FlopCountInputs&);     // one step's FLOPs credited to one chip
  std::string formula;                                  // in words, for people
  std::string source;                                   // the code or text it reads
};

// The registered conventions, in the order messages list them.
const std::vector<FlopConvention>& flop_conventions();
// nullptr when no convention has this name.
const FlopConvention* find_flop_convention(std::string_view name);
// "podsim, maxtext-2023, ...": the names, for messages.
std::string flop_convention_names();

}  // namespace podsim
