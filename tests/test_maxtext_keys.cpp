// MaxText's configuration keys issue 43 made writable (class 3, "configurations podsim cannot
// write"): weight_dtype, num_vocab_tiling, parallelism.fsdp_transpose, parallelism.dcn_fsdp and
// model.moe.interleave_moe_layer_step; the presets they brought (mistral-7b, llama4-17b-128e);
// and the located errors for what stays impossible. Expectations come from the formulas in
// docs/modelling.md ("Weight dtype ..."), never from a run's output.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "meshes.hpp"
#include "scenario_errors.hpp"
#include "sim/commands/run_command.hpp"
#include "sim/scenario/scenario.hpp"
#include "workloads/training.hpp"

using namespace podsim;
using namespace podsim_test;

namespace {

// A 4-layer LLaMA-shaped model with FSDP over a 2x2 in each of 2 slices.
const std::string kTwoSlices = R"(version: 1
hardware: {preset: v5e, profile: ideal}
topology: {mesh: {X: 2, Y: 2}, slices: 2}
workload:
  kind: training
  model: {preset: llama2-7b, name: small, layers: 4, d_model: 2048, d_ff: 5632, heads: 16, kv_heads: 16, vocab: 4096}
  batch_tokens: 16384
  sequence_length: 1024
  parallelism: {data: [X, Y], fsdp: true, dcn_data: true}
)";

// The same model on one 2x2 slice.
const std::string kOneSlice = R"(version: 1
hardware: {preset: v5e, profile: ideal}
topology: {mesh: {X: 2, Y: 2}}
workload:
  kind: training
  model: {preset: llama2-7b, name: small, layers: 4, d_model: 2048, d_ff: 5632, heads: 16, kv_heads: 16, vocab: 4096}
  batch_tokens: 8192
  sequence_length: 1024
  parallelism: {data: [X, Y], fsdp: true}
)";

nlohmann::json run(const std::string& text) {
  RunCommandOptions options;
  options.reproducible = true;
  return nlohmann::json::parse(simulate_summary_json(load_scenario_text(text, kScenarioFile), options));
}

// Bytes (the collectives' V) of the operations whose names contain `part`.
double traffic(const nlohmann::json& summary, const std::string& part) {
  double bytes = 0;
  for (const auto& op : summary["operations"])
    if (op["name"].get<std::string>().find(part) != std::string::npos) bytes += op["bytes"].get<double>();
  return bytes;
}

int count_ops(const Program& program, const std::string& part) {
  int n = 0;
  for (const auto& op : program)
    if (op.name.find(part) != std::string::npos) ++n;
  return n;
}

std::string with_key(const std::string& base, const std::string& line) {
  return replaced_in(base, "  sequence_length: 1024\n", "  sequence_length: 1024\n" + line);
}

}  // namespace

TEST_CASE("weight_dtype: float32 stores 4 B a parameter, reduces fp32 gradients and gathers bf16", "[maxtext-keys]") {
  const auto bf16 = run(kOneSlice);
  const auto fp32 = run(with_key(kOneSlice, "  weight_dtype: float32\n"));
  // HBM: the fp32 weights are the only copy, 4 B against 2 (FSDP over 4 chips both times), and
  // their gradients fp32 too.
  CHECK(fp32["memory_breakdown_bytes"]["params"].get<double>() ==
        Approx(2 * bf16["memory_breakdown_bytes"]["params"].get<double>()));
  CHECK(fp32["memory_breakdown_bytes"]["grads"].get<double>() ==
        Approx(2 * bf16["memory_breakdown_bytes"]["grads"].get<double>()));
  // No master copy beside them: the optimizer state is Adam's moments alone.
  CHECK(fp32["memory_breakdown_bytes"]["optimizer"].get<double>() ==
        Approx(bf16["memory_breakdown_bytes"]["optimizer"].get<double>()));
  // Gradients reduce in fp32: twice the bytes; the gathers move the bf16 casts (MaxText casts
  // each shard before the gather, linears.py:297): the same bytes, where an fp32 gather would
  // move twice.
  REQUIRE(traffic(bf16, "reducescatter_grads") > 0);
  CHECK(traffic(fp32, "reducescatter_grads") == Approx(2 * traffic(bf16, "reducescatter_grads")));
  CHECK(traffic(fp32, "allgather_weights") == Approx(traffic(bf16, "allgather_weights")));
}

TEST_CASE("the optimizer moves the gradient, the moments and the weights it updates, each in its dtype",
          "[maxtext-keys]") {
  TransformerSpec m = *find_model_preset("llama2-7b");
  // bf16 throughout: read g (2), read and write two fp32 moments (2 x 8), the weights (2 x 2).
  CHECK(optimizer_bytes_per_param(m) == Approx(2 + 2 * 8 + 2 * 2));
  m.gradient_bytes_per_param = 4;   // gradients: fp32
  CHECK(optimizer_bytes_per_param(m) == Approx(4 + 2 * 8 + 2 * 2));
  m.gradient_bytes_per_param = 0;
  m.weight_dtype_bytes = 4;         // weight_dtype: float32: fp32 gradients by default
  CHECK(gradient_bytes(m) == 4);
  CHECK(stored_weight_bytes(m) == 4);
  CHECK(optimizer_bytes_per_param(m) == Approx(4 + 2 * 8 + 2 * 4));
  m.weight_dtype_bytes = 0;
  m.master_weight_bytes_per_param = 4;   // Megatron: the fp32 master read and written, bf16 weights written
  CHECK(optimizer_bytes_per_param(m) == Approx(2 + 2 * 8 + 2 * 4 + 2));
}

TEST_CASE("weight_dtype: located errors", "[maxtext-keys][errors]") {
  require_error(with_key(kOneSlice, "  weight_dtype: float16\n"), "workload.weight_dtype", "float16", "weight_dtype:");
  const auto both = with_key(kOneSlice, "  master_weights: true\n  weight_dtype: float32\n");
  require_error(both, "workload.weight_dtype", "float32", "weight_dtype:");
  CHECK(contains(error_from(both).what(), "twice"));
}

TEST_CASE("num_vocab_tiling: one tile's logits in HBM, the output projection rerun, its head gathered once",
          "[maxtext-keys]") {
  const TransformerSpec model = *find_model_preset("llama3.1-8b");
  const TopologySpec mesh = v5e_mesh({2, 2});
  TrainingPlan plan;
  plan.data_axes = {0, 1};
  plan.fsdp = true;
  plan.sequence_length = 2048;
  plan.global_batch_tokens = 4 * 2 * 2048;   // 2 sequences a chip
  const TrainingLayout untiled = training_layout(model, plan, mesh);
  plan.num_vocab_tiling = 4;
  TrainingLayout tiled;
  const Program program = training_program(model, plan, mesh, tiled);
  // Logits: T_mb V 4 B, one tile of four at a time.
  const double tokens = 2 * 2048;
  CHECK(untiled.memory.logits_bytes == Approx(tokens * model.vocab * 4.0));
  CHECK(tiled.memory.logits_bytes == Approx(tokens * model.vocab * 4.0 / 4));
  // The backward reruns the output projection: 2 T D V FLOPs a chip again.
  const TrainingBlock& head = tiled.blocks.back();
  CHECK(head.name == "unembed");
  CHECK(untiled.blocks.back().recompute_flops_per_chip == 0);
  CHECK(head.recompute_flops_per_chip == Approx(2 * tokens * model.d_model * static_cast<double>(model.vocab)));
  // The head's FSDP gather runs before the forward only, in the stored dtype (bf16 here).
  CHECK(count_ops(program, "unembed.fwd.allgather_weights") == 1);
  CHECK(count_ops(program, "unembed.bwd.allgather_weights") == 0);
  CHECK(head.weight_bytes_per_group == Approx(static_cast<double>(model.vocab) * model.d_model * 2));
  TrainingLayout untiled_program_layout;
  plan.num_vocab_tiling = 1;
  const Program untiled_program = training_program(model, plan, mesh, untiled_program_layout);
  CHECK(count_ops(untiled_program, "unembed.bwd.allgather_weights") == 1);
  // Over the pod (4 chips), the step reruns that much more.
  CHECK(tiled.recompute_flops - untiled_program_layout.recompute_flops ==
        Approx(2 * tokens * model.d_model * static_cast<double>(model.vocab) * 4));
}

TEST_CASE("num_vocab_tiling gathers an fp32 output head under weight_dtype: float32", "[maxtext-keys]") {
  const auto bf16 = run(with_key(kOneSlice, "  weight_dtype: float32\n"));
  const auto tiled = run(with_key(kOneSlice, "  weight_dtype: float32\n  num_vocab_tiling: 2\n"));
  // The head [V, D] is gathered once as stored (4 B) where untiled it is gathered twice as bf16
  // (2 B): the same bytes over the step; the other blocks' gathers are unchanged.
  CHECK(traffic(tiled, "unembed.fwd.allgather_weights") == Approx(4096.0 * 2048 * 4));
  CHECK(traffic(bf16, "unembed.fwd.allgather_weights") == Approx(4096.0 * 2048 * 2));
  CHECK(traffic(tiled, "L0.attn.fwd.allgather_weights") == Approx(traffic(bf16, "L0.attn.fwd.allgather_weights")));
}

TEST_CASE("num_vocab_tiling: located errors", "[maxtext-keys][errors]") {
  require_error(with_key(kOneSlice, "  num_vocab_tiling: 0\n"), "workload.num_vocab_tiling", "0", "num_vocab_tiling:");
  // 8192 tokens over 4 data shards: 2048 a shard, which 3 does not divide.
  const auto odd = with_key(kOneSlice, "  num_vocab_tiling: 3\n");
  require_error(odd, "workload.num_vocab_tiling", "3", "num_vocab_tiling:");
  CHECK(contains(error_from(odd).what(), "2048 tokens"));
}

TEST_CASE("fsdp_transpose: a second FSDP axis, the step of FSDP over both axes", "[maxtext-keys]") {
  const Scenario two_d = load_scenario_text(
      replaced_in(kOneSlice, "data: [X, Y], fsdp: true", "data: [X], fsdp: true, fsdp_transpose: [Y]"), kScenarioFile);
  const Scenario flat = load_scenario_text(kOneSlice, kScenarioFile);
  CHECK(two_d.training().plan.data_axes == flat.training().plan.data_axes);
  CHECK(two_d.training().plan.fsdp);
  CHECK(run(replaced_in(kOneSlice, "data: [X, Y], fsdp: true", "data: [X], fsdp: true, fsdp_transpose: [Y]"))
            ["step_time_s"].get<double>() == Approx(run(kOneSlice)["step_time_s"].get<double>()));
}

TEST_CASE("fsdp_transpose: located errors", "[maxtext-keys][errors]") {
  require_error(replaced_in(kOneSlice, "data: [X, Y], fsdp: true", "data: [X], fsdp_transpose: [Y]"),
                "workload.parallelism.fsdp_transpose", "[Y]", "parallelism:");
  require_error(replaced_in(kOneSlice, "data: [X, Y], fsdp: true", "data: [X], fsdp: true, fsdp_transpose: [X]"),
                "workload.parallelism.fsdp_transpose[0]", "X", "parallelism:");
}

TEST_CASE("dcn_fsdp: state sharded over the slices too, gathers and scatters across DCN, no all-reduce",
          "[maxtext-keys]") {
  const auto dp = run(kTwoSlices);
  const auto fsdp = run(replaced_in(kTwoSlices, "dcn_data: true", "dcn_fsdp: true"));
  // Parameters, gradients and optimizer state over 4 x 2 chips instead of 4.
  for (const char* part : {"params", "grads", "optimizer"})
    CHECK(fsdp["memory_breakdown_bytes"][part].get<double>() ==
          Approx(dp["memory_breakdown_bytes"][part].get<double>() / 2));
  CHECK(traffic(fsdp, "dcn_allreduce_grads") == 0);
  REQUIRE(traffic(dp, "dcn_allreduce_grads") > 0);
  // The collectives' V is the whole block's: gathers and scatters as within a slice.
  CHECK(traffic(fsdp, "allgather_weights") == Approx(traffic(dp, "allgather_weights")));
  CHECK(traffic(fsdp, "reducescatter_grads") == Approx(traffic(dp, "reducescatter_grads")));

  const Scenario s = load_scenario_text(replaced_in(kTwoSlices, "dcn_data: true", "dcn_fsdp: true"), kScenarioFile);
  TrainingLayout layout;
  const Program program = training_program(s.training().model, s.training().plan, s.topology, layout);
  CHECK(layout.fsdp_degree == 8);
  CHECK(layout.data_degree == 8);
  int gathers = 0, scatters = 0;
  for (const auto& op : program) {
    if (!op.is(ProgramOpKind::Collective)) continue;
    if (op.role == OpRole::FsdpAllGather) {
      ++gathers;
      CHECK(op.collective().over_dcn);
    }
    if (op.role == OpRole::FsdpReduceScatter) {
      ++scatters;
      CHECK(op.collective().over_dcn);
    }
  }
  // 4 layers x (attention, MLP) + the head: gathered forward and backward, scattered once.
  CHECK(gathers == 2 * 9);
  CHECK(scatters == 9);
}

TEST_CASE("dcn_fsdp: located errors", "[maxtext-keys][errors]") {
  require_error(replaced_in(kTwoSlices, "fsdp: true, dcn_data: true", "dcn_fsdp: true"),
                "workload.parallelism.dcn_fsdp", "true", "parallelism:");
  require_error(replaced_in(kTwoSlices, "dcn_data: true", "dcn_data: true, dcn_fsdp: true"),
                "workload.parallelism.dcn_fsdp", "true", "parallelism:");
  require_error(replaced_in(kOneSlice, "fsdp: true", "fsdp: true, dcn_fsdp: true"), "workload.parallelism.dcn_fsdp",
                "true", "parallelism:");
  require_error(replaced_in(kTwoSlices, "dcn_data: true", "dcn_fsdp: true, dcn_sync: after_backward"),
                "workload.parallelism.dcn_sync", "after_backward", "parallelism:");
  const std::string moe = replaced_in(replaced_in(kTwoSlices, "dcn_data: true", "dcn_fsdp: true"), "vocab: 4096}",
                                      "vocab: 4096, moe: {experts: 4, experts_per_token: 1, expert_d_ff: 1024}}");
  require_error(moe, "workload.parallelism.dcn_fsdp", "true", "parallelism:");
}

TEST_CASE("interleaved MoE layers: Llama 4 Maverick's every second layer", "[maxtext-keys]") {
  const TransformerSpec m = *find_model_preset("llama4-17b-128e");
  REQUIRE(m.moe);
  CHECK(moe_layer_count(m) == 24);
  CHECK_FALSE(is_moe_layer(m, 0));
  CHECK(is_moe_layer(m, 1));
  CHECK(moe_layer_index(m, 3) == 1);
  CHECK(moe_layer_index(m, 2) == -1);
  // Parameters from the shapes: 48 attention blocks (Q, O: D x 40 x 128; K, V: D x 8 x 128), 24
  // dense SwiGLU MLPs of 16384, 24 MoE layers of 128 routed + 1 shared SwiGLU experts of 8192 and
  // a [D, 128] router, untied embeddings of 202048 x 5120, and the norms (2 L D + D).
  const double D = 5120;
  const double attention = D * 128 * (2 * 40 + 2 * 8);
  const double total = 48 * attention + 24 * 3 * D * 16384 + 24 * (129 * 3 * D * 8192 + D * 128) +
                       2 * 202048 * D + (2 * 48 + 1) * D;
  CHECK(param_count(m) == Approx(total));
  // The model card's 400B total and 17B active, to the rounding it prints.
  CHECK(param_count(m) / 1e9 == Approx(400).epsilon(0.02));
  const double active = 48 * attention + 24 * 3 * D * 16384 + 24 * (2 * 3 * D * 8192 + D * 128) +
                        2 * 202048 * D + (2 * 48 + 1) * D;
  CHECK(activated_param_count(m) == Approx(active));
}

TEST_CASE("interleaved MoE layers: the training step has 24 MoE blocks among 48 layers", "[maxtext-keys]") {
  TransformerSpec m = *find_model_preset("llama4-17b-128e");
  m.layers = 4;   // layers 1 and 3 are MoE
  const TopologySpec mesh = v5e_mesh({2, 2});
  TrainingPlan plan;
  plan.data_axes = {0, 1};
  plan.fsdp = true;
  plan.sequence_length = 1024;
  plan.global_batch_tokens = 4 * 1024;
  const TrainingLayout layout = training_layout(m, plan, mesh);
  std::vector<int> moe_layers;
  for (const auto& b : layout.blocks)
    if (b.moe_layer >= 0) moe_layers.push_back(b.layer);
  CHECK(moe_layers == std::vector<int>{1, 3});
}

TEST_CASE("interleave_moe_layer_step: located errors", "[maxtext-keys][errors]") {
  const std::string moe = replaced_in(kOneSlice, "vocab: 4096}",
                                      "vocab: 4096, moe: {experts: 4, experts_per_token: 1, expert_d_ff: 1024, "
                                      "interleave_moe_layer_step: 5}}");
  require_error(moe, "workload.model.moe.interleave_moe_layer_step", "5", "interleave_moe_layer_step");
}

TEST_CASE("remat_policy on an MLA model: every policy loads, full keeping each layer's input alone", "[maxtext-keys]") {
  const std::string text = R"(version: 1
hardware: {preset: v5p, profile: ideal}
topology: {mesh: {X: 4, Y: 4}}
workload:
  kind: training
  model: {preset: deepseek-v3, layers: 4, moe: {dense_layers: 1}}
  batch_tokens: 65536
  sequence_length: 4096
  parallelism: {data: [X, Y], fsdp: true}
  remat_policy: minimal
)";
  // The MLA kernels carry MaxText's names (tests/test_mla_remat.cpp prices what each keeps).
  const Scenario minimal = load_scenario_text(text, kScenarioFile);
  REQUIRE(minimal.training().plan.remat);
  CHECK(minimal.training().plan.remat->of("query_proj") == TensorFate::Device);
  CHECK(minimal.training().plan.remat->of("mla_q") == TensorFate::Recompute);
  // `full` keeps only each layer's input, whatever the layer.
  const Scenario full = load_scenario_text(replaced_in(text, "remat_policy: minimal", "remat_policy: full"), kScenarioFile);
  REQUIRE(full.training().plan.remat);
  CHECK(full.training().plan.remat->fate.empty());
  CHECK(full.training().plan.remat->of("decoder_layer_input") == TensorFate::Device);
}

TEST_CASE("the mistral-7b preset is MaxText's mistral-7b.yml, attention global", "[maxtext-keys]") {
  const TransformerSpec m = *find_model_preset("mistral-7b");
  CHECK(m.layers == 32);
  CHECK(m.d_model == 4096);
  CHECK(m.d_ff == 14336);
  CHECK(m.heads == 32);
  CHECK(m.kv_heads == 8);
  CHECK(m.vocab == 32000);
  // 7.24B parameters (Mistral-7B-v0.1's model card: 7.3B): the Llama shapes with 32000 tokens.
  const double D = 4096;
  CHECK(param_count(m) == Approx(32 * (D * 128 * (2 * 32 + 2 * 8) + 3 * D * 14336) + 2 * 32000 * D + 65 * D));
}
