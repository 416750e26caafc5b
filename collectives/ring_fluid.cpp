#include "collectives/ring_fluid.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <queue>
#include <stdexcept>

#include "collectives/ring_schedule.hpp"

namespace podsim {
namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();
// Things due within this of each other happen together (SimGrid's default timing precision).
constexpr double kSimultaneous_s = 1e-9;

struct Message {
  double remaining = 0;   // bytes still to move
  double sent_s = 0;
  int link = -1;
  int to_chain = -1;
  bool done = false;
};

// Where a chain's messages arrive (one per chip, part, phase and direction): they cross one at
// a time, in send order, each from the later of its send and the landing of the one before
// (or the chain's start).
struct Mailbox {
  bool started = false;   // its chain has begun
  bool busy = false;      // one of its messages is moving
  std::deque<int> queue;  // sent, not yet moving
};

struct Chain {
  int chip = 0, part = 0, phase = 0, direction = +1, axis = 0;
  int receives = 0, forwards = 0, received = 0;
  double message_bytes = 0;
};

struct Timer {
  double t;
  long seq;
  int chain;
  bool operator>(const Timer& o) const { return t != o.t ? t > o.t : seq > o.seq; }
};

class Model {
 public:
  Model(const std::vector<AxisInfo>& axes, std::vector<PartSchedule> parts, double w_uni, double t_min)
      : axes_(axes), parts_(std::move(parts)), w_(w_uni), t_min_(t_min) {
    for (const auto& axis : axes_) {
      // A ring: every chip alike, one stands for all. A line: every chip.
      dims_.push_back(axis.wraparound ? 1 : axis.size);
      chips_ *= dims_.back();
    }
    phases_ = static_cast<int>(parts_.front().size());
    const size_t slots = static_cast<size_t>(chips_) * parts_.size() * phases_ * 2;
    chains_.resize(slots);
    mailboxes_.resize(slots);
    links_.resize(static_cast<size_t>(chips_) * axes_.size() * 2);
    phase_state_.resize(static_cast<size_t>(chips_) * parts_.size());
  }

  double run() {
    for (int chip = 0; chip < chips_; ++chip) {
      for (int part = 0; part < static_cast<int>(parts_.size()); ++part) starting_.push_back({chip, part});
    }
    settle();
    while (true) {
      // The next thing due: a message's end on its link (at the current sharing) or a floor.
      double next = timers_.empty() ? kNever : timers_.top().t;
      for (int link : active_links_) {
        const auto& on = links_[link];
        for (int m : on) next = std::min(next, now_ + messages_[m].remaining * static_cast<double>(on.size()) / w_);
      }
      if (next == kNever) break;
      advance(next);
      const double until = next + kSimultaneous_s;
      // Everything due by `until` happens now: floors first, then messages by their end.
      std::vector<int> woken;
      while (!timers_.empty() && timers_.top().t <= until) {
        woken.push_back(timers_.top().chain);
        timers_.pop();
      }
      std::vector<std::pair<double, int>> ended;
      for (size_t i = 0; i < active_links_.size();) {
        const int link = active_links_[i];
        auto& on = links_[link];
        const double sharing = static_cast<double>(on.size());
        std::vector<int> left;
        for (int m : on) {
          const double end = now_ + messages_[m].remaining * sharing / w_;
          if (end <= until) ended.push_back({end, m});
          else left.push_back(m);
        }
        on = std::move(left);
        if (on.empty()) {
          active_links_.erase(active_links_.begin() + static_cast<long>(i));
        } else {
          ++i;
        }
      }
      std::stable_sort(ended.begin(), ended.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      for (const auto& [end, m] : ended) {
        Message& message = messages_[m];
        message.remaining = 0;
        message.done = true;
        Mailbox& box = mailboxes_[message.to_chain];
        box.busy = false;
        move_next(box);
        usable(message.to_chain, message, &woken);
      }
      for (int c : woken) ready_.push_back(c);
      settle();
    }
    for (const auto& state : phase_state_) {
      if (state.phase < phases_) throw std::logic_error("ring_fluid_time_s: the schedule did not finish");
    }
    return end_s_;
  }

 private:
  struct PhaseState {
    int phase = 0;
    int chains_left = 0;
  };

  int slot(int chip, int part, int phase, int direction) const {
    return ((chip * static_cast<int>(parts_.size()) + part) * phases_ + phase) * 2 + (direction > 0 ? 1 : 0);
  }
  int link_of(int chip, int axis, int direction) const {
    return (chip * static_cast<int>(axes_.size()) + axis) * 2 + (direction > 0 ? 1 : 0);
  }
  int coordinate(int chip, int axis) const {
    for (int a = 0; a < axis; ++a) chip /= dims_[a];
    return chip % dims_[axis];
  }
  int neighbour(int chip, int axis, int direction) const {
    if (axes_[axis].wraparound) return chip;   // collapsed ring: the neighbour is alike
    int stride = 1;
    for (int a = 0; a < axis; ++a) stride *= dims_[a];
    return chip + direction * stride;
  }

  void advance(double t) {
    if (t <= now_) return;
    for (int link : active_links_) {
      auto& on = links_[link];
      const double moved = w_ / static_cast<double>(on.size()) * (t - now_);
      for (int m : on) messages_[m].remaining -= moved;
    }
    now_ = t;
  }

  // Runs what happens at the current time: chains that can go on first, in the order they
  // became ready, then the phases that start because others ended (as the replay does:
  // a phase's chains start after the chains whose end started it have run).
  void settle() {
    while (!ready_.empty() || !starting_.empty()) {
      while (!ready_.empty()) {
        const int c = ready_.front();
        ready_.pop_front();
        wake(c);
      }
      const auto batch = std::move(starting_);
      starting_.clear();
      for (const auto& [chip, part] : batch) start_phase(chip, part);
    }
  }

  void start_moving(int m) {
    auto& on = links_[messages_[m].link];
    if (on.empty()) active_links_.push_back(messages_[m].link);
    on.push_back(m);
  }

  // The chain's current message has arrived: it can use it now, or after the floor.
  void usable(int c, const Message& message, std::vector<int>* now_list) {
    const double at = message.sent_s + t_min_;
    if (at <= now_ + kSimultaneous_s) {
      if (now_list != nullptr) now_list->push_back(c);
      else ready_.push_back(c);
    } else {
      timers_.push({at, seq_++, c});
    }
  }

  void send(int from) {
    const Chain& chain = chains_[from];
    Message message;
    message.remaining = std::max(1.0, std::ceil(chain.message_bytes));
    message.sent_s = now_;
    message.link = link_of(chain.chip, chain.axis, chain.direction);
    message.to_chain = slot(neighbour(chain.chip, chain.axis, chain.direction), chain.part, chain.phase, chain.direction);
    const int m = static_cast<int>(messages_.size());
    messages_.push_back(message);
    Mailbox& box = mailboxes_[message.to_chain];
    box.queue.push_back(m);
    move_next(box);
  }

  void move_next(Mailbox& box) {
    if (!box.started || box.busy || box.queue.empty()) return;
    box.busy = true;
    start_moving(box.queue.front());
    box.queue.pop_front();
  }

  // One of the chain's messages is usable.
  void wake(int c) {
    Chain& chain = chains_[c];
    if (chain.received < chain.forwards) send(c);
    chain.received += 1;
    if (chain.received == chain.receives) chain_done(c);
  }

  void start_phase(int chip, int part) {
    PhaseState& state = phase_state_[chip * parts_.size() + part];
    const RingPhase& phase = parts_[part][state.phase];
    const int axis = phase.axis.axis;
    const auto shapes = ring_chains(phase.axis, coordinate(chip, axis), true);
    state.chains_left = static_cast<int>(shapes.size());
    for (const ChainShape& shape : shapes) {
      const int c = slot(chip, part, state.phase, shape.direction);
      chains_[c] = Chain{chip, part, state.phase, shape.direction, axis, shape.receives, shape.forwards, 0,
                         phase.message_bytes};
      mailboxes_[c].started = true;
      move_next(mailboxes_[c]);
      if (shape.sends_own) send(c);
      if (shape.receives == 0) chain_done(c);
    }
    if (shapes.empty()) next_phase(chip, part);
  }

  void chain_done(int c) {
    const Chain& chain = chains_[c];
    PhaseState& state = phase_state_[chain.chip * parts_.size() + chain.part];
    if (--state.chains_left == 0) next_phase(chain.chip, chain.part);
  }

  void next_phase(int chip, int part) {
    PhaseState& state = phase_state_[chip * parts_.size() + part];
    state.phase += 1;
    if (state.phase < phases_) starting_.push_back({chip, part});
    else end_s_ = std::max(end_s_, now_);
  }

  std::vector<AxisInfo> axes_;
  std::vector<PartSchedule> parts_;
  double w_, t_min_;
  std::vector<int> dims_;
  int chips_ = 1;
  int phases_ = 0;
  std::vector<Chain> chains_;
  std::vector<Mailbox> mailboxes_;
  std::vector<Message> messages_;
  std::vector<std::vector<int>> links_;
  std::vector<int> active_links_;
  std::vector<PhaseState> phase_state_;
  std::deque<int> ready_;                       // chains that go on now
  std::vector<std::pair<int, int>> starting_;   // (chip, part) whose next phase starts now
  std::priority_queue<Timer, std::vector<Timer>, std::greater<Timer>> timers_;
  long seq_ = 0;
  double now_ = 0;
  double end_s_ = 0;
};

}  // namespace

double ring_fluid_time_s(CollectiveKind kind, const std::vector<AxisInfo>& axes, double bytes, double w_uni,
                         double t_min) {
  // The same checks and axes as the closed form.
  (void)ring_schedule_time(kind, axes, bytes, w_uni, t_min);
  std::vector<AxisInfo> real;
  for (const AxisInfo& axis : axes) {
    if (axis.size > 1) real.push_back(axis);
  }
  std::vector<RingAxis> ring_axes;
  for (size_t i = 0; i < real.size(); ++i) ring_axes.push_back({static_cast<int>(i), real[i].size, real[i].wraparound});
  auto parts = ring_parts(kind, ring_axes, bytes);
  if (parts.empty()) return 0;
  return Model(real, std::move(parts), w_uni, t_min).run();
}

}  // namespace podsim
