// One inference step's per-chip program (prefill, decode, or a serving step of any shape): its
// blocks through the shared block emitter (block_ops.hpp) where they are Megatron's, through
// their own where the layout differs (2D weight-stationary, an MoE layer's experts).
#include <algorithm>

#include "workloads/block_ops.hpp"
#include "workloads/collective_reduction.hpp"
#include "workloads/inference.hpp"
#include "workloads/matmul_shapes.hpp"
#include "workloads/moe_layer.hpp"
#include "workloads/moe_ops.hpp"
#include "workloads/program_builder.hpp"
#include "workloads/roofline.hpp"

namespace podsim {
namespace {

// What every block of a step shares, and the chain so far (`previous`: what the next block
// waits for).
class StepEmitter {
 public:
  StepEmitter(const TransformerSpec& model, const InferencePlan& plan, const TopologySpec& topology,
              const StepShape& shape)
      : model_(model), plan_(plan), topology_(topology),
        model_degree_(model_parallel_degree(plan, topology)),
        // Expert parallelism: outside the experts each group of model-parallel chips serves its
        // 1/EP of the batch (data-parallel attention, its sequences' caches).
        ep_(expert_parallel_degree(plan, topology)),
        cp_(context_degree(plan, topology)),
        local_tokens_(shape.tokens / (ep_ * cp_)),
        cost_(chip_step_compute(model, plan, topology, shape)) {
    expert_axes_ = plan.expert_axes;
    std::sort(expert_axes_.begin(), expert_axes_.end());
    const std::vector<int> cache_batch_axes = kv_batch_axes(model, plan, topology);
    if (shape.decode) batch_axes_ = cache_batch_axes;
    // Context parallelism: the chip's K and V (its tokens, its KV heads) passed round the
    // context axis a block at a time; the heads split over the model axes that do not shard
    // the cache by batch. MLA's blocks are the latent and rotary key, whole on every model
    // shard (model_spec.hpp). 2D weight-stationary attention splits the batch over the D
    // axes as well (block_2d).
    int kv_heads_split = model_degree_;
    for (int a : cache_batch_axes) kv_heads_split /= topology.axes[a].size;
    double block_tokens = local_tokens_;
    if (!plan.d_axes.empty()) {   // heads over the model axes, sequences over the D axes
      kv_heads_split = model_degree_ / d_degree();
      block_tokens /= d_degree();
    }
    kv_block_bytes_ = model.attention == AttentionKind::Mla
                          ? block_tokens * mla_ring_elements_per_layer(model) * 2.0   // bf16
                          : block_tokens * 2.0 * model.kv_heads * model.head_dim * 2.0 / kv_heads_split;   // bf16 K, V
  }

  Program emit() {
    for (int l = 0; l < model_.layers; ++l) {
      const std::string name = "L" + std::to_string(l);
      // Attention projects, attends over the cache (read when decoding, written when
      // prefilling) and projects back; then the MLP.
      if (!plan_.d_axes.empty()) {
        if (model_.attention != AttentionKind::None)
          block_2d(name + ".attn", cost_.attention_s, cost_.attention_flops, l, OpRole::Attention, true);
        block_2d(name + ".mlp", cost_.mlp_s, cost_.mlp_flops, l, OpRole::Mlp, false);
        continue;
      }
      if (model_.attention != AttentionKind::None)
        block(name + ".attn", cost_.attention_s, cost_.attention_flops, l, OpRole::Attention, true);
      if (is_moe_layer(model_, l)) moe_block(name + ".mlp", l);
      else block(name + ".mlp", cost_.mlp_s, cost_.mlp_flops, l, OpRole::Mlp, false);
    }
    b_.compute("unembed", cost_.unembed_s, cost_.unembed_flops, previous_, model_.layers, OpRole::Unembed);
    return b_.take();
  }

 private:
  // A Megatron block over the model axes, as training's (block_ops.hpp); attention's scores
  // ring-attended under context parallelism, with Q moved to batch sharding where the cache is.
  void block(const std::string& name, double seconds, double flops, int layer, OpRole role, bool attention) {
    TensorSplit tensor;
    if (model_degree_ > 1) tensor = {plan_.model_axes, {}, plan_.collective_matmul, cost_.activation_bytes};
    RingSplit ring;
    if (attention && cp_ > 1) ring = ring_split(seconds, flops);
    KvBatchSplit kv;
    if (attention && model_degree_ > 1) kv = {batch_axes_, cost_.activation_bytes};
    previous_ = emit_block(b_, {name, layer, role, seconds, flops}, tensor, ring, kv, previous_).end;
  }

  // The ring of an attention block of `seconds` and `flops`: the scores' and the unpacking's
  // shares of its roofline (their FLOPs' shares).
  RingSplit ring_split(double seconds, double flops) const {
    return {plan_.context_axis,
            cp_,
            flops > 0 ? seconds * cost_.score_flops / flops : 0.0,
            cost_.score_flops,
            kv_block_bytes_,
            flops > 0 ? seconds * cost_.ring_unpack_flops / flops : 0.0,
            cost_.ring_unpack_flops};
  }

  int d_degree() const {
    int x = 1;
    for (int a : plan_.d_axes) x *= topology_.axes[a].size;
    return x;
  }

  // 2D weight-stationary (inference.md Question 7, Appendix B; ESTI sec. 3.2.2): weights
  // [D_X, F_YZ] and [F_YZ, D_X]. The [T, D/X] input is gathered over YZ, the first matmul's
  // [T, F/YZ] partial sums reduced over X, the second's [T, D/X] partial sums scattered over
  // YZ: the book's 2BD/(2X W) + 4BF/(YZ W) + 2BD/(2X W). Attention does the same around its
  // projections, with its scores on 1/X of the batch between them: the Q, K, V partial sums
  // reduce-scattered over X by sequence, the output gathered back (one AllReduce's traffic).
  // The block's roofline is split over its parts by FLOPs (a chain: the sum is what counts).
  // Under context parallelism the scores run as ring attention over the context axis, apart
  // from the D and model axes: each chip's 1/X of the sequences, its 1/CP of their tokens,
  // its heads' K and V (or MLA's latent) passed round (ring_attention.hpp).
  void block_2d(const std::string& name, double seconds, double flops, int layer, OpRole role, bool attention) {
    const int x_degree = d_degree();
    int yz_degree = 1;
    for (int a : plan_.model_axes) yz_degree *= topology_.axes[a].size;
    const double t = local_tokens_;
    const double io_bytes = cost_.activation_bytes / x_degree;
    using After = std::vector<int>;
    auto over = [&](const char* suffix, CollectiveKind kind, const std::vector<int>& axes, double bytes, OpRole r,
                    After after) -> After {
      return {b_.collective(name + suffix, kind, axes, {}, bytes, std::move(after), layer, r)};
    };
    auto part = [&](const char* suffix, double share, After after) -> After {
      return {b_.compute(name + suffix, seconds * share, flops * share, std::move(after), layer, role)};
    };
    // The input's gather over YZ before the first part and the output's scatter after the
    // last; with collective matmuls each beside its part (block_ops.hpp's two ends).
    const TensorSplit yz{plan_.model_axes, {}, true, io_bytes};
    auto first_part = [&](const char* suffix, double share) -> After {
      if (!plan_.collective_matmul) {
        return part(suffix, share, {b_.collective(name + ".allgather", CollectiveKind::AllGather, plan_.model_axes, {},
                                                  io_bytes, previous_, layer, OpRole::TensorAllGather)});
      }
      const auto ops = emit_gather_beside(b_, {name, layer, role, seconds * share, flops * share}, yz, suffix, previous_);
      return {ops.compute, ops.gather};
    };
    auto last_part = [&](const char* suffix, double share, After after) -> After {
      if (!plan_.collective_matmul) {
        return over(".reducescatter", CollectiveKind::ReduceScatter, plan_.model_axes, io_bytes,
                    OpRole::TensorReduceScatter, part(suffix, share, std::move(after)));
      }
      return emit_scatter_beside(b_, {name, layer, role, seconds * share, flops * share}, yz, suffix, after, after);
    };
    After last;
    if (!attention) {
      // Gated MLPs reduce both [T, F] projections before the gate.
      const double hidden = (model_.gated_mlp ? 2.0 : 1.0) * t * model_.d_ff * 2.0 / yz_degree;
      const double first = model_.gated_mlp ? 2.0 / 3.0 : 0.5;
      last = first_part(".matmul1", first);
      last = over(".allreduce", CollectiveKind::AllReduce, plan_.d_axes, hidden, OpRole::TensorAllReduce, last);
      previous_ = last_part(".matmul2", 1 - first, last);
      return;
    }
    const double nh = static_cast<double>(model_.heads) * model_.head_dim;
    const double qkv = nh + 2.0 * model_.kv_heads * model_.head_dim;
    const double weight_flops = 2 * t * model_.d_model * (qkv + nh) / (x_degree * yz_degree);
    double f_qkv = weight_flops > 0 ? std::min(1.0, 2 * t * model_.d_model * qkv / (x_degree * yz_degree) / flops) : 0;
    double f_out =
        weight_flops > 0 ? std::min(1.0 - f_qkv, 2 * t * model_.d_model * nh / (x_degree * yz_degree) / flops) : 0;
    if (model_.attention == AttentionKind::Mla) {
      // MLA's FLOP shares from its own weights (model_spec.cpp): W^O [N v_head_dim, D] after
      // the scores, every other projection before them (GQA's shapes overstate them, leaving
      // the scores, and a ring, less than their FLOPs).
      const double out_params = static_cast<double>(model_.heads) * model_.mla.v_head_dim * model_.d_model;
      const double per_param = 2 * t / (x_degree * yz_degree) / flops;
      f_qkv = std::min(1.0, (attention_params_per_layer(model_) - out_params) * per_param);
      f_out = std::min(1.0 - f_qkv, out_params * per_param);
    }
    last = first_part(".qkv", f_qkv);
    last = over(".reducescatter_qkv", CollectiveKind::ReduceScatter, plan_.d_axes, t * qkv * 2.0 / yz_degree,
                OpRole::TensorReduceScatter, last);
    // The ring's steps are the scores' (and MLA's up-projections') shares, what the
    // projections leave of the block.
    last = cp_ > 1 ? After{emit_ring_attention(b_, name, ring_split(seconds, flops), last, layer, role)}
                   : part(".scores", 1 - f_qkv - f_out, last);
    last = over(".allgather_out", CollectiveKind::AllGather, plan_.d_axes, t * nh * 2.0 / yz_degree,
                OpRole::TensorAllGather, last);
    previous_ = last_part(".out", f_out, last);
  }

  // An MoE layer's MLP (workloads/moe_layer.hpp): the router and shared experts as a block of
  // their own, then the routed experts, reached by a dispatch AllToAll over the expert axes and
  // left by a combine; the model axes split every expert's d_ff (Megatron; blocking, or a
  // collective matmul).
  void moe_block(const std::string& name, int layer) {
    const double dense_params = router_params_per_layer(model_) + model_.moe->shared_experts * expert_params(model_);
    const double io = 2 * local_tokens_ * model_.d_model * 2.0;
    const double shared_flops = 2 * local_tokens_ * dense_params / model_degree_;
    const double shared_s =
        roofline_s(shared_flops * mxu_padding_factor(local_tokens_, router_shared_weight_shapes(model_, model_degree_),
                                                     topology_.chip),
                   (dense_params * plan_.weight_bytes + io) / model_degree_, matmul_rate(plan_, topology_.chip),
                   topology_.chip, plan_.efficiency, dequant_s(dense_params / model_degree_, plan_, topology_.chip));
    const MoeLayerWork w = moe_layer_work(model_, plan_.routing, local_tokens_, ep_, moe_layer_index(model_, layer), 0);
    if (model_degree_ > 1 && plan_.collective_matmul) {
      moe_block_collective_matmul(name, layer, w, shared_s, shared_flops);
      return;
    }
    std::vector<int> before = previous_;
    if (model_degree_ > 1) before = {tensor_collective(name + ".allgather_activations", CollectiveKind::AllGather, layer)};
    const int shared = b_.compute(name + ".router_shared", shared_s, shared_flops, before, layer, OpRole::Mlp);
    const std::vector<int> arrived = all_to_all(name + ".dispatch", w, false, {shared}, layer, OpRole::MoeDispatch);
    const int experts = expert_compute(name + ".experts", w, arrived, layer);
    previous_ = all_to_all(name + ".combine", w, true, {experts}, layer, OpRole::MoeCombine);
    if (model_degree_ > 1)
      previous_ = {tensor_collective(name + ".reducescatter_activations", CollectiveKind::ReduceScatter, layer)};
  }

  // Under collective matmuls, as training's MoE forward (moe_training.cpp): the gather beside
  // the router and the shared experts' in-projections, the shared experts' out-projection after
  // the routed experts (beside the combine), the ReduceScatter of the sum once the combine is
  // home, beside what is left of it (blocking without shared experts).
  void moe_block_collective_matmul(const std::string& name, int layer, const MoeLayerWork& w, double shared_s,
                                   double shared_flops) {
    const double share = router_shared_input_share(model_);
    const TensorSplit tensor{plan_.model_axes, {}, true, cost_.activation_bytes};
    const auto head = emit_gather_beside(b_, {name, layer, OpRole::Mlp, shared_s * share, shared_flops * share},
                                         tensor, ".router_shared.matmul1", previous_);
    const std::vector<int> arrived =
        all_to_all(name + ".dispatch", w, false, {head.compute, head.gather}, layer, OpRole::MoeDispatch);
    const int experts = expert_compute(name + ".experts", w, arrived, layer);
    const std::vector<int> home = all_to_all(name + ".combine", w, true, {experts}, layer, OpRole::MoeCombine);
    previous_ = emit_scatter_beside(
        b_, {name, layer, OpRole::Mlp, shared_s * (1 - share), shared_flops * (1 - share)}, tensor,
        ".router_shared.matmul2", {experts}, home);
  }

  // Megatron's gather or scatter of the [tokens, D] activations over the model axes, after `previous_`.
  int tensor_collective(const std::string& name, CollectiveKind kind, int layer) {
    return b_.collective(name, kind, plan_.model_axes, {}, cost_.activation_bytes, previous_, layer,
                         kind == CollectiveKind::AllGather ? OpRole::TensorAllGather : OpRole::TensorReduceScatter);
  }

  std::vector<int> all_to_all(const std::string& name, const MoeLayerWork& w, bool transposed, std::vector<int> after,
                              int layer, OpRole role) {
    const int op = emit_moe_all_to_all(b_, name, w, expert_axes_, model_.d_model * 2.0,   // bf16 activation rows
                                       transposed, after, layer, role);
    return op >= 0 ? std::vector<int>{op} : after;
  }

  // Each rank reads the weights of its experts that received tokens (a grouped matmul skips
  // the empty ones; padded buffers fill every expert) and computes its rows.
  int expert_compute(const std::string& name, const MoeLayerWork& w, std::vector<int> after, int layer) {
    const ChipSpec& chip = topology_.chip;
    const double row_bytes = model_.d_model * 2.0;   // bf16 activations
    std::vector<double> by_rank(ep_);
    double flops_sum = 0;
    for (int r = 0; r < ep_; ++r) {
      const int used = w.experts_used_per_rank[r];
      const double rows = w.rows_per_rank[r];
      const double flops = 2 * rows * expert_params(model_) / model_degree_;
      const double bytes = (used * expert_params(model_) * plan_.weight_bytes + 2 * rows * row_bytes) / model_degree_;
      // Each expert's grouped-matmul slice pads its own rows: the rank's mean rows per expert.
      const double padding = mxu_padding_factor(
          used > 0 ? rows / used : 0.0, mlp_weight_shapes(model_, model_.moe->expert_d_ff, model_degree_), chip);
      by_rank[r] = roofline_s(flops * padding, bytes, matmul_rate(plan_, chip), chip, plan_.efficiency,
                              dequant_s(used * expert_params(model_) / model_degree_, plan_, chip));
      flops_sum += flops;
    }
    return emit_expert_compute(b_, name, std::move(by_rank), flops_sum / ep_, expert_axes_, std::move(after), layer,
                               OpRole::Experts);
  }

  const TransformerSpec& model_;
  const InferencePlan& plan_;
  const TopologySpec& topology_;
  const int model_degree_, ep_, cp_;
  const double local_tokens_;
  const StepCompute cost_;
  std::vector<int> expert_axes_;  // ascending: the pair and position order
  std::vector<int> batch_axes_;   // decode: the model axes the cache is sharded over by batch
  double kv_block_bytes_ = 0;
  ProgramBuilder b_;
  std::vector<int> previous_;
};

}  // namespace

Program inference_step_program(const TransformerSpec& model, const InferencePlan& plan, const TopologySpec& topology,
                               const StepShape& shape) {
  // The tensor-parallel ReduceScatters' additions on the TensorCore, as a training step's.
  return with_collective_reductions(StepEmitter(model, plan, topology, shape).emit(), topology);
}

}  // namespace podsim
