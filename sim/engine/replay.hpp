#pragma once
// Replays planned collectives on SimGrid with one actor per chip, each an event loop over its
// own ops, messages and timers (docs/modelling.md, "The full replay"). Nothing about the result
// is computed here: every time comes out of SimGrid's clock.
#include <algorithm>
#include <cstdint>
#include <chrono>
#include <functional>
#include <vector>

#include "collectives/hop_plan.hpp"
#include "sim/engine/platform.hpp"
#include "workloads/program.hpp"

namespace podsim {

struct ReplayOp {
  const OpPlan* plan = nullptr;   // a collective's messages; null for compute
  double compute_s = 0;           // compute: busy time on the chip
  std::vector<double> compute_s_by_chip;   // compute: per simulated chip, when chips differ
  int repeat = 1;
  std::vector<int> after;   // indices of ops that must finish on a chip before this starts there
  int position_axis = -1;   // with after_at_position: `after` by the chip's position on it
  std::vector<std::vector<int>> after_at_position;
  std::vector<NeighbourDependency> after_neighbour;   // ops of a neighbouring chip
  double release_s = 0;     // earliest start (ProgramOp::release_s)
  // By the chip's position on position_axis: whether the op runs there (empty: everywhere).
  // Where absent it ends when its dependencies allow, at once (ProgramOp::present_at_position).
  std::vector<char> present_at_position;
  // A host transfer (ProgramOpKind::HostTransfer): compute_s is its time on the chip's PCIe DMA,
  // which a slow chip's compute (chip_compute_scale) does not stretch.
  bool host_transfer = false;
};

struct SpanRecord {         // one repetition of one op on one chip
  int op = 0;
  int repetition = 0;
  ChipId chip = 0;
  double start_s = 0;
  double end_s = 0;
};

struct HopRecord {          // one message, from send to arrival (after the latency floor)
  int op = 0;
  int repetition = 0;
  ChipId src_chip = 0;
  ChipId dst_chip = 0;
  double start_s = 0;
  double end_s = 0;
  double bytes = 0;
};

struct ReplayResult {
  std::vector<SpanRecord> spans;   // sorted by (op, repetition, chip)
  std::vector<HopRecord> hops;     // only when asked for
  uint64_t messages = 0;           // simulated messages (ring hops + AllToAll blocks)
  double end_time_s = 0;
  double simulation_wall_s = 0;    // wall time inside SimGrid's run loop (not platform building)
  double peak_rss_bytes = 0;       // of the simulation process
};

// How far a simulation has got. Its work is the messages it sends and the op instances (one
// repetition of one op on one simulated chip) it finishes; `total` is the work of the whole run,
// known from the plans before it starts (messages per repetition, OpPlan::messages).
struct SimulationProgress {
  uint64_t done = 0;
  uint64_t total = 0;
  double wall_s = 0;   // since the simulation started
  double fraction() const { return total == 0 ? 1.0 : std::min(1.0, double(done) / double(total)); }
};

// Which replay runs a simulation: SimGrid's actors (chip_loop.hpp) or podsim's own event loop
// over a fluid network (native_replay.hpp), which follows the same rules without simcalls.
// Auto (RunOptions only): the native replay where it covers the program, else SimGrid's.
enum class ReplayEngine { SimGrid, Native, Auto };

struct ReplayOptions {
  ReplayEngine engine = ReplayEngine::SimGrid;
  PlatformOptions platform;
  double launch_overhead_s = 0;
  bool record_hops = false;
  // Per simulated chip, the factor on its compute ops' time (slow chips); empty: all 1.
  std::vector<double> chip_compute_scale;
  // Called in the calling process while the simulation runs (in a process of its own), at most
  // once per progress_interval_s of wall time, with `done` never decreasing, and once more when
  // it has ended, with everything done.
  std::function<void(const SimulationProgress&)> progress;
  double progress_interval_s = 0.25;
};

// Replays `ops` in a child process (SimGrid's engine is a process-wide singleton) and waits
// for its result: start_replay, then finish_replay.
ReplayResult replay(const Topology& topo, const std::vector<Endpoint>& endpoints, const std::vector<ReplayOp>& ops,
                    const ReplayOptions& options);

// A simulation started and not yet finished. One thread can run several side by side, waiting
// with wait_readable (child_process.hpp) on their result_fd (readable once the result, or the
// child's end, is there).
// Started from a process with one thread only: a fork copies the locks other threads hold.
struct ReplayChild {
  int pid = -1;
  int result_fd = -1;
  int progress_fd = -1;            // -1 unless options.progress
  uint64_t progress_total = 0;
  std::chrono::steady_clock::time_point started;
};
ReplayChild start_replay(const Topology& topo, const std::vector<Endpoint>& endpoints,
                         const std::vector<ReplayOp>& ops, const ReplayOptions& options);
// Waits for the child (reporting progress as replay does), reads its result and reaps it;
// `child` is spent afterwards. Throws std::runtime_error if the simulation failed.
ReplayResult finish_replay(ReplayChild& child, const ReplayOptions& options);
// Kills and reaps a child not finished (when its result is no longer wanted); no-op if spent.
void cancel_replay(ReplayChild& child);

// What a simulation process's wait status means, in words, with what to try (a SIGKILL is
// most often the out-of-memory killer).
std::string describe_simulation_exit(int status, double peak_rss_bytes);

}  // namespace podsim
