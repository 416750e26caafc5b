#include "sim/engine/platform.hpp"

#include <array>
#include <simgrid/s4u.hpp>

namespace sg4 = simgrid::s4u;

namespace podsim {

void configure_engine(sg4::Engine& engine, size_t max_actors) {
  engine.set_config("network/model:CM02");
  engine.set_config("network/crosstraffic:0");
  engine.set_config("network/TCP-gamma:1e18");
  engine.set_config("contexts/stack-size:128");
  // Each actor's stack is a memory mapping plus a guard page, and Linux allows 65,530
  // mappings per process. Mapped stacks cost only the pages touched; without guard pages
  // SimGrid allocates stacks on the heap, which costs ~5x the memory but no mappings.
  if (max_actors > 20000) engine.set_config("contexts/guard-size:0");
}

namespace {

double link_latency_s(const LinkInfo& link, const PlatformOptions& options) {
  if (options.hop_model != HopModel::Additive) return 0.0;
  switch (link.kind) {
    case LinkKind::Ici: return options.hop_latency_s;
    case LinkKind::Nic: return options.hop_latency_s / 2;  // two NICs per DCN path: one T_min
    default: return 0.0;
  }
}

}  // namespace

std::vector<sg4::Host*> build_platform(const Topology& topo, const std::vector<Endpoint>& endpoints,
                                       const PlatformOptions& options,
                                       const std::vector<std::pair<int, int>>* explicit_pairs) {
  auto* zone = explicit_pairs != nullptr ? sg4::create_full_zone("pod") : sg4::create_star_zone("pod");
  // Links are created only when some route uses them: a reduced or partial plan stays small.
  std::vector<sg4::Link*> links(topo.links().size(), nullptr);
  auto link_in_route = [&](const DirectedLink& d) {
    if (links[d.link] == nullptr) {
      const LinkInfo& info = topo.links()[d.link];
      const double bandwidth = info.bandwidth_Bps * options.link_efficiency;
      const std::string name = "l" + std::to_string(d.link);
      if (info.kind == LinkKind::DcnCore) {
        links[d.link] = zone->create_link(name, bandwidth)->set_latency(0)->seal();
      } else {
        auto* duplex = zone->create_split_duplex_link(name, bandwidth);
        duplex->set_latency(link_latency_s(info, options));
        if (info.bandwidth_scale != std::array<double, 2>{1.0, 1.0} || info.extra_latency_s != std::array<double, 2>{0.0, 0.0}) {
          // A perturbed link (topology/perturbation.hpp): each direction its own bandwidth; its
          // extra latency is SimGrid latency under the additive model, and raises the
          // message's floor under the floor model (replay.cpp), where links have no latency.
          for (const bool forward : {true, false}) {
            sg4::Link* half = forward ? duplex->get_link_up() : duplex->get_link_down();
            half->set_bandwidth(info.directed_bandwidth_Bps(forward) * options.link_efficiency);
            if (options.hop_model == HopModel::Additive)
              half->set_latency(link_latency_s(info, options) + info.directed_extra_latency_s(forward));
          }
        }
        links[d.link] = duplex->seal();
      }
    }
    const LinkInfo& info = topo.links()[d.link];
    if (info.kind == LinkKind::DcnCore) return sg4::LinkInRoute(links[d.link]);
    return sg4::LinkInRoute(links[d.link], d.forward ? sg4::LinkInRoute::Direction::UP
                                                     : sg4::LinkInRoute::Direction::DOWN);
  };
  auto to_route = [&](const std::vector<DirectedLink>& route) {
    std::vector<sg4::LinkInRoute> out;
    out.reserve(route.size());
    for (const auto& d : route) out.push_back(link_in_route(d));
    return out;
  };

  std::vector<sg4::Host*> hosts;
  hosts.reserve(endpoints.size());
  for (size_t i = 0; i < endpoints.size(); ++i) {
    const auto& endpoint = endpoints[i];
    auto* host = zone->create_host("e" + std::to_string(i), 1e12);
    if (explicit_pairs == nullptr) {
      // A star zone wants both halves declared, even when empty.
      zone->add_route(host->get_netpoint(), nullptr, nullptr, nullptr, to_route(endpoint.out_route), false);
      zone->add_route(nullptr, host->get_netpoint(), nullptr, nullptr, to_route(endpoint.in_route), false);
    }
    hosts.push_back(host);
  }
  if (explicit_pairs != nullptr) {
    for (const auto& [src, dst] : *explicit_pairs) {
      auto route = endpoints[src].out_route;
      route.insert(route.end(), endpoints[dst].in_route.begin(), endpoints[dst].in_route.end());
      zone->add_route(hosts[src]->get_netpoint(), hosts[dst]->get_netpoint(), nullptr, nullptr, to_route(route), false);
    }
  }
  zone->seal();
  return hosts;
}

}  // namespace podsim
