#pragma once
// `podsim perf`: nccl-tests' size sweep (`all_gather_perf -b 8 -e 128M -f 2`) over the
// operations of a collectives scenario. Each operation runs alone at each size, one simulation
// per size, and the table comes out in nccl-tests' layout (src/util.cu), so what parses
// nccl-tests' output parses this.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "collectives/collective.hpp"
#include "sim/engine/run.hpp"
#include "sim/scenario/scenario.hpp"

namespace podsim {

// nccl-tests' size flags, as given (text kept for messages). Defaults are nccl-tests': -b and
// -e 32M, and without -f a fixed step of -i 1M.
struct PerfSizeFlags {
  std::string begin = "32M", end = "32M";
  std::string factor;      // -f; empty when not given
  std::string increment;   // -i; empty when not given
};

// A size as nccl-tests reads one (src/common.cu parsesize: "8", "1K", "128M", "1G", with K, M
// and G binary, a fraction allowed: "1.5K") or as podsim's scenarios write one ("8 MiB",
// "1 GB", "512 B"). It must come to a whole, positive number of bytes (nccl-tests accepts 0;
// a collective of nothing has nothing to simulate). Throws InputError naming `flag`.
uint64_t parse_perf_size(const std::string& flag, const std::string& text);

// The sizes nccl-tests runs (src/common.cu TimeTest): from -b while <= -e, times -f when it is
// above 1, else plus -i. Throws InputError (located at the flag) for -b > -e, a factor below 2
// without -i, both -f and -i, or more than kMaxPerfSizes sizes.
struct PerfSizes {
  std::vector<uint64_t> sizes_bytes;
  uint64_t begin_bytes = 0, end_bytes = 0;   // -b and -e
  std::string step;        // as nccl-tests' header prints it: "2(factor)" or "1048576(bytes)"
};
constexpr size_t kMaxPerfSizes = 1000;
PerfSizes perf_sizes(const PerfSizeFlags& flags);

struct PerfOptions {
  PerfSizeFlags sizes;
  std::string datatype;    // -d: nccl-tests' or podsim's name; empty: each operation's own
  Fidelity fidelity = Fidelity::Auto;
  std::function<void(int finished, int total, double eta_s)> on_progress;   // as SweepOptions'
};

struct PerfRow {
  uint64_t size_bytes = 0;   // nccl-tests' size (nccl_size_bytes)
  uint64_t count = 0;        // nccl-tests' count (nccl_count_elements)
  double time_s = 0;
  double algbw_Bps = 0;
  double busbw_Bps = 0;
  double analytic_s = 0;     // the book's formula; 0 where none applies
};

struct PerfOperation {
  std::string name;
  CollectiveKind kind = CollectiveKind::AllGather;
  std::string axes;          // "X,Y", with "DCN" when it crosses slices
  int group_size = 1;        // nccl-tests' nranks
  std::string type;          // nccl-tests' name where it has one ("bfloat16"), else podsim's
  int element_bits = 32;
  std::string redop;         // "sum" for AllReduce and ReduceScatter, "none" otherwise
  std::string fidelity;      // "reduced" or "full", as the first size ran
  int simulated_chips = 0;
  std::vector<PerfRow> rows;
  double avg_busbw_Bps = 0;  // nccl-tests' "Avg bus bandwidth": the mean of the rows' busbw
  uint64_t unit_bytes = 1;   // sizes are rounded down to this (whole elements on every rank)
  int below_unit = 0;        // sizes asked for that round to 0 bytes: left out
};

struct PerfResult {
  std::string scenario_name, scenario_path, chip, hop_model;
  int chips = 0;
  uint64_t min_bytes = 0, max_bytes = 0;
  std::string step;
  std::vector<PerfOperation> operations;
};

// Runs every operation of a collectives scenario at every size (its `expect:` and each
// operation's repeat and `after` are ignored). Throws InputError for a scenario of another
// kind, an unknown -d, or a size an operation's group cannot split into whole elements.
PerfResult run_perf(const Scenario& scenario, const PerfOptions& options);

// nccl-tests' table: "#" header lines, a row per size, "# Avg bus bandwidth : X" per operation.
std::string perf_table(const PerfResult& result);
// The same rows, one per operation and size, in SI units.
std::string perf_csv(const PerfResult& result);

}  // namespace podsim
