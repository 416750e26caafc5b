#pragma once
// Pipeline parallelism (3D with data/FSDP and tensor parallelism inside each stage): the
// program every chip runs, its pass order set per stage by the schedule (pipeline_schedule.hpp).
// Internal to workloads/: training.cpp calls it for plans with a pipeline axis.
#include "workloads/training.hpp"

namespace podsim {

// Throws std::invalid_argument naming what a pipeline plan cannot do.
void check_pipeline(const TransformerSpec& model, const TrainingPlan& plan, const TopologySpec& topology);

// Fills layout.pipeline_stages, optimizer_s, total_flops and recompute_flops.
Program pipeline_program(const TransformerSpec& model, const TrainingPlan& plan, const TopologySpec& topology,
                         TrainingLayout& layout);

}  // namespace podsim
