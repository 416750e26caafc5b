#pragma once
// What a chip's event loop does with its ops, written once for both replays (chip_loop.cpp on
// SimGrid, native_replay.cpp on podsim's own loop): ops in dependency order, each repetition
// after the last, an op absent at the chip's position ending at once, and a ring collective's
// parts and phases (all parts at once, each part's phases in order, a phase over when its
// receiving chains have everything). The loop (CRTP `Loop`) supplies the clock, the timers,
// what an op's work is and how a chain runs:
//   double now() const;
//   void set_release_timer(double at_s, int op);     // then calls begin(op)
//   void set_launch_timer(double at_s, int id);      // then calls work(id)
//   void work(int id);                               // compute, a ring's parts (start_parts), ...
//   void start_chain(int id, int part, const ChainPlan& chain);
//   void record_span(const Instance& in);            // the instance ends now
//   void deps_done(int op);                          // its chip's ops are done: ready() or more
#include <algorithm>
#include <deque>
#include <map>
#include <vector>

#include "sim/engine/replay.hpp"

namespace podsim {

struct OpState {
  int deps_left = 0;    // its chip's ops still to finish
  int waits_left = 0;   // neighbours' sends still to arrive (the SimGrid loop's)
  int rep = 0;
  bool done = false;
};

// Which ops wait for which on a chip: the same on every chip, except for ops whose `after`
// depends on the chip's position (ReplayOp::after_at_position). One table per distinct set of
// positions, shared by the chips there.
struct Dependencies {
  std::vector<std::vector<int>> dependents;   // per op: the ops waiting for it
  std::vector<int> count;                     // per op: how many it waits for
};

class DependencyTables {
 public:
  DependencyTables(const Topology& topo, const std::vector<ReplayOp>& ops) : topo_(topo), ops_(ops) {}

  const Dependencies& of(ChipId chip) {
    std::vector<int> where;   // the chip's position along each axis some op's order depends on
    for (const auto& op : ops_) {
      if (op.position_axis >= 0 && !op.after_at_position.empty()) where.push_back(topo_.position_along(chip, op.position_axis));
    }
    auto [it, inserted] = tables_.try_emplace(where);
    if (!inserted) return it->second;
    Dependencies& d = it->second;
    d.dependents.resize(ops_.size());
    d.count.assign(ops_.size(), 0);
    size_t k = 0;
    for (size_t op = 0; op < ops_.size(); ++op) {
      const ReplayOp& r = ops_[op];
      const bool by_position = r.position_axis >= 0 && !r.after_at_position.empty();
      for (int dep : by_position ? r.after_at_position.at(where[k++]) : r.after) {
        d.dependents[dep].push_back(static_cast<int>(op));
        d.count[op] += 1;
      }
    }
    return d;
  }

 private:
  const Topology& topo_;
  const std::vector<ReplayOp>& ops_;
  std::map<std::vector<int>, Dependencies> tables_;
};

// AllToAll blocks addressed to each chip, per op and repetition: how many are still to land,
// and the latest usable arrival of those that have (both replays' bookkeeping). A chip's
// instance of the op waits for its last one.
class IncomingBlocks {
 public:
  IncomingBlocks(const std::vector<ReplayOp>& ops, int chips)
      : chips_(chips), left_(ops.size()), last_(ops.size()), expected_(chips, 0) {
    for (size_t op = 0; op < ops.size(); ++op) {
      const OpPlan* plan = ops[op].plan;
      if (plan == nullptr || plan->point_to_point) continue;
      bool any = false;
      for (const auto& chip : plan->chips) any = any || chip.incoming_flows > 0;
      if (!any) continue;
      left_[op].resize(static_cast<size_t>(ops[op].repeat) * chips);
      last_[op].assign(static_cast<size_t>(ops[op].repeat) * chips, 0.0);
      for (int rep = 0; rep < ops[op].repeat; ++rep) {
        for (ChipId c = 0; c < chips; ++c) {
          left_[op][static_cast<size_t>(rep) * chips + c] = plan->chips[c].incoming_flows;
          if (plan->chips[c].incoming_flows > 0) expected_[c] += 1;
        }
      }
    }
  }

  // A block of (op, rep) to `chip` is usable at `arrival_s`: true when it was the last, with
  // the latest arrival of them all in `last_s`.
  bool arrived(int op, int rep, ChipId chip, double arrival_s, double& last_s) {
    const size_t at = static_cast<size_t>(rep) * chips_ + chip;
    double& last = last_[op][at];
    last = std::max(last, arrival_s);
    last_s = last;
    return --left_[op][at] == 0;
  }

  // The (op, repetition) pairs whose blocks reach `chip`: the notices it will have.
  int expected(ChipId chip) const { return expected_[chip]; }

 private:
  int chips_;
  std::vector<std::vector<int>> left_;
  std::vector<std::vector<double>> last_;
  std::vector<int> expected_;
};

// Where each op's spans start in ReplayResult::spans (op, then repetition, then chip), with
// the total last.
inline std::vector<size_t> span_offsets(const std::vector<ReplayOp>& ops, int chips) {
  std::vector<size_t> first{0};
  for (const auto& op : ops) first.push_back(first.back() + static_cast<size_t>(op.repeat) * chips);
  return first;
}

// One repetition of one op on a chip, as far as both loops follow it; a loop's own Instance
// derives from it.
struct InstanceCore {
  int op = -1;
  int rep = 0;
  double start_s = 0;
  std::vector<int> phase;        // per part: the phase running
  std::vector<int> chains_left;  // per part: chains of that phase still receiving
  int parts_left = 0;
};

// One repetition of one op on a chip with what its AllToAll blocks or point-to-point sends
// need besides a ring's: the instance type of both replays' loops.
struct OpInstance : InstanceCore {
  double work_s = 0;             // after the launch overhead: when its messages leave
  int flows_left = 0;            // own AllToAll blocks or sends not yet delivered
  double delivered_s = 0;        // latest delivery of own blocks
  bool incoming_done = true;     // AllToAll: every block addressed here has landed
  bool ending = false;           // its end is set (a timer, or finished)
  double incoming_s = 0;         // when the last block addressed here arrived
};

template <typename Loop, typename Instance>
class ChipOps {
 protected:
  ChipOps(const Topology& topo, const std::vector<ReplayOp>& ops, ChipId chip, double launch_overhead_s)
      : topo_(topo), ops_(ops), chip_(chip), launch_overhead_s_(launch_overhead_s), state_(ops.size()) {}

  // Counts each op's dependencies and returns the ops free to start at once (collected first,
  // since starting one can finish it and free its dependents).
  std::vector<int> load(const Dependencies& deps) {
    deps_ = &deps;
    std::vector<int> free_ops;
    for (size_t op = 0; op < ops_.size(); ++op) {
      state_[op].deps_left = deps.count[op];
      if (state_[op].deps_left == 0) free_ops.push_back(static_cast<int>(op));
    }
    return free_ops;
  }

  // A compute op's busy time here: its own, or its position's, times the chip's slowdown
  // (ReplayOptions::chip_compute_scale, empty: none); a host transfer's, unscaled.
  double compute_s(const ReplayOp& r, const std::vector<double>& scale) const {
    const double busy_s = r.compute_s_by_chip.empty() ? r.compute_s : r.compute_s_by_chip[chip_];
    return busy_s * (scale.empty() || r.host_transfer ? 1.0 : scale[chip_]);
  }

  // Whether `op` runs on this chip (ReplayOp::present_at_position).
  bool present(int op) const {
    const ReplayOp& r = ops_[op];
    return r.present_at_position.empty() ||
           r.present_at_position.at(topo_.position_along(chip_, r.position_axis)) != 0;
  }

  void ready(int op) {
    const double release = ops_[op].release_s;
    if (release > loop().now()) {
      loop().set_release_timer(release, op);
      return;
    }
    begin(op);
  }

  void op_finished(int op) {
    state_[op].done = true;
    for (int d : deps_->dependents[op]) {
      if (--state_[d].deps_left == 0) loop().deps_done(d);
    }
  }

  // One repetition of an op.
  void begin(int op) {
    const int id = new_instance(op, state_[op].rep);
    if (!present(op)) {
      finish(id);   // absent here: no time, no traffic; its dependents keep their order
      return;
    }
    if (launch_overhead_s_ > 0 && ops_[op].plan != nullptr) {
      loop().set_launch_timer(loop().now() + launch_overhead_s_, id);
      return;
    }
    loop().work(id);
  }

  void finish(int id) {
    Instance& in = instances_[id];
    loop().record_span(in);
    const int op = in.op;
    in = Instance{};   // op -1: finished; its vectors freed
    if (++state_[op].rep < ops_[op].repeat) {
      begin(op);
    } else {
      op_finished(op);
    }
  }

  // Instance ids are never reused: a caller may still hold the id of an instance that a
  // nested call finished.
  int new_instance(int op, int rep) {
    const int id = static_cast<int>(instances_.size());
    instances_.emplace_back();
    instances_[id].op = op;
    instances_[id].rep = rep;
    instances_[id].start_s = loop().now();
    return id;
  }

  // A ring collective's work: every part's first phase.
  void start_parts(int id, const ChipOpPlan& plan) {
    Instance& in = instances_[id];
    in.phase.assign(plan.parts.size(), 0);
    in.chains_left.assign(plan.parts.size(), 0);
    in.parts_left = static_cast<int>(plan.parts.size());
    if (in.parts_left == 0) {
      finish(id);
      return;
    }
    for (size_t part = 0; part < plan.parts.size(); ++part) start_phase(id, static_cast<int>(part));
  }

  void start_phase(int id, int part) {
    const auto& phases = ops_[instances_[id].op].plan->chips[chip_].parts[part];
    while (instances_[id].phase[part] < static_cast<int>(phases.size())) {
      const auto& chains = phases[instances_[id].phase[part]];
      int receiving = 0;
      for (const auto& chain : chains) receiving += chain.shape.receives > 0 ? 1 : 0;
      instances_[id].chains_left[part] = receiving;
      for (const auto& chain : chains) loop().start_chain(id, part, chain);
      if (instances_[id].chains_left[part] > 0) return;
      instances_[id].phase[part] += 1;   // a phase with nothing to receive here is over at once
    }
    if (--instances_[id].parts_left == 0) finish(id);
  }

  // A receiving chain of `part` has everything: the phase ends when its other chain has too.
  void chain_done(int id, int part) {
    Instance& in = instances_[id];
    if (--in.chains_left[part] > 0) return;
    in.phase[part] += 1;
    start_phase(id, part);
  }

  const Topology& topo_;
  const std::vector<ReplayOp>& ops_;
  const ChipId chip_;
  const double launch_overhead_s_;
  std::vector<OpState> state_;
  const Dependencies* deps_ = nullptr;
  std::deque<Instance> instances_;

 private:
  Loop& loop() { return static_cast<Loop&>(*this); }
};

}  // namespace podsim
