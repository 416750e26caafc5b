#pragma once
// Speculative decoding as vLLM runs it under its v1 scheduler (speculative_config): a decoding
// sequence feeds its last sampled token and k draft tokens in one step; the target model's logits at
// each of those k + 1 positions verify the drafts in order, the first rejected one and every
// one after it are dropped, and the step emits the accepted drafts plus one token sampled at
// the first rejection (or after the last draft): 1 to k + 1 tokens, streamed together as one
// chunk. The rejected drafts' KV is discarded (vLLM: num_computed_tokens -= rejected).
//
// Acceptance: each draft is accepted with probability p given that every draft before it was
// (the i.i.d. model of Leviathan et al. 2023, "Fast Inference from Transformers via
// Speculative Decoding", section 3.5), so a step with d drafts accepts A of them with
// P(A >= i) = p^i. vLLM reports the acceptance rate accepted / drafted; under this model it is
// (p + p^2 + ... + p^k) / k for k drafts a step, which acceptance_probability_for_rate inverts.
#include <cstdint>

#include "workloads/named_values.hpp"

namespace podsim {

// Who proposes the drafts. Ngram (prompt lookup) runs on the host: the accelerator only
// verifies. DraftModel (vLLM's draft-model and EAGLE proposers) runs a smaller model on the same
// chips after each step: one pass over the step's tokens (its own KV cache kept in step) and
// k - 1 passes of one token a drafting sequence (StepCosts::draft_s); an EAGLE head is a
// draft model of one layer.
enum class DraftMethod { Ngram, DraftModel };

const NamedValues<DraftMethod>& draft_method_names();   // as `speculative.method:` spells them
const char* to_string(DraftMethod method);

struct SpeculativeDecoding {
  DraftMethod method = DraftMethod::Ngram;
  int num_tokens = 0;                  // k, vLLM's num_speculative_tokens; 0: off
  double acceptance_probability = 0;   // p, per draft, given the drafts before it accepted
  uint64_t seed = 0;                   // the draws' stream
  bool enabled() const { return num_tokens > 0; }
};

// E[A] for d drafts at probability p: p + p^2 + ... + p^d.
double expected_accepted_drafts(double p, int drafts);
// The p whose expected acceptance rate E[A] / k equals `rate` in [0, 1] (bisection; the rate
// increases with p from 0 at p = 0 to 1 at p = 1).
double acceptance_probability_for_rate(double rate, int k);
// The drafts accepted at a sequence's `verification`-th verifying step (counted from 0) of
// `drafts` drafts: a counter-based draw (splitmix64 of seed, request and step), so a request's
// draws do not depend on what else the server runs or on how often it was preempted.
int accepted_drafts(const SpeculativeDecoding& spec, int request_id, long long verification, int drafts);

}  // namespace podsim
