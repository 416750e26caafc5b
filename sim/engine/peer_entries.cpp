#include "sim/engine/peer_entries.hpp"

#include <map>
#include <numeric>

#include "workloads/op_presence.hpp"

namespace podsim {
namespace {

int find_root(std::vector<int>& parent, int x) {
  while (parent[x] != x) {
    parent[x] = parent[parent[x]];
    x = parent[x];
  }
  return x;
}

// The chips a plan's messages join (union-find over every ring message's sender and receiver
// and every AllToAll block's), numbered in order of their lowest chip.
PeerEntries::Instances instances_of(const OpPlan& plan, const std::vector<ChipId>& endpoint_chip, int chips) {
  std::vector<int> parent(chips);
  std::iota(parent.begin(), parent.end(), 0);
  auto join = [&](int a, int b) { parent[find_root(parent, a)] = find_root(parent, b); };
  for (ChipId chip = 0; chip < static_cast<ChipId>(plan.chips.size()); ++chip) {
    const ChipOpPlan& p = plan.chips[chip];
    for (const auto& part : p.parts)
      for (const auto& phase : part)
        for (const auto& chain : phase)
          if (chain.peer_endpoint >= 0) join(chip, endpoint_chip.at(chain.peer_endpoint));
    for (const auto& flow : p.flows) join(chip, flow.dst_chip);
  }
  PeerEntries::Instances out;
  out.of_chip.assign(chips, -1);
  std::vector<int> number(chips, -1);
  for (int chip = 0; chip < chips; ++chip) {
    int& n = number[find_root(parent, chip)];
    if (n < 0) n = out.count++;
    out.of_chip[chip] = n;
  }
  return out;
}

}  // namespace

bool PeerEntries::latest_entry(int op, int repetition, ChipId chip, double& entered, ChipId& last) const {
  const int table = instances_of_op.at(op);
  if (table < 0) return false;
  const Instances& in = instances[table];
  const size_t at = first[op] + static_cast<size_t>(repetition) * in.count + in.of_chip.at(chip);
  entered = entered_s.at(at);
  last = last_chip.at(at);
  return true;
}

PeerEntries peer_entries(const Program& program, const std::vector<const OpPlan*>& plans,
                         const std::vector<ChipId>& endpoint_chip, const Topology& simulated,
                         const std::vector<SpanRecord>& spans) {
  PeerEntries out;
  std::map<const OpPlan*, int> table_of_plan;   // ops sharing a plan share its instances
  size_t size = 0;
  for (size_t i = 0; i < program.size(); ++i) {
    out.first.push_back(size);
    const OpPlan* plan = plans[i];
    if (!program[i].is(ProgramOpKind::Collective) || plan == nullptr) {
      out.instances_of_op.push_back(-1);
      continue;
    }
    auto [it, fresh] = table_of_plan.emplace(plan, static_cast<int>(out.instances.size()));
    if (fresh) out.instances.push_back(instances_of(*plan, endpoint_chip, simulated.chip_count()));
    out.instances_of_op.push_back(it->second);
    size += static_cast<size_t>(program[i].repeat) * out.instances[it->second].count;
  }
  out.entered_s.assign(size, -1.0);
  out.last_chip.assign(size, -1);
  for (const SpanRecord& s : spans) {
    const int table = out.instances_of_op[s.op];
    if (table < 0 || !present_on(program[s.op], simulated, s.chip)) continue;
    const PeerEntries::Instances& in = out.instances[table];
    const size_t at = out.first[s.op] + static_cast<size_t>(s.repetition) * in.count + in.of_chip[s.chip];
    if (s.start_s > out.entered_s[at]) {   // spans come by chip: ties keep the lowest
      out.entered_s[at] = s.start_s;
      out.last_chip[at] = s.chip;
    }
  }
  return out;
}

}  // namespace podsim
