#pragma once
// What a training step's timeline says: step time, MFU, compute, and the communication the
// compute could not hide, read off the simulated spans of one chip.
#include <map>
#include <string>
#include <vector>

#include "sim/engine/run.hpp"
#include "sim/report/chip_breakdown.hpp"
#include "sim/scenario/scenario.hpp"
#include "workloads/training.hpp"

namespace podsim {

struct LayerCost {          // one block of a representative layer, fwd + bwd
  std::string block;        // "attn", "mlp"
  double t_math_s = 0;      // simulated compute time
  double t_comms_s = 0;     // simulated time of its collectives, summed
  double book_t_math_s = 0; // FLOPs / (C * efficiency)
  double book_t_comms_s = 0;// the book's closed forms for the same collectives, summed
  double t_math_forward_s = 0;   // the forward pass alone (the book's per-layer forms are forward)
  double t_comms_forward_s = 0;
};

struct TrainingReport {
  std::string strategy;
  double step_time_s = 0;
  // The critical chip's breakdown (ChipBreakdown: compute + exposed + wait for peers = the
  // step), the chip the step waited on; chip 0 where the chips run alike.
  ChipId breakdown_chip = 0;
  double compute_time_s = 0;            // busy time of its compute units
  double exposed_comm_s = 0;            // step time its compute units wait on communication
  // exposed_comm_s split by mesh axis ("X", ...), "DCN", and "pipeline_bubble" or "other"
  // (waits on compute elsewhere); the parts sum to exposed_comm_s.
  std::map<std::string, double> exposed_comm_by_axis_s;
  // The same split by what the waits were for (the ops' categories: "fsdp_allgather",
  // "moe_dispatch", "moe_combine", ...; "other" for compute elsewhere).
  std::map<std::string, double> exposed_comm_by_category_s;
  double wait_for_peers_s = 0;          // step time it waited for late peers
  std::map<std::string, double> wait_for_peers_by_axis_s;
  std::map<std::string, double> wait_for_peers_by_category_s;
  // Chip 0's, the slowest chip's and the critical chip's breakdowns, in that order.
  std::vector<ChipBreakdown> views;
  double exposed_all_to_all_s = 0;      // MoE: exposed waits on the dispatch and combine AllToAlls
  double all_to_all_time_s = 0;         // MoE: chip 0's time inside them (overlapped or not)
  double mfu = 0;                       // useful FLOPs / (chips x peak x step time)
  // Hardware FLOPs utilisation: with the FLOPs rematerialisation reruns (equal to mfu without).
  double hfu = 0;
  double recompute_flops = 0;
  // With a token budget: ceil(budget / batch) steps at the simulated step time, and with a chip
  // price, chips x hours x price (0 when not given).
  double steps_to_train = 0;
  double time_to_train_s = 0;
  double training_cost_usd = 0;
  double tokens_per_s_per_chip = 0;
  // As MaxText and Megatron log it: model FLOPs per second per chip (mfu x peak), and the
  // model's parameter count.
  double tflops_per_s_per_chip = 0;
  double parameters = 0;
  double total_flops = 0;
  // Pipelines: the idle share of the first stage between its first forward and its last
  // backward ((P-1)/(M+P-1) when communication is negligible); 0 without a pipeline.
  double pipeline_bubble_fraction = 0;
  std::vector<LayerCost> per_layer;
  MemoryBreakdown memory;
  // The most memory chip 0 held at one moment: weights, gradients and optimizer state, plus
  // what the timeline had live (ProgramOp::holds_bytes from start to release), and when.
  double memory_peak_bytes = 0;
  double memory_peak_at_s = 0;
  bool fits_hbm = true;
  bool moe = false;
  MoeStepStats moe_stats;
};

TrainingReport training_report(const TrainingWorkload& workload, const TrainingLayout& layout, const Program& program,
                               const RunResult& run);

// A run's length in words, as the run and plan tables print it: "476838 steps, 72.7 days" and,
// with a cost, ", $4.687e+05 at $4.2 per chip-hour" and ` (origin)` where one is given.
std::string time_to_train_text(const TrainingReport& report, double chip_hour_price_usd, const std::string& origin = "");

}  // namespace podsim
