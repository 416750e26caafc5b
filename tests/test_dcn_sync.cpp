// When sharded gradients cross the DCN (parallelism.dcn_sync; issues 26 and 43): behind each
// block's ReduceScatter, hidden under the rest of the backward; hoisted after the whole backward
// as XLA does for a scanned layer stack (MaxText's multi-slice runs), where it is exposed; or
// pipelined through the scanned backward loop (XLA's collective pipeliner), each layer's beside
// the next layer's backward, exposed by what exceeds it; and the gradient reductions move the
// gradients' dtype.
#include <catch2/catch.hpp>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <nlohmann/json.hpp>

#include "scenario_errors.hpp"
#include "sim/commands/run_command.hpp"
#include "sim/scenario/scenario.hpp"

using namespace podsim;
using namespace podsim_test;

namespace {

// A 4-layer LLaMA-shaped model with FSDP over a 2x2 in each of 2 slices, data parallel over DCN.
const std::string kScenario = R"(version: 1
hardware: {preset: v5e, profile: ideal}
topology: {mesh: {X: 2, Y: 2}, slices: 2}
workload:
  kind: training
  model: {preset: llama2-7b, name: small, layers: 4, d_model: 2048, d_ff: 5632, heads: 16, kv_heads: 16, vocab: 4096}
  batch_tokens: 16384
  sequence_length: 1024
  parallelism: {data: [X, Y], fsdp: true, dcn_data: true}
)";

// The op named NAME in a summary's operations.
const nlohmann::json& op_named(const nlohmann::json& summary, const std::string& name) {
  for (const auto& op : summary["operations"])
    if (op["name"].get<std::string>() == name) return op;
  FAIL("no op " << name);
  throw std::logic_error("unreachable");
}

double start_of(const nlohmann::json& summary, const std::string& name) {
  return op_named(summary, name)["start_s"].get<double>();
}
double end_of(const nlohmann::json& summary, const std::string& name) {
  return op_named(summary, name)["end_s"].get<double>();
}

nlohmann::json run(const std::string& text) {
  RunCommandOptions options;
  options.reproducible = true;
  return nlohmann::json::parse(simulate_summary_json(load_scenario_text(text, kScenarioFile), options));
}

}  // namespace

TEST_CASE("dcn_sync: hoisted after the backward, the DCN all-reduce is exposed by its whole time", "[dcn_sync]") {
  const auto per_block = run(kScenario);
  const auto hoisted = run(replaced_in(kScenario, "dcn_data: true}", "dcn_data: true, dcn_sync: after_backward}"));
  // Behind each block it hides under the backward of the blocks before it (all but the first
  // layer's); hoisted, the step waits for all of them after the last backward.
  CHECK(hoisted["step_time_s"].get<double>() > per_block["step_time_s"].get<double>());
  CHECK(hoisted["exposed_comm_s"].get<double>() > per_block["exposed_comm_s"].get<double>());
  // The compute is the same: only where the all-reduces sit moved.
  CHECK(hoisted["compute_time_s"].get<double>() == Approx(per_block["compute_time_s"].get<double>()).epsilon(1e-12));
}

TEST_CASE("dcn_sync: the hoisted all-reduces run one after another, each paying the DCN's cost per transfer",
          "[dcn_sync]") {
  const std::string hoisted = replaced_in(kScenario, "dcn_data: true}", "dcn_data: true, dcn_sync: after_backward}");
  auto dcn_ops = [](const nlohmann::json& summary) {
    std::vector<std::pair<double, double>> spans;
    for (const auto& op : summary["operations"])
      if (op["name"].get<std::string>().find("dcn_allreduce_grads") != std::string::npos)
        spans.push_back({op["start_s"].get<double>(), op["end_s"].get<double>()});
    std::sort(spans.begin(), spans.end());
    return spans;
  };
  const auto spans = dcn_ops(run(hoisted));
  REQUIRE(spans.size() >= 4);
  for (size_t k = 1; k < spans.size(); ++k) CHECK(spans[k].first >= spans[k - 1].second - 1e-12);
  // A fixed cost per DCN transfer: a 2-slice ring all-reduce is 2 transfers, so each of the
  // step's serial all-reduces is later by 2 of them, and the step by 2 per all-reduce.
  // (Additive hops: under the floor model a latency only bounds a transfer from below.)
  const double latency_s = 1e-3;
  const std::string additive = hoisted + "simulation: {hop_model: additive}\n";
  const auto base = run(additive);
  const auto slow = run(replaced_in(additive, "{preset: v5e, profile: ideal}", "{preset: v5e, profile: ideal, overrides: {dcn_latency: \"1 ms\"}}"));
  CHECK(slow["step_time_s"].get<double>() - base["step_time_s"].get<double>() ==
        Approx(2 * latency_s * static_cast<double>(spans.size())).epsilon(0.02));
}

// The scenario's layers are L0..L3, each an attention and an MLP block; the backward runs L3
// first, the MLP before the attention, and a layer's all-reduces are its two blocks'.
// (A function: replaced_in checks its match with Catch, which needs a running test.)
std::string pipelined_scenario() {
  return replaced_in(kScenario, "dcn_data: true}", "dcn_data: true, dcn_sync: pipelined}") +
         "simulation: {hop_model: additive}\n";
}

double layer_dcn_s(const nlohmann::json& summary, int layer) {
  const std::string l = "L" + std::to_string(layer);
  return end_of(summary, l + ".attn.dcn_allreduce_grads") - start_of(summary, l + ".mlp.dcn_allreduce_grads");
}

TEST_CASE("dcn_sync: pipelined, an iteration lasts its backward or the DCN all-reduce beside it, whichever is longer",
          "[dcn_sync]") {
  // At this batch a layer's DCN all-reduces (2.2 MB a chip of bf16 gradients, four chips on a
  // host's NIC) outlast its backward: each iteration is paced by the all-reduce beside it, so
  // the backward is exposed by exactly the excess.
  const auto summary = run(pipelined_scenario());
  for (int layer = 1; layer >= 0; --layer) {
    const std::string next = "L" + std::to_string(layer + 1);
    const std::string here = "L" + std::to_string(layer);
    // Layer l's backward (its MLP block first) starts when layer l + 2's all-reduces, which ran
    // beside layer l + 1's backward, are done...
    CHECK(start_of(summary, here + ".mlp.bwd") ==
          Approx(end_of(summary, "L" + std::to_string(layer + 2) + ".attn.dcn_allreduce_grads")).epsilon(1e-12));
    // ...so layer l + 1's iteration lasts that all-reduce's time, longer than its own backward.
    const double iteration_s = start_of(summary, here + ".mlp.bwd") - start_of(summary, next + ".mlp.bwd");
    const double backward_s = end_of(summary, next + ".attn.bwd") - start_of(summary, next + ".mlp.bwd");
    CHECK(iteration_s == Approx(layer_dcn_s(summary, layer + 2)).epsilon(1e-9));
    CHECK(iteration_s > backward_s);
  }
  // One DCN collective at a time, back to back while they are the bottleneck.
  CHECK(start_of(summary, "L2.mlp.dcn_allreduce_grads") ==
        Approx(end_of(summary, "L3.attn.dcn_allreduce_grads")).epsilon(1e-12));
  // A layer's all-reduces start when its backward is done (the next iteration), not before.
  CHECK(start_of(summary, "L3.mlp.dcn_allreduce_grads") >= end_of(summary, "L3.attn.bwd") - 1e-12);
}

TEST_CASE("dcn_sync: pipelined under a longer backward, only the peeled last layer's all-reduce is exposed",
          "[dcn_sync]") {
  // Sixteen times the batch: each layer's backward outlasts the all-reduces beside it.
  auto big = [](const std::string& text) { return replaced_in(text, "batch_tokens: 16384", "batch_tokens: 262144"); };
  const std::string text = pipelined_scenario();
  const auto pipelined = run(big(text));
  const auto hoisted = run(big(replaced_in(text, "dcn_sync: pipelined", "dcn_sync: after_backward")));
  const auto one_slice = run(replaced_in(
      replaced_in(big(replaced_in(text, ", dcn_data: true, dcn_sync: pipelined}", "}")), ", slices: 2", ""),
      "batch_tokens: 262144", "batch_tokens: 131072"));
  // Nothing in the backward waits: every backward block starts when it does on one slice.
  for (const std::string block : {"L3.mlp.bwd", "L2.mlp.bwd", "L1.attn.bwd", "L0.mlp.bwd", "L0.attn.bwd"})
    CHECK(start_of(pipelined, block) == Approx(start_of(one_slice, block)).epsilon(1e-12));
  // The step is one slice's plus what of the last layer's all-reduce (run after the loop)
  // outlasts its ReduceScatter, which one slice's optimizer waits for instead.
  const double tail_s =
      end_of(pipelined, "L0.attn.dcn_allreduce_grads") - end_of(pipelined, "L0.attn.reducescatter_grads");
  CHECK(tail_s > 0);
  CHECK(pipelined["step_time_s"].get<double>() - one_slice["step_time_s"].get<double>() ==
        Approx(tail_s).epsilon(1e-9));
  // Hoisted, all four layers' all-reduces follow the backward: three more than pipelined exposes.
  CHECK(hoisted["step_time_s"].get<double>() > pipelined["step_time_s"].get<double>() + 3 * layer_dcn_s(pipelined, 1));
}

TEST_CASE("gradients: fp32 gradients are reduced in fp32, twice the bytes of bf16", "[dcn_sync]") {
  const auto bf16 = run(kScenario);
  const auto fp32 = run(replaced_in(kScenario, "  sequence_length: 1024\n", "  sequence_length: 1024\n  gradients: fp32\n"));
  auto traffic = [](const nlohmann::json& summary, const std::string& role) {
    double bytes = 0;
    for (const auto& op : summary["operations"])
      if (op["name"].get<std::string>().find(role) != std::string::npos) bytes += op["bytes"].get<double>();
    return bytes;
  };
  const double bf16_bytes = traffic(bf16, "reducescatter_grads"), fp32_bytes = traffic(fp32, "reducescatter_grads");
  REQUIRE(bf16_bytes > 0);
  CHECK(fp32_bytes == Approx(2 * bf16_bytes));
  CHECK(traffic(fp32, "dcn_allreduce_grads") == Approx(2 * traffic(bf16, "dcn_allreduce_grads")));
  // The FSDP gathers still move the bf16 weights.
  CHECK(traffic(fp32, "allgather_weights") == Approx(traffic(bf16, "allgather_weights")));
}

TEST_CASE("dcn_sync: only where sharded gradients cross the DCN, with a located error", "[dcn_sync][errors]") {
  require_error(replaced_in(kScenario, "dcn_data: true}", "dcn_data: true, dcn_sync: later}"),
                "workload.parallelism.dcn_sync", "later", "parallelism:");
  require_error(replaced_in(kScenario, "fsdp: true, dcn_data: true}", "dcn_data: true, dcn_sync: after_backward}"),
                "workload.parallelism.dcn_sync", "after_backward", "parallelism:");
  require_error(replaced_in(kScenario, "fsdp: true, dcn_data: true}", "dcn_data: true, dcn_sync: pipelined}"),
                "workload.parallelism.dcn_sync", "pipelined", "parallelism:");
  require_error(replaced_in(replaced_in(kScenario, ", slices: 2", ""), "fsdp: true, dcn_data: true}",
                            "fsdp: true, dcn_sync: after_backward}"),
                "workload.parallelism.dcn_sync", "after_backward", "parallelism:");
}
