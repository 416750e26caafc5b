// When sharded gradients cross the DCN (parallelism.dcn_sync; issue 26): behind each block's
// ReduceScatter, hidden under the rest of the backward, or hoisted after the whole backward as
// XLA does for a scanned layer stack (MaxText's multi-slice runs), where it is exposed; and the
// gradient reductions move the gradients' dtype.
#include <catch2/catch.hpp>

#include <algorithm>
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
  require_error(replaced_in(replaced_in(kScenario, ", slices: 2", ""), "fsdp: true, dcn_data: true}",
                            "fsdp: true, dcn_sync: after_backward}"),
                "workload.parallelism.dcn_sync", "after_backward", "parallelism:");
}
