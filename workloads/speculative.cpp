#include "workloads/speculative.hpp"

#include "topology/splitmix.hpp"

namespace podsim {

const NamedValues<DraftMethod>& draft_method_names() {
  static const NamedValues<DraftMethod> names = {{"ngram", DraftMethod::Ngram}, {"draft_model", DraftMethod::DraftModel}};
  return names;
}

const char* to_string(DraftMethod method) { return name_of(draft_method_names(), method); }

double expected_accepted_drafts(double p, int drafts) {
  double sum = 0, term = 1;
  for (int i = 0; i < drafts; ++i) sum += (term *= p);
  return sum;
}

double acceptance_probability_for_rate(double rate, int k) {
  if (rate <= 0) return 0;
  if (rate >= 1) return 1;
  double lo = 0, hi = 1;
  for (int i = 0; i < 200 && hi - lo > 1e-16; ++i) {
    const double mid = 0.5 * (lo + hi);
    (expected_accepted_drafts(mid, k) / k < rate ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

int accepted_drafts(const SpeculativeDecoding& spec, int request_id, long long verification, int drafts) {
  // One stream per (request, step): its state mixes the three through splitmix's own steps.
  SplitMix64 mix{spec.seed};
  mix.state ^= SplitMix64{static_cast<uint64_t>(request_id) * 0x2545f4914f6cdd1dULL}.next();
  mix.state ^= SplitMix64{static_cast<uint64_t>(verification) + 0x632be59bd9b4e019ULL}.next();
  int accepted = 0;
  while (accepted < drafts && mix.unit() < spec.acceptance_probability) ++accepted;
  return accepted;
}

}  // namespace podsim
