#include "workloads/moe_training.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "workloads/block_kernels.hpp"
#include "workloads/block_ops.hpp"
#include "workloads/grouped_matmul.hpp"
#include "workloads/matmul_shapes.hpp"
#include "workloads/moe_ops.hpp"
#include "workloads/roofline.hpp"

namespace podsim {

double expert_params_per_chip(const TransformerSpec& model, int expert_degree, int tensor_degree) {
  return static_cast<double>(model.moe->experts / std::max(1, expert_degree)) * expert_params(model) / tensor_degree;
}

int expert_fsdp_degree(const TrainingPlan& plan, const TopologySpec& topology) {
  int degree = 1;
  for (size_t k = 0; k < plan.data_axes.size(); ++k) {
    const int axis = plan.data_axes[k];
    if (std::count(plan.expert_axes.begin(), plan.expert_axes.end(), axis) != 0) continue;
    const AxisSlice slice = plan.data_slices.empty() ? AxisSlice{} : plan.data_slices[k];
    degree *= slice.size != 0 ? slice.size : topology.axes.at(axis).size;
  }
  return degree;
}

MoeTrainingBlocks::MoeTrainingBlocks(const TransformerSpec& model, const TrainingPlan& plan,
                                     const TopologySpec& topology, TrainingLayout& layout, ProgramBuilder& builder,
                                     bool fsdp)
    : model_(model), plan_(plan), topology_(topology), layout_(layout), b_(builder), fsdp_(fsdp),
      zero_(plan.zero_stage > 0 && layout.data_degree > 1) {
  // The experts' backward needs their up-projections' outputs; a policy that keeps neither
  // (MaxText's mlpwi_0 and mlpwi_1, or the fused mlpwi) makes the backward rerun the block.
  const RematPolicy policy = plan.remat ? *plan.remat : checkpointing_policy(plan.checkpointing);
  const auto kept = [&](const char* tensor) { return policy.of(tensor) != TensorFate::Recompute; };
  reruns_ = !policy.keep_everything && !(kept("mlpwi_0") && kept("mlpwi_1")) && !kept("mlpwi");
  if (!model.moe) {
    if (!plan.expert_axes.empty()) throw std::invalid_argument("expert parallelism needs a model with experts");
    return;
  }
  expert_axes_ = plan.expert_axes;
  std::sort(expert_axes_.begin(), expert_axes_.end());
  int degree = 1;
  for (int a : expert_axes_) {
    const auto it = std::find(plan.data_axes.begin(), plan.data_axes.end(), a);
    if (it == plan.data_axes.end())
      throw std::invalid_argument("expert axis " + topology.axes.at(a).name +
                                  " is not a data axis (tokens are split over the expert-parallel chips)");
    const size_t k = static_cast<size_t>(it - plan.data_axes.begin());
    if (!plan.data_slices.empty() && plan.data_slices[k].size != 0 &&
        plan.data_slices[k].size != topology.axes[a].size)
      throw std::invalid_argument("expert axis " + topology.axes[a].name + " must be a whole axis");
    degree *= topology.axes[a].size;
  }
  const int experts = model.moe->experts;
  if (experts % degree != 0)
    throw std::invalid_argument(std::to_string(experts) + " experts do not split evenly over " +
                                std::to_string(degree) + " expert-parallel chips");
  for (size_t k = 0; k < plan.data_axes.size(); ++k) {
    if (std::count(expert_axes_.begin(), expert_axes_.end(), plan.data_axes[k]) != 0) continue;
    expert_fsdp_axes_.push_back(plan.data_axes[k]);
    expert_fsdp_slices_.push_back(plan.data_slices.empty() ? AxisSlice{} : plan.data_slices[k]);
  }
  expert_fsdp_degree_ = expert_fsdp_degree(plan, topology);
  if (std::all_of(expert_fsdp_slices_.begin(), expert_fsdp_slices_.end(), [](const AxisSlice& s) { return s.size == 0; }))
    expert_fsdp_slices_.clear();
  expert_params_per_chip_ = podsim::expert_params_per_chip(model, degree, layout.tensor_degree);
  layout.moe.expert_degree = degree;
  layout.moe.experts_per_chip = experts / degree;
  layout.moe.moe_layers = moe_layer_count(model);
  works_.assign(plan.microbatches, std::vector<MoeLayerWork>(moe_layer_count(model)));
  drawn_.assign(plan.microbatches, std::vector<bool>(moe_layer_count(model), false));
}

const MoeLayerWork& MoeTrainingBlocks::work(int moe_layer, int microbatch) {
  if (!drawn_[microbatch][moe_layer]) {
    works_[microbatch][moe_layer] = moe_layer_work(model_, plan_.routing, layout_.tokens_per_microbatch,
                                                   layout_.moe.expert_degree, moe_layer, microbatch);
    drawn_[microbatch][moe_layer] = true;
  }
  return works_[microbatch][moe_layer];
}

double MoeTrainingBlocks::expert_forward_flops_per_chip() const {
  return 2.0 * layout_.tokens_per_microbatch * model_.moe->experts_per_token * expert_params(model_) /
         layout_.tensor_degree;
}

int MoeTrainingBlocks::expert_op(const std::string& name, const TrainingBlock& block, const MoeLayerWork& w,
                                 ExpertPass pass, OpRole role, std::vector<int> after) {
  const ChipSpec& chip = topology_.chip;
  const double passes = pass == ExpertPass::Backward ? 2.0 : 1.0;
  const double row_bytes = model_.d_model * model_.activation_bytes;
  auto seconds = [&](double rows) {
    // Every local expert's weights are read; each row goes in and out (twice backward).
    const double flops = passes * 2.0 * rows * expert_params(model_) / layout_.tensor_degree;
    const double bytes = expert_params_per_chip_ * model_.param_bytes + 2 * passes * rows * row_bytes;
    // Each local expert's slice of the grouped matmul pads its rows (the mean per expert).
    const int local_experts = model_.moe->experts / std::max(1, w.ranks);
    const double padding = mxu_padding_factor(
        rows / local_experts, mlp_weight_shapes(model_, model_.moe->expert_d_ff, layout_.tensor_degree), chip);
    return roofline_s(flops * padding, bytes, chip, plan_.matmul_efficiency);
  };
  const bool grouped_kernels =
      chip.compute_model == ComputeModel::Kernels && plan_.routing.dispatch == MoeDispatch::Grouped;
  std::vector<double> by_rank;
  for (int r = 0; r < static_cast<int>(w.rows_per_rank.size()); ++r)
    by_rank.push_back(grouped_kernels ? grouped_expert_s(w, r, pass) : seconds(w.rows_per_rank[r]));
  layout_.moe.expert_compute_mean_s += std::accumulate(by_rank.begin(), by_rank.end(), 0.0) / by_rank.size();
  layout_.moe.expert_compute_busiest_s += *std::max_element(by_rank.begin(), by_rank.end());
  const int op = emit_expert_compute(b_, name, std::move(by_rank), passes * expert_forward_flops_per_chip(),
                                     expert_axes_, std::move(after), block.layer, role);
  // The gathered experts this compute multiplies by stay in HBM until it ends; a rerun's stay
  // on for the backward that reuses them (which frees them).
  if (pending_gather_ >= 0 && role != OpRole::Recompute) b_.op(pending_gather_).released_by = {op};
  pending_gather_ = -1;
  last_expert_compute_ = op;
  return op;
}

// MaxText's sparse_matmul on one expert rank (layers/moe.py at 3eb77db3: permute :517-554,
// sparse_matmul :771-1160, unpermute :556-589), each kernel its own roofline:
//   - the source chip's permutation: its T tokens' k copies gathered into expert order
//     (_sort_activations, a gather reading and writing T k rows of D), and back after the
//     combine (T k rows of the scattered D/Y), then the weighted sum of each token's k outputs
//     ("BKE,BK -> BE": T k rows read, T written); backward the same gathers (the custom sort
//     VJP gathers by the inverse permutation) and the sum's gradients (dY read with the T k
//     outputs, T k row gradients written);
//   - with EP > 1 the received rows land in a buffer sized for the worst case,
//     EP T min(E/EP, k) rows (:976-984, ragged_buffer_factor -1 at e591f30), which the local
//     permutation gathers whole into local-expert order and back, and over which the grouped
//     matmuls' lhs and the activation run (an elementwise op covers its whole array; the
//     matmuls' tiles visit only the groups' rows);
//   - the projections as grouped matmuls (grouped_matmul.hpp) over the rank's local experts'
//     groups: up (tile_batch_seq, tile_embed_dim, tile_mlp_dim), down (tile_batch_seq,
//     tile_mlp_dim, tile_embed_dim); backward each one's dY W^T (gmm) and X^T dY (tgmm);
//   - the activation (silu(gate) x up): the up-projections read, one output written; backward
//     those and dY read, their gradients written.
double MoeTrainingBlocks::grouped_expert_s(const MoeLayerWork& w, int rank, ExpertPass pass) const {
  const ChipSpec& chip = topology_.chip;
  const MoeSpec& moe = *model_.moe;
  const double eff = plan_.matmul_efficiency;
  const double a = model_.activation_bytes;
  const double y = layout_.tensor_degree;
  const double d = model_.d_model, f = std::ceil(static_cast<double>(moe.expert_d_ff) / y);
  const GroupedMatmulTiling& tiles = plan_.routing.tiling;
  const int per_rank = moe.experts / std::max(1, w.ranks);
  const bool padded = plan_.routing.spec.capacity_factor > 0 && plan_.routing.pad_to_capacity;
  std::vector<double> groups;
  for (int e = rank * per_rank; e < (rank + 1) * per_rank; ++e)
    groups.push_back(padded ? static_cast<double>(w.loads.capacity) : static_cast<double>(w.loads.kept[e]));
  const double tokens = layout_.tokens_per_microbatch;
  const double k = moe.experts_per_token;
  const double routed = tokens * k;   // the source chip's rows
  const double ep = w.ranks;
  const double buffer = ep > 1 ? ep * tokens * std::min<double>(per_rank, k) : w.rows_per_rank[rank];
  const double m = std::max(buffer, w.rows_per_rank[rank]);
  struct Product {
    double k_dim, n_dim, tk, tn;
  };
  std::vector<Product> products;
  for (int i = 0; i < (model_.gated_mlp ? 2 : 1); ++i) products.push_back({d, f, tiles.embed_dim, tiles.mlp_dim});
  products.push_back({f, d, tiles.mlp_dim, tiles.embed_dim});
  const bool forward = pass == ExpertPass::Forward;
  const bool inputs = pass == ExpertPass::Backward || pass == ExpertPass::InputGradients;
  const bool weights = pass == ExpertPass::Backward || pass == ExpertPass::WeightGradients;
  double s = 0;
  auto kernel = [&](double flops, double bytes) { s += roofline_s(flops, bytes, chip, eff); };
  for (const Product& p : products) {
    if (forward) {
      const auto g = gmm_work(groups, m, p.k_dim, p.n_dim, tiles.batch_seq, p.tk, p.tn, a, chip);
      kernel(g.mxu_flops, g.bytes);
    }
    if (inputs) {   // dY [m, N] @ W^T: contracts N (tile tk), writes K (tile tn)
      const auto g = gmm_work(groups, m, p.n_dim, p.k_dim, tiles.batch_seq, p.tk, p.tn, a, chip);
      kernel(g.mxu_flops, g.bytes);
    }
    if (weights) {
      const auto g = tgmm_work(groups, p.k_dim, p.n_dim, tiles.batch_seq, p.tk, p.tn, a, chip);
      kernel(g.mxu_flops, g.bytes);
    }
  }
  // Weights kept in another dtype than the activations (fp32) are cast for the kernel
  // (`kernel.astype(self.dtype)`, layers/moe.py:796): each pass that multiplies by them reads
  // the rank's expert weights and writes them in bf16; the weight gradient is cast back.
  if (model_.param_bytes != a) {
    const double elements = per_rank * expert_params(model_) / y;
    const double casts = (forward ? 1.0 : 0.0) + (inputs ? 1.0 : 0.0) + (weights ? 1.0 : 0.0);
    kernel(0, casts * elements * (model_.param_bytes + a));
  }
  // The ZB-H1 W pass reads what the B pass left: the gathers and the activation go with B.
  if (pass == ExpertPass::WeightGradients) return s;
  const double ups = model_.gated_mlp ? 2.0 : 1.0;
  kernel(0, (forward ? ups + 1 : 2 * ups + 1) * m * f * a);
  const double out_d = d / y;
  kernel(0, 2 * routed * d * a);                                    // permute (its gradient: the inverse gather)
  kernel(0, 2 * routed * out_d * a);                                // unpermute
  kernel(0, (forward ? routed + tokens : 2 * routed + tokens) * out_d * a);   // weighted sum of the k outputs
  if (ep > 1) {
    kernel(0, 2 * buffer * d * a);       // local permute of the received buffer
    kernel(0, 2 * buffer * out_d * a);   // and back
  }
  return s;
}

int MoeTrainingBlocks::all_to_all(const std::string& name, const TrainingBlock& block, const MoeLayerWork& w,
                                  bool transposed, std::vector<int> after, OpRole role) {
  return emit_moe_all_to_all(b_, name, w, expert_axes_, model_.d_model * model_.activation_bytes, transposed,
                             std::move(after), block.layer, role);
}

// Tensor parallelism around the block: the activations gathered before it, the partial sums
// scattered after (blocking, as the dense blocks without tensor_overlap).
int MoeTrainingBlocks::tensor_collective(const std::string& name, const TrainingBlock& block, CollectiveKind kind,
                                         std::vector<int> after) {
  const bool gather = kind == CollectiveKind::AllGather;
  return b_.collective(name + (gather ? ".allgather_activations" : ".reducescatter_activations"), kind,
                       plan_.tensor_axes, plan_.tensor_slices, block.activation_bytes_per_group, std::move(after),
                       block.layer, gather ? OpRole::TensorAllGather : OpRole::TensorReduceScatter);
}

// The chip's experts' weights gathered over the data axes that are not expert axes: FSDP's
// before each use, ZeRO's updated shards after the optimizer.
int MoeTrainingBlocks::expert_weight_gather(ProgramBuilder& b, const std::string& name, const TrainingBlock& block,
                                            const std::vector<int>& after, OpRole role) const {
  return b.collective(name + ".allgather_expert_weights", CollectiveKind::AllGather, expert_fsdp_axes_,
                      expert_fsdp_slices_, expert_params_per_chip_ * model_.param_bytes, after, block.layer, role);
}

MoeTrainingBlocks::Ops MoeTrainingBlocks::forward(const std::string& name, const TrainingBlock& block, int microbatch,
                                                  std::vector<int> inputs, const std::vector<int>& gather_after,
                                                  OpRole role, int gathered) {
  const MoeLayerWork& w = work(block.moe_layer, microbatch);
  const bool tensor = layout_.tensor_degree > 1;
  if (tensor && plan_.tensor_overlap)
    return forward_collective_matmul(name, block, w, std::move(inputs), gather_after, role, gathered);
  Ops ops;
  if (tensor) inputs.push_back(tensor_collective(name, block, CollectiveKind::AllGather, inputs));
  // The router (and shared experts) decide where each token goes before it can be sent.
  const int shared = b_.compute(name + ".router_shared", block.forward_s, block.forward_flops_per_chip, inputs,
                                block.layer, role);
  const int mask = einsum_op(name + ".dispatch_einsum", block, 1.0, role, {shared});
  const int placed = mask >= 0 ? mask : shared;
  const int dispatch = all_to_all(name + ".dispatch", block, w, false, {placed}, OpRole::MoeDispatch);
  ops.expert_compute =
      expert_op(name + ".experts", block, w, ExpertPass::Forward, role,
                expert_inputs(name, block, {dispatch >= 0 ? dispatch : placed}, gather_after, gathered, &ops.expert_gather));
  const int combine = all_to_all(name + ".combine", block, w, true, {ops.expert_compute}, OpRole::MoeCombine);
  std::vector<int> done{combine >= 0 ? combine : ops.expert_compute};
  const int summed = einsum_op(name + ".combine_einsum", block, 1.0, role, done);
  ops.last_compute = summed >= 0 ? summed : ops.expert_compute;
  if (summed >= 0) done = {summed};
  if (tensor) done = {tensor_collective(name, block, CollectiveKind::ReduceScatter, done)};
  ops.end = done;
  return ops;
}

MoeTrainingBlocks::Ops MoeTrainingBlocks::backward(const std::string& name, const TrainingBlock& block, int microbatch,
                                                   std::vector<int> inputs, const std::vector<int>& gather_after,
                                                   double weight_fraction, int gathered) {
  const MoeLayerWork& w = work(block.moe_layer, microbatch);
  const bool tensor = layout_.tensor_degree > 1;
  if (tensor && plan_.tensor_overlap)
    return backward_collective_matmul(name, block, w, std::move(inputs), gather_after, weight_fraction, gathered);
  Ops ops;
  if (tensor) inputs.push_back(tensor_collective(name, block, CollectiveKind::AllGather, inputs));
  // Einsum dispatch: the combine's backward gives the slots' output gradients and the router's
  // combine weights theirs (two passes) before they travel.
  if (const int slots = einsum_op(name + ".combine_einsum", block, 2.0, OpRole::Backward, inputs); slots >= 0)
    inputs = {slots};
  // The combine's mirror takes each output gradient to the experts its token went to.
  const int to_experts = all_to_all(name + ".combine_grads", block, w, false, inputs, OpRole::MoeCombine);
  // Split (ZB-H1): one pass of the two, dY W^T; the weight gradients wait for the W pass.
  const bool split = weight_fraction > 0;
  ops.expert_compute = expert_op(name + ".experts", block, w, split ? ExpertPass::InputGradients : ExpertPass::Backward, OpRole::Backward,
                                 expert_inputs(name, block, to_experts >= 0 ? std::vector<int>{to_experts} : inputs,
                                               gather_after, gathered, &ops.expert_gather));
  // The dispatch's mirror takes the input gradients home while the router and shared experts'
  // backward runs (their output gradients are local).
  const int home = all_to_all(name + ".dispatch_grads", block, w, true, {ops.expert_compute}, OpRole::MoeDispatch);
  const int shared = b_.compute(name + ".router_shared", block.backward_s * (1 - weight_fraction),
                                2 * block.forward_flops_per_chip * (1 - weight_fraction), {ops.expert_compute},
                                block.layer, OpRole::Backward);
  ops.last_compute = shared;
  std::vector<int> done{shared};
  if (home >= 0) done.push_back(home);
  // Einsum dispatch: the slots' input gradients back to the tokens (the one-hot mask has none).
  if (const int tokens = einsum_op(name + ".dispatch_einsum", block, 1.0, OpRole::Backward, done); tokens >= 0) {
    ops.last_compute = tokens;
    done = {tokens};
  }
  if (tensor) done = {tensor_collective(name, block, CollectiveKind::ReduceScatter, done)};
  ops.end = done;
  return ops;
}

// Collective matmuls (tensor_overlap; sharding.md, "collective matmuls"), with block_ops' two
// ends. The gather streams in beside what reads the layer's input: the router and the shared
// experts' in-projections; the dispatch needs both (the gathered rows, where the router sends
// them). The routed experts' partial sums come home with the combine and are added to the
// shared experts' before the ReduceScatter, so the scatter cannot start before the combine
// ends: the shared experts' out-projection runs after the routed experts (beside the combine)
// and the scatter beside what is left of it. Without shared experts nothing computes between
// the combine and the scatter: it stays blocking (a 0 s out-projection).
MoeTrainingBlocks::Ops MoeTrainingBlocks::forward_collective_matmul(const std::string& name,
                                                                   const TrainingBlock& block, const MoeLayerWork& w,
                                                                   std::vector<int> inputs,
                                                                   const std::vector<int>& gather_after,
                                                                   OpRole role, int gathered) {
  const double share = router_shared_input_share(model_);
  const auto head = emit_gather_beside(
      b_, {name, block.layer, role, block.forward_s * share, block.forward_flops_per_chip * share},
      tensor_split(block), ".router_shared.matmul1", std::move(inputs));
  std::vector<int> placed{head.compute, head.gather};
  if (const int mask = einsum_op(name + ".dispatch_einsum", block, 1.0, role, placed); mask >= 0) placed = {mask};
  const int dispatch = all_to_all(name + ".dispatch", block, w, false, placed, OpRole::MoeDispatch);
  Ops ops;
  placed.push_back(dispatch);
  ops.expert_compute = expert_op(name + ".experts", block, w, ExpertPass::Forward, role,
                                 expert_inputs(name, block, placed, gather_after, gathered, &ops.expert_gather));
  const int combine = all_to_all(name + ".combine", block, w, true, {ops.expert_compute}, OpRole::MoeCombine);
  // Einsum dispatch: the combine's einsum runs before the shared experts' out-projection.
  std::vector<int> tail{ops.expert_compute};
  std::vector<int> summed{ops.expert_compute, combine};
  if (const int sum = einsum_op(name + ".combine_einsum", block, 1.0, role, summed); sum >= 0) tail = summed = {sum};
  ops.end = emit_scatter_beside(b_,
                                {name, block.layer, role, block.forward_s * (1 - share),
                                 block.forward_flops_per_chip * (1 - share)},
                                tensor_split(block), ".router_shared.matmul2", tail, summed);
  ops.last_compute = ops.end[0];
  return ops;
}

// The backward's mirror: the gathered output gradients go to the shared experts'
// out-projection (beside the gather) and, by the combine's mirror, to the routed experts; the
// input gradients of the router and the shared experts' in-projections run beside the
// dispatch's mirror and the ReduceScatter of the sum, which waits for the routed rows' input
// gradients to come home. Without shared experts the gather stays blocking.
MoeTrainingBlocks::Ops MoeTrainingBlocks::backward_collective_matmul(const std::string& name,
                                                                    const TrainingBlock& block,
                                                                    const MoeLayerWork& w, std::vector<int> inputs,
                                                                    const std::vector<int>& gather_after,
                                                                    double weight_fraction, int gathered) {
  const double first = 1 - router_shared_input_share(model_);
  const double seconds = block.backward_s * (1 - weight_fraction);
  const double flops = 2 * block.forward_flops_per_chip * (1 - weight_fraction);
  const auto head = emit_gather_beside(b_, {name, block.layer, OpRole::Backward, seconds * first, flops * first},
                                       tensor_split(block), ".router_shared.matmul1", std::move(inputs));
  std::vector<int> grads{head.gather};
  std::vector<int> ready{head.gather, head.compute};
  if (const int slots = einsum_op(name + ".combine_einsum", block, 2.0, OpRole::Backward, ready); slots >= 0)
    grads = ready = {slots};
  const int to_experts = all_to_all(name + ".combine_grads", block, w, false, grads, OpRole::MoeCombine);
  Ops ops;
  ready.push_back(to_experts);
  ops.expert_compute = expert_op(name + ".experts", block, w, weight_fraction > 0 ? ExpertPass::InputGradients : ExpertPass::Backward, OpRole::Backward,
                                 expert_inputs(name, block, ready, gather_after, gathered, &ops.expert_gather));
  const int home = all_to_all(name + ".dispatch_grads", block, w, true, {ops.expert_compute}, OpRole::MoeDispatch);
  std::vector<int> tail{ops.expert_compute};
  std::vector<int> back{ops.expert_compute, home};
  if (const int tokens = einsum_op(name + ".dispatch_einsum", block, 1.0, OpRole::Backward, back); tokens >= 0)
    tail = back = {tokens};
  ops.end = emit_scatter_beside(
      b_, {name, block.layer, OpRole::Backward, seconds * (1 - first), flops * (1 - first)}, tensor_split(block),
      ".router_shared.matmul2", tail, back);
  ops.last_compute = ops.end[0];
  return ops;
}

TensorSplit MoeTrainingBlocks::tensor_split(const TrainingBlock& block) const {
  return {plan_.tensor_axes, plan_.tensor_slices, true, block.activation_bytes_per_group};
}

// What the routed experts wait for: `ready` and, under FSDP, their weights gathered over the
// data axes that are not expert axes.
std::vector<int> MoeTrainingBlocks::expert_inputs(const std::string& name, const TrainingBlock& block,
                                                  std::vector<int> ready, const std::vector<int>& gather_after,
                                                  int gathered, int* gather) {
  if (gathered >= 0) {
    ready.push_back(gathered);
    pending_gather_ = gathered;
  } else if (fsdp_ && expert_fsdp_degree_ > 1) {
    std::vector<int> after = gather_after;
    if (layout_.moe.serial_expert_gathers && last_expert_compute_ >= 0) after.push_back(last_expert_compute_);
    *gather = expert_weight_gather(b_, name, block, after, OpRole::FsdpAllGather);
    b_.op(*gather).holds_bytes = layout_.moe.expert_gather_bytes;
    ready.push_back(*gather);
    pending_gather_ = *gather;
  }
  return ready;
}

int MoeTrainingBlocks::einsum_op(const std::string& name, const TrainingBlock& block, double passes, OpRole role,
                                 std::vector<int> after) {
  if (plan_.routing.dispatch != MoeDispatch::Einsum) return -1;
  const MoeSpec& moe = *model_.moe;
  const double cf = plan_.routing.spec.capacity_factor;
  const double s = plan_.sequence_length;
  // MaxText's slots per expert and sequence: int(max(ceil(S k / E) cf, cf)) (layers/linears.py:520-531
  // at 449b4fe5).
  const double slots = std::floor(std::max(std::ceil(s * moe.experts_per_token / moe.experts) * cf, cf));
  const double tokens = layout_.tokens_per_microbatch;
  const double d = model_.d_model / static_cast<double>(layout_.tensor_degree);
  const double a = model_.activation_bytes;
  // [B,S,D] x [B,S,E,C] -> [E,B,C,D] (and back): contracts each sequence's S tokens.
  const double flops = passes * 2.0 * tokens * moe.experts * slots * d;
  const double bytes = passes * (tokens * d + tokens * moe.experts * slots + tokens / s * moe.experts * slots * d) * a;
  // Not useful FLOPs: MaxText's count (and podsim's) leaves the einsums out.
  return b_.compute(name, roofline_s(flops, bytes, topology_.chip, plan_.matmul_efficiency), 0.0, std::move(after),
                    block.layer, role);
}

MoeTrainingBlocks::WeightOps MoeTrainingBlocks::weight_gradients(const std::string& name, const TrainingBlock& block,
                                                                  int microbatch, std::vector<int> after,
                                                                  double weight_fraction) {
  const MoeLayerWork& w = work(block.moe_layer, microbatch);
  WeightOps ops;
  ops.experts = expert_op(name + ".experts", block, w, ExpertPass::WeightGradients, OpRole::Backward, std::move(after));
  ops.router_shared = b_.compute(name + ".router_shared", block.backward_s * weight_fraction,
                                 2 * block.forward_flops_per_chip * weight_fraction, {ops.experts}, block.layer,
                                 OpRole::Backward);
  return ops;
}

void MoeTrainingBlocks::gradients(const TrainingBlock& block, int expert_compute, std::vector<int>& grad_ops) {
  const double bytes = expert_params_per_chip_ * model_.param_bytes;
  if (expert_fsdp_degree_ > 1) {
    if (fsdp_ || zero_) {
      const int scatter = b_.collective(block.name + ".reducescatter_expert_grads", CollectiveKind::ReduceScatter,
                                        expert_fsdp_axes_, expert_fsdp_slices_, bytes, {expert_compute}, block.layer,
                                        fsdp_ ? OpRole::FsdpReduceScatter : OpRole::ZeroReduceScatter);
      // The experts' whole gradients, in HBM from their backward until the scatter ends (held
      // from the scatter's start, which follows the backward directly).
      if (fsdp_) {
        b_.op(scatter).holds_bytes = layout_.moe.expert_gather_bytes;
        b_.op(scatter).released_by = {scatter};
      }
      grad_ops.push_back(scatter);
      if (plan_.dcn_data_parallel)
        grad_ops.push_back(b_.collective(block.name + ".dcn_allreduce_expert_grads", CollectiveKind::AllReduce, {}, {},
                                         bytes / expert_fsdp_degree_, {scatter}, block.layer, OpRole::DcnAllReduce, true));
      return;
    }
    grad_ops.push_back(b_.collective(block.name + ".allreduce_expert_grads", CollectiveKind::AllReduce,
                                     expert_fsdp_axes_, expert_fsdp_slices_, bytes, {expert_compute}, block.layer,
                                     OpRole::DataAllReduce, plan_.dcn_data_parallel));
  } else if (plan_.dcn_data_parallel) {
    grad_ops.push_back(b_.collective(block.name + ".dcn_allreduce_expert_grads", CollectiveKind::AllReduce, {}, {},
                                     bytes, {expert_compute}, block.layer, OpRole::DcnAllReduce, true));
  }
}

int MoeTrainingBlocks::zero_allgather(ProgramBuilder& b, const std::string& name, const TrainingBlock& block,
                                      int after) {
  if (!zero_ || expert_fsdp_degree_ <= 1) return after;
  return expert_weight_gather(b, name, block, {after}, OpRole::ZeroAllGather);
}

void MoeTrainingBlocks::finish() {
  if (!model_.moe) return;
  auto& stats = layout_.moe;
  double samples = 0, dropped = 0, expert_ratio = 0, chip_ratio = 0, dispatch = 0;
  const double row_bytes = model_.d_model * model_.activation_bytes;
  for (size_t m = 0; m < works_.size(); ++m) {
    for (size_t l = 0; l < works_[m].size(); ++l) {
      const MoeLayerWork& w = work(static_cast<int>(l), static_cast<int>(m));
      samples += 1;
      dropped += w.loads.dropped_fraction();
      if (w.loads.mean() > 0) expert_ratio += w.loads.busiest() / w.loads.mean();
      const double ratio = w.mean_rank_rows() > 0 ? w.busiest_rank_rows() / w.mean_rank_rows() : 1.0;
      chip_ratio += ratio;
      stats.max_busiest_chip_over_mean = std::max(stats.max_busiest_chip_over_mean, ratio);
      // What chip 0 sends the others: its row of pair sizes without itself (every source alike).
      double sent = 0;
      for (int s = 1; s < w.ranks; ++s) sent += w.pair_rows[s] * row_bytes;
      dispatch += sent;
    }
  }
  if (samples > 0) {
    stats.dropped_fraction = dropped / samples;
    stats.busiest_expert_over_mean = expert_ratio / samples;
    stats.busiest_chip_over_mean = chip_ratio / samples;
    stats.dispatch_bytes_per_chip = dispatch / samples;
  }
}

}  // namespace podsim
