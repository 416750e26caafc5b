#include "workloads/collective_reduction.hpp"

#include <algorithm>
#include <map>

namespace podsim {

namespace {

// Chips in one instance of the collective: its axes (or their slices), times the slices when it
// also crosses DCN.
int group_size(const CollectiveSpec& spec, const TopologySpec& topology) {
  int n = 1;
  for (size_t i = 0; i < spec.axes.size(); ++i) {
    const int whole = topology.axes.at(static_cast<size_t>(spec.axes[i])).size;
    const int part = i < spec.slices.size() && spec.slices[i].size > 0 ? spec.slices[i].size : whole;
    n *= part;
  }
  if (spec.over_dcn) n *= topology.slices;
  return n;
}

// The latest compute op `op` waits for, the one whose output the collective reduces (-1: none).
int producer_of(const Program& program, const ProgramOp& op) {
  int producer = -1;
  for (int a : op.after)
    if (program[static_cast<size_t>(a)].is(ProgramOpKind::Compute)) producer = std::max(producer, a);
  return producer;
}

bool reduces(const ProgramOp& op) {
  if (!op.is(ProgramOpKind::Collective)) return false;
  const CollectiveKind k = op.collective().kind;
  return k == CollectiveKind::ReduceScatter || k == CollectiveKind::AllReduce;
}

}  // namespace

double reduction_core_s(const CollectiveSpec& spec, const TopologySpec& topology) {
  if (spec.kind != CollectiveKind::ReduceScatter && spec.kind != CollectiveKind::AllReduce) return 0;
  const int n = group_size(spec, topology);
  const double hbm = topology.chip.achieved_hbm_Bps();
  if (n <= 1 || hbm <= 0) return 0;
  return 3.0 * (n - 1) / n * spec.bytes / hbm;
}

Program with_collective_reductions(Program program, const TopologySpec& topology) {
  if (!topology.chip.reductions_on_tensor_core) return program;
  const int n = static_cast<int>(program.size());
  std::map<int, std::vector<int>> behind;   // producer -> the collectives reducing behind it
  std::vector<int> unplaced;                // collectives that wait for no compute op
  for (int i = 0; i < n; ++i) {
    const ProgramOp& op = program[static_cast<size_t>(i)];
    if (!reduces(op) || reduction_core_s(op.collective(), topology) <= 0) continue;
    const int producer = producer_of(program, op);
    (producer >= 0 ? behind[producer] : unplaced).push_back(i);
  }
  if (behind.empty() && unplaced.empty()) return program;

  // New order: each producer, then its reductions; a reduction waiting for no compute right
  // after its collective. new_index maps the old ops.
  std::vector<int> new_index(static_cast<size_t>(n));
  std::vector<int> after_collective(static_cast<size_t>(n), 0);
  for (int c : unplaced) after_collective[static_cast<size_t>(c)] = 1;
  Program out;
  out.reserve(program.size() + unplaced.size() + behind.size() * 2);
  std::vector<std::pair<int, int>> reduction_for;   // (new index of a reduction, old collective)
  auto add_reduction = [&](int collective, std::vector<int> after_old) {
    const ProgramOp& c = program[static_cast<size_t>(collective)];
    ProgramOp r;
    r.name = c.name + ".reduce";
    r.work = ComputeWork{reduction_core_s(c.collective(), topology), 0.0, {}, {}};
    r.repeat = c.repeat;
    r.after = std::move(after_old);   // old indices, remapped below
    r.release_s = c.release_s;
    r.position_axis = c.position_axis;
    r.present_at_position = c.present_at_position;
    r.role = OpRole::CollectiveReduction;
    r.layer = c.layer;
    reduction_for.push_back({static_cast<int>(out.size()), collective});
    out.push_back(std::move(r));
  };
  for (int i = 0; i < n; ++i) {
    new_index[static_cast<size_t>(i)] = static_cast<int>(out.size());
    out.push_back(program[static_cast<size_t>(i)]);
    if (auto it = behind.find(i); it != behind.end())
      for (int c : it->second) add_reduction(c, {i});
    if (after_collective[static_cast<size_t>(i)]) add_reduction(i, program[static_cast<size_t>(i)].after);
  }
  // The reductions behind each producer, by new index.
  std::map<int, std::vector<int>> reductions_behind;
  for (const auto& [index, collective] : reduction_for)
    if (const int producer = producer_of(program, program[static_cast<size_t>(collective)]); producer >= 0)
      reductions_behind[producer].push_back(index);
  auto remap = [&](std::vector<int>& deps, bool compute) {
    std::vector<int> extra;
    for (int& d : deps) {
      const int old = d;
      d = new_index[static_cast<size_t>(old)];
      if (compute)
        if (auto it = reductions_behind.find(old); it != reductions_behind.end())
          extra.insert(extra.end(), it->second.begin(), it->second.end());
    }
    deps.insert(deps.end(), extra.begin(), extra.end());
  };
  std::vector<char> is_reduction(out.size(), 0);
  for (const auto& [index, collective] : reduction_for) is_reduction[static_cast<size_t>(index)] = 1;
  for (size_t j = 0; j < out.size(); ++j) {
    ProgramOp& op = out[j];
    // A reduction's own dependencies are old indices; it does not wait for its siblings.
    const bool compute = op.is(ProgramOpKind::Compute) && !is_reduction[j];
    remap(op.after, compute);
    for (auto& deps : op.after_at_position) remap(deps, compute);
    for (int& r : op.released_by) r = new_index[static_cast<size_t>(r)];
    for (auto& nd : op.after_neighbour) nd.op = new_index[static_cast<size_t>(nd.op)];
  }
  return out;
}

}  // namespace podsim
