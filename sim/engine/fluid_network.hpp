#pragma once
// Flows on links sharing bandwidth max-min, computed the way SimGrid's CM02 network model
// computes it under podsim's settings (platform.cpp, configure_engine), without SimGrid: the
// native replay's network (native_replay.hpp).
//
// The model, as SimGrid 3.32 implements it (surf's network_cm02 and lmm's max-min system) for
// links without latency (podsim's receivers add latency: message_rules.hpp):
//  - each link is a constraint of its capacity, each flow a variable crossing it once per time
//    its route takes it, all of weight 1; the rates are the max-min fair solution (progressive
//    filling: the links with the least capacity left per unfixed flow, exact ties together, fix
//    those flows at that share; each takes its rate off every link it crosses; a link with less
//    than 1e-5 of its capacity left, or no flow left to fix, drops out; repeat);
//  - rates are re-solved only for the connected component (links joined by flows) of what
//    changed, once per date, after every flow starting or ending at that date; a flow whose
//    component was re-solved takes off what it sent at its old rate before taking the new one
//    (remaining -= rate x elapsed), and ends at now + remaining / rate;
//  - events within surf/precision (1e-15 s, as podsim sets it) of the current date happen at it.
// The TCP-gamma bound (1e18 / (2 x latency)) does not apply without latency; cross-traffic is
// off.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "sim/engine/slot_pool.hpp"

namespace podsim {

class FluidNetwork {
 public:
  // SimGrid's surf/precision as platform.cpp sets it.
  static constexpr double kPrecision_s = 1e-15;

  // Adds a link (one direction of an ICI link, a NIC, or a shared DCN core) of `capacity_Bps`;
  // returns its index.
  int add_link(double capacity_Bps);

  // Adds a route: the links a flow crosses (a link listed k times is crossed k times).
  int add_route(std::vector<int> links);

  // Starts `bytes` (> 0) over route `route` at `now`. `tag` comes back from advance() when the
  // flow has landed.
  void start(double now, int route, double bytes, uint64_t tag);

  // Solves the rates of every component that changed since the last call (call once per date,
  // after everything that starts or ends at it).
  void settle(double now);

  // The date of the next landing; +inf when nothing moves.
  double next_date();

  // Moves the clock to `now` (<= next_date()): the tags of flows that land then (within
  // kPrecision_s) are appended to `landed`.
  void advance(double now, std::vector<uint64_t>& landed);

 private:
  // A link's flows, once per crossing: the first kInline in the link itself (a link rarely
  // carries more: one cache line a link), the rest in a spill list of their own. Removal moves
  // the last into the hole.
  static constexpr int kInline = 7;
  struct Link {
    double capacity_Bps = 0;
    double remaining_Bps = 0;   // progressive filling
    uint32_t mark = 0;          // component search
    int usage = 0;              // progressive filling: crossings by flows not yet fixed
    int count = 0;              // flows on it
    int spill = -1;             // index in spills_ once more than kInline
    int inline_flows[kInline] = {};
    bool dirty = false;
  };
  int& flow_at(Link& link, int i) { return i < kInline ? link.inline_flows[i] : spills_[link.spill][i - kInline]; }
  void push_flow(Link& link, int flow);
  void remove_flow(Link& link, int flow);

  struct Flow {
    double remaining_bytes = 0;
    double rate_Bps = 0;
    double new_rate_Bps = 0;   // progressive filling
    double last_update_s = 0;
    uint64_t tag = 0;
    double date_s = 0;         // when it lands at its current rate, while moving
    bool moving = false;       // it has a rate, and an entry at date_s
    int first_link = 0;        // its route, in route_links_
    int link_count = 0;
    uint32_t mark = 0;
    bool fixed = false;        // progressive filling
  };
  void share(int flow);
  void unshare(int flow);
  void collect_component(int seed_link);
  void solve_component(int seed_link, double now);

  // Landing dates: a binary heap of (date, flow) with lazy deletion. A flow whose date
  // changes gets a new entry and its old one, left in place, is dropped when it reaches the top,
  // so sifting reads and writes the heap alone. An entry is live when its flow is moving with
  // that date: a stale entry that happens to match is the same landing at the same date, so
  // whichever comes first lands the flow and the other is then stale. Order: date, then flow
  // index (the order landings are reported in).
  struct Entry {
    double date_s;
    int flow;
    bool before(const Entry& o) const { return date_s != o.date_s ? date_s < o.date_s : flow < o.flow; }
    // The standard heap algorithms' order for a heap whose top is the earliest.
    static bool later(const Entry& a, const Entry& b) { return b.before(a); }
  };
  void schedule(int flow);
  bool live(const Entry& e) { return flows_[e.flow].moving && flows_[e.flow].date_s == e.date_s; }
  void pop_top();
  void drop_stale();

  std::vector<Link> links_;
  std::vector<std::vector<int>> spills_;
  std::vector<int> route_links_;                 // every route's links, one after another
  std::vector<std::pair<int, int>> routes_;      // per route: first in route_links_, count
  SlotPool<Flow> flows_;   // moving flows, by index; freed ones reused
  std::vector<int> dirty_;
  std::vector<Entry> heap_;
  size_t moving_ = 0;   // flows with a live entry
  uint32_t mark_ = 0;
  // scratch of solve_component
  std::vector<int> comp_links_, comp_flows_, active_, order_;
};

}  // namespace podsim
