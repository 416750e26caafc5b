#pragma once
// Training steps as per-chip programs: the book's per-layer algorithms for data parallelism,
// FSDP (ZeRO-3), tensor (Megatron) parallelism and FSDP+TP, forward and backward
// (training.md, "Data parallelism" .. "Combining FSDP and tensor parallelism").
//
// Where the book puts the collectives:
//  - DP: gradients AllReduced over the data axes as each layer's backward finishes,
//    asynchronously; the optimizer waits for all of them.
//  - FSDP: each layer's weights AllGathered over the data axes before its forward and again
//    before its backward, prefetched one layer ahead; gradients ReduceScattered
//    asynchronously after each layer's backward.
//  - Pipeline: stages along one axis, each holding L/P layers (in v chunks when interleaved);
//    microbatches' activations sent forward stage to stage and their gradients back (a
//    point-to-point send to the neighbour), scheduled GPipe, 1F1B, interleaved 1F1B or ZB-H1
//    (pipeline_schedule.hpp); inside a stage, data/FSDP and tensor parallelism as above
//    (3D parallelism), gradients reduced over the data axes after each block's last backward.
//  - TP: activations AllGathered over the tensor axes before a block's first matmul and its
//    partial sums ReduceScattered after the second, forward and backward; blocking.
// Overlap is not assumed anywhere: the program only states dependencies, and what overlaps
// comes out of the simulated timeline.
#include <optional>
#include <string>
#include <vector>

#include "topology/topology.hpp"
#include "workloads/memory.hpp"
#include "workloads/model_spec.hpp"
#include "workloads/moe_routing.hpp"
#include "workloads/pipeline_schedule.hpp"
#include "workloads/program.hpp"
#include "workloads/remat_policy.hpp"

namespace podsim {

// Where sharded gradients' all-reduce over DCN runs (`parallelism.dcn_sync`).
enum class DcnSync {
  // Behind each block's gradient ReduceScatter, nothing waiting on it but the optimizer.
  PerBlock,
  // All after the whole backward, one after another: XLA's while-loop all-reduce code motion
  // hoists them out of a scanned layer stack's backward loop (MaxText's `scan_layers`), so they
  // no longer hide under the backward.
  AfterBackward,
  // XLA's collective pipeliner on the scanned backward loop (MaxText's
  // --xla_tpu_enable_data_parallel_all_reduce_opt with
  // --xla_tpu_data_parallel_opt_different_sized_ops): each layer's all-reduces are pushed into
  // the next iteration and run beside the next layer's backward, one after another on the DCN;
  // an iteration ends when both are done, so the layer after waits for them, and the last
  // layer's are peeled after the loop. Exposed: what exceeds the next layer's backward.
  Pipelined,
};

struct TrainingPlan {
  std::vector<int> data_axes;       // mesh axes the batch is split over
  std::vector<AxisSlice> data_slices;   // empty, or per data axis: the part of it used
                                        // (a device mesh reshape: inner block or outer ring)
  bool fsdp = false;                // shard weights, grads and optimizer state over data_axes
  // ZeRO-1 (optimizer state) or ZeRO-2 (and gradients) sharded over the data axes, the weights
  // replicated: gradients ReduceScattered, each replica updating its shard, the updated
  // weights AllGathered after the optimizer. 0: plain data parallelism (or FSDP, ZeRO-3).
  int zero_stage = 0;
  // Context parallelism: one of data_axes (a whole axis) splits each sequence instead of the
  // batch: every chip of it holds S/CP tokens of each sequence, weights and gradients are
  // synchronised over it like a data axis, and attention passes K/V blocks round it (ring
  // attention, overlapped with the scores). -1: none.
  int context_axis = -1;
  // MoE models: the mesh axes experts are split over (expert parallelism), a subset of the
  // data axes (whole axes): tokens are data-parallel outside the MoE blocks and an AllToAll
  // over these axes takes each to its experts' chips and back. Expert weights are sharded
  // FSDP-wise over the other data axes only.
  std::vector<int> expert_axes;
  MoeRouting routing;
  std::vector<int> tensor_axes;     // Megatron axes
  std::vector<AxisSlice> tensor_slices; // as data_slices
  bool tensor_overlap = false;      // collective matmuls: TP gathers/scatters overlap the matmuls
  bool dcn_data_parallel = false;   // slices add data parallelism: batch split over them too,
                                    // gradients reduced across them over DCN (hierarchically)
  // MaxText's dcn_fsdp_parallelism = the slices: the slices join the FSDP axis. The batch is
  // split over them, weights, gradients and optimizer state are sharded over the slice's data
  // axes x the slices, each block's gather runs over DCN then ICI (a shard of 1/(ici x slices)
  // from each slice, then within the slice) before its forward and again before its backward,
  // and its gradients are reduce-scattered over ICI then DCN; no DCN all-reduce.
  bool dcn_fsdp = false;
  // Where sharded gradients' all-reduce over DCN runs (DcnSync).
  DcnSync dcn_sync = DcnSync::PerBlock;
  int pipeline_axis = -1;           // stages along this axis (its size), Topology::kSliceAxis
                                    // for one stage per slice, -1 for none
  PipelineSchedule schedule = PipelineSchedule::OneFOneB;
  int virtual_stages = 1;           // model chunks per device (interleaved 1F1B only)
  double global_batch_tokens = 0;   // tokens per step, whole pod
  int sequence_length = 2048;
  int microbatches = 1;             // gradient accumulation steps
  Checkpointing checkpointing = Checkpointing::Book;
  // A remat policy by MaxText's name (remat_policy.hpp) in place of `checkpointing`: what each
  // layer keeps, offloads or recomputes, kernel by kernel (layer_kernels.hpp).
  std::optional<RematPolicy> remat;
  double matmul_efficiency = 1.0;   // fraction of the roofline a matmul achieves
  bool attention_flops = true;      // count the QK^T and AV matmuls
  AttentionRun attention_run;        // how the kernels model runs attention (layer_kernels.hpp)
  MatmulQuantization quantization;   // int8 weight matmuls (MaxText's quantization: int8; layer_kernels.hpp)
  // MaxText's num_vocab_tiling (src/maxtext/utils/vocabulary_tiling.py at e591f30): the
  // output projection and loss run over the microbatch's tokens in this many tiles in a scan,
  // so one tile's logits live at a time; the backward recomputes each tile's logits; the output
  // head's weights are gathered once, in their stored dtype, and kept for the backward. 1: off.
  int num_vocab_tiling = 1;
};

// Whether the slices split the batch: data parallelism or FSDP over DCN.
inline bool slices_split_batch(const TrainingPlan& plan) { return plan.dcn_data_parallel || plan.dcn_fsdp; }

// One weight block of the model: a layer's attention or MLP, or the output projection.
struct TrainingBlock {
  std::string name;                 // "L3.attn", "L3.mlp", "unembed"
  int layer = -1;
  double params = 0;                // weights of the whole block (unsharded)
  double forward_flops_per_chip = 0;
  double score_flops_per_chip = 0;     // of which attention scores (QK^T, AV): no weights
  double forward_bytes_per_chip = 0;   // HBM traffic: weights and activations
  double forward_s = 0;
  double backward_s = 0;
  // Rematerialisation: the forward this block reruns before its backward because the
  // checkpointing policy did not keep its intermediates (model_blocks says which; 0: none).
  double recompute_s = 0;
  double recompute_flops_per_chip = 0;
  // Whether the recompute reruns a weight matmul (and so the block's tensor-parallel gather and
  // scatter); a policy that keeps every matmul's output reruns vector work and attention only.
  bool recompute_collectives = true;
  bool recompute_attention = true;     // it reruns the scores (under context parallelism, the ring)
  int moe_layer = -1;                  // an MoE layer's MLP block: its index among the MoE layers
                                       // (params, FLOPs and V are then the router and shared experts;
                                       // the routed experts are workloads/moe_training.hpp's)
  double weight_bytes_per_group = 0;   // V of the FSDP AllGather
  // The FSDP gather before the forward is kept for the backward, not gathered again (the output
  // head under vocabulary tiling: its gathered weights are a residual of the tiled loss).
  bool gather_kept_for_backward = false;
  // V of the gradient reduction: the gradients' dtype (fp32 when accumulated so: Megatron's
  // main grads, MaxText's float32 weights), else the weights'.
  double gradient_bytes_per_group = 0;
  // Ring attention (context parallelism): the scores run in `context_steps` steps, one per
  // K/V block of the ring, each chip sending its neighbour `context_kv_bytes` between steps
  // (forward; the backward sends K/V and their gradients, twice as much). 1: no ring. MLA's
  // blocks are its latent and rotary key, each received one up-projected before its step:
  // `ring_unpack_*`, in forward_flops_per_chip and forward_s beside the scores (0 for GQA).
  int context_steps = 1;
  double context_kv_bytes = 0;
  double score_forward_s = 0;          // the part of forward_s that is the scores
  double ring_unpack_flops_per_chip = 0;
  double ring_unpack_s = 0;
  double activation_bytes_per_group = 0;  // V of the TP AllGather / ReduceScatter
  // The saved activations the remat policy offloads (`offload`), this chip's for one microbatch:
  // to host memory after the block's forward, back before its backward (training_pass.hpp).
  double offload_bytes_per_chip = 0;
};

// What an MoE step's routing did, over every MoE layer and microbatch (zero for a dense model).
struct MoeStepStats {
  int expert_degree = 1;                 // expert-parallel chips: the product of the expert axes
  int experts_per_chip = 0;              // routed experts each chip holds (E / expert_degree)
  double dropped_fraction = 0;           // token-expert assignments past an expert's capacity
  double busiest_expert_over_mean = 0;   // busiest expert's kept tokens / the mean, averaged
  double busiest_chip_over_mean = 0;     // the same per expert-parallel chip (what a step waits for)
  double max_busiest_chip_over_mean = 0; // the worst layer's
  // Bytes one chip sends other chips at one dispatch (and at one combine), mean over layers
  // and microbatches: tokens x k x D x bytes x (EP-1)/EP under uniform routing.
  double dispatch_bytes_per_chip = 0;
  int moe_layers = 0;
  // Under FSDP of the experts: one MoE layer's routed-expert weights each chip gathers (bytes,
  // in the matmuls' dtype), and whether those gathers run one at a time (each after the
  // previous MoE layer's experts have computed and freed theirs) because prefetching a layer
  // ahead does not fit HBM: XLA's scheduler keeps to the memory limit (training.cpp).
  double expert_gather_bytes = 0;
  bool serial_expert_gathers = false;
  // The routed experts' compute over the step, forward and backward, on a chip of mean load and
  // on each layer's busiest chip: if every MoE layer waits for its busiest chip, the step is
  // (busiest - mean) longer than with even routing (the formula skewed runs are checked against).
  double expert_compute_mean_s = 0;
  double expert_compute_busiest_s = 0;
};

struct TrainingLayout {
  int data_degree = 1;                 // batch shards: ICI data axes x slices (with DCN data parallelism)
  int ici_data_degree = 1;             // batch shards within a slice
  int fsdp_degree = 1;                 // chips FSDP shards the weights over: ici_data_degree, x the
                                       // slices under dcn_fsdp (1 without FSDP)
  int tensor_degree = 1;
  int context_degree = 1;              // chips each sequence is split over (context parallelism)
  int chips = 1;
  double tokens_per_data_shard = 0;    // per step
  double tokens_per_microbatch = 0;    // per data shard
  double total_flops = 0;              // useful FLOPs of one step, whole pod (MFU's)
  double recompute_flops = 0;          // FLOPs rerun by rematerialisation, whole pod (HFU adds them)
  double optimizer_s = 0;
  std::vector<TrainingBlock> blocks;   // forward order
  MemoryBreakdown memory;
  bool fits_hbm = true;
  std::string strategy;                // "DP", "FSDP", "TP", "FSDP+TP", "PP", ...
  int pipeline_stages = 1;
  MoeStepStats moe;
};

// HBM bytes the optimizer moves per parameter it updates: it reads the gradient (its dtype),
// reads and writes the moments and the weights it updates (the fp32 master copy where kept,
// else the stored weights: fp32 under MaxText's weight_dtype float32), and writes the
// matmuls' bf16 copy where a master copy is kept apart. bf16 throughout: 2 + 16 + 4 = 22.
double optimizer_bytes_per_param(const TransformerSpec& model);

// Pipeline stages: the pipeline axis's size, or one per slice (Topology::kSliceAxis).
int stage_count(const TrainingPlan& plan, const TopologySpec& topology);

// The optimizer's pass over this chip's share of the parameters (`stages` pipeline stages of
// the model, split over the tensor axes, over the slice's data axes under FSDP or ZeRO-1/2, the
// routed experts over the expert axes unless FSDP shards them): it reads gradients, parameters
// and moments and writes parameters and moments, at HBM speed.
double optimizer_time_s(const TransformerSpec& model, const TrainingPlan& plan, const TopologySpec& topology,
                        const TrainingLayout& layout, int stages);
// The same pass over given parameters of one pipeline stage (the stages differ: uneven layer
// counts, dense first layers): the routed ones sharded as the experts are.
double optimizer_time_s(const TransformerSpec& model, const TrainingPlan& plan, const TopologySpec& topology,
                        const TrainingLayout& layout, double dense_params, double routed_params);

// Builds one training step's program. Throws std::invalid_argument naming the problem for
// impossible plans (an axis used twice, a batch that does not divide over the data shards...).
// The layout alone (degrees, blocks, memory, whether it fits), without building the program:
// what a planner checks before it simulates. Throws std::invalid_argument as training_program.
TrainingLayout training_layout(const TransformerSpec& model, const TrainingPlan& plan, const TopologySpec& topology);

Program training_program(const TransformerSpec& model, const TrainingPlan& plan, const TopologySpec& topology,
                         TrainingLayout& layout);

}  // namespace podsim
