#include "sim/engine/native_replay.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <limits>
#include <queue>
#include <stdexcept>

#include "sim/engine/chip_ops.hpp"
#include "sim/engine/fluid_network.hpp"
#include "sim/engine/message_rules.hpp"
#include "sim/engine/progress_writer.hpp"
#include "sim/engine/slot_pool.hpp"

namespace podsim {
namespace {

struct Message {   // one ring hop
  double sent_s = 0;
  int hops = 0;
  ChipId src = 0;
  double extra_latency_s = 0;
  int route = -1;
  double latency_s = 0;   // the route's, under the additive hop model
  uint64_t wire = 0;
  ChipId to_chip = 0;   // the chain that receives it
  int box = -1;         // its mailbox there (the pool's index)
  int to_slot = -1;     // its slot there, once it moves
  int block = -1;       // an AllToAll block: its index in the sender's plan (then to_slot is the
                        // sender's instance and to_chip the sender)
};

// A (receiving chip, chain) mailbox: the chain's messages cross one at a time, in the order
// put, each from the later of its put and the landing of the one before it (or the chain's
// start).
struct Mailbox {
  bool started = false;      // the chain has started
  bool busy = false;         // one of its messages is moving
  int slot = -1;             // the chain's slot on the receiving chip, once started
  std::vector<int> queue;    // messages not yet moving, from head
  size_t head = 0;
};

enum class TimerKind : uint8_t { Arrival, Compute, Release, Launch, AllToAllEnd };

struct Timer {
  double at_s;
  uint64_t seq;   // ties in time keep the order they were set in
  ChipId chip;
  TimerKind kind;
  int a;
  int message;
  bool operator>(const Timer& o) const { return at_s != o.at_s ? at_s > o.at_s : seq > o.seq; }
};

struct Completion {   // a chain's receive has its message, or a block has been delivered
  ChipId chip;
  int slot;
  int message;
};

struct Notice {   // every AllToAll block addressed to `chip` for (op, rep) has landed
  ChipId chip;
  int op;
  int rep;
  double last_arrival_s;
};

// A chain running on a chip, with what its messages need of its plan copied in (the plans of
// every chip and op are far apart in memory; a chain reads its own once, when it starts).
struct ChainRun {
  int instance = -1;
  int part = 0;
  uint64_t key = 0;
  ChipId peer = 0;
  int route = -1;
  int receives = 0;
  int forwards = 0;
  int hops = 0;
  double extra_latency_s = 0;
  double message_bytes = 0;
  int arrived = 0;   // messages past their floor
};

class NativeChip;

class NativeReplay {
 public:
  NativeReplay(const Topology& topo, const std::vector<Endpoint>& endpoints, const std::vector<ReplayOp>& ops,
               const ReplayOptions& options, int progress_fd);
  ReplayResult run();

 private:
  friend class NativeChip;

  // A chip has few mailboxes open at once (its chains running, and those its neighbours send
  // to ahead of it): a short list per chip, over one pool.
  int mailbox(ChipId chip, uint64_t key) {
    for (const auto& [k, index] : boxes_[chip]) {
      if (k == key) return index;
    }
    const int index = pool_.add(Mailbox{});
    boxes_[chip].emplace_back(key, index);
    return index;
  }
  void release_mailbox(ChipId chip, uint64_t key) {
    auto& open = boxes_[chip];
    for (auto& entry : open) {
      if (entry.first != key) continue;
      pool_.release(entry.second);
      entry = open.back();
      open.pop_back();
      return;
    }
  }
  int route(int from_endpoint, int to_endpoint);
  int network_link(const DirectedLink& d);
  void put(ChipId to, uint64_t key, int message);
  void open(ChipId chip, int slot, uint64_t key);
  void move_next(Mailbox& box);
  void start_flow(int message);
  void land(int message);
  void set_timer(double at_s, ChipId chip, TimerKind kind, int a, int message = -1) {
    timers_.push(Timer{at_s, timer_seq_++, chip, kind, a, message});
  }
  void count_messages(uint64_t n) {
    result_.messages += n;
    progress_.add(n);
  }
  double usable(const Message& m) const {
    return usable_s(floor_model_, floor_, now_, m.sent_s, m.hops, m.extra_latency_s, m.latency_s);
  }
  void run_due();

  const Topology& topo_;
  const std::vector<Endpoint>& endpoints_;
  const std::vector<ReplayOp>& ops_;
  const ReplayOptions& options_;
  const int chip_count_;
  ProgressWriter progress_;
  bool floor_model_ = false;
  double floor_ = 0;
  double now_ = 0;
  ReplayResult result_;
  std::vector<size_t> first_span_;
  size_t spans_done_ = 0;

  FluidNetwork net_;
  std::vector<int> link_ids_;   // per DirectedLink (link x 2 + forward): the network's link, -1 until used
  // Routes by sending endpoint: the peers it sends to, with the route's index (a chain looks
  // its route up when it starts; a hash of the pair was a tenth of the run).
  std::vector<std::vector<std::pair<int, int>>> routes_from_;
  std::vector<int> route_id_;       // per route: the network's
  std::vector<char> route_empty_;   // per route: between a chip's own endpoints
  std::vector<double> route_latency_;   // per route, under the additive hop model
  std::vector<ChipId> route_peer_;      // per route: the chip it ends at
  SlotPool<Message> messages_;
  std::vector<std::vector<std::pair<uint64_t, int>>> boxes_;   // per chip: open mailboxes' keys, pool index
  SlotPool<Mailbox, std::deque<Mailbox>> pool_;   // stable addresses
  std::priority_queue<Timer, std::vector<Timer>, std::greater<>> timers_;
  uint64_t timer_seq_ = 0;
  std::deque<Completion> completions_;
  std::deque<Notice> notices_;
  IncomingBlocks incoming_;
  std::vector<uint64_t> landed_;
  std::deque<NativeChip> chips_;
  DependencyTables dependencies_;
};

// One chip's loop: its ops (chip_ops.hpp) with the replay's clock, timers and mailboxes.
class NativeChip : public ChipOps<NativeChip, OpInstance> {
 public:
  NativeChip(NativeReplay& e, ChipId chip)
      : ChipOps(e.topo_, e.ops_, chip, e.options_.launch_overhead_s), e_(e) {}

  void start() {
    for (int op : load(e_.dependencies_.of(chip_))) ready(op);
  }

  void fire(const Timer& t) {
    switch (t.kind) {
      case TimerKind::Arrival: chain_arrival(t.a, t.message); break;
      case TimerKind::Compute: finish(t.a); break;
      case TimerKind::Release: begin(t.a); break;
      case TimerKind::Launch: work(t.a); break;
      case TimerKind::AllToAllEnd: finish(t.a); break;
    }
  }

  // A ring hop's message has landed at chain `slot`.
  void received(int slot, int message) {
    const double usable = e_.usable(e_.messages_[message]);
    if (usable > e_.now_) {
      e_.set_timer(usable, chip_, TimerKind::Arrival, slot, message);
    } else {
      chain_arrival(slot, message);
    }
  }

 private:
  friend class ChipOps<NativeChip, OpInstance>;

  // --- what chip_ops.hpp asks of a loop ---
  double now() const { return e_.now_; }
  void set_release_timer(double at_s, int op) { e_.set_timer(at_s, chip_, TimerKind::Release, op); }
  void set_launch_timer(double at_s, int id) { e_.set_timer(at_s, chip_, TimerKind::Launch, id); }
  void deps_done(int op) { ready(op); }

  void work(int id) {
    const ReplayOp& r = ops_[instances_[id].op];
    if (r.plan == nullptr) {
      e_.set_timer(e_.now_ + compute_s(r, e_.options_.chip_compute_scale), chip_, TimerKind::Compute, id);
      return;
    }
    const ChipOpPlan& plan = r.plan->chips[chip_];
    if (!plan.flows.empty() || plan.incoming_flows > 0) {
      start_all_to_all(id, plan);
      return;
    }
    start_parts(id, plan);
  }

  void record_span(const InstanceCore& in) {
    const size_t span = e_.first_span_[in.op] + static_cast<size_t>(in.rep) * e_.chip_count_ + chip_;
    e_.result_.spans[span] = {in.op, in.rep, chip_, in.start_s, e_.now_};
    e_.spans_done_ += 1;
    e_.progress_.add(1);
  }

  void start_chain(int id, int part, const ChainPlan& chain) {
    const InstanceCore& in = instances_[id];
    ChainRun run;
    run.instance = id;
    run.part = part;
    run.key = chain_key(in.op, in.rep, part, in.phase[part], chain.shape.direction);
    run.receives = chain.shape.receives;
    run.forwards = chain.shape.forwards;
    run.hops = chain.shape.hops;
    run.extra_latency_s = chain.extra_latency_s;
    run.message_bytes = chain.message_bytes;
    if (chain.peer_endpoint >= 0) {
      run.route = e_.route(chain.endpoint, chain.peer_endpoint);
      run.peer = e_.route_peer_[run.route];
    }
    const int slot = chains_.add(run);
    if (chain.shape.receives > 0) e_.open(chip_, slot, run.key);
    if (chain.shape.sends_own) send(slot);
    if (chain.shape.receives == 0) chains_.release(slot);
  }

  // --- ring hops ---

  void send(int slot) {
    const ChainRun& run = chains_[slot];
    Message m;
    m.sent_s = e_.now_;
    m.hops = run.hops;
    m.src = chip_;
    m.extra_latency_s = run.extra_latency_s;
    m.route = run.route;
    m.latency_s = e_.route_latency_[run.route];
    m.wire = wire_bytes(run.message_bytes);
    e_.count_messages(1);
    e_.put(run.peer, run.key, e_.messages_.add(m));
  }

  // A message of chain `slot` has arrived and passed its latency floor.
  void chain_arrival(int slot, int message) {
    ChainRun& run = chains_[slot];
    run.arrived += 1;
    const Message m = e_.messages_.take(message);
    if (e_.options_.record_hops) {
      const InstanceCore& in = instances_[run.instance];
      e_.result_.hops.push_back({in.op, in.rep, m.src, chip_, m.sent_s, e_.usable(m), run.message_bytes});
    }
    if (run.arrived <= run.forwards) send(slot);
    if (run.arrived < run.receives) return;
    const int id = run.instance, part = run.part;
    e_.release_mailbox(chip_, run.key);
    chains_.release(slot);
    chain_done(id, part);
  }

  // --- AllToAll (the SimGrid loop's rules, chip_loop.cpp) ---

 public:
  // Block `index` of instance `id` has landed over `route`: its receiver hears when it was the last block
  // addressed there; this chip's instance ends when its own blocks are delivered and every
  // block addressed here has arrived.
  void block_delivered(int id, int index, int route) {
    OpInstance& in = instances_[id];
    const FlowPlan& flow = ops_[in.op].plan->chips[chip_].flows[index];
    const double arrival = usable_s(e_.floor_model_, e_.floor_, e_.now_, in.work_s, flow.hops, flow.extra_latency_s,
                                    e_.route_latency_[route]);
    if (e_.options_.record_hops) {
      e_.result_.hops.push_back({in.op, in.rep, chip_, flow.dst_chip, in.work_s, arrival, flow.bytes});
    }
    in.delivered_s = std::max(in.delivered_s, e_.now_);
    in.flows_left -= 1;
    double last = 0;
    if (e_.incoming_.arrived(in.op, in.rep, flow.dst_chip, arrival, last))
      e_.notices_.push_back({flow.dst_chip, in.op, in.rep, last});
    maybe_end_all_to_all(id);
  }

  void incoming_complete(int op, int rep, double last_s) {
    for (size_t k = 0; k < all_to_all_.size(); ++k) {
      OpInstance& in = instances_[all_to_all_[k]];
      if (in.op != op || in.rep != rep || in.incoming_done) continue;
      in.incoming_done = true;
      in.incoming_s = last_s;
      maybe_end_all_to_all(all_to_all_[k]);
      return;
    }
    early_notices_.push_back({chip_, op, rep, last_s});   // before this chip started the op
  }

 private:
  void start_all_to_all(int id, const ChipOpPlan& plan) {
    OpInstance& in = instances_[id];
    in.work_s = e_.now_;
    in.flows_left = static_cast<int>(plan.flows.size());
    e_.count_messages(plan.flows.size());
    for (size_t i = 0; i < plan.flows.size(); ++i) {
      const FlowPlan& flow = plan.flows[i];
      Message m;
      m.sent_s = e_.now_;
      m.route = e_.route(flow.src_endpoint, flow.dst_endpoint);
      m.wire = wire_bytes(flow.bytes);
      m.to_chip = chip_;
      m.to_slot = id;
      m.block = static_cast<int>(i);
      e_.start_flow(e_.messages_.add(m));
    }
    in.incoming_done = plan.incoming_flows == 0;
    for (size_t k = 0; !in.incoming_done && k < early_notices_.size(); ++k) {
      if (early_notices_[k].op != in.op || early_notices_[k].rep != in.rep) continue;
      in.incoming_done = true;
      in.incoming_s = early_notices_[k].last_arrival_s;
      early_notices_.erase(early_notices_.begin() + static_cast<long>(k));
    }
    if (!in.incoming_done) all_to_all_.push_back(id);
    maybe_end_all_to_all(id);
  }

  void maybe_end_all_to_all(int id) {
    OpInstance& in = instances_[id];
    if (in.op < 0 || in.ending || in.flows_left > 0 || !in.incoming_done) return;
    in.ending = true;
    for (size_t k = 0; k < all_to_all_.size(); ++k) {
      if (all_to_all_[k] != id) continue;
      all_to_all_[k] = all_to_all_.back();
      all_to_all_.pop_back();
      break;
    }
    const double end = std::max(in.incoming_s, in.delivered_s);
    if (end > e_.now_) {
      e_.set_timer(end, chip_, TimerKind::AllToAllEnd, id);
      return;
    }
    finish(id);
  }

  NativeReplay& e_;
  SlotPool<ChainRun, std::deque<ChainRun>> chains_;
  std::vector<int> all_to_all_;        // AllToAll instances still waiting for their incoming blocks
  std::vector<Notice> early_notices_;  // incoming blocks complete before this chip started the op
};

NativeReplay::NativeReplay(const Topology& topo, const std::vector<Endpoint>& endpoints,
                           const std::vector<ReplayOp>& ops, const ReplayOptions& options, int progress_fd)
    : topo_(topo), endpoints_(endpoints), ops_(ops), options_(options), chip_count_(topo.chip_count()),
      progress_(progress_fd, options.progress_interval_s), incoming_(ops, chip_count_), dependencies_(topo, ops) {
  floor_model_ = options.platform.hop_model == HopModel::Floor;
  floor_ = floor_model_ ? options.platform.hop_latency_s : 0.0;
  first_span_ = span_offsets(ops_, chip_count_);
  result_.spans.resize(first_span_.back());
  link_ids_.assign(2 * topo.links().size(), -1);
  boxes_.resize(chip_count_);
  routes_from_.resize(endpoints_.size());
}

// The network link of one direction of a physical link, made on first use as platform.cpp
// makes SimGrid's: efficiency on the bandwidth, each direction its own (a DCN core shared by
// both).
int NativeReplay::network_link(const DirectedLink& d) {
  const LinkInfo& info = topo_.links()[d.link];
  const bool core = info.kind == LinkKind::DcnCore;
  const size_t index = 2 * static_cast<size_t>(d.link) + (core || d.forward ? 0 : 1);
  if (link_ids_[index] >= 0) return link_ids_[index];
  link_ids_[index] = net_.add_link(link_bandwidth_Bps(info, d.forward, options_.platform));
  return link_ids_[index];
}

int NativeReplay::route(int from_endpoint, int to_endpoint) {
  // Sorted by peer: a ring port has one or two, an AllToAll's sending port one per block's
  // destination (hundreds).
  auto& known = routes_from_[from_endpoint];
  auto at = std::lower_bound(known.begin(), known.end(), std::pair<int, int>{to_endpoint, -1});
  if (at != known.end() && at->first == to_endpoint) return at->second;
  const int index = static_cast<int>(route_id_.size());
  known.insert(at, {to_endpoint, index});
  const auto route = route_between(endpoints_, from_endpoint, to_endpoint);
  std::vector<int> links;
  for (const auto& d : route) links.push_back(network_link(d));
  route_empty_.push_back(links.empty());
  route_id_.push_back(net_.add_route(std::move(links)));
  route_latency_.push_back(route_latency_s(topo_, route, options_.platform));
  route_peer_.push_back(endpoints_[to_endpoint].chip);
  return index;
}

void NativeReplay::put(ChipId to, uint64_t key, int message) {
  const int index = mailbox(to, key);
  messages_[message].to_chip = to;
  messages_[message].box = index;
  Mailbox& box = pool_[index];
  box.queue.push_back(message);
  if (box.started && !box.busy) move_next(box);
}

// Chain `slot` of `chip` starts: the first message waiting for it moves now.
void NativeReplay::open(ChipId chip, int slot, uint64_t key) {
  Mailbox& box = pool_[mailbox(chip, key)];
  box.started = true;
  box.slot = slot;
  if (!box.busy) move_next(box);
}

void NativeReplay::move_next(Mailbox& box) {
  if (box.head == box.queue.size()) return;
  const int message = box.queue[box.head++];
  box.busy = true;
  messages_[message].to_slot = box.slot;
  start_flow(message);
}

void NativeReplay::start_flow(int message) {
  const Message& m = messages_[message];
  if (route_empty_[m.route]) {   // between a chip's own endpoints: no link to cross
    land(message);
    return;
  }
  net_.start(now_, route_id_[m.route], static_cast<double>(m.wire), static_cast<uint64_t>(message));
}

void NativeReplay::land(int message) {
  Message& m = messages_[message];
  completions_.push_back({m.to_chip, m.to_slot, message});
  if (m.block >= 0) return;   // an AllToAll block: no mailbox
  Mailbox& box = pool_[m.box];
  box.busy = false;
  move_next(box);
}

// Everything due at the current date: timers first (a message held by its floor until now is
// older than one that lands now), then the receives that have their message.
void NativeReplay::run_due() {
  while (true) {
    if (!timers_.empty() && timers_.top().at_s <= now_) {
      const Timer t = timers_.top();
      timers_.pop();
      chips_[t.chip].fire(t);
      continue;
    }
    if (!completions_.empty()) {
      const Completion c = completions_.front();
      completions_.pop_front();
      const Message& m = messages_[c.message];
      if (m.block >= 0) {
        const int block = m.block, route = m.route;
        messages_.release(c.message);
        chips_[c.chip].block_delivered(c.slot, block, route);
      } else {
        chips_[c.chip].received(c.slot, c.message);
      }
      continue;
    }
    if (notices_.empty()) return;
    const Notice n = notices_.front();
    notices_.pop_front();
    chips_[n.chip].incoming_complete(n.op, n.rep, n.last_arrival_s);
  }
}

ReplayResult NativeReplay::run() {
  const auto run_start = std::chrono::steady_clock::now();
  for (ChipId c = 0; c < chip_count_; ++c) chips_.emplace_back(*this, c);
  for (auto& chip : chips_) chip.start();
  while (true) {
    run_due();
    net_.settle(now_);
    const double next = std::min(net_.next_date(), timers_.empty() ? std::numeric_limits<double>::infinity()
                                                                    : timers_.top().at_s);
    if (next == std::numeric_limits<double>::infinity()) break;
    now_ = next;
    landed_.clear();
    net_.advance(now_, landed_);
    for (uint64_t tag : landed_) land(static_cast<int>(tag));
  }
  result_.simulation_wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();
  result_.end_time_s = now_;
  if (spans_done_ != result_.spans.size()) {
    throw std::runtime_error("the simulation stopped with " + std::to_string(result_.spans.size() - spans_done_) +
                             " op instances unfinished (deadlock)");
  }
  return std::move(result_);
}

}  // namespace

std::string native_replay_unsupported(const std::vector<ReplayOp>& ops) {
  for (const auto& op : ops) {
    if (!op.after_neighbour.empty()) return "an op waits for a neighbour's point-to-point send";
    if (op.plan == nullptr) continue;
    if (op.plan->point_to_point) return "point-to-point sends (pipeline stages)";
  }
  return "";
}

ReplayResult native_replay_in_process(const Topology& topo, const std::vector<Endpoint>& endpoints,
                                      const std::vector<ReplayOp>& ops, const ReplayOptions& options, int progress_fd) {
  const std::string why = native_replay_unsupported(ops);
  if (!why.empty()) throw std::invalid_argument("the native replay does not cover " + why);
  for (const auto& op : ops) {
    if (op.repeat >= (1 << 20) || ops.size() >= (1u << 27)) {
      throw std::invalid_argument("too many ops or repetitions for one simulation");
    }
  }
  NativeReplay replay(topo, endpoints, ops, options, progress_fd);
  return replay.run();
}

}  // namespace podsim
