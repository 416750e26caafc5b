#pragma once
// Runs a per-chip program: plan on the symmetry-reduced (or full) mesh, replay on SimGrid,
// and map every chip's timings back to the real pod. Takes a TopologySpec, settings and a
// Program, never a Scenario, so the engine builds without the YAML layer
// (sim/commands/scenario_run turns a scenario into these).
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "collectives/formulas.hpp"
#include "collectives/symmetry.hpp"
#include "sim/engine/operation_result.hpp"
#include "sim/engine/peer_entries.hpp"
#include "sim/engine/replay.hpp"
#include "workloads/program.hpp"

namespace podsim {

enum class Fidelity {
  Auto,   // symmetric reduction where it is provably exact, else the full replay
  Full,   // every chip, every hop
};

struct RunOptions {
  Fidelity fidelity = Fidelity::Auto;
  bool record_hops = false;
  // Work done of the run's total while it runs (ReplayOptions::progress, which says when).
  std::function<void(const SimulationProgress&)> progress;
  double progress_interval_s = 0.25;
  ReplayEngine engine = ReplayEngine::Auto;
};

struct RunResult {
  Topology topology;                   // the real pod
  Topology simulated;                  // what SimGrid ran (== topology under full fidelity)
  SymmetryReduction reduction;
  std::vector<OperationResult> operations;
  ReplayResult replay;                 // spans and hops on the simulated mesh
  double total_time_s = 0;
  double wall_time_s = 0;
  std::string fidelity;                // "full" or "reduced", as used

  std::vector<size_t> first_span;      // index in replay.spans of each op's first span
  std::string engine;                  // "native" or "simgrid", as used
  PeerEntries peers;                   // when each collective instance's last chip entered it
  std::vector<ChipId> real_of_simulated;        // the lowest real chip each simulated chip stands for
  std::vector<long long> chips_of_simulated;    // how many real chips each stands for

  // Span of (op, repetition) on a real chip.
  const SpanRecord& span(int op, int repetition, ChipId real_chip) const;
  // Whether op runs on a real chip (OperationResult::present_at_position).
  bool present(int op, ChipId real_chip) const;
  // When the last chip of real_chip's instance of a collective entered it, and which chip (a
  // real chip of the class that did, lowest first); compute and sends: the chip's own start.
  std::pair<double, ChipId> last_entry(int op, int repetition, ChipId real_chip) const;
  // What a late peer added to the chip's span of (op, repetition): the time from its entry to
  // its instance's last entry, at most the span (docs/modelling.md, "Waiting for peers").
  double wait_for_peers_s(int op, int repetition, ChipId real_chip) const;
};

struct SimulationSettings {
  HopModel hop_model = HopModel::Floor;
  double link_efficiency = 1.0;
  double launch_overhead_s = 0.0;
};

// The mesh a program is simulated on: symmetry-reduced where that is exact (and allowed by
// `fidelity`), else the whole pod. run_program starts here; so does the preflight estimate.
SymmetryReduction reduce_program(const TopologySpec& topology, const SimulationSettings& settings,
                                 const Program& program, Fidelity fidelity);

// Runs one per-chip program on a pod: start_program, then finish_program.
RunResult run_program(const TopologySpec& topology, const SimulationSettings& settings, const Program& program,
                      const RunOptions& options);

// A program whose simulation runs (in a child process, ReplayChild) while the caller does
// other work: several can run side by side from one thread, polled on child.result_fd.
// `topology` and `program` must outlive it. Moving it keeps ops' pointers into plans valid
// (a moved vector keeps its elements where they are).
struct PendingRun {
  const TopologySpec* topology = nullptr;
  SimulationSettings settings;
  const Program* program = nullptr;
  std::chrono::steady_clock::time_point wall_start;
  std::optional<RunResult> run;        // the meshes and reduction; finish_program adds the rest
  std::vector<OpPlan> plans;
  std::vector<ReplayOp> ops;
  std::vector<ChipId> endpoint_chip;   // the chip of each endpoint the plans name
  ReplayOptions replay_options;
  ReplayChild child;
};
// Plans the program's replay and starts it; throws as run_program does before simulating.
PendingRun start_program(const TopologySpec& topology, const SimulationSettings& settings, const Program& program,
                         const RunOptions& options);
RunResult finish_program(PendingRun& pending);

// The axes of a collective as the formulas see them (size and wraparound of each ring).
std::vector<AxisInfo> collective_axes(const Topology& topo, const CollectiveSpec& spec);

// Chips taking part in one instance of a collective: the product of its rings' sizes, times
// the slices when it crosses DCN.
int collective_group_size(const Topology& topo, const CollectiveSpec& spec);

// The book's formula for one operation on a pod (has_analytic false where none applies).
bool analytic_time(const Topology& topo, const CollectiveSpec& spec, double link_bandwidth_Bps,
                   double hop_latency_s, FormulaResult& out);

}  // namespace podsim
