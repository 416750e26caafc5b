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
  // SimGrid completes every transfer due within surf/precision (1 ns by default) of the current
  // event at once: results then shift by up to 1 ns with the set of events around them (which a
  // reduced mesh changes). 1e-15 s keeps them within 1e-15 s (a few ulps of a 10 s clock).
  engine.set_config("surf/precision:1e-15");
  // Each actor's stack is a memory mapping plus a guard page, and Linux allows 65,530
  // mappings per process. Mapped stacks cost only the pages touched; without guard pages
  // SimGrid allocates stacks on the heap, which costs ~5x the memory but no mappings.
  if (max_actors > 20000) engine.set_config("contexts/guard-size:0");
}

double link_bandwidth_Bps(const LinkInfo& link, bool forward, const PlatformOptions& options) {
  const double bandwidth = link.kind == LinkKind::DcnCore ? link.bandwidth_Bps : link.directed_bandwidth_Bps(forward);
  return bandwidth * options.link_efficiency;
}

double route_latency_s(const Topology& topo, const std::vector<DirectedLink>& route, const PlatformOptions& options) {
  if (options.hop_model != HopModel::Additive) return 0.0;
  double latency = 0;
  for (const auto& d : route) {
    const LinkInfo& link = topo.links()[d.link];
    switch (link.kind) {
      case LinkKind::Ici: latency += options.hop_latency_s; break;
      case LinkKind::Nic: latency += options.hop_latency_s / 2; break;   // two NICs per DCN path: one T_min
      default: break;
    }
    latency += link.directed_extra_latency_s(d.forward);
  }
  return latency;
}

namespace {

// Creates each physical link once, when some route first uses it, in `zone`.
class LinkTable {
 public:
  LinkTable(const Topology& topo, const PlatformOptions& options, sg4::NetZone* zone)
      : topo_(topo), options_(options), zone_(zone), links_(topo.links().size(), nullptr) {}

  sg4::LinkInRoute in_route(const DirectedLink& d) {
    const LinkInfo& info = topo_.links()[d.link];
    if (links_[d.link] == nullptr) {
      const double bandwidth = info.bandwidth_Bps * options_.link_efficiency;
      const std::string name = "l" + std::to_string(d.link);
      if (info.kind == LinkKind::DcnCore) {
        links_[d.link] = zone_->create_link(name, bandwidth)->set_latency(0)->seal();
      } else {
        auto* duplex = zone_->create_split_duplex_link(name, bandwidth);
        duplex->set_latency(0);
        if (info.bandwidth_scale != std::array<double, 2>{1.0, 1.0}) {
          // A perturbed link (topology/perturbation.hpp): each direction its own bandwidth (its
          // extra latency is the receiver's: message_rules.hpp).
          for (const bool forward : {true, false}) {
            sg4::Link* half = forward ? duplex->get_link_up() : duplex->get_link_down();
            // A failed direction carries no route (Topology::hop_route goes round it).
            if (!topo_.failed({d.link, forward})) half->set_bandwidth(link_bandwidth_Bps(info, forward, options_));
          }
        }
        links_[d.link] = duplex->seal();
      }
    }
    if (info.kind == LinkKind::DcnCore) return sg4::LinkInRoute(links_[d.link]);
    return sg4::LinkInRoute(links_[d.link], d.forward ? sg4::LinkInRoute::Direction::UP
                                                      : sg4::LinkInRoute::Direction::DOWN);
  }

  std::vector<sg4::LinkInRoute> route(const std::vector<DirectedLink>& links) {
    std::vector<sg4::LinkInRoute> out;
    out.reserve(links.size());
    for (const auto& d : links) out.push_back(in_route(d));
    return out;
  }

 private:
  const Topology& topo_;
  const PlatformOptions& options_;
  sg4::NetZone* zone_;
  std::vector<sg4::Link*> links_;
};

}  // namespace

ChipPlatform build_chip_platform(const Topology& topo, int chips, const std::vector<ChipRoute>& routes,
                                 const std::vector<ChipRoute>& alternates,
                                 const std::vector<Endpoint>& flow_endpoints,
                                 const std::vector<std::pair<int, int>>* flow_pairs, const PlatformOptions& options) {
  ChipPlatform out;
  auto* root = sg4::create_full_zone("pod");
  LinkTable links(topo, options, root);
  // Notices of 0 bytes between chips no data route joins take this link: SimGrid forbids an
  // empty route, and 0 bytes cross any link in no time.
  sg4::Link* notice = nullptr;

  auto* chip_zone = sg4::create_full_zone("chips");
  chip_zone->set_parent(root);
  for (int c = 0; c < chips; ++c) out.chips.push_back(chip_zone->create_host("c" + std::to_string(c), 1e12));
  for (const auto& r : routes) {
    std::vector<sg4::LinkInRoute> route;
    if (r.links.empty()) {
      if (notice == nullptr) notice = chip_zone->create_link("notice", 1e30)->set_latency(0)->seal();
      route.emplace_back(notice);
    } else {
      route = links.route(r.links);
    }
    chip_zone->add_route(out.chips[r.src]->get_netpoint(), out.chips[r.dst]->get_netpoint(), nullptr, nullptr, route,
                         false);
  }
  for (size_t k = 0; k < alternates.size(); ++k) {
    auto* from = chip_zone->create_host("a" + std::to_string(k) + "s", 1e12);
    auto* to = chip_zone->create_host("a" + std::to_string(k) + "d", 1e12);
    chip_zone->add_route(from->get_netpoint(), to->get_netpoint(), nullptr, nullptr, links.route(alternates[k].links),
                         false);
    out.alternates.emplace_back(from, to);
  }
  chip_zone->seal();

  if (!flow_endpoints.empty()) {
    // A star zone drops a link a route takes twice, and a full zone's table holds every pair of
    // its hosts (39,312 endpoints of a reduced 16x16x16 AllToAll: 12 GB), so explicit routes go
    // in a Dijkstra zone: one edge per declared pair, found again per source from a cached tree.
    auto* flow_zone = flow_pairs != nullptr ? sg4::create_dijkstra_zone("flows", true) : sg4::create_star_zone("flows");
    flow_zone->set_parent(root);
    for (size_t i = 0; i < flow_endpoints.size(); ++i) {
      const auto& endpoint = flow_endpoints[i];
      auto* host = flow_zone->create_host("e" + std::to_string(i), 1e12);
      if (flow_pairs == nullptr) {
        flow_zone->add_route(host->get_netpoint(), nullptr, nullptr, nullptr, links.route(endpoint.out_route), false);
        flow_zone->add_route(nullptr, host->get_netpoint(), nullptr, nullptr, links.route(endpoint.in_route), false);
      }
      out.flows.push_back(host);
    }
    if (flow_pairs != nullptr) {
      for (const auto& [src, dst] : *flow_pairs) {
        flow_zone->add_route(out.flows[src]->get_netpoint(), out.flows[dst]->get_netpoint(), nullptr, nullptr,
                             links.route(route_between(flow_endpoints, src, dst)), false);
      }
    }
    flow_zone->seal();
  }
  root->seal();
  return out;
}

}  // namespace podsim
