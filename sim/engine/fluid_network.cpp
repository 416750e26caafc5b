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
  links_.push_back(std::move(link));
  return static_cast<int>(links_.size() - 1);
}

int FluidNetwork::add_route(std::vector<int> links) {
  routes_.push_back(std::move(links));
  return static_cast<int>(routes_.size() - 1);
}

void FluidNetwork::start(double now, int route, double bytes, uint64_t tag) {
  Flow flow;
  flow.route = route;
  flow.remaining_bytes = bytes;
  flow.last_update_s = now;
  flow.tag = tag;
  share(flows_.add(flow));
}

void FluidNetwork::share(int flow) {
  Flow& f = flows_[flow];
  for (int l : routes_[f.route]) {
    links_[l].flows.push_back(flow);
    if (!links_[l].dirty) {
      links_[l].dirty = true;
      dirty_.push_back(l);
    }
  }
}

void FluidNetwork::unshare(int flow) {
  Flow& f = flows_[flow];
  for (int l : routes_[f.route]) {
    auto& on = links_[l].flows;
    auto it = std::find(on.begin(), on.end(), flow);
    *it = on.back();
    on.pop_back();
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

// Progressive filling over the component of `seed_link`, in lmm_solve's order: the links
// with the least capacity left per crossing flow (exact ties together) fix the rate of their
// flows not yet fixed; each fixed flow takes its rate off every link it crosses; a link with
// less than kMaxminPrecision of its capacity left, or no flow left to fix, drops out.
void FluidNetwork::solve_component(int seed_link, double now) {
  comp_links_.clear();
  comp_flows_.clear();
  links_[seed_link].mark = mark_;
  comp_links_.push_back(seed_link);
  for (size_t i = 0; i < comp_links_.size(); ++i) {
    for (int f : links_[comp_links_[i]].flows) {
      if (flows_[f].mark == mark_) continue;
      flows_[f].mark = mark_;
      comp_flows_.push_back(f);
      for (int l : routes_[flows_[f].route]) {
        if (links_[l].mark == mark_) continue;
        links_[l].mark = mark_;
        comp_links_.push_back(l);
      }
    }
  }
  if (comp_flows_.empty()) return;
  active_.clear();
  for (int l : comp_links_) {
    Link& link = links_[l];
    link.remaining_Bps = link.capacity_Bps;
    link.usage = static_cast<int>(link.flows.size());
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
      for (int f : links_[l].flows) {
        if (flows_[f].fixed) continue;
        flows_[f].fixed = true;
        order.push_back(f);
      }
    }
    for (int f : order) {
      flows_[f].new_rate_Bps = min_share;
      for (int l : routes_[flows_[f].route]) {
        Link& link = links_[l];
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
    if (flow.remaining_bytes > 0) {
      double_update(flow.remaining_bytes, flow.rate_Bps * (now - flow.last_update_s), kMaxminPrecision * kPrecision_s);
    }
    flow.last_update_s = now;
    flow.rate_Bps = flow.fixed ? flow.new_rate_Bps : 0.0;
    schedule(f);
  }
}

// The flows' landing dates are an indexed binary heap (one entry per moving flow, moved in
// place when its date changes), ordered by date, then flow index; entries carry their date so
// that sifting reads the heap only.
bool FluidNetwork::Entry::before(const Entry& o) const { return date_s != o.date_s ? date_s < o.date_s : flow < o.flow; }

void FluidNetwork::place(size_t i, const Entry& e) {
  heap_[i] = e;
  flows_[e.flow].heap_index = static_cast<int>(i);
}

void FluidNetwork::sift(size_t i) {
  const Entry e = heap_[i];
  while (i > 0 && e.before(heap_[(i - 1) / 2])) {
    place(i, heap_[(i - 1) / 2]);
    i = (i - 1) / 2;
  }
  const size_t n = heap_.size();
  while (true) {
    size_t child = 2 * i + 1;
    if (child >= n) break;
    if (child + 1 < n && heap_[child + 1].before(heap_[child])) child += 1;
    if (!heap_[child].before(e)) break;
    place(i, heap_[child]);
    i = child;
  }
  place(i, e);
}

void FluidNetwork::heap_remove(int flow) {
  const int i = flows_[flow].heap_index;
  if (i < 0) return;
  flows_[flow].heap_index = -1;
  const Entry last = heap_.back();
  heap_.pop_back();
  if (last.flow == flow) return;
  place(static_cast<size_t>(i), last);
  sift(static_cast<size_t>(i));
}

void FluidNetwork::schedule(int flow) {
  Flow& f = flows_[flow];
  if (!(f.rate_Bps > 0)) {
    heap_remove(flow);
    return;
  }
  const Entry e{f.last_update_s + f.remaining_bytes / f.rate_Bps, flow};
  if (f.heap_index < 0) {
    heap_.push_back(e);
    place(heap_.size() - 1, e);
  } else {
    heap_[f.heap_index] = e;
  }
  sift(static_cast<size_t>(f.heap_index));
}

double FluidNetwork::next_date() {
  return heap_.empty() ? std::numeric_limits<double>::infinity() : heap_.front().date_s;
}

void FluidNetwork::advance(double now, std::vector<uint64_t>& landed) {
  while (!heap_.empty() && heap_.front().date_s - now < kPrecision_s) {
    const int flow = heap_.front().flow;
    heap_remove(flow);
    Flow& f = flows_[flow];
    unshare(flow);
    f.remaining_bytes = 0;
    landed.push_back(f.tag);
    flows_.release(flow);
  }
}

}  // namespace podsim
