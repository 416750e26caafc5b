// The kernels compute model (workloads/layer_kernels.hpp) and MaxText's remat policies
// (workloads/remat_policy.hpp): each kernel's FLOPs against the model's counts, causal flash
// attention's skipped blocks, what each policy recomputes and keeps, and how a step's program
// and memory follow; the scenario keys and their located errors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <string>

#include "meshes.hpp"
#include "scenario_errors.hpp"
#include "sim/scenario/scenario.hpp"
#include "workloads/block_kernels.hpp"
#include "workloads/layer_kernels.hpp"
#include "workloads/training.hpp"

using namespace podsim;
using namespace podsim_test;
using podsim_test::v5p_mesh;

namespace {

TransformerSpec small_model(bool gated = true) {
  TransformerSpec m = *find_model_preset("llama2-7b");
  m.layers = 2;
  m.gated_mlp = gated;
  return m;
}

std::set<std::string> recomputed(const std::vector<Kernel>& kernels, const std::string& policy) {
  const auto plan = recompute_plan(kernels, remat_policy(policy));
  std::set<std::string> names;
  for (size_t i = 0; i < kernels.size(); ++i)
    if (plan[i] != 0) names.insert(kernels[i].name);
  return names;
}

double flops_of(const std::vector<Kernel>& kernels, KernelKind kind) {
  double sum = 0;
  for (const auto& k : kernels)
    if (k.kind == kind) sum += k.flops_per_token;
  return sum;
}

}  // namespace

TEST_CASE("layer kernels: the matmuls' FLOPs are the layer's weights, attention the book's 4 S N H", "[kernels]") {
  const TransformerSpec m = small_model();
  const ChipSpec chip = *find_chip_preset("v5p");
  for (int y : {1, 4}) {
    const auto kernels = layer_kernels(m, y, 4096, 2048, chip, {true, false, 512});
    CHECK(flops_of(kernels, KernelKind::Matmul) ==
          Approx(2 * (attention_params_per_layer(m) + mlp_params_per_layer(m)) / y).epsilon(1e-12));
    CHECK(flops_of(kernels, KernelKind::Attention) ==
          Approx(4.0 * 2048 * m.heads * m.head_dim / y).epsilon(1e-12));
  }
}

TEST_CASE("layer kernels: causal flash attention computes the blocks on and below the diagonal", "[kernels]") {
  const TransformerSpec m = small_model();
  const ChipSpec chip = *find_chip_preset("v5p");
  const double full = 4.0 * 2048 * m.heads * m.head_dim;
  // 2048 tokens in blocks of 512: 4 + 3 + 2 + 1 = 10 of 16 blocks, 62.5%.
  CHECK(flops_of(layer_kernels(m, 1, 4096, 2048, chip, {true, true, 512}), KernelKind::Attention) ==
        Approx(0.625 * full));
  // One block covers the sequence: it is computed whole.
  CHECK(flops_of(layer_kernels(m, 1, 4096, 2048, chip, {true, true, 2048}), KernelKind::Attention) == Approx(full));
  // The dot product computes every score whatever the mask.
  CHECK(flops_of(layer_kernels(m, 1, 4096, 2048, chip, {false, true, 512}), KernelKind::Attention) == Approx(full));
}

TEST_CASE("layer kernels: with MXU padding the score matmuls run the head dimension padded to the array", "[kernels]") {
  const TransformerSpec m = small_model();   // head_dim 128
  ChipSpec v6e = *find_chip_preset("v6e");   // a 256-wide MXU
  const double unpadded = 4.0 * 2048 * m.heads * m.head_dim;
  for (bool flash : {true, false}) {
    v6e.mxu_padding = false;
    CHECK(flops_of(layer_kernels(m, 1, 4096, 2048, v6e, {flash, false, 512}), KernelKind::Attention) ==
          Approx(unpadded));
    v6e.mxu_padding = true;   // QK^T contracts over 128 of 256 rows, AV fills 128 of 256 columns
    CHECK(flops_of(layer_kernels(m, 1, 4096, 2048, v6e, {flash, false, 512}), KernelKind::Attention) ==
          Approx(2 * unpadded));
  }
  ChipSpec v5p = *find_chip_preset("v5p");   // 128 wide: nothing wasted
  v5p.mxu_padding = true;
  CHECK(flops_of(layer_kernels(m, 1, 4096, 2048, v5p, {true, false, 512}), KernelKind::Attention) == Approx(unpadded));
}

TEST_CASE("remat policies: what the backward recomputes under MaxText's policies", "[kernels]") {
  const TransformerSpec m = small_model();
  const auto kernels = layer_kernels(m, 1, 4096, 2048, *find_chip_preset("v5p"));
  // minimal keeps every weight matmul's output: the vector work and the flash forward rerun.
  CHECK(recomputed(kernels, "minimal") ==
        std::set<std::string>{"attn_norm", "rotary", "context", "attn_residual", "mlp_norm", "mlp_activation"});
  // full reruns the layer up to what the backward reads: not the down projection (read by nothing
  // but the residual sum after it), nor that sum.
  auto all = std::set<std::string>{};
  for (const auto& k : kernels) all.insert(k.name);
  all.erase("mlpwo");
  all.erase("mlp_residual");
  CHECK(recomputed(kernels, "full") == all);
  CHECK(recomputed(kernels, "block") == all);
  // save_dot_except_mlpwi: the up-projections are recomputed from the (recomputed) norm.
  CHECK(recomputed(kernels, "save_dot_except_mlpwi") ==
        std::set<std::string>{"attn_norm", "rotary", "context", "attn_residual", "mlp_norm", "mlpwi_0", "mlpwi_1",
                              "mlp_activation"});
  CHECK(recomputed(kernels, "none").empty());
  // Offloading keeps the tensor off the recompute list as keeping it does.
  CHECK(recomputed(kernels, "minimal_offloaded") == recomputed(kernels, "minimal"));
}

TEST_CASE("remat policies: kept bytes count only what the backward reads", "[kernels]") {
  const TransformerSpec m = small_model(false);
  const auto kernels = layer_kernels(m, 1, 4096, 2048, *find_chip_preset("v5p"));
  const double a = m.activation_bytes, d = m.d_model, f = m.d_ff, nh = m.heads * m.head_dim;
  const double kv = m.kv_heads * m.head_dim;
  // minimal: Q, K, V, the MLP's up-projection and out_proj's sum (the MLP's norm reads the
  // residual x + out_proj, recomputed from it), beside the layer input; mlpwo's sum feeds only
  // the last residual add, which nothing reads: not kept.
  const auto minimal = saved_bytes_per_token(kernels, remat_policy("minimal"), d * a);
  CHECK(minimal.device == Approx((d + nh + 2 * kv + d + f) * a));
  CHECK(minimal.host == 0);
  const auto offloaded = saved_bytes_per_token(kernels, remat_policy("minimal_offloaded"), d * a);
  CHECK(offloaded.device == Approx(d * a));
  CHECK(offloaded.host == Approx((nh + 2 * kv + d + f) * a));
  // A parallel block sums its three at the end: out_proj's sum is read by nothing either.
  TransformerSpec parallel = m;
  parallel.parallel_block = true;
  CHECK(saved_bytes_per_token(layer_kernels(parallel, 1, 4096, 2048, *find_chip_preset("v5p")),
                              remat_policy("minimal"), d * a)
            .device == Approx((d + nh + 2 * kv + f) * a));
  CHECK(saved_bytes_per_token(kernels, remat_policy("full"), d * a).device == Approx(d * a));
}

TEST_CASE("layer kernels: a parallel block reads one norm and sums three", "[kernels]") {
  TransformerSpec m = small_model(false);
  m.parallel_block = true;
  const auto kernels = layer_kernels(m, 1, 4096, 2048, *find_chip_preset("v5p"));
  CHECK(std::none_of(kernels.begin(), kernels.end(), [](const Kernel& k) { return k.name == "mlp_norm" || k.mlp; }));
  CHECK(std::any_of(kernels.begin(), kernels.end(), [](const Kernel& k) {
    return k.name == "mlpwi" && k.inputs == std::vector<std::string>{"attn_norm"};
  }));
  CHECK(recomputed(kernels, "minimal") ==
        std::set<std::string>{"attn_norm", "rotary", "context", "mlp_activation"});
}

TEST_CASE("kernels model: a block is the sum of its kernels' rooflines, each paying the cost per op", "[kernels]") {
  const TransformerSpec m = small_model();
  ChipSpec chip = *find_chip_preset("v5p");
  chip.compute_model = ComputeModel::Kernels;
  chip.compute_overhead_s = 1e-6;
  TopologySpec topology = v5p_mesh({4});
  topology.chip = chip;
  TrainingPlan plan;
  plan.data_axes = {0};
  plan.global_batch_tokens = 4 * 2048 * 4;
  plan.sequence_length = 2048;
  plan.remat = remat_policy("minimal");
  const auto layout = training_layout(m, plan, topology);
  const auto kernels = layer_kernels(m, 1, layout.tokens_per_microbatch, 2048, chip);
  double attention_s = 0, mlp_s = 0, recompute_mlp_s = 0;
  const auto rerun = recompute_plan(kernels, *plan.remat);
  for (size_t i = 0; i < kernels.size(); ++i) {
    const KernelTimes t = kernel_times(kernels[i], layout.tokens_per_microbatch, chip, 1.0);
    (kernels[i].mlp ? mlp_s : attention_s) += t.forward_s;
    if (rerun[i] == 2) recompute_mlp_s += t.forward_s;
  }
  CHECK(layout.blocks[0].forward_s == Approx(attention_s).epsilon(1e-12));
  CHECK(layout.blocks[1].forward_s == Approx(mlp_s).epsilon(1e-12));
  CHECK(layout.blocks[1].recompute_s == Approx(recompute_mlp_s).epsilon(1e-12));
  // minimal reruns no weight matmul: no tensor-parallel collectives on the recompute.
  CHECK_FALSE(layout.blocks[0].recompute_collectives);
  CHECK(layout.blocks[0].recompute_attention);
}

TEST_CASE("remat policies: a recompute without matmuls runs without the tensor-parallel collectives", "[kernels]") {
  const TransformerSpec m = small_model();
  const TopologySpec topology = v5p_mesh({2, 2});
  TrainingPlan plan;
  plan.data_axes = {0};
  plan.tensor_axes = {1};
  plan.global_batch_tokens = 2 * 2048;
  plan.sequence_length = 2048;
  auto names_with = [&](const char* policy, const std::string& part) {
    plan.remat = remat_policy(policy);
    TrainingLayout layout;
    const Program program = training_program(m, plan, topology, layout);
    int n = 0;
    for (const auto& op : program) n += op.name.find(part) != std::string::npos;
    return n;
  };
  CHECK(names_with("minimal", ".recompute") > 0);
  CHECK(names_with("minimal", ".recompute.allgather_activations") == 0);
  CHECK(names_with("full", ".recompute.allgather_activations") > 0);
  CHECK(names_with("none", ".recompute") == 0);
}

namespace {

const std::string kScenario = R"(version: 1
hardware: {preset: v5p}
topology: {mesh: {X: 2, Y: 2}}
workload:
  kind: training
  model: {preset: llama2-7b, layers: 2}
  batch_tokens: 8192
  sequence_length: 2048
  parallelism: {data: [X], tensor: [Y]}
  remat_policy: minimal
)";

}  // namespace

TEST_CASE("scenario: remat_policy, remat, attention_kernel and compute_model load", "[kernels]") {
  const Scenario s = load_scenario_text(replaced_in(kScenario, "remat_policy: minimal",
                                                    "remat_policy: custom\n  remat: {query_proj: offload, mlpwo: device}\n"
                                                    "  attention_kernel: flash\n  causal_attention: false\n  flash_block: 1024"),
                                        kScenarioFile);
  const auto& plan = std::get<TrainingWorkload>(s.workload).plan;
  REQUIRE(plan.remat);
  CHECK(plan.remat->of("query_proj") == TensorFate::Offload);
  CHECK(plan.remat->of("mlpwo") == TensorFate::Device);
  CHECK(plan.remat->of("key_proj") == TensorFate::Recompute);
  CHECK_FALSE(plan.attention_run.causal);
  CHECK(plan.attention_run.block == 1024);
  const Scenario k = load_scenario_text(
      replaced_in(kScenario, "hardware: {preset: v5p}", "hardware: {preset: v5p, overrides: {compute_model: kernels}}"),
      kScenarioFile);
  CHECK(k.topology.chip.compute_model == ComputeModel::Kernels);
}

TEST_CASE("scenario: bad remat and attention keys are located errors", "[kernels][errors]") {
  require_error(replaced_in(kScenario, "remat_policy: minimal", "remat_policy: minimum"), "workload.remat_policy",
                "minimum", "remat_policy");
  require_error(replaced_in(kScenario, "remat_policy: minimal", "remat_policy: minimal\n  checkpointing: book"),
                "workload.remat_policy", "minimal", "remat_policy");
  require_error(replaced_in(kScenario, "remat_policy: minimal", "remat_policy: custom"), "workload.remat_policy",
                "custom", "remat_policy");
  require_error(replaced_in(kScenario, "remat_policy: minimal", "remat_policy: full\n  remat: {query_proj: offload}"),
                "workload.remat", "{query_proj: offload}", "remat:");
  require_error(replaced_in(kScenario, "remat_policy: minimal", "remat_policy: custom\n  remat: {query: offload}"),
                "workload.remat.query", "offload", "remat:");
  require_error(replaced_in(kScenario, "remat_policy: minimal", "remat_policy: custom\n  remat: {query_proj: host}"),
                "workload.remat.query_proj", "host", "remat:");
  require_error(replaced_in(kScenario, "remat_policy: minimal", "attention_kernel: dot_product\n  flash_block: 512"),
                "workload.flash_block", "512", "flash_block");
  require_error(replaced_in(kScenario, "hardware: {preset: v5p}", "hardware: {preset: v5p, overrides: {compute_model: exact}}"),
                "hardware.overrides.compute_model", "exact", "hardware:");
  require_error(replaced_in(kScenario, "model: {preset: llama2-7b, layers: 2}",
                            "model: {preset: mixtral-8x7b, layers: 2, parallel_block: true}"),
                "workload.model.parallel_block", "true", "model:");
}

TEST_CASE("int8 training: the weight matmuls at the int8 rate, each operand quantized from bf16 per use",
          "[kernels][int8]") {
  const TransformerSpec m = small_model();
  ChipSpec chip = *find_chip_preset("v5e");
  chip.compute_model = ComputeModel::Kernels;
  const double tokens = 8192;
  const auto kernels = layer_kernels(m, 1, tokens, 2048, chip);
  MatmulQuantization int8;
  int8.int8 = true;
  MatmulQuantization int8_bf16_dw = int8;
  int8_bf16_dw.weight_gradients = false;
  const double a = m.activation_bytes, hbm = chip.achieved_hbm_Bps(), int8_rate = chip.achieved_int8_ops_per_s();
  // Quantizing E elements: an abs-max pass reading them, a pass reading them and writing int8.
  auto quantize_s = [&](double elements) { return (elements * a + elements * (a + 1)) / hbm; };
  bool saw_matmul = false;
  for (const Kernel& k : kernels) {
    INFO(k.name);
    const KernelTimes bf16 = kernel_times(k, tokens, chip, 1.0);
    const KernelTimes q = kernel_times(k, tokens, chip, 1.0, int8);
    if (k.kind != KernelKind::Matmul) {   // attention and the vector work stay as they are
      CHECK(q.forward_s == bf16.forward_s);
      CHECK(q.backward_s == bf16.backward_s);
      continue;
    }
    saw_matmul = true;
    REQUIRE(k.quantizable);
    // Compute-bound shapes (8192 tokens, K and N in the thousands): each product is its math.
    const double x = k.k_dim * tokens, w = k.k_dim * k.n_dim, y = k.n_dim * tokens;
    const double math_s = q.flops / int8_rate;
    CHECK(q.forward_s == Approx(math_s + quantize_s(x) + quantize_s(w)).epsilon(1e-12));
    CHECK(q.backward_s == Approx(2 * math_s + quantize_s(y) + quantize_s(w) + quantize_s(x) + quantize_s(y)).epsilon(1e-12));
    // v5e's int8 rate is twice bf16's: the matmuls halve, the quantize passes eat part of it.
    CHECK(q.forward_s < bf16.forward_s);
    CHECK(q.forward_s > bf16.forward_s / 2);
    // The weight gradient in bf16 (MaxText's int8_training of 2023) costs between the two.
    const KernelTimes half = kernel_times(k, tokens, chip, 1.0, int8_bf16_dw);
    CHECK(half.forward_s == q.forward_s);
    CHECK(half.backward_s > q.backward_s);
    CHECK(half.backward_s < bf16.backward_s);
  }
  CHECK(saw_matmul);
  // The logits stay bf16.
  for (const Kernel& k : unembed_kernels(m, 1, tokens, chip)) {
    CHECK_FALSE(k.quantizable);
    CHECK(kernel_times(k, tokens, chip, 1.0, int8).forward_s == kernel_times(k, tokens, chip, 1.0).forward_s);
  }
  // v4 multiplies int8 no faster than bf16: int8 training only adds the quantize passes.
  ChipSpec v4 = *find_chip_preset("v4p");
  v4.compute_model = ComputeModel::Kernels;
  const Kernel& up = kernels[std::find_if(kernels.begin(), kernels.end(), [](const Kernel& k) { return k.name == "mlpwi_0"; }) -
                             kernels.begin()];
  CHECK(kernel_times(up, tokens, v4, 1.0, int8).forward_s > kernel_times(up, tokens, v4, 1.0).forward_s);
  // Local AQT over 4 parts adds the fp32 sum of 4 partial weight gradients (5 passes of K N x 4 B).
  MatmulQuantization local = int8;
  local.local_shards = 4;
  CHECK(kernel_times(up, tokens, chip, 1.0, local).backward_s - kernel_times(up, tokens, chip, 1.0, int8).backward_s ==
        Approx(5 * up.k_dim * up.n_dim * 4 / hbm).epsilon(1e-9));
}

TEST_CASE("int8 training: a step's time falls on v5e, and the keys load with located errors", "[kernels][int8][errors]") {
  const std::string real = replaced_in(kScenario, "remat_policy: minimal", "remat_policy: minimal\n  quantization: int8");
  const Scenario s = load_scenario_text(real, kScenarioFile);   // v5p's real profile: the kernels model
  const auto& plan = std::get<TrainingWorkload>(s.workload).plan;
  CHECK(plan.quantization.int8);
  CHECK(plan.quantization.weight_gradients);
  CHECK(plan.quantization.local_shards == 1);   // one slice
  const Scenario dw = load_scenario_text(replaced_in(real, "quantization: int8", "quantization: int8\n  quantization_local_shard_count: 0"),
                                         kScenarioFile);
  CHECK_FALSE(std::get<TrainingWorkload>(dw.workload).plan.quantization.weight_gradients);
  const Scenario bf16 = load_scenario_text(kScenario, kScenarioFile);
  auto step_s = [](const Scenario& sc) {
    const auto& w = std::get<TrainingWorkload>(sc.workload);
    double sum = 0;
    for (const auto& b : training_layout(w.model, w.plan, sc.topology).blocks) sum += b.forward_s + b.backward_s;
    return sum;
  };
  CHECK(step_s(s) < step_s(dw));
  CHECK(step_s(dw) < step_s(bf16));
  // Errors: an unknown kind, int8 under the book's roofline, a shard count without int8, below -1.
  require_error(replaced_in(real, "quantization: int8", "quantization: int4"), "workload.quantization", "int4",
                "quantization");
  require_error(replaced_in(real, "hardware: {preset: v5p}", "hardware: {preset: v5p, profile: ideal}"),
                "workload.quantization", "int8", "quantization");
  require_error(replaced_in(kScenario, "remat_policy: minimal", "remat_policy: minimal\n  quantization_local_shard_count: 2"),
                "workload.quantization_local_shard_count", "2", "quantization_local_shard_count");
  require_error(replaced_in(real, "quantization: int8", "quantization: int8\n  quantization_local_shard_count: -2"),
                "workload.quantization_local_shard_count", "-2", "quantization_local_shard_count");
}
