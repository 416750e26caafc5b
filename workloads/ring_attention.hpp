#pragma once
// Ring attention (Liu et al. 2023), the context parallelism of training and of prefill: with
// the sequence split over a mesh axis, each chip's queries meet every chip's keys and values one
// block at a time, double-buffered: while a step scores the block the chip holds, that block
// leaves for the +1 neighbour and the next one arrives into the buffer the previous step freed
// (the local block once projected). A step waits for its block and the step before it; a send
// for its block and the step before the current one. The sends go round the end of the line
// (one wraparound hop on a torus, the closing route on a line).
//
// What a block is depends on the attention: GQA's K and V heads of the chip's tokens; MLA's
// latent c_KV and shared rotary key (the cache MLA keeps), which each chip up-projects to its
// K and V heads on arrival before scoring them (docs/modelling.md, "Context parallelism").
#include <string>
#include <vector>

#include "workloads/program_builder.hpp"

namespace podsim {

// A block's scores as ring attention, `steps` steps round `axis`; steps 1: none. Seconds,
// FLOPs and bytes are the pass's totals: `score_*` over all steps, `unpack_*` over the
// steps - 1 received blocks (MLA's up-projection of each; 0 for GQA), `kv_bytes` each send's.
struct RingSplit {
  int axis = -1;
  int steps = 1;
  double score_s = 0;
  double score_flops = 0;
  double kv_bytes = 0;               // what each ring send carries
  double unpack_s = 0;
  double unpack_flops = 0;
};

// `ring.steps` score steps, each 1/steps of the scores and, from the second on (a received
// block), 1/(steps - 1) of the unpacking; the first after `projections` (the ops after which
// the chip holds its own block), each later one after the one before and its block's arrival.
// Returns the last step.
int emit_ring_attention(ProgramBuilder& b, const std::string& name, const RingSplit& ring,
                        const std::vector<int>& projections, int layer, OpRole role);

// A whole attention block under context parallelism: its projections (the block's `seconds` and
// `flops` less the ring's scores and unpacking) as one op after `after`, then the ring.
// Returns the projections op and the last step.
struct RingBlock {
  int projections = -1;
  int last = -1;
};
RingBlock emit_ring_block(ProgramBuilder& b, const std::string& name, double seconds, double flops,
                          const RingSplit& ring, std::vector<int> after, int layer, OpRole role);

}  // namespace podsim
