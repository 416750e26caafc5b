#include "sim/report/chip_breakdown.hpp"

#include <algorithm>

namespace podsim {
namespace {

// What an op waited for last: the dependency that finished last, on the chip where it ran
// (a neighbouring stage's send ends on that neighbour's side).
struct Blocker {
  int op = -1;   // -1: nothing
  ChipId chip = 0;
};

Blocker blocking_dependency(const Program& program, const RunResult& run, const ProgramOp& op, ChipId chip) {
  Blocker latest;
  double latest_end = -1;
  auto consider = [&](int dep, ChipId on) {
    const auto& span = run.span(dep, program[dep].repeat - 1, on);
    if (span.end_s > latest_end) {
      latest_end = span.end_s;
      latest = {dep, on};
    }
  };
  const auto* after = &op.after;
  const Topology& topo = run.topology;
  if (op.position_axis >= 0 && !op.after_at_position.empty()) {
    after = &op.after_at_position.at(topo.position_along(chip, op.position_axis));
  }
  for (int dep : *after) consider(dep, chip);
  for (const auto& n : op.after_neighbour) {
    const auto from = n.round_the_end ? topo.round_the_end(chip, n.axis, -n.direction)
                                      : topo.step_along(chip, n.axis, -n.direction);
    if (from) consider(n.op, *from);
  }
  return latest;
}

// The op that ends last on `chip` (its last repetition; the lowest op on ties).
Blocker last_on_chip(const Program& program, const RunResult& run, ChipId chip, double& end) {
  Blocker last;
  end = -1;
  for (size_t i = 0; i < program.size(); ++i) {
    if (!run.present(static_cast<int>(i), chip)) continue;
    const double e = run.span(static_cast<int>(i), program[i].repeat - 1, chip).end_s;
    if (e > end) {
      end = e;
      last = {static_cast<int>(i), chip};
    }
  }
  return last;
}

// The chip's compute ops (those present on it) in time order.
std::vector<int> computes_of(const Program& program, const RunResult& run, ChipId chip) {
  std::vector<int> computes;
  for (size_t i = 0; i < program.size(); ++i) {
    if (program[i].is(ProgramOpKind::Compute) && run.present(static_cast<int>(i), chip)) computes.push_back(static_cast<int>(i));
  }
  std::sort(computes.begin(), computes.end(), [&](int a, int b) {
    return run.span(a, 0, chip).start_s < run.span(b, 0, chip).start_s;
  });
  return computes;
}

// Walk the chip's compute ops in time order; every gap before one, and the wait after the
// last one until its own last op ends, is charged to the communication it waited for; waiting
// on compute elsewhere (a pipeline stage still working, another chip's compute) goes to
// "pipeline_bubble" or "other"; what a late peer added to a collective goes to the wait for
// peers; and the step's rest after the chip's last op, to the wait for peers ("step_end").
class ExposedTime {
 public:
  ExposedTime(ChipBreakdown& out, const Program& program, const RunResult& run, bool pipeline)
      : out_(out), program_(program), run_(run), elsewhere_(pipeline ? "pipeline_bubble" : "other") {}

  void walk() {
    const ChipId chip = out_.chip;
    out_.computes = computes_of(program_, run_, chip);
    double busy_until = 0;
    for (int i : out_.computes) {
      const auto& span = run_.span(i, 0, chip);
      // Busy time: compute ops that overlap on the chip count once.
      out_.compute_time_s += std::max(0.0, span.end_s - std::max(span.start_s, busy_until));
      if (span.start_s > busy_until) {
        out_.pipeline_waits.push_back(
            {busy_until, charge(busy_until, span.start_s, blocking_dependency(program_, run_, program_[i], chip))});
      }
      busy_until = std::max(busy_until, span.end_s);
    }
    double own_end = 0;
    const Blocker last = last_on_chip(program_, run_, chip, own_end);
    if (own_end > busy_until) charge(busy_until, own_end, last);
    const double step = run_.total_time_s;
    if (step > std::max(busy_until, own_end)) wait({"step_end"}, "step_end", step - std::max(busy_until, own_end));
    out_.exposed_comm_s = std::max(0.0, step - out_.compute_time_s - out_.wait_for_peers_s);
  }

 private:
  void add(const std::vector<std::string>& axes, const std::string& category, double seconds) {
    if (seconds <= 0) return;
    for (const auto& a : axes) out_.exposed_comm_by_axis_s[a] += seconds / axes.size();
    out_.exposed_comm_by_category_s[category] += seconds;
  }
  void wait(const std::vector<std::string>& axes, const std::string& category, double seconds) {
    if (seconds <= 0) return;
    for (const auto& a : axes) out_.wait_for_peers_by_axis_s[a] += seconds / axes.size();
    out_.wait_for_peers_by_category_s[category] += seconds;
    out_.wait_for_peers_s += seconds;
  }

  // A wait [from, to] is charged along the chain of what it waited for: a collective for the
  // part it ran (its span within the wait), the part before it began to what the collective
  // itself waited for, and so on back; a send for its own flight, the rest (the neighbour's
  // compute) to `elsewhere`; a compute, to `elsewhere`. Of a collective's part, what a late
  // peer added is the last `wait_for_peers_s` of its span (the collective would have ended
  // that much sooner had its peers entered with the chip), so the overlap with that tail is
  // the wait for peers and the rest its axes'. Returns the pipeline's share of the wait
  // (elsewhere and the stage-to-stage sends), for pipeline_bubble_fraction.
  double charge(double from, double to, Blocker blocker) {
    double in_bubble = 0;
    // The program is acyclic, so the walk back ends: each step goes to an earlier op.
    while (to > from) {
      const int d = blocker.op;
      if (d < 0 || program_[d].is(ProgramOpKind::Compute)) break;
      const int rep = program_[d].repeat - 1;
      const auto& span = run_.span(d, rep, blocker.chip);
      std::vector<std::string> axes = run_.operations[d].traffic()->axes;
      if (program_[d].is(ProgramOpKind::Collective) && program_[d].collective().over_dcn) axes.push_back("DCN");
      const double began = std::clamp(span.start_s, from, to);
      double late = 0;
      if (program_[d].is(ProgramOpKind::Collective)) {
        const double tail_from = span.end_s - run_.wait_for_peers_s(d, rep, blocker.chip);
        late = std::max(0.0, std::min(to, span.end_s) - std::max(began, tail_from));
      }
      const std::string category(role_name(program_[d].role));
      wait(axes, category, late);
      add(axes, category, to - began - late);
      if (program_[d].is(ProgramOpKind::Send)) {
        in_bubble += to - began;
        to = began;
        break;
      }
      to = began;
      blocker = blocking_dependency(program_, run_, program_[d], blocker.chip);
    }
    if (to > from) {
      add({elsewhere_}, elsewhere_, to - from);
      in_bubble += to - from;
    }
    return in_bubble;
  }

  ChipBreakdown& out_;
  const Program& program_;
  const RunResult& run_;
  const std::string elsewhere_;
};

}  // namespace

ChipBreakdown chip_breakdown(const Program& program, const RunResult& run, ChipId chip, bool pipeline,
                             const std::string& view) {
  ChipBreakdown out;
  out.view = view;
  out.chip = chip;
  ExposedTime(out, program, run, pipeline).walk();
  return out;
}

namespace {
double busy_time(const Program& program, const RunResult& run, ChipId chip) {
  double busy = 0, busy_until = 0;
  for (int i : computes_of(program, run, chip)) {
    const auto& span = run.span(i, 0, chip);
    busy += std::max(0.0, span.end_s - std::max(span.start_s, busy_until));
    busy_until = std::max(busy_until, span.end_s);
  }
  return busy;
}
}  // namespace

ChipId slowest_chip(const Program& program, const RunResult& run) {
  // Another chip only where it computes more than chip 0 by more than rounding (a pod whose
  // chips compute alike answers chip 0); the first such chip of the most.
  ChipId best = 0;
  double most = busy_time(program, run, 0);
  for (ChipId sim = 0; sim < run.simulated.chip_count(); ++sim) {
    const ChipId chip = run.real_of_simulated[sim];
    const double busy = busy_time(program, run, chip);
    if (busy > most * (1 + 1e-9)) {
      most = busy;
      best = chip;
    }
  }
  return best;
}

ChipId critical_chip(const Program& program, const RunResult& run) {
  Blocker at;
  double end = -1;
  for (ChipId sim = 0; sim < run.simulated.chip_count(); ++sim) {
    double e = 0;
    const Blocker b = last_on_chip(program, run, run.real_of_simulated[sim], e);
    if (e > end || (e == end && b.chip < at.chip)) {
      end = e;
      at = b;
    }
  }
  const ChipId end_chip = at.chip;
  std::map<ChipId, double> compute_on_path;
  // Each step goes to an earlier op, or to the same op on the peer that entered it last (whose
  // own entry is no later), so the walk ends; the bound only guards against equal times.
  for (size_t steps = 0; at.op >= 0 && steps < 4 * program.size() + 4; ++steps) {
    const ProgramOp& op = program[at.op];
    const int rep = op.repeat - 1;
    if (op.is(ProgramOpKind::Compute)) {
      const auto& span = run.span(at.op, rep, at.chip);
      compute_on_path[at.chip] += span.end_s - span.start_s;
    } else if (op.is(ProgramOpKind::Collective)) {
      const auto [entered, last] = run.last_entry(at.op, rep, at.chip);
      if (entered > run.span(at.op, rep, at.chip).start_s) at.chip = last;
    }
    at = blocking_dependency(program, run, op, at.chip);
  }
  ChipId best = end_chip;   // no compute on the path (collectives alone): where the step ends
  double most = -1;
  for (const auto& [chip, seconds] : compute_on_path) {
    if (seconds > most) {   // the map goes by chip: ties keep the lowest
      most = seconds;
      best = chip;
    }
  }
  return best;
}

}  // namespace podsim
