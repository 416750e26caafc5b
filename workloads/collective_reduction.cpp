#include "workloads/collective_reduction.hpp"

#include <algorithm>
#include <map>

namespace podsim {

namespace {

// The latest compute op `op` waits for, the one whose output the collective reduces (-1: none).
int producer_of(const Program& program, const ProgramOp& op) {
  int producer = -1;
  for (int a : op.after)
    if (program[static_cast<size_t>(a)].is(ProgramOpKind::Compute)) producer = std::max(producer, a);
  return producer;
}

}  // namespace

double reduction_core_s(const CollectiveSpec& spec, const TopologySpec& topology) {
  if (spec.kind != CollectiveKind::ReduceScatter && spec.kind != CollectiveKind::AllReduce) return 0;
  // Offloaded to the SparseCores: the additions run there (ChipSpec::*_on_sparse_core).
  if (spec.kind == CollectiveKind::ReduceScatter && topology.chip.reduce_scatter_on_sparse_core) return 0;
  if (spec.kind == CollectiveKind::AllReduce && topology.chip.all_reduce_on_sparse_core) return 0;
  const int n = collective_group_size(topology, spec);
  const double hbm = topology.chip.achieved_hbm_Bps();
  if (n <= 1 || hbm <= 0) return 0;
  return 3.0 * (n - 1) / n * spec.bytes / hbm;
}

Program with_collective_reductions(Program program, const TopologySpec& topology) {
  if (!topology.chip.reductions_on_tensor_core) return program;
  const int n = static_cast<int>(program.size());
  // Each reducing collective's producer (-1: it waits for no compute op); no reduction: -2.
  std::vector<int> producer(static_cast<size_t>(n), -2);
  std::map<int, std::vector<int>> behind;   // producer -> the collectives reducing behind it
  for (int i = 0; i < n; ++i) {
    const ProgramOp& op = program[static_cast<size_t>(i)];
    if (!op.is(ProgramOpKind::Collective) || reduction_core_s(op.collective(), topology) <= 0) continue;
    producer[static_cast<size_t>(i)] = producer_of(program, op);
    if (producer[static_cast<size_t>(i)] >= 0) behind[producer[static_cast<size_t>(i)]].push_back(i);
  }
  if (std::all_of(producer.begin(), producer.end(), [](int p) { return p == -2; })) return program;

  // New order: each producer, then its reductions; a reduction waiting for no compute op right
  // before its collective. A reduction's `after` holds old indices until the remap below.
  std::vector<int> new_index(static_cast<size_t>(n));
  std::map<int, std::vector<int>> reductions_behind;   // old producer -> its reductions' new indices
  std::vector<int> reduction_of(static_cast<size_t>(n), -1);   // old collective -> its reduction's new index
  std::vector<char> is_reduction;
  Program out;
  out.reserve(program.size() * 2);
  auto add_reduction = [&](int collective, std::vector<int> after_old) {
    const ProgramOp& c = program[static_cast<size_t>(collective)];
    ProgramOp r;
    r.name = c.name + ".reduce";
    r.work = ComputeWork{reduction_core_s(c.collective(), topology), 0.0, {}, {}};
    r.repeat = c.repeat;
    r.after = std::move(after_old);
    r.release_s = c.release_s;
    r.position_axis = c.position_axis;
    r.present_at_position = c.present_at_position;
    r.role = OpRole::CollectiveReduction;
    r.layer = c.layer;
    if (const int p = producer[static_cast<size_t>(collective)]; p >= 0)
      reductions_behind[p].push_back(static_cast<int>(out.size()));
    reduction_of[static_cast<size_t>(collective)] = static_cast<int>(out.size());
    out.push_back(std::move(r));
    is_reduction.push_back(1);
  };
  for (int i = 0; i < n; ++i) {
    if (producer[static_cast<size_t>(i)] == -1) add_reduction(i, program[static_cast<size_t>(i)].after);
    new_index[static_cast<size_t>(i)] = static_cast<int>(out.size());
    out.push_back(program[static_cast<size_t>(i)]);
    is_reduction.push_back(0);
    if (auto it = behind.find(i); it != behind.end())
      for (int c : it->second) add_reduction(c, {i});
  }
  // Old indices to new; a compute op that waited for a producer also waits for its reductions
  // (a reduction itself does not wait for its siblings).
  auto remap = [&](std::vector<int>& deps, bool compute) {
    std::vector<int> extra;
    for (int& d : deps) {
      if (compute)
        if (auto it = reductions_behind.find(d); it != reductions_behind.end())
          extra.insert(extra.end(), it->second.begin(), it->second.end());
      d = new_index[static_cast<size_t>(d)];
    }
    deps.insert(deps.end(), extra.begin(), extra.end());
  };
  for (size_t j = 0; j < out.size(); ++j) {
    ProgramOp& op = out[j];
    const bool compute = op.is(ProgramOpKind::Compute) && !is_reduction[j];
    remap(op.after, compute);
    for (auto& deps : op.after_at_position) remap(deps, compute);
    for (int& r : op.released_by) r = new_index[static_cast<size_t>(r)];
    for (auto& nd : op.after_neighbour) nd.op = new_index[static_cast<size_t>(nd.op)];
  }
  // Each reducing collective waits for its own reduction: the chunk it forwards is the sum the
  // core wrote, so the links' time and the core's add up.
  for (int i = 0; i < n; ++i)
    if (const int r = reduction_of[static_cast<size_t>(i)]; r >= 0)
      out[static_cast<size_t>(new_index[static_cast<size_t>(i)])].after.push_back(r);
  return out;
}

}  // namespace podsim
