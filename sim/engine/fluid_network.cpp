#include "sim/engine/fluid_network.hpp"

#include <algorithm>
#include <stdexcept>

namespace podsim {
namespace {

// lmm's precision for rates and capacities (SimGrid's maxmin/precision default): a link with
// less than this share of its capacity left counts as full.
constexpr double kMaxminPrecision = 1e-5;

// SimGrid's double_update: subtract, and what is left below `precision` is nothing.
void double_update(double& x, double minus, double precision) {
  x -= minus;
  if (x < precision) x = 0.0;
}

}  // namespace

int FluidNetwork::add_link(double capacity_Bps) {
  if (!(capacity_Bps > 0)) throw std::invalid_argument("a link needs a positive capacity");
  Link link;
  link.capacity_Bps = capacity_Bps;
  links_.push_back(link);
  return static_cast<int>(links_.size() - 1);
}

int FluidNetwork::add_route(std::vector<int> links) {
  routes_.emplace_back(static_cast<int>(route_links_.size()), static_cast<int>(links.size()));
  route_links_.insert(route_links_.end(), links.begin(), links.end());
  return static_cast<int>(routes_.size() - 1);
}

void FluidNetwork::start(double now, int route, double bytes, uint64_t tag) {
  Flow flow;
  flow.first_link = routes_[route].first;
  flow.link_count = routes_[route].second;
  flow.remaining_bytes = bytes;
  flow.last_update_s = now;
  flow.tag = tag;
  share(flows_.add(flow));
}

void FluidNetwork::push_flow(Link& link, int flow) {
  if (link.count == kInline && link.spill < 0) {
    link.spill = static_cast<int>(spills_.size());
    spills_.emplace_back();
  }
  if (link.count >= kInline) spills_[link.spill].push_back(flow);
  else link.inline_flows[link.count] = flow;
  link.count += 1;
}

void FluidNetwork::remove_flow(Link& link, int flow) {
  int i = 0;
  while (flow_at(link, i) != flow) ++i;
  flow_at(link, i) = flow_at(link, link.count - 1);
  link.count -= 1;
  if (link.count >= kInline) spills_[link.spill].pop_back();
}

void FluidNetwork::share(int flow) {
  const Flow& f = flows_[flow];
  for (int k = 0; k < f.link_count; ++k) {
    const int l = route_links_[f.first_link + k];
    push_flow(links_[l], flow);
    if (!links_[l].dirty) {
      links_[l].dirty = true;
      dirty_.push_back(l);
    }
  }
}

void FluidNetwork::unshare(int flow) {
  const Flow& f = flows_[flow];
  for (int k = 0; k < f.link_count; ++k) {
    const int l = route_links_[f.first_link + k];
    remove_flow(links_[l], flow);
    if (!links_[l].dirty) {
      links_[l].dirty = true;
      dirty_.push_back(l);
    }
  }
}

void FluidNetwork::settle(double now) {
  mark_ += 1;
  for (int l : dirty_) {
    links_[l].dirty = false;
    if (links_[l].mark != mark_) solve_component(l, now);
  }
  dirty_.clear();
}

// The links and flows joined to `seed_link` by flows, into comp_links_ and comp_flows_.
void FluidNetwork::collect_component(int seed_link) {
  comp_links_.clear();
  comp_flows_.clear();
  links_[seed_link].mark = mark_;
  comp_links_.push_back(seed_link);
  for (size_t i = 0; i < comp_links_.size(); ++i) {
    Link& at = links_[comp_links_[i]];
    for (int j = 0; j < at.count; ++j) {
      const int f = flow_at(at, j);
      if (flows_[f].mark == mark_) continue;
      flows_[f].mark = mark_;
      comp_flows_.push_back(f);
      const Flow& flow = flows_[f];
      for (int k = 0; k < flow.link_count; ++k) {
        const int l = route_links_[flow.first_link + k];
        if (links_[l].mark == mark_) continue;
        links_[l].mark = mark_;
        comp_links_.push_back(l);
      }
    }
  }
}

// Progressive filling over the component of `seed_link`, in lmm_solve's order: the links
// with the least capacity left per crossing flow (exact ties together) fix the rate of their
// flows not yet fixed; each fixed flow takes its rate off every link it crosses; a link with
// less than kMaxminPrecision of its capacity left, or no flow left to fix, drops out.
void FluidNetwork::solve_component(int seed_link, double now) {
  collect_component(seed_link);
  if (comp_flows_.empty()) return;
  active_.clear();
  for (int l : comp_links_) {
    Link& link = links_[l];
    link.remaining_Bps = link.capacity_Bps;
    link.usage = link.count;
    if (link.usage > 0) active_.push_back(l);
  }
  for (int f : comp_flows_) flows_[f].fixed = false;
  // New rates go to new_rate_Bps: every flow first takes off what it sent at its old rate.
  std::vector<int>& order = order_;
  while (!active_.empty()) {
    double min_share = -1;
    for (int l : active_) {
      const double share = links_[l].remaining_Bps / links_[l].usage;
      if (min_share < 0 || share < min_share) min_share = share;
    }
    order.clear();
    for (int l : active_) {
      if (links_[l].remaining_Bps / links_[l].usage != min_share) continue;
      Link& at = links_[l];
      for (int j = 0; j < at.count; ++j) {
        const int f = flow_at(at, j);
        if (flows_[f].fixed) continue;
        flows_[f].fixed = true;
        order.push_back(f);
      }
    }
    for (int f : order) {
      Flow& flow = flows_[f];
      flow.new_rate_Bps = min_share;
      for (int k = 0; k < flow.link_count; ++k) {
        Link& link = links_[route_links_[flow.first_link + k]];
        double_update(link.remaining_Bps, min_share, link.capacity_Bps * kMaxminPrecision);
        link.usage -= 1;
      }
    }
    size_t kept = 0;
    for (int l : active_) {
      const Link& link = links_[l];
      if (link.usage > 0 && link.remaining_Bps > link.capacity_Bps * kMaxminPrecision) {
        active_[kept++] = l;
      }
    }
    if (kept == active_.size() && order.empty()) break;   // nothing left to fix
    active_.resize(kept);
  }
  for (int f : comp_flows_) {
    Flow& flow = flows_[f];
    const double rate = flow.fixed ? flow.new_rate_Bps : 0.0;
    // A moving flow whose rate is unchanged keeps its landing date (SimGrid recomputes it
    // from what is left: the same date to the last bit or two).
    if (rate == flow.rate_Bps && flow.moving) continue;
    if (flow.remaining_bytes > 0) {
      double_update(flow.remaining_bytes, flow.rate_Bps * (now - flow.last_update_s), kMaxminPrecision * kPrecision_s);
    }
    flow.last_update_s = now;
    flow.rate_Bps = rate;
    schedule(f);
  }
}

void FluidNetwork::schedule(int flow) {
  Flow& f = flows_[flow];
  if (f.moving) moving_ -= 1;
  f.moving = f.rate_Bps > 0;   // not moving: its entry, if any, is stale
  if (!f.moving) return;
  moving_ += 1;
  f.date_s = f.last_update_s + f.remaining_bytes / f.rate_Bps;
  // Entries of flows whose rate changed pile up; past twice the moving flows, keep the live.
  if (heap_.size() > 2 * moving_ + 1024) {
    heap_.erase(std::remove_if(heap_.begin(), heap_.end(), [this](const Entry& e) { return !live(e); }), heap_.end());
    std::make_heap(heap_.begin(), heap_.end(), Entry::later);
  }
  heap_.push_back(Entry{f.date_s, flow});
  std::push_heap(heap_.begin(), heap_.end(), Entry::later);
}

void FluidNetwork::pop_top() {
  std::pop_heap(heap_.begin(), heap_.end(), Entry::later);
  heap_.pop_back();
}

void FluidNetwork::drop_stale() {
  while (!heap_.empty() && !live(heap_.front())) pop_top();
}

double FluidNetwork::next_date() {
  drop_stale();
  return heap_.empty() ? std::numeric_limits<double>::infinity() : heap_.front().date_s;
}

void FluidNetwork::advance(double now, std::vector<uint64_t>& landed) {
  drop_stale();
  while (!heap_.empty() && heap_.front().date_s - now < kPrecision_s) {
    const int flow = heap_.front().flow;
    pop_top();
    Flow& f = flows_[flow];
    unshare(flow);
    f.remaining_bytes = 0;
    f.moving = false;
    moving_ -= 1;
    landed.push_back(f.tag);
    flows_.release(flow);
    drop_stale();
  }
}

}  // namespace podsim
