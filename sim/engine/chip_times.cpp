#include "sim/engine/chip_times.hpp"

#include <algorithm>
#include <vector>

#include "workloads/op_presence.hpp"

namespace podsim {
namespace {

struct Weighted {
  double value = 0;
  long long chips = 0;   // real chips with this value (a simulated chip's class)
};

// The lower median over real chips: the value of the chip at rank floor((N - 1) / 2).
double weighted_median(std::vector<Weighted> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end(), [](const Weighted& a, const Weighted& b) { return a.value < b.value; });
  long long total = 0;
  for (const auto& v : values) total += v.chips;
  long long seen = 0;
  for (const auto& v : values) {
    seen += v.chips;
    if (seen > (total - 1) / 2) return v.value;
  }
  return values.back().value;
}

// Keeps the largest value, and the lowest real chip on ties.
void keep_max(double value, ChipId chip, double& best, ChipId& best_chip) {
  if (value > best || (value == best && chip < best_chip)) {
    best = value;
    best_chip = chip;
  }
}

}  // namespace

ChipTimes chip_times(const Program& program, const RunResult& run, int op) {
  const ProgramOp& p = program[op];
  const Topology& sim = run.simulated;
  bool anywhere = false;
  for (ChipId c = 0; c < sim.chip_count() && !anywhere; ++c) anywhere = present_on(p, sim, c);
  ChipTimes out;
  out.max_s = out.wait_max_s = -1;
  std::vector<Weighted> own, waits;
  std::vector<double> slowest_instance(p.repeat, 0.0);
  for (ChipId c = 0; c < sim.chip_count(); ++c) {
    if (anywhere && !present_on(p, sim, c)) continue;
    const ChipId real = run.real_of_simulated[c];
    double own_s = 0, wait_s = 0;
    for (int rep = 0; rep < p.repeat; ++rep) {
      const SpanRecord& span = run.span(op, rep, real);
      const double wait = run.wait_for_peers_s(op, rep, real);
      own_s += span.end_s - span.start_s - wait;
      wait_s += wait;
      slowest_instance[rep] = std::max(slowest_instance[rep], span.end_s - span.start_s - wait);
    }
    own.push_back({own_s / p.repeat, run.chips_of_simulated[c]});
    waits.push_back({wait_s / p.repeat, run.chips_of_simulated[c]});
    keep_max(own.back().value, real, out.max_s, out.max_chip);
    keep_max(waits.back().value, real, out.wait_max_s, out.wait_max_chip);
  }
  out.max_s = std::max(out.max_s, 0.0);
  out.wait_max_s = std::max(out.wait_max_s, 0.0);
  out.median_s = weighted_median(own);
  out.wait_median_s = weighted_median(waits);
  if (p.is(ProgramOpKind::Collective)) {
    double sum = 0;
    for (double t : slowest_instance) sum += t;
    out.time_s = sum / p.repeat;
  } else {
    out.time_s = out.median_s;
  }
  return out;
}

}  // namespace podsim
