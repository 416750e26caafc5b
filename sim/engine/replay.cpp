#include "sim/engine/replay.hpp"

#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <simgrid/s4u.hpp>
#include <stdexcept>
#include <tuple>

namespace sg4 = simgrid::s4u;

namespace podsim {
namespace {

// SimGrid never completes a transfer of 0 bytes over links without latency; a block smaller
// than a byte (1 KiB spread over 4,096 chips) still costs a byte on the wire.
uint64_t wire_bytes(double bytes) { return std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(bytes))); }

struct Message {
  double sent_s;
  int hops;
  ChipId src_chip;
  double extra_latency_s;   // of perturbed links on its route (raises the floor)
};

// State of one simulation, shared by its actors (they all run in one thread, one at a time).
struct Runtime {
  const Topology& topo;
  const std::vector<Endpoint>& endpoints;
  const std::vector<ReplayOp>& ops;
  const ReplayOptions& options;
  std::vector<sg4::Host*> hosts;
  std::vector<std::vector<sg4::ActorPtr>> op_actors;   // [op][chip]
  std::map<std::tuple<int, int, ChipId>, int> pending_blocks;
  std::map<std::tuple<int, int, ChipId>, sg4::SemaphorePtr> blocks_done;
  std::map<std::tuple<int, int, ChipId>, double> last_arrival_s;
  std::map<std::tuple<int, int, ChipId>, double> last_delivery_s;   // of a chip's own sends
  ReplayResult result;

  Runtime(const Topology& t, const std::vector<Endpoint>& e, const std::vector<ReplayOp>& o, const ReplayOptions& opt,
          std::vector<sg4::Host*> h)
      : topo(t), endpoints(e), ops(o), options(opt), hosts(std::move(h)) {}

  bool floor_model() const { return options.platform.hop_model == HopModel::Floor; }

  // Under the floor model a message is usable at max(arrival, sent + hops * T_min + extra latency).
  void apply_floor(double sent_s, int hops, double extra_latency_s) const {
    if (floor_model()) sg4::this_actor::sleep_until(sent_s + hops * options.platform.hop_latency_s + extra_latency_s);
  }

  void record_hop(int op, int rep, ChipId src, ChipId dst, double sent_s, double bytes) {
    if (options.record_hops) result.hops.push_back({op, rep, src, dst, sent_s, sg4::Engine::get_clock(), bytes});
  }

  sg4::Mailbox* mailbox(int op, int rep, int part, int phase, int endpoint) const {
    return sg4::Mailbox::by_name(std::to_string(op) + "." + std::to_string(rep) + "." + std::to_string(part) + "." +
                                 std::to_string(phase) + "." + std::to_string(endpoint));
  }

  sg4::SemaphorePtr blocks_semaphore(int op, int rep, ChipId chip) {
    auto& sem = blocks_done[{op, rep, chip}];
    if (!sem) sem = sg4::Semaphore::create(0);
    return sem;
  }

  void run_chain(int op, int rep, ChipId chip, int part, int phase, const ChainPlan& chain) {
    auto* in = mailbox(op, rep, part, phase, chain.endpoint);
    // A permanent receiver lets data flow before the get, as with RDMA (field notes).
    in->set_receiver(sg4::Actor::self());
    sg4::Mailbox* out = chain.peer_endpoint >= 0 ? mailbox(op, rep, part, phase, chain.peer_endpoint) : nullptr;
    auto send = [&] {
      auto* message = new Message{sg4::Engine::get_clock(), chain.shape.hops, chip, chain.extra_latency_s};
      out->put_init(message, wire_bytes(chain.message_bytes))->detach();
      result.messages += 1;
    };
    if (chain.shape.sends_own) send();
    for (int k = 0; k < chain.shape.receives; ++k) {
      auto* message = in->get<Message>();
      apply_floor(message->sent_s, message->hops, message->extra_latency_s);
      record_hop(op, rep, message->src_chip, chip, message->sent_s, chain.message_bytes);
      delete message;
      if (k < chain.shape.forwards) send();
    }
    in->set_receiver(nullptr);
  }

  void run_part(int op, int rep, ChipId chip, int part) {
    const auto& phases = ops[op].plan->chips[chip].parts[part];
    for (size_t phase = 0; phase < phases.size(); ++phase) {
      std::vector<sg4::ActorPtr> chains;
      for (const auto& chain : phases[phase]) {
        chains.push_back(sg4::Actor::create("c", hosts[chain.endpoint], [this, op, rep, chip, part, phase, &chain] {
          run_chain(op, rep, chip, part, static_cast<int>(phase), chain);
        }));
      }
      for (auto& actor : chains) actor->join();
    }
  }

  // A batch of one chip's AllToAll blocks, started at once; wait_any notices each completion
  // at its own time, so a receiver's count reaches zero exactly when its last block lands.
  // wait_any costs O(outstanding) per call (field notes), so a chip's thousands of blocks are
  // split over batches of kFlowBatch, each with its own actor.
  static constexpr size_t kFlowBatch = 64;

  void run_flows(int op, int rep, ChipId src, size_t first, size_t last) {
    const auto& flows = ops[op].plan->chips[src].flows;
    const double sent_s = sg4::Engine::get_clock();
    std::vector<sg4::CommPtr> comms;
    std::vector<const FlowPlan*> pending;
    for (size_t i = first; i < last; ++i) {
      const auto& flow = flows[i];
      comms.push_back(sg4::Comm::sendto_async(hosts[flow.src_endpoint], hosts[flow.dst_endpoint], wire_bytes(flow.bytes)));
      pending.push_back(&flow);
    }
    while (!comms.empty()) {
      const auto index = static_cast<size_t>(sg4::Comm::wait_any(comms));
      const FlowPlan& flow = *pending[index];
      comms[index] = comms.back();
      comms.pop_back();
      pending[index] = pending.back();
      pending.pop_back();
      double arrival_s = sg4::Engine::get_clock();
      if (floor_model())
        arrival_s = std::max(arrival_s, sent_s + flow.hops * options.platform.hop_latency_s + flow.extra_latency_s);
      if (options.record_hops) result.hops.push_back({op, rep, src, flow.dst_chip, sent_s, arrival_s, flow.bytes});
      auto& sent = last_delivery_s[{op, rep, src}];
      sent = std::max(sent, arrival_s);
      if (ops[op].plan->chips[flow.dst_chip].incoming_flows == 0) continue;   // nobody waits to receive
      auto key = std::make_tuple(op, rep, flow.dst_chip);
      last_arrival_s[key] = std::max(last_arrival_s[key], arrival_s);
      if (--pending_blocks[key] == 0) blocks_semaphore(op, rep, flow.dst_chip)->release();
    }
  }

  void wait_for_dependencies(int op, ChipId chip) {
    const ReplayOp& r = ops[op];
    const auto* after = &r.after;
    if (r.position_axis >= 0 && !r.after_at_position.empty()) {
      after = &r.after_at_position.at(topo.position_along(chip, r.position_axis));
    }
    for (int dep : *after) op_actors[dep][chip]->join();
    for (const auto& n : r.after_neighbour) {
      // The neighbour inside the line only: a pipeline never wraps round.
      if (auto from = topo.step_along(chip, n.axis, -n.direction)) op_actors[n.op][*from]->join();
    }
    if (r.release_s > sg4::Engine::get_clock()) sg4::this_actor::sleep_until(r.release_s);
  }

  void run_op(int op, ChipId chip) {
    wait_for_dependencies(op, chip);
    if (ops[op].plan == nullptr) {
      for (int rep = 0; rep < ops[op].repeat; ++rep) {
        const double start_s = sg4::Engine::get_clock();
        const auto& scale = options.chip_compute_scale;
        sg4::this_actor::sleep_for(ops[op].compute_s * (scale.empty() ? 1.0 : scale[chip]));
        result.spans.push_back({op, rep, chip, start_s, sg4::Engine::get_clock()});
      }
      return;
    }
    const ChipOpPlan& plan = ops[op].plan->chips[chip];
    for (int rep = 0; rep < ops[op].repeat; ++rep) {
      const double start_s = sg4::Engine::get_clock();
      if (options.launch_overhead_s > 0) sg4::this_actor::sleep_for(options.launch_overhead_s);
      std::vector<sg4::ActorPtr> children;
      for (size_t part = 0; part < plan.parts.size(); ++part) {
        children.push_back(sg4::Actor::create("p", hosts[chip], [this, op, rep, chip, part] {
          run_part(op, rep, chip, static_cast<int>(part));
        }));
      }
      for (size_t first = 0; first < plan.flows.size(); first += kFlowBatch) {
        const size_t last = std::min(plan.flows.size(), first + kFlowBatch);
        children.push_back(sg4::Actor::create("a2a", hosts[chip], [this, op, rep, chip, first, last] {
          run_flows(op, rep, chip, first, last);
        }));
      }
      result.messages += plan.flows.size();
      for (auto& actor : children) actor->join();
      if (plan.done_when_delivered) sg4::this_actor::sleep_until(last_delivery_s[{op, rep, chip}]);
      if (plan.incoming_flows > 0) {
        blocks_semaphore(op, rep, chip)->acquire();
        sg4::this_actor::sleep_until(last_arrival_s[{op, rep, chip}]);
      }
      result.spans.push_back({op, rep, chip, start_s, sg4::Engine::get_clock()});
    }
  }

  void start() {
    // Blocks each chip waits to receive, per repetition (only AllToAll ops have any).
    for (size_t op = 0; op < ops.size(); ++op) {
      if (!ops[op].plan) continue;
      for (ChipId chip = 0; chip < topo.chip_count(); ++chip) {
        const int incoming = ops[op].plan->chips[chip].incoming_flows;
        if (incoming == 0) continue;
        for (int rep = 0; rep < ops[op].repeat; ++rep) pending_blocks[{static_cast<int>(op), rep, chip}] = incoming;
      }
    }
    op_actors.assign(ops.size(), {});
    for (size_t op = 0; op < ops.size(); ++op) {
      for (ChipId chip = 0; chip < topo.chip_count(); ++chip) {
        op_actors[op].push_back(sg4::Actor::create("op", hosts[chip], [this, op, chip] {
          run_op(static_cast<int>(op), chip);
        }));
      }
    }
  }
};

// Every (source, destination) endpoint pair that exchanges a message, once.
std::vector<std::pair<int, int>> message_pairs(const std::vector<ReplayOp>& ops) {
  std::set<std::pair<int, int>> pairs;
  for (const auto& op : ops) {
    if (!op.plan) continue;
    for (const auto& chip : op.plan->chips) {
      for (const auto& part : chip.parts) {
        for (const auto& phase : part) {
          for (const auto& chain : phase) {
            if (chain.peer_endpoint >= 0) pairs.insert({chain.endpoint, chain.peer_endpoint});
          }
        }
      }
      for (const auto& flow : chip.flows) pairs.insert({flow.src_endpoint, flow.dst_endpoint});
    }
  }
  return {pairs.begin(), pairs.end()};
}

ReplayResult replay_in_process(const Topology& topo, const std::vector<Endpoint>& endpoints,
                               const std::vector<ReplayOp>& ops, const ReplayOptions& options) {
  // podsim logs through spdlog; SimGrid's own log stays quiet unless it is about to abort.
  int argc = 2;
  char name[] = "podsim";
  char quiet[] = "--log=root.thres:critical";
  char* argv[] = {name, quiet, nullptr};
  sg4::Engine engine(&argc, argv);
  // Actors alive at once: one per (op, chip) from the start, plus the short-lived ones of
  // the ops in flight (a few at a time: a program's ops mostly wait on each other).
  size_t max_actors = 0, largest_op = 0, collectives = 0;
  for (const auto& op : ops) {
    max_actors += topo.chip_count();
    if (!op.plan) continue;
    ++collectives;
    size_t transient = 0;
    for (const auto& chip : op.plan->chips) {
      transient += chip.parts.size() * 3 + chip.flows.size() / Runtime::kFlowBatch + 1;
    }
    largest_op = std::max(largest_op, transient);
  }
  max_actors += std::min<size_t>(16, collectives) * largest_op;
  configure_engine(engine, max_actors);
  std::vector<std::pair<int, int>> pairs;
  bool explicit_routes = false;
  for (const auto& op : ops) explicit_routes = explicit_routes || (op.plan && op.plan->repeats_links);
  if (explicit_routes) pairs = message_pairs(ops);
  Runtime runtime(topo, endpoints, ops, options,
                  build_platform(topo, endpoints, options.platform, explicit_routes ? &pairs : nullptr));
  runtime.start();
  const auto run_start = std::chrono::steady_clock::now();
  engine.run();
  runtime.result.simulation_wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();
  runtime.result.end_time_s = sg4::Engine::get_clock();
  size_t expected_spans = 0;
  for (const auto& op : ops) expected_spans += static_cast<size_t>(op.repeat) * topo.chip_count();
  if (runtime.result.spans.size() != expected_spans) {
    throw std::runtime_error("the simulation stopped with " + std::to_string(expected_spans - runtime.result.spans.size()) +
                             " collective instances unfinished (deadlock)");
  }
  auto& spans = runtime.result.spans;
  std::sort(spans.begin(), spans.end(), [](const SpanRecord& a, const SpanRecord& b) {
    return std::tie(a.op, a.repetition, a.chip) < std::tie(b.op, b.repetition, b.chip);
  });
  return std::move(runtime.result);
}

// --- A child process per simulation: SimGrid's engine is a process-wide singleton. ---

void write_all(int fd, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) _exit(3);
    p += n;
    size -= static_cast<size_t>(n);
  }
}

bool read_all(int fd, void* data, size_t size) {
  char* p = static_cast<char*>(data);
  while (size > 0) {
    ssize_t n = ::read(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

template <typename T>
void write_vector(int fd, const std::vector<T>& v) {
  uint64_t count = v.size();
  write_all(fd, &count, sizeof count);
  write_all(fd, v.data(), count * sizeof(T));
}

template <typename T>
bool read_vector(int fd, std::vector<T>& v) {
  uint64_t count = 0;
  if (!read_all(fd, &count, sizeof count)) return false;
  v.resize(count);
  return read_all(fd, v.data(), count * sizeof(T));
}

}  // namespace

ReplayResult replay(const Topology& topo, const std::vector<Endpoint>& endpoints, const std::vector<ReplayOp>& ops,
                    const ReplayOptions& options) {
  // Unflushed output would be written twice, once by each process.
  std::fflush(nullptr);
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error(std::string("pipe failed: ") + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    ::close(fds[0]);
    // The parent's handlers (a test framework's, say) must not run in the simulation process.
    for (int sig : {SIGABRT, SIGSEGV, SIGFPE, SIGILL, SIGBUS, SIGTERM, SIGINT}) std::signal(sig, SIG_DFL);
    ReplayResult result;
    try {
      result = replay_in_process(topo, endpoints, ops, options);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "podsim: simulation failed: %s\n", e.what());
      _exit(4);
    }
    write_vector(fds[1], result.spans);
    write_vector(fds[1], result.hops);
    write_all(fds[1], &result.messages, sizeof result.messages);
    write_all(fds[1], &result.end_time_s, sizeof result.end_time_s);
    write_all(fds[1], &result.simulation_wall_s, sizeof result.simulation_wall_s);
    ::close(fds[1]);
    _exit(0);
  }
  ::close(fds[1]);
  if (options.progress) {
    // Wait for the first byte of the result, reporting progress meanwhile.
    const auto start = std::chrono::steady_clock::now();
    pollfd waiting{fds[0], POLLIN, 0};
    while (::poll(&waiting, 1, 500) == 0) {
      options.progress(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
  }
  ReplayResult result;
  bool ok = read_vector(fds[0], result.spans) && read_vector(fds[0], result.hops) &&
            read_all(fds[0], &result.messages, sizeof result.messages) &&
            read_all(fds[0], &result.end_time_s, sizeof result.end_time_s) &&
            read_all(fds[0], &result.simulation_wall_s, sizeof result.simulation_wall_s);
  ::close(fds[0]);
  int status = 0;
  rusage usage{};
  while (::wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {
  }
  result.peak_rss_bytes = 1024.0 * static_cast<double>(usage.ru_maxrss);   // KiB on Linux
  if (!ok || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error("the simulation process failed (status " + std::to_string(status) + ")");
  }
  return result;
}

}  // namespace podsim
