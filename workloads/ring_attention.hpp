#pragma once
// Ring attention (Liu et al. 2023), the context parallelism of training and of prefill: with
// the sequence split over a mesh axis, each chip's queries meet every chip's keys and values one
// block at a time, double-buffered: while a step scores the block the chip holds, that block
// leaves for the +1 neighbour and the next one arrives into the buffer the previous step freed
// (the local block once projected). A step waits for its block and the step before it; a send
// for its block and the step before the current one. The sends go round the end of the line
// (one wraparound hop on a torus, the closing route on a line).
#include <string>
#include <vector>

#include "workloads/program_builder.hpp"

namespace podsim {

// `steps` score steps of `step_s` (and `step_flops`) each, the first after `projections` (the
// ops after which the chip holds its own K/V block), each later one after the one before and
// its block's arrival (`block_bytes` sent along `axis`). Returns the last step.
int emit_ring_attention(ProgramBuilder& b, const std::string& name, int axis, int steps, double step_s,
                        double step_flops, double block_bytes, const std::vector<int>& projections, int layer,
                        OpRole role);

// A whole attention block under context parallelism: its projections (the block's `seconds` and
// `flops` less the scores' `score_s` and `score_flops`) as one op after `after`, then the ring
// of `steps` score steps. Returns the projections op and the last step.
struct RingBlock {
  int projections = -1;
  int last = -1;
};
RingBlock emit_ring_block(ProgramBuilder& b, const std::string& name, int axis, int steps, double seconds,
                          double flops, double score_s, double score_flops, double block_bytes, std::vector<int> after,
                          int layer, OpRole role);

}  // namespace podsim
