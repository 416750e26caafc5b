#include "sim/engine/chip_loop.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <map>
#include <queue>
#include <unordered_map>
#include <set>
#include <simgrid/s4u.hpp>
#include <stdexcept>
#include <tuple>

#include "sim/engine/chip_ops.hpp"
#include "sim/engine/chip_routes.hpp"
#include "sim/engine/message_rules.hpp"
#include "sim/engine/progress_writer.hpp"
#include "sim/engine/slot_pool.hpp"

namespace sg4 = simgrid::s4u;

namespace podsim {
namespace {

struct Message {   // one ring hop or point-to-point send
  double sent_s;
  int hops;
  ChipId src;
  int put = -1;    // the sender's put slot (see ChipLoop::sent), -1 when the sender waits itself
  double extra_latency_s = 0;   // of perturbed links on its route (raises the floor)
  int alternate = -1;   // its data is still to cross a second route, when the receiver takes it
  double latency_s = 0;   // its route's, under the additive hop model (message_rules.hpp)
};

struct Notice {    // an AllToAll's last block addressed to a chip has landed
  int op;
  int rep;
  double last_arrival_s;
  ChipId src;
  int put;
};

enum class Wait : uint8_t { Receive, Put, Flow, Notice, Neighbour, Relay, RelayIn, Wake };

// What a chip's flow helper (ChipLoop::run_flows) needs its chip's loop to do.
struct Wake {
  int instance;
  bool delivered;        // the instance's blocks have all been delivered
  double last_arrival_s; // otherwise: its own blocks to itself have all landed, the last then
};

struct Pending {
  Wait what;
  int slot;    // chain slot (Receive), instance (Put, Flow, Neighbour), flow index (Flow: in `index`)
  int index;
};

enum class TimerKind : uint8_t { Arrival, Compute, Release, Launch, Delivered, AllToAllEnd, NeighbourArrival };

struct Timer {
  double at_s;
  uint64_t seq;   // ties in time keep the order they were set in
  TimerKind kind;
  int a, b;
  Message message;
  bool operator>(const Timer& o) const { return at_s != o.at_s ? at_s > o.at_s : seq > o.seq; }
};

struct ChainRun {          // a chain of a ring phase, active on this chip
  int instance = -1;
  int part = 0;
  const ChainPlan* plan = nullptr;
  uint64_t key = 0;
  sg4::Mailbox* in = nullptr;
  sg4::Mailbox* out = nullptr;
  int alternate = -1;          // its hops take a second route between the two chips (see relay)
  double latency_s = 0;        // of its messages' route, under the additive hop model
  int received = 0;            // messages taken from the mailbox
  int arrived = 0;             // of those, past their latency floor
};

using Instance = OpInstance;   // one repetition of one op on this chip (chip_ops.hpp)

// A message on a second route between two chips: its data crosses between the route's own
// hosts, then a message of 0 bytes tells the receiver.
struct Relay {
  sg4::Mailbox* box = nullptr;
  Message* message = nullptr;
  uint64_t bytes = 0;
  Pending after{Wait::Put, -1, 0};   // a point-to-point send: handled as delivered on landing
};

// AllToAll blocks per flow helper (ChipLoop::run_flows): a completion costs a helper
// O(batch), and its chip's loop O(blocks / batch) helpers; the square root balances them,
// and small AllToAlls need none.
size_t flow_batch(size_t flows) {
  return std::max<size_t>(64, static_cast<size_t>(std::ceil(std::sqrt(static_cast<double>(flows)))));
}

}  // namespace

// State of one simulation. Every chip is one actor running an event loop over its own
// activities; all actors run in one thread, one at a time, so they share this plainly.
class ChipLoop;

class Simulation {
 public:
  Simulation(const Topology& topo, const std::vector<Endpoint>& endpoints, const std::vector<ReplayOp>& ops,
         const ReplayOptions& options, int progress_fd)
      : topo_(topo), endpoints_(endpoints), ops_(ops), options_(options), chips_(topo.chip_count()),
        progress_(progress_fd, options.progress_interval_s), incoming_(ops, chips_), dependencies_(topo, ops) {
    floor_model_ = options.platform.hop_model == HopModel::Floor;
    floor_ = floor_model_ ? options.platform.hop_latency_s : 0.0;
    first_span_ = span_offsets(ops_, chips_);
    result.spans.resize(first_span_.back());
    done_spans_.assign(first_span_.back(), false);
    free_boxes_.resize(chips_);
    boxes_.resize(chips_);
    landed_.resize(chips_);
    for (ChipId c = 0; c < chips_; ++c) notices_expected_.push_back(incoming_.expected(c));
  }

  // One actor per chip, on its host.
  void start(const ChipPlatform& platform, const std::vector<ChipRoute>& alternates);

  ReplayResult result;

 private:
  friend class ChipLoop;

  // A chip's mailbox for `key`, taken from its pool on first use by either end.
  sg4::Mailbox* mailbox(ChipId chip, uint64_t key) {
    auto found = boxes_[chip].find(key);
    if (found != boxes_[chip].end()) return found->second;
    auto& pool = free_boxes_[chip];
    if (pool.empty()) {
      // by_name is a simcall, during which other chips run and may take `key` first.
      auto* box = sg4::Mailbox::by_name("c" + std::to_string(chip) + "." + std::to_string(box_count_++));
      pool.push_back(box);
      found = boxes_[chip].find(key);
      if (found != boxes_[chip].end()) return found->second;
    }
    sg4::Mailbox* box = pool.back();
    pool.pop_back();
    boxes_[chip].emplace(key, box);
    return box;
  }

  void release_mailbox(ChipId chip, uint64_t key) {
    auto it = boxes_[chip].find(key);
    free_boxes_[chip].push_back(it->second);
    boxes_[chip].erase(it);
  }

  void forget_mailbox(ChipId chip, uint64_t key) { boxes_[chip].erase(key); }

  void count_messages(uint64_t n) {
    result.messages += n;
    progress_.add(n);
  }

  sg4::Mailbox* notice_box(ChipId chip) { return mailbox(chip, ~0ULL); }
  sg4::Mailbox* wake_box(ChipId chip) { return mailbox(chip, ~1ULL); }

  const Topology& topo_;
  const std::vector<Endpoint>& endpoints_;
  const std::vector<ReplayOp>& ops_;
  const ReplayOptions& options_;
  const int chips_;
  ProgressWriter progress_;
  bool floor_model_ = false;
  double floor_ = 0;

  // When a landed message is usable (message_rules.hpp): its floor, or its route's latency.
  double usable_s(double now, const Message& m) const {
    return podsim::usable_s(floor_model_, floor_, now, m.sent_s, m.hops, m.extra_latency_s, m.latency_s);
  }
  double usable_s(double now, double sent_s, const FlowPlan& flow) {
    return podsim::usable_s(floor_model_, floor_, now, sent_s, flow.hops, flow.extra_latency_s,
                            latency_s(flow.src_endpoint, flow.dst_endpoint));
  }
  // The latency of the route from one endpoint to another under the additive hop model.
  double latency_s(int from_endpoint, int to_endpoint) {
    if (floor_model_) return 0.0;
    const uint64_t key = (static_cast<uint64_t>(from_endpoint) << 32) | static_cast<uint32_t>(to_endpoint);
    auto it = latency_of_.find(key);
    if (it != latency_of_.end()) return it->second;
    return latency_of_[key] = route_latency_s(topo_, route_between(endpoints_, from_endpoint, to_endpoint),
                                              options_.platform);
  }
  std::unordered_map<uint64_t, double> latency_of_;
  std::vector<sg4::Host*> chip_hosts_, flow_hosts_;
  // Second routes between two chips (a ring of 2 positions in a reduced mesh, whose +1 and -1
  // neighbour is one chip): their hosts, by the endpoint pair whose messages take them.
  std::vector<std::pair<sg4::Host*, sg4::Host*>> alternate_hosts_;
  std::map<std::pair<int, int>, int> alternate_of_;

  int alternate(int endpoint, int peer_endpoint) const {
    if (alternate_of_.empty()) return -1;
    auto it = alternate_of_.find({endpoint, peer_endpoint});
    return it == alternate_of_.end() ? -1 : it->second;
  }
  std::vector<sg4::ActorPtr> actors_;
  std::vector<std::unordered_map<uint64_t, sg4::Mailbox*>> boxes_;
  std::vector<std::vector<sg4::Mailbox*>> free_boxes_;
  long box_count_ = 0;
  std::vector<size_t> first_span_;
  std::vector<bool> done_spans_;
  // AllToAll blocks still to land on each (rep, chip), and the latest landing, per op.
  IncomingBlocks incoming_;
  std::vector<int> notices_expected_;
  std::vector<std::vector<int>> landed_;   // per sending chip: put slots whose message was received
  DependencyTables dependencies_;

 public:
  size_t spans_done = 0;
};

// The event loop of one chip: its ops in dependency order, each repetition after the last.
class ChipLoop : public ChipOps<ChipLoop, Instance> {
 public:
  ChipLoop(Simulation& engine, ChipId chip)
      : ChipOps(engine.topo_, engine.ops_, chip, engine.options_.launch_overhead_s), e_(engine) {}

  void run() {
    const std::vector<int> free_ops = load(e_.dependencies_.of(chip_));
    if (e_.notices_expected_[chip_] > 0) post_notice_receive();
    for (int op : free_ops) deps_done(op);
    while (true) {
      while (!timers_.empty() && timers_.top().at_s <= sg4::Engine::get_clock()) fire_next_timer();
      if (pending_.empty() && timers_.empty()) break;
      if (pending_.empty()) {
        sg4::this_actor::sleep_until(timers_.top().at_s);
        fire_next_timer();
        continue;
      }
      const double timeout = timers_.empty() ? -1.0 : timers_.top().at_s - sg4::Engine::get_clock();
      const ssize_t index = sg4::Activity::wait_any_for(comms_, timeout);
      if (index < 0) {
        fire_next_timer();   // the timeout was the next timer's date
        continue;
      }
      const Pending what = pending_[index];
      sg4::ActivityPtr comm = std::move(comms_[index]);
      comms_[index] = std::move(comms_.back());
      comms_.pop_back();
      pending_[index] = pending_.back();
      pending_.pop_back();
      handle(what, comm);
    }
    for (auto& put : puts_.items()) {
      if (put) put->wait();
    }
    // Ops left undone are a deadlock: the caller counts the missing spans.
  }

 private:
  friend class ChipOps<ChipLoop, Instance>;

  // --- what chip_ops.hpp asks of a loop ---

  double now() const { return sg4::Engine::get_clock(); }
  void set_release_timer(double at_s, int op) { set_timer(at_s, TimerKind::Release, op, 0); }
  void set_launch_timer(double at_s, int id) { set_timer(at_s, TimerKind::Launch, id, 0); }

  void record_span(const Instance& in) {
    const size_t span = e_.first_span_[in.op] + static_cast<size_t>(in.rep) * e_.chips_ + chip_;
    e_.result.spans[span] = {in.op, in.rep, chip_, in.start_s, sg4::Engine::get_clock()};
    e_.spans_done += 1;
    e_.progress_.add(1);
  }

  // Its chip's ops are done; it also waits for what neighbours send it.
  void deps_done(int op) {
    // Ops of a neighbouring chip: the point-to-point sends that arrive here from it.
    for (const auto& n : e_.ops_[op].after_neighbour) {
      const auto from = n.round_the_end ? e_.topo_.round_the_end(chip_, n.axis, -n.direction)
                                        : e_.topo_.step_along(chip_, n.axis, -n.direction);
      if (!from) continue;   // the end of the line: nothing comes
      for (int rep = 0; rep < e_.ops_[n.op].repeat; ++rep) {
        state_[op].waits_left += 1;
        buffers_.push_back(nullptr);
        neighbour_keys_.push_back(send_key(n.op, rep));
        auto* box = e_.mailbox(chip_, neighbour_keys_.back());
        post(box->get_async<Message>(&buffers_.back()), {Wait::Neighbour, op, static_cast<int>(buffers_.size() - 1)});
      }
    }
    if (state_[op].waits_left == 0) ready(op);
  }

  void work(int id) {
    Instance& in = instances_[id];
    in.work_s = sg4::Engine::get_clock();
    const ReplayOp& r = e_.ops_[in.op];
    if (r.plan == nullptr) {
      set_timer(sg4::Engine::get_clock() + compute_s(r, e_.options_.chip_compute_scale), TimerKind::Compute, id, 0);
      return;
    }
    const ChipOpPlan& plan = r.plan->chips[chip_];
    if (r.plan->point_to_point) {
      for (const auto& flow : plan.flows) {
        const ChipId to = e_.endpoints_[flow.dst_endpoint].chip;
        auto* box = e_.mailbox(to, send_key(in.op, in.rep));
        auto* message = new Message{sg4::Engine::get_clock(), flow.hops, chip_, -1, flow.extra_latency_s};
        message->latency_s = e_.latency_s(flow.src_endpoint, flow.dst_endpoint);
        in.flows_left += 1;
        const Pending delivered{Wait::Put, id, static_cast<int>(&flow - plan.flows.data())};
        e_.count_messages(1);
        const int alternate = e_.alternate(flow.src_endpoint, flow.dst_endpoint);
        if (alternate >= 0) {
          relay(alternate, {box, message, wire_bytes(flow.bytes), delivered});
          continue;
        }
        post(box->put_async(message, wire_bytes(flow.bytes)), delivered);
      }
      if (in.flows_left == 0) finish(id);
      return;
    }
    if (!plan.flows.empty() || plan.incoming_flows > 0) {
      start_all_to_all(id, plan);
      return;
    }
    start_parts(id, plan);
  }

  // --- ring phases ---

  void start_chain(int id, int part, const ChainPlan& chain) {
    const Instance& in = instances_[id];
    const uint64_t key = chain_key(in.op, in.rep, part, in.phase[part], chain.shape.direction);
    ChainRun run;
    run.instance = id;
    run.part = part;
    run.plan = &chain;
    run.key = key;
    if (chain.peer_endpoint >= 0) {
      run.out = e_.mailbox(e_.endpoints_[chain.peer_endpoint].chip, key);
      run.alternate = e_.alternate(chain.endpoint, chain.peer_endpoint);
      run.latency_s = e_.latency_s(chain.endpoint, chain.peer_endpoint);
    }
    if (chain.shape.receives > 0) run.in = e_.mailbox(chip_, key);
    const int slot = chains_.add(run);
    // A chain's messages cross to it one at a time, in the order sent: the chain posts one
    // receive when its chip starts it and the next when a message lands (before its floor),
    // and a receive takes the oldest message sent. A message moves from the later of its send
    // and the landing of the one before it (or the chain's start). Which of a send and a
    // landing or start at one instant SimGrid runs first then changes nothing; with the chip
    // as its mailboxes' permanent receiver, a message sent at the instant its chain started
    // overtook one that had waited, or not, by which actor ran first (native_replay.hpp).
    if (chain.shape.receives > 0) post_receive(slot);
    if (chain.shape.sends_own) send(slot);
  }

  void send(int slot) {
    ChainRun& run = chains_[slot];
    auto* message = new Message{sg4::Engine::get_clock(), run.plan->shape.hops, chip_, -1, run.plan->extra_latency_s};
    message->latency_s = run.latency_s;
    e_.count_messages(1);
    uint64_t bytes = wire_bytes(run.plan->message_bytes);
    if (run.alternate >= 0) {
      // Its data takes a second route: a message of 0 bytes goes to the mailbox, and the
      // receiver sends the data across the second route when it takes it, as the message
      // itself would have moved then.
      message->alternate = run.alternate;
      bytes = 0;
    }
    const int put = puts_.add(nullptr);
    message->put = put;
    sent(put, run.out->put_async(message, bytes));
  }

  // A point-to-point send whose route is a second one between its two chips (a message
  // between actors takes the first): the data crosses between the route's own hosts (a
  // host-to-host transfer, which only the sender sees end), then the sender tells the receiver
  // with 0 bytes, which take no time on links without latency. (A ring hop's data crosses from
  // the receiver's side instead: send().)
  void relay(int alternate, Relay r) {
    const int index = relays_.add(r);
    const auto& [from, to] = e_.alternate_hosts_[alternate];
    post(sg4::Comm::sendto_async(from, to, r.bytes), {Wait::Relay, index, 0});
  }

  void relay_landed(int index, const sg4::ActivityPtr& comm) {
    const Relay r = relays_.take(index);
    post(r.box->put_async(r.message, 0), {Wait::Put, -1, 0});
    handle(r.after, comm);
  }

  void post_receive(int slot) {
    const int buffer = receive_buffers_.add(nullptr);
    post(chains_[slot].in->get_async<Message>(&receive_buffers_[buffer]), {Wait::Receive, slot, buffer});
  }

  // A message of chain `slot` has arrived and passed its latency floor.
  void chain_arrival(int slot, const Message& message) {
    ChainRun& run = chains_[slot];
    run.arrived += 1;
    record_hop(instances_[run.instance], message, run.plan->message_bytes);
    if (run.arrived <= run.plan->shape.forwards) send(slot);
    if (run.arrived < run.plan->shape.receives) return;
    // The chain has everything: free it, and end the phase when its other chain has too.
    const int id = run.instance, part = run.part;
    e_.release_mailbox(chip_, run.key);
    chains_.release(slot);
    chain_done(id, part);
  }

  // --- AllToAll ---

  void start_all_to_all(int id, const ChipOpPlan& plan) {
    Instance& in = instances_[id];
    const size_t flows = plan.flows.size();
    in.flows_left = static_cast<int>(flows);
    e_.count_messages(flows);
    const size_t batch = flow_batch(flows);
    if (flows > batch) {
      // Waiting on every block here would cost O(blocks) per completion: helpers wait on a
      // batch each and wake this loop once, when the last is delivered.
      if (helped_instances_++ == 0) post_wake_receive();
      for (size_t begin = 0; begin < flows; begin += batch) {
        const size_t end = std::min(flows, begin + batch);
        sg4::Actor::create("flows", e_.chip_hosts_[chip_], [this, id, begin, end] { run_flows(id, begin, end); });
      }
    } else {
      for (size_t i = 0; i < flows; ++i) post(send_flow(plan.flows[i]), {Wait::Flow, id, static_cast<int>(i)});
    }
    in.incoming_done = plan.incoming_flows == 0;
    if (!in.incoming_done) {
      auto& early = early_notices_;
      for (size_t k = 0; k < early.size(); ++k) {
        if (early[k].op == in.op && early[k].rep == in.rep) {
          in.incoming_done = true;
          in.incoming_s = early[k].last_arrival_s;
          early.erase(early.begin() + static_cast<long>(k));
          break;
        }
      }
    }
    maybe_end_all_to_all(id);
  }

  sg4::CommPtr send_flow(const FlowPlan& flow) {
    return sg4::Comm::sendto_async(e_.flow_hosts_[flow.src_endpoint], e_.flow_hosts_[flow.dst_endpoint],
                                   wire_bytes(flow.bytes));
  }

  // A helper actor of this chip: sends blocks [begin, end) of instance `id` and does each
  // one's bookkeeping as it is delivered. All actors run one at a time, so it shares this
  // loop's state plainly, but it never touches what the loop is waiting on (comms_): what
  // needs the loop goes by wake_box. It waits for its own notices before it ends (an actor's
  // unfinished activities are cancelled when it ends).
  void run_flows(int id, size_t begin, size_t end) {
    const auto& flows = e_.ops_[instances_[id].op].plan->chips[chip_].flows;
    std::vector<sg4::ActivityPtr> comms;
    std::vector<sg4::CommPtr> notices;
    std::vector<int> index;
    for (size_t i = begin; i < end; ++i) {
      comms.push_back(send_flow(flows[i]));
      index.push_back(static_cast<int>(i));
    }
    while (!comms.empty()) {
      const ssize_t k = sg4::Activity::wait_any(comms);
      const int i = index[k];
      comms[k] = std::move(comms.back());
      comms.pop_back();
      index[k] = index.back();
      index.pop_back();
      double own_last_s = -1;
      bool last = false;
      if (block_delivered(id, i, notices, own_last_s, last)) {
        notices.push_back(e_.wake_box(chip_)->put_async(new Wake{id, false, own_last_s}, 0));
      }
      // `last` was taken when the count fell to 0: a put is a simcall, during which another
      // helper of this instance can deliver a block and read the count at 0 too (two
      // "delivered" wakes for one instance ended the chip's loop before its helpers, whose
      // next block then read a destroyed loop).
      if (last) {
        notices.push_back(e_.wake_box(chip_)->put_async(new Wake{id, true, 0}, 0));
      }
    }
    for (auto& n : notices) n->wait();
  }

  void post_wake_receive() { post(e_.wake_box(chip_)->get_async<Wake>(&wake_buffer_), {Wait::Wake, 0, 0}); }

  void woken() {
    const Wake wake = *wake_buffer_;
    delete wake_buffer_;
    wake_buffer_ = nullptr;
    if (!wake.delivered) {
      post_wake_receive();   // its instance's `delivered` is still to come
      own_incoming_complete(instances_[wake.instance].op, instances_[wake.instance].rep, wake.last_arrival_s);
      return;
    }
    if (--helped_instances_ > 0) post_wake_receive();
    maybe_end_all_to_all(wake.instance);
  }

  // Its own blocks to itself have all landed (a reduced mesh's AllToAll can wrap onto the
  // sender): no notice comes for this op, so a receive posted for one may wait for nothing.
  void own_incoming_complete(int op, int rep, double last_s) {
    if (notices_received_ + ++local_incoming_ == e_.notices_expected_[chip_]) cancel_notice_receive();
    incoming_complete(op, rep, last_s);
  }

  // The bookkeeping of block `index` of instance `id`, delivered now: its receiver is told
  // (with `notices`, or this chip's puts when null) when it was the last block addressed to
  // it. Returns true when that receiver is this chip, with the last landing in `own_last_s`;
  // `last_block`: this was the instance's last own block.
  bool block_delivered(int id, int index, std::vector<sg4::CommPtr>& notices, double& own_last_s, bool& last_block) {
    Instance& in = instances_[id];
    const auto& flow = e_.ops_[in.op].plan->chips[chip_].flows[index];
    const double now = sg4::Engine::get_clock();
    double arrival = now;
    arrival = e_.usable_s(arrival, in.work_s, flow);
    if (e_.options_.record_hops) {
      e_.result.hops.push_back({in.op, in.rep, chip_, flow.dst_chip, in.work_s, arrival, flow.bytes});
    }
    in.delivered_s = std::max(in.delivered_s, now);
    in.flows_left -= 1;
    last_block = in.flows_left == 0;
    double last = 0;
    if (e_.incoming_.arrived(in.op, in.rep, flow.dst_chip, arrival, last)) {
      if (flow.dst_chip == chip_) {
        own_last_s = last;
        return true;
      }
      // Tell the receiver: a message of 0 bytes takes no time.
      if (&notices == &no_notices_) {
        const int put = puts_.add(nullptr);
        sent(put, e_.notice_box(flow.dst_chip)->put_async(new Notice{in.op, in.rep, last, chip_, put}, 0));
      } else {
        notices.push_back(e_.notice_box(flow.dst_chip)->put_async(new Notice{in.op, in.rep, last, chip_, -1}, 0));
      }
    }
    return false;
  }

  void flow_delivered(int id, int index) {
    double own_last_s = -1;
    bool last = false;
    if (block_delivered(id, index, no_notices_, own_last_s, last)) {
      own_incoming_complete(instances_[id].op, instances_[id].rep, own_last_s);
    }
    maybe_end_all_to_all(id);
  }

  void incoming_complete(int op, int rep, double last_s) {
    for (size_t id = 0; id < instances_.size(); ++id) {
      Instance& in = instances_[id];
      if (in.op == op && in.rep == rep && !in.incoming_done) {
        in.incoming_done = true;
        in.incoming_s = last_s;
        maybe_end_all_to_all(static_cast<int>(id));
        return;
      }
    }
    early_notices_.push_back({op, rep, last_s, -1, -1});   // before this chip started the op
  }

  // A chip's AllToAll ends when its own blocks have been delivered and every block addressed
  // to it has landed (past its latency floor).
  void maybe_end_all_to_all(int id) {
    Instance& in = instances_[id];
    if (in.op < 0 || in.ending || in.flows_left > 0 || !in.incoming_done) return;
    in.ending = true;
    const double end = std::max(in.incoming_s, in.delivered_s);
    if (end > sg4::Engine::get_clock()) {
      set_timer(end, TimerKind::AllToAllEnd, id, 0);
      return;
    }
    finish(id);
  }

  void cancel_notice_receive() {
    for (size_t i = 0; i < pending_.size(); ++i) {
      if (pending_[i].what != Wait::Notice) continue;
      comms_[i]->cancel();
      comms_[i] = std::move(comms_.back());
      comms_.pop_back();
      pending_[i] = pending_.back();
      pending_.pop_back();
      delete notice_buffer_;
      notice_buffer_ = nullptr;
      return;
    }
  }

  void post_notice_receive() {
    post(e_.notice_box(chip_)->get_async<Notice>(&notice_buffer_), {Wait::Notice, 0, 0});
  }

  // --- completions ---

  void handle(const Pending& what, const sg4::ActivityPtr& comm) {
    const double now = sg4::Engine::get_clock();
    // Timers due now come first: a message held by its floor until now is older than one
    // that completes now.
    while (!timers_.empty() && timers_.top().at_s <= now) fire_next_timer();
    switch (what.what) {
      case Wait::Receive:
        ring_message_received(what.slot, what.index, now);
        break;
      case Wait::RelayIn: {   // a message's data has crossed the second route
        if (chains_[what.slot].received < chains_[what.slot].plan->shape.receives) post_receive(what.slot);
        chain_received(what.slot, waiting_data_.take(what.index), now);
        break;
      }
      case Wait::Put:
        if (what.slot >= 0) send_landed(what.slot, what.index, now);   // else a ring hop or a notice: the receiver takes it
        break;
      case Wait::Flow:
        flow_delivered(what.slot, what.index);
        break;
      case Wait::Relay:
        relay_landed(what.slot, comm);
        break;
      case Wait::Wake:
        woken();
        break;
      case Wait::Notice: {
        const Notice notice = *notice_buffer_;
        delete notice_buffer_;
        if (notice.put >= 0) e_.landed_[notice.src].push_back(notice.put);   // a helper waits for its own
        notice_buffer_ = nullptr;
        if (++notices_received_ + local_incoming_ < e_.notices_expected_[chip_]) post_notice_receive();
        incoming_complete(notice.op, notice.rep, notice.last_arrival_s);
        break;
      }
      case Wait::Neighbour: {
        Message*& buffer = buffers_[what.index];
        const Message message = *buffer;
        delete buffer;
        buffer = nullptr;
        e_.forget_mailbox(chip_, neighbour_keys_[what.index]);   // still a permanent receiver's: not reused
        const double usable = e_.usable_s(now, message);
        if (usable > now) {
          set_timer(usable, TimerKind::NeighbourArrival, what.slot, 0);
        } else {
          neighbour_arrived(what.slot);
        }
        break;
      }
    }
    (void)comm;
  }

  // A ring hop's message taken from its chain's mailbox.
  void ring_message_received(int slot, int buffer, double now) {
    ChainRun& run = chains_[slot];
    Message* payload = receive_buffers_.take(buffer);
    Message message = *payload;
    delete payload;
    e_.landed_[message.src].push_back(message.put);
    run.received += 1;
    if (message.alternate >= 0) {   // taken now: its data crosses the second route
      const auto& [from, to] = e_.alternate_hosts_[message.alternate];
      message.alternate = -1;
      const int index = waiting_data_.add(message);
      post(sg4::Comm::sendto_async(from, to, wire_bytes(run.plan->message_bytes)), {Wait::RelayIn, slot, index});
      return;
    }
    if (run.received < run.plan->shape.receives) post_receive(slot);   // the next may move now
    chain_received(slot, message, now);
  }

  // A point-to-point send's flow landed: the send is done on the sender when all its data has.
  void send_landed(int slot, int flow_index, double now) {
    Instance& in = instances_[slot];
    const auto& flow = e_.ops_[in.op].plan->chips[chip_].flows[flow_index];
    const double usable = e_.usable_s(now, in.work_s, flow);
    if (e_.options_.record_hops) {
      e_.result.hops.push_back({in.op, in.rep, chip_, flow.dst_chip, in.work_s, usable, flow.bytes});
    }
    in.delivered_s = std::max(in.delivered_s, usable);
    if (--in.flows_left == 0) {
      if (in.delivered_s > now) {
        set_timer(in.delivered_s, TimerKind::Delivered, slot, 0);
      } else {
        finish(slot);
      }
    }
  }

  void chain_received(int slot, const Message& message, double now) {
    const double usable = e_.usable_s(now, message);
    if (usable > now) {
      set_timer(usable, TimerKind::Arrival, slot, 0, message);
    } else {
      chain_arrival(slot, message);
    }
  }

  void neighbour_arrived(int op) {
    if (--state_[op].waits_left == 0) ready(op);
  }

  void fire_next_timer() {
    const Timer t = timers_.top();
    timers_.pop();
    switch (t.kind) {
      case TimerKind::Arrival: chain_arrival(t.a, t.message); break;
      case TimerKind::Compute: finish(t.a); break;
      case TimerKind::Release: begin(t.a); break;
      case TimerKind::Launch: work(t.a); break;
      case TimerKind::Delivered: finish(t.a); break;
      case TimerKind::AllToAllEnd: finish(t.a); break;
      case TimerKind::NeighbourArrival: neighbour_arrived(t.a); break;
    }
  }

  void record_hop(const Instance& in, const Message& message, double bytes) {
    if (!e_.options_.record_hops) return;
    const double usable = e_.usable_s(sg4::Engine::get_clock(), message);
    e_.result.hops.push_back({in.op, in.rep, message.src, chip_, message.sent_s, usable, bytes});
  }

  // A ring hop or notice is the receiver's business once sent: the sender does not wait for
  // it (a wait_any costs O(what it watches) per call). SimGrid keeps it among the sender's
  // activities until the sender waits on it (a test() does not take it back: the list, walked
  // at every completion, would grow), so the receiver reports it landed (landed_) and the
  // sender takes back landed ones in batches, with a wait() that returns at once.
  void sent(int slot, sg4::CommPtr put) {
    puts_[slot] = std::move(put);
    if (e_.landed_[chip_].size() >= kReapBatch) reap();
  }

  void reap() {
    std::vector<int> batch;
    batch.swap(e_.landed_[chip_]);   // wait() is a simcall: receivers may report more meanwhile
    for (int slot : batch) puts_.take(slot)->wait();
  }
  // Measured on an 8x8x8 AllReduce: taking each back at the next send beats batches of 8
  // (SimGrid walks the sender's list of activities at every completion) by 25%.
  static constexpr size_t kReapBatch = 1;

  void post(sg4::CommPtr comm, Pending what) {
    comms_.push_back(std::move(comm));
    pending_.push_back(what);
  }

  void set_timer(double at_s, TimerKind kind, int a, int b, Message message = {}) {
    timers_.push(Timer{at_s, timer_seq_++, kind, a, b, message});
  }

  Simulation& e_;
  SlotPool<ChainRun, std::deque<ChainRun>> chains_;
  // What this chip waits on, as activities: Comm::wait_any_for would copy them into one
  // (a dynamic_cast and two reference counts each, per call) ...
  std::vector<sg4::ActivityPtr> comms_;
  std::vector<Pending> pending_;          // ... and why, index for index
  SlotPool<sg4::CommPtr> puts_;           // sends not yet taken back (see sent())
  SlotPool<Relay> relays_;                // second-route messages in flight
  SlotPool<Message> waiting_data_;        // taken messages whose data crosses a second route
  std::priority_queue<Timer, std::vector<Timer>, std::greater<>> timers_;
  uint64_t timer_seq_ = 0;
  Notice* notice_buffer_ = nullptr;
  Wake* wake_buffer_ = nullptr;
  int helped_instances_ = 0;                // AllToAll instances whose blocks helpers send
  std::vector<sg4::CommPtr> no_notices_;    // block_delivered's: notices go by this chip's puts
  int notices_received_ = 0;
  int local_incoming_ = 0;   // AllToAll ops whose last incoming block was this chip's own
  std::vector<Notice> early_notices_;
  std::deque<Message*> buffers_;           // neighbours' sends being received (stable addresses)
  SlotPool<Message*, std::deque<Message*>> receive_buffers_;   // ring hops' (stable addresses)
  std::vector<uint64_t> neighbour_keys_;
};

void Simulation::start(const ChipPlatform& platform, const std::vector<ChipRoute>& alternates) {
  chip_hosts_ = platform.chips;
  flow_hosts_ = platform.flows;
  alternate_hosts_ = platform.alternates;
  for (size_t k = 0; k < alternates.size(); ++k) {
    alternate_of_[{alternates[k].src_endpoint, alternates[k].dst_endpoint}] = static_cast<int>(k);
  }
  for (ChipId c = 0; c < chips_; ++c) {
    actors_.push_back(sg4::Actor::create("chip", chip_hosts_[c], [this, c] { ChipLoop(*this, c).run(); }));
  }
  // Point-to-point sends and AllToAll notices flow as soon as they are sent (a send's buffer
  // on the receiver exists from the start): their mailboxes get their permanent receivers
  // here, before any chip runs.
  for (ChipId c = 0; c < chips_; ++c) {
    if (notices_expected_[c] > 0) notice_box(c)->set_receiver(actors_[c]);
  }
  for (const auto& op : ops_) {   // and what flow helpers tell their chip
    if (op.plan == nullptr || op.plan->point_to_point) continue;
    for (ChipId c = 0; c < chips_; ++c) {
      const size_t flows = op.plan->chips[c].flows.size();
      if (flows > flow_batch(flows)) wake_box(c)->set_receiver(actors_[c]);
    }
  }
  for (size_t op = 0; op < ops_.size(); ++op) {
    const OpPlan* plan = ops_[op].plan;
    if (plan == nullptr || !plan->point_to_point) continue;
    for (const auto& chip : plan->chips) {
      for (const auto& flow : chip.flows) {
        for (int rep = 0; rep < ops_[op].repeat; ++rep) {
          mailbox(flow.dst_chip, send_key(static_cast<int>(op), rep))->set_receiver(actors_[flow.dst_chip]);
        }
      }
    }
  }
}

ReplayResult replay_in_process(const Topology& topo, const std::vector<Endpoint>& endpoints,
                               const std::vector<ReplayOp>& ops, const ReplayOptions& options, int progress_fd) {
  // podsim logs through spdlog; SimGrid's own log stays quiet unless it is about to abort.
  int argc = 2;
  char name[] = "podsim";
  char quiet[] = "--log=root.thres:critical";
  char* argv[] = {name, quiet, nullptr};
  sg4::Engine engine(&argc, argv);
  configure_engine(engine, static_cast<size_t>(topo.chip_count()));
  for (const auto& op : ops) {
    if (op.repeat >= (1 << 20) || ops.size() >= (1u << 27)) {
      throw std::invalid_argument("too many ops or repetitions for one simulation");
    }
  }
  std::vector<ChipRoute> alternates;
  const auto routes = chip_routes(topo, endpoints, ops, alternates);
  if (!alternates.empty() && options.platform.hop_model != HopModel::Floor) {
    // Relays were proven (reduced = full) under the floor model only: under the additive one
    // the reduction keeps rings of 3 (symmetry.hpp), so only a real 2-chip ring gets here.
    throw std::invalid_argument("two routes between " + topo.chip_name(alternates[0].src) + " and " +
                                topo.chip_name(alternates[0].dst) +
                                " (a wrapped axis of 2 chips) need the floor hop model");
  }
  std::vector<bool> used;
  std::vector<std::pair<int, int>> pairs;
  bool explicit_routes = false;
  flow_endpoints(endpoints, ops, used, pairs, explicit_routes);
  // AllToAll endpoints keep their registry index; unused ones cost an empty host.
  std::vector<Endpoint> flow_eps;
  bool any_flows = false;
  for (bool u : used) any_flows = any_flows || u;
  if (any_flows) flow_eps = endpoints;
  auto platform = build_chip_platform(topo, topo.chip_count(), routes, alternates, flow_eps,
                                      explicit_routes ? &pairs : nullptr, options.platform);
  Simulation runtime(topo, endpoints, ops, options, progress_fd);
  runtime.start(platform, alternates);
  const auto run_start = std::chrono::steady_clock::now();
  engine.run();
  runtime.result.simulation_wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();
  runtime.result.end_time_s = sg4::Engine::get_clock();
  const size_t expected_spans = runtime.result.spans.size();
  if (runtime.spans_done != expected_spans) {
    throw std::runtime_error("the simulation stopped with " + std::to_string(expected_spans - runtime.spans_done) +
                             " op instances unfinished (deadlock)");
  }
  return std::move(runtime.result);
}

}  // namespace podsim
