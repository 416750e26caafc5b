#include "sim/engine/chip_routes.hpp"

#include <map>
#include <set>

namespace podsim {

std::vector<ChipRoute> chip_routes(const Topology& topo, const std::vector<Endpoint>& endpoints,
                                   const std::vector<ReplayOp>& ops, std::vector<ChipRoute>& alternates) {
  std::map<std::pair<ChipId, ChipId>, std::vector<DirectedLink>> routes;
  std::set<std::pair<int, int>> alternate_pairs;
  auto add = [&](ChipId src, ChipId dst, int from, int to) {
    auto route = route_between(endpoints, from, to);
    auto [it, inserted] = routes.try_emplace({src, dst}, route);
    if (!inserted && it->second != route && alternate_pairs.insert({from, to}).second) {
      alternates.push_back({src, dst, std::move(route), from, to});
    }
  };
  std::set<std::pair<ChipId, ChipId>> notices;
  for (const auto& op : ops) {
    if (!op.plan) continue;
    for (ChipId chip = 0; chip < static_cast<ChipId>(op.plan->chips.size()); ++chip) {
      const auto& plan = op.plan->chips[chip];
      for (const auto& part : plan.parts) {
        for (const auto& phase : part) {
          for (const auto& chain : phase) {
            if (chain.peer_endpoint >= 0) {
              add(chip, endpoints[chain.peer_endpoint].chip, chain.endpoint, chain.peer_endpoint);
            }
          }
        }
      }
      for (const auto& flow : plan.flows) {
        if (op.plan->point_to_point) {
          add(chip, flow.dst_chip, flow.src_endpoint, flow.dst_endpoint);
        } else if (flow.dst_chip != chip) {
          notices.insert({chip, flow.dst_chip});
        }
      }
    }
  }
  std::vector<ChipRoute> out;
  for (const auto& [pair, route] : routes) out.push_back({pair.first, pair.second, route});
  for (const auto& pair : notices) {
    if (!routes.count(pair)) out.push_back({pair.first, pair.second, {}});
  }
  return out;
}

void flow_endpoints(const std::vector<Endpoint>& endpoints, const std::vector<ReplayOp>& ops,
                    std::vector<bool>& used, std::vector<std::pair<int, int>>& pairs, bool& explicit_routes) {
  used.assign(endpoints.size(), false);
  std::set<std::pair<int, int>> seen;
  for (const auto& op : ops) {
    if (!op.plan || op.plan->point_to_point) continue;
    explicit_routes = explicit_routes || op.plan->repeats_links;
    for (const auto& chip : op.plan->chips) {
      for (const auto& flow : chip.flows) {
        used[flow.src_endpoint] = used[flow.dst_endpoint] = true;
        seen.insert({flow.src_endpoint, flow.dst_endpoint});
      }
    }
  }
  pairs.assign(seen.begin(), seen.end());
}

}  // namespace podsim
