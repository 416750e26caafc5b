#pragma once
// What an op is for in the workload: the reports and the engine branch on this (exposed
// communication by role, a pipeline's passes, an MoE step's AllToAlls, serving's attention
// stagger), so a misspelt role is a compile error, not a silently misattributed second. The
// names outputs print (operations.csv's category, exposed_comm_by_category_s) are derived.
#include <string>
#include <string_view>

#include "collectives/collective.hpp"

namespace podsim {

enum class OpRole {
  Unassigned,          // an op no workload role fits (a test's hand-built program)
  ScenarioCollective,  // a collective a scenario lists by name: outputs name it by its kind
  // Compute.
  Forward,             // a training block's forward pass
  Backward,            // its backward (input and weight gradients; ZB-H1 splits off the latter)
  Recompute,           // the forward rerun before the backward (rematerialisation)
  Optimizer,           // the optimizer's update of this chip's shard
  Attention,           // an inference step's attention block (projections, scores over the cache)
  Mlp,                 // an inference step's MLP block (or an MoE layer's router and shared experts)
  Unembed,             // an inference step's output projection
  Experts,             // an MoE layer's routed experts on this chip
  PipelineReceive,     // a zero-length op that receives a pipeline send (a send has one receiver)
  RingReceive,         // the same for a ring-attention K/V block
  CollectiveReduction, // a ReduceScatter's or AllReduce's additions on the TensorCore
  // Communication.
  TensorAllGather,     // Megatron: activations gathered over the tensor (model) axes before a
                       // block; 2D weight-stationary's gathers
  TensorReduceScatter, // and its partial sums scattered after it
  TensorAllReduce,     // 2D weight-stationary: the first matmul's partial sums over the X axes
  KvAllToAll,          // inference: Q to batch sharding and the output back (cache sharded by batch)
  FsdpAllGather,       // FSDP: a block's weights gathered over the data axes before use
  FsdpReduceScatter,   // FSDP: its gradients scattered after the backward
  DataAllReduce,       // plain data parallelism: gradients all-reduced
  ZeroAllGather,       // ZeRO-1/2: updated shards gathered back after the optimizer
  ZeroReduceScatter,   // ZeRO-1/2: gradients scattered to the shard owners
  DcnAllReduce,        // gradients (or shards) all-reduced across slices over DCN
  MoeDispatch,         // MoE: tokens to their experts' chips (and gradients back)
  MoeCombine,          // MoE: expert outputs back (and output gradients to the experts)
  PipelineSend,        // activations (gradients) to the next (previous) stage
  RingSend,            // ring attention: a K/V block to the neighbour on the context axis
  HostOffload,         // remat `offload`: a block's saved activations to host memory (forward)
  HostPrefetch,        // and back to HBM before the block's backward
};

// The name outputs print for a role ("fsdp_allgather", "forward", ...); empty for
// ScenarioCollective and Unassigned.
std::string_view role_name(OpRole role);

// What outputs call an op's group (operations.csv's category): its role's name, or for a
// scenario's own collective, its kind ("all_gather").
std::string category_name(OpRole role, CollectiveKind kind);

// The compute of a training pass (forward, backward or its recompute): a pipeline stage's
// busy time and the book's T_math count these.
bool is_training_pass(OpRole role);

// An MoE layer's AllToAlls (dispatch or combine), forward or backward.
bool is_moe_all_to_all(OpRole role);

}  // namespace podsim
