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
  struct Link {
    double capacity_Bps = 0;
    std::vector<int> flows;   // sharing flows, once per crossing
    bool dirty = false;
    uint32_t mark = 0;        // component search
    // progressive filling
    double remaining_Bps = 0;
    int usage = 0;            // crossings by flows not yet fixed
  };
  struct Flow {
    int route = -1;
    double remaining_bytes = 0;
    double rate_Bps = 0;
    double new_rate_Bps = 0;   // progressive filling
    double last_update_s = 0;
    uint64_t tag = 0;
    int heap_index = -1;    // in heap_, -1 when not moving
    uint32_t mark = 0;
    bool fixed = false;     // progressive filling
  };
  void share(int flow);
  void unshare(int flow);
  void solve_component(int seed_link, double now);
  struct Entry {
    double date_s;   // when the flow lands at its current rate
    int flow;
    bool before(const Entry& o) const;
  };
  void schedule(int flow);
  void place(size_t i, const Entry& e);
  void sift(size_t i);
  void heap_remove(int flow);

  std::vector<Link> links_;
  std::vector<std::vector<int>> routes_;
  SlotPool<Flow> flows_;   // moving flows, by index; freed ones reused
  std::vector<int> dirty_;
  std::vector<Entry> heap_;   // moving flows by landing date
  uint32_t mark_ = 0;
  // scratch of solve_component
  std::vector<int> comp_links_, comp_flows_, active_, order_;
};

}  // namespace podsim
