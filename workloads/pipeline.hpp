#pragma once
// Pipeline parallelism (3D with data/FSDP and tensor parallelism inside each stage): the
// program every chip runs, its pass order set per stage by the schedule (pipeline_schedule.hpp).
// Internal to workloads/: training.cpp calls it for plans with a pipeline axis.
#include "workloads/training.hpp"

namespace podsim {

// Model layers of pipeline chunk c of `chunks` (chunk j of stage p is chunk jP + p): ceil(L/C)
// for the first L mod C chunks, floor(L/C) for the rest; and the chunk's first layer.
int pipeline_chunk_layers(int layers, int chunks, int c);
int pipeline_chunk_first_layer(int layers, int chunks, int c);

// Whether every chunk holds alike layers: as many, and no MoE model's dense first layers.
bool pipeline_stages_alike(const TransformerSpec& model, int chunks);

// The parameters stage p holds (its chunks' layers; the embeddings, output projection and
// final norm spread evenly over the stages): routed experts apart, as they shard differently.
struct StageWeights {
  int layers = 0;
  double dense_params = 0;    // attention, dense MLPs, routers and shared experts, the spread share
  double routed_params = 0;   // routed experts
};
std::vector<StageWeights> pipeline_stage_weights(const TransformerSpec& model, int stages, int virtual_stages);

// Throws std::invalid_argument naming what a pipeline plan cannot do.
void check_pipeline(const TransformerSpec& model, const TrainingPlan& plan, const TopologySpec& topology);

// Fills layout.pipeline_stages, optimizer_s, total_flops and recompute_flops.
Program pipeline_program(const TransformerSpec& model, const TrainingPlan& plan, const TopologySpec& topology,
                         TrainingLayout& layout);

}  // namespace podsim
