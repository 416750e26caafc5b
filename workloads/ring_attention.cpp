#include "workloads/ring_attention.hpp"

namespace podsim {

int emit_ring_attention(ProgramBuilder& b, const std::string& name, const RingSplit& ring,
                        const std::vector<int>& projections, int layer, OpRole role) {
  const double step_s = ring.score_s / ring.steps, step_flops = ring.score_flops / ring.steps;
  // A received block is unpacked (MLA: up-projected to K and V heads) before its step scores it.
  const double received_s = step_s + ring.unpack_s / (ring.steps - 1);
  const double received_flops = step_flops + ring.unpack_flops / (ring.steps - 1);
  const int axis = ring.axis;
  const double block_bytes = ring.kv_bytes;
  int step = b.compute(name + ".ring0", step_s, step_flops, projections, layer, role);
  int before = -1;                       // the step before `step`
  std::vector<int> have = projections;   // the ops after which this chip holds the block it sends next
  for (int i = 1; i < ring.steps; ++i) {
    // Two buffers: while `step` scores the block it holds, that block leaves for the neighbour
    // and the next arrives in the other buffer, which the step before freed. So a send waits
    // for its block and for the step before the current one; the ring never runs further
    // ahead of the compute than one block.
    std::vector<int> ready = have;
    if (before >= 0) ready.push_back(before);
    const int send = b.send(name + ".ring_send" + std::to_string(i), axis, +1, block_bytes, ready, OpRole::RingSend, true);
    if (i > 1) b.op(have.front()).released_by.push_back(send);   // the received block this send passes on
    // A send is received by one op on a chip: a zero-length op, which the step and the next
    // send wait for. The received block is live from then until its step and its onward send
    // have both ended (the memory timeline; the local block is among the saved activations).
    const int receive = b.compute(name + ".ring_receive" + std::to_string(i), 0.0, 0.0, {}, layer, OpRole::RingReceive);
    b.op(receive).after_neighbour = {{send, axis, +1, false}, {send, axis, +1, true}};
    before = step;
    step = b.compute(name + ".ring" + std::to_string(i), received_s, received_flops, {step, receive}, layer, role);
    b.op(receive).holds_bytes = block_bytes;
    b.op(receive).released_by = {step};
    have = {receive};
  }
  return step;
}

RingBlock emit_ring_block(ProgramBuilder& b, const std::string& name, double seconds, double flops,
                          const RingSplit& ring, std::vector<int> after, int layer, OpRole role) {
  RingBlock out;
  out.projections = b.compute(name + ".projections", seconds - ring.score_s - ring.unpack_s,
                              flops - ring.score_flops - ring.unpack_flops, std::move(after), layer, role);
  out.last = emit_ring_attention(b, name, ring, {out.projections}, layer, role);
  return out;
}

}  // namespace podsim
