#include "topology/stragglers.hpp"

#include <map>

#include "topology/splitmix.hpp"
#include "topology/topology.hpp"

namespace podsim {

double straggler_factor(const StragglerSpec& spec, uint64_t seed, int64_t chip) {
  // A stream per (seed, chip): its first values are the chip's draws.
  SplitMix64 rng{seed * 0x9e3779b97f4a7c15ULL ^ (static_cast<uint64_t>(chip) + 0x632be59bd9b4e019ULL)};
  rng.next();   // decorrelates neighbouring chips' first values
  if (!spec.histogram.empty()) {
    double total = 0;
    for (const auto& [factor, weight] : spec.histogram) total += weight;
    const double u = rng.unit() * total;
    double below = 0;
    for (const auto& [factor, weight] : spec.histogram) {
      below += weight;
      if (u < below) return factor;
    }
    return spec.histogram.back().first;   // u rounded up to the total
  }
  if (rng.unit() >= spec.probability) return 1.0;
  return spec.factor_low + (spec.factor_high - spec.factor_low) * rng.unit();
}

std::vector<Perturbation> draw_stragglers(const TopologySpec& topology, const StragglerSpec& spec, uint64_t draw) {
  const int per_slice = topology.chips_per_slice();
  std::map<double, std::vector<ChipBox>> by_factor;
  for (int s = 0; s < topology.slices; ++s) {
    for (int i = 0; i < per_slice; ++i) {
      const double factor = straggler_factor(spec, spec.seed + draw, static_cast<int64_t>(s) * per_slice + i);
      if (factor == 1.0) continue;
      ChipBox box;
      box.slices = {s, s};
      int rest = i;
      for (const auto& axis : topology.axes) {
        box.axes.push_back({rest % axis.size, rest % axis.size});
        rest /= axis.size;
      }
      by_factor[factor].push_back(std::move(box));
    }
  }
  std::vector<Perturbation> out;
  for (auto& [factor, boxes] : by_factor) {
    Perturbation p;
    p.name = spec.name + "." + std::to_string(out.size());
    p.kind = PerturbationKind::SlowChips;
    p.chips = std::move(boxes);
    p.compute_slowdown = factor;
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace podsim
