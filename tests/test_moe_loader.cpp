// The MoE parts of the scenario loader (docs/scenario-schema.md): parallelism.expert for
// training, inference and serving, workload.routing, and the expert-load CSV it names; every key
// parsed into the plans, every mistake named by file, line, key and value.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "scenario_errors.hpp"
#include "scratch.hpp"
#include "sim/scenario/scenario.hpp"

using namespace podsim;
using namespace podsim_test;
namespace fs = std::filesystem;

namespace {

// Mixtral 8x7B (32 layers, 8 experts, 2 per token) on 32 chips: experts over X (4 ranks).
const std::string kTraining = R"(version: 1
hardware: {preset: v5p}
topology: {mesh: {X: 4, Y: 4, Z: 2}}
workload:
  kind: training
  model: mixtral-8x7b
  batch_tokens: 131072
  sequence_length: 4096
  parallelism:
    data: [X, Y]
    fsdp: true
    tensor: [Z]
    expert: [X]
)";

// One decode step of Mixtral on a v5e 4x2: weights over X, experts over Y.
const std::string kInference = R"(version: 1
hardware: {preset: v5e}
topology: {mesh: {X: 4, Y: 2}}
workload:
  kind: inference
  model: mixtral-8x7b
  batch: 8
  context_length: 1024
  weights: int8
  parallelism: {model: [X], expert: [Y]}
)";

const std::string kServing = R"(version: 1
hardware: {preset: v5e}
topology: {mesh: {X: 4, Y: 2}}
workload:
  kind: serving
  model: mixtral-8x7b
  weights: int8
  parallelism: {expert: [Y]}
  requests:
    poisson: {rate: "1 /s", count: 4, prompt_tokens: 128, output_tokens: 16}
)";

std::string training_with(const std::string& from, const std::string& to) { return replaced_in(kTraining, from, to); }
std::string inference_with(const std::string& from, const std::string& to) { return replaced_in(kInference, from, to); }
std::string serving_with(const std::string& from, const std::string& to) { return replaced_in(kServing, from, to); }

// kTraining with a routing mapping added to the workload.
std::string training_routing(const std::string& routing) { return kTraining + "  routing: " + routing + "\n"; }

std::string expected_of(const std::string& text) { return error_from(text).expected(); }

struct TempDir {
  fs::path path;
  TempDir() : path(podsim_test::made_dir("moe-loader")) {}
  fs::path write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name, std::ios::binary) << text;
    return path / name;
  }
};

}  // namespace

TEST_CASE("MoE training: expert axes and routing reach the plan", "[scenario][moe]") {
  SECTION("expert axes, routing defaults") {
    const Scenario s = load_scenario_text(kTraining, kScenarioFile);
    const TrainingPlan& plan = s.training().plan;
    CHECK(plan.expert_axes == std::vector<int>{0});
    CHECK(plan.data_axes == std::vector<int>{0, 1});
    CHECK(plan.routing.spec.kind == RoutingKind::Uniform);
    CHECK(plan.routing.spec.zipf_s == 1.0);
    CHECK(plan.routing.spec.capacity_factor == 0);   // dropless
    CHECK(plan.routing.spec.seed == 1);
    CHECK(plan.routing.shuffle);
    CHECK(plan.routing.pad_to_capacity);
    CHECK(plan.routing.layer_weights.empty());
  }
  SECTION("two expert axes, one name, all") {
    const std::string two = training_with("model: mixtral-8x7b", "model: {preset: mixtral-8x7b, moe: {experts: 16}}");
    CHECK(load_scenario_text(replaced_in(two, "expert: [X]", "expert: [Y, X]"), kScenarioFile).training().plan.expert_axes ==
          std::vector<int>{1, 0});
    CHECK(load_scenario_text(training_with("expert: [X]", "expert: Y"), kScenarioFile).training().plan.expert_axes ==
          std::vector<int>{1});
    const std::string all = replaced_in(training_with("tensor: [Z]", "tensor: []"), "data: [X, Y]", "data: all");
    const std::string all_experts =
        replaced_in(replaced_in(all, "expert: [X]", "expert: all"), "mixtral-8x7b", "{preset: mixtral-8x7b, moe: {experts: 32}}");
    CHECK(load_scenario_text(all_experts, kScenarioFile).training().plan.expert_axes == std::vector<int>{0, 1, 2});
  }
  SECTION("an MoE model without expert axes: every chip holds every expert") {
    const Scenario s = load_scenario_text(training_with("    expert: [X]\n", ""), kScenarioFile);
    CHECK(s.training().model.moe.has_value());
    CHECK(s.training().plan.expert_axes.empty());
  }
  SECTION("every routing key") {
    const Scenario s = load_scenario_text(
        training_routing("{distribution: zipf, zipf_s: 1.2, capacity_factor: 1.25, pad_to_capacity: false, "
                         "shuffle: false, seed: 7}"),
        kScenarioFile);
    const MoeRouting& r = s.training().plan.routing;
    CHECK(r.spec.kind == RoutingKind::Zipf);
    CHECK(r.spec.zipf_s == 1.2);
    CHECK(r.spec.capacity_factor == 1.25);
    CHECK(r.spec.seed == 7);
    CHECK_FALSE(r.shuffle);
    CHECK_FALSE(r.pad_to_capacity);
    const Scenario u = load_scenario_text(training_routing("{distribution: uniform, capacity_factor: \"2\"}"), kScenarioFile);
    CHECK(u.training().plan.routing.spec.kind == RoutingKind::Uniform);
    CHECK(u.training().plan.routing.spec.capacity_factor == 2.0);
    CHECK(u.training().plan.routing.pad_to_capacity);
    CHECK(load_scenario_text(training_routing("{distribution: zipf, zipf_s: 0}"), kScenarioFile)
              .training().plan.routing.spec.zipf_s == 0.0);
  }
  SECTION("MLA and MoE together: DeepSeek-V3 loads") {
    const std::string text = training_with("model: mixtral-8x7b", "model: deepseek-v3");
    const Scenario s = load_scenario_text(replaced_in(text, "expert: [X]", "expert: [X, Y]"), kScenarioFile);
    CHECK(s.training().model.attention == AttentionKind::Mla);
    CHECK(s.training().plan.expert_axes == std::vector<int>{0, 1});   // 256 experts over 16 ranks
  }
}

TEST_CASE("MoE training: expert loads from a CSV beside the scenario", "[scenario][moe]") {
  const TempDir dir;
  std::string header = "layer";
  for (int e = 0; e < 8; ++e) header += ",expert_" + std::to_string(e);
  dir.write("loads.csv", header + "\n*,8,7,6,5,4,3,2,1\n");
  std::string per_layer = header + "\n";
  for (int layer = 31; layer >= 0; --layer) per_layer += std::to_string(layer) + ",1,1,0,0,0,0,0," + std::to_string(layer) + "\n";
  dir.write("per_layer.csv", per_layer);
  const std::string scenario_path = (dir.path / "train.yaml").string();

  SECTION("one row for every layer, the path relative to the scenario") {
    const std::string text = training_routing("{distribution: loads, loads: loads.csv, seed: 3}");
    const Scenario s = load_scenario_text(text, scenario_path);
    const MoeRouting& r = s.training().plan.routing;
    CHECK(r.spec.kind == RoutingKind::Weights);
    CHECK(r.spec.seed == 3);
    REQUIRE(r.layer_weights.size() == 1);
    CHECK(r.layer_weights[0] == std::vector<double>{8, 7, 6, 5, 4, 3, 2, 1});
    // A sweep keys its points by the files a run reads: the CSV is one.
    dir.write("train.yaml", text);
    const ResolvedScenario resolved = resolve_scenario(scenario_path);
    CHECK(resolved.input_files == std::vector<std::string>{(dir.path / "loads.csv").string()});
  }
  SECTION("one row per layer, written in reverse, stored in layer order") {
    const Scenario s = load_scenario_text(training_routing("{distribution: loads, loads: per_layer.csv}"), scenario_path);
    const auto& rows = s.training().plan.routing.layer_weights;
    REQUIRE(rows.size() == 32);
    for (int layer = 1; layer < 32; ++layer) CHECK(rows[static_cast<size_t>(layer)].back() == layer);
    CHECK(rows[0] == std::vector<double>{1, 1, 0, 0, 0, 0, 0, 0});
  }
  SECTION("an absolute path") {
    const std::string text = training_routing("{distribution: loads, loads: \"" + (dir.path / "loads.csv").string() + "\"}");
    CHECK(load_scenario_text(text, "elsewhere/train.yaml").training().plan.routing.layer_weights.size() == 1);
  }
  SECTION("a file that is not there names the path it looked for") {
    const InputError error = error_from(training_routing("{distribution: loads, loads: absent.csv}"));
    CHECK(error.where().file == "absent.csv");   // bad.yaml's directory is the working directory
    CHECK(contains(error.what(), "cannot open expert-load file"));
  }
  SECTION("a CSV for another model is named by its file and line") {
    dir.write("wide.csv", header + ",expert_8\n*,1,1,1,1,1,1,1,1,1\n");
    try {
      load_scenario_text(training_routing("{distribution: loads, loads: wide.csv}"), scenario_path);
      FAIL("expected an InputError");
    } catch (const InputError& error) {
      CHECK(error.where().file == (dir.path / "wide.csv").string());
      CHECK(error.where().line == 1);
      CHECK(contains(error.what(), "9 expert columns for a model with 8 experts (expected layer + 8)"));
    }
  }
}

TEST_CASE("MoE training: bad expert axes name file, line, key and value", "[scenario][moe]") {
  SECTION("an unknown axis") {
    require_error(training_with("expert: [X]", "expert: [Q]"), "workload.parallelism.expert[0]", "Q", "expert:");
    CHECK(contains(expected_of(training_with("expert: [X]", "expert: [Q]")), "not a mesh axis"));
  }
  SECTION("an axis listed twice") {
    const std::string text = training_with("expert: [X]", "expert: [X, X]");
    require_error(text, "workload.parallelism.expert[1]", "X", "expert:");
    CHECK(contains(expected_of(text), "axis listed twice"));
  }
  SECTION("expert axes on a dense model") {
    const std::string text = training_with("model: mixtral-8x7b", "model: llama2-13b");
    require_error(text, "workload.parallelism.expert", "[X]", "expert:");
    CHECK(contains(expected_of(text), "the model has no experts (llama2-13b is dense)"));
  }
  SECTION("experts that do not divide over the expert axes") {
    const std::string text = training_with("expert: [X]", "expert: [X, Y]");
    require_error(text, "workload.parallelism.expert", "[X, Y]", "expert:");
    CHECK(contains(expected_of(text), "8 experts do not divide over the expert axes (X=4 x Y=4 = 16 ranks)"));
    const std::string one = training_with("model: mixtral-8x7b", "model: {preset: mixtral-8x7b, moe: {experts: 6}}");
    CHECK(contains(expected_of(one), "6 experts do not divide over the expert axes (X=4 ranks)"));
  }
  SECTION("an expert axis that is not a data axis") {
    const std::string text = training_with("expert: [X]", "expert: [Z]");
    require_error(text, "workload.parallelism.expert[0]", "Z", "expert:");
    const std::string expected = expected_of(text);
    CHECK(contains(expected, "Z is not a data axis (data: X, Y)"));
    CHECK(contains(expected, "tokens are data-parallel across the expert ranks"));
    const std::string no_data = training_with("    data: [X, Y]\n    fsdp: true\n", "");
    CHECK(contains(expected_of(replaced_in(no_data, "batch_tokens: 131072", "batch_tokens: 4096")),
                   "X is not a data axis (data: none)"));
  }
  SECTION("split axes: a part is not an expert axis, and a whole axis only partly data is not either") {
    const std::string split = replaced_in(kTraining, "topology: {mesh: {X: 4, Y: 4, Z: 2}}",
                                          "topology: {mesh: {X: 4, Y: 4, Z: 2}, split: {X: {inner: Xi, outer: Xo, inner_size: 2}}}");
    const std::string part = replaced_in(replaced_in(split, "data: [X, Y]", "data: [Xo, Y]"), "expert: [X]", "expert: [Xo]");
    require_error(part, "workload.parallelism.expert[0]", "Xo", "expert:");
    CHECK(contains(expected_of(part), "part of a split axis; expected whole mesh axes"));
    const std::string partly = replaced_in(split, "data: [X, Y]", "data: [Xo, Y]");
    require_error(partly, "workload.parallelism.expert[0]", "X", "expert:");
    CHECK(contains(expected_of(partly), "only part of X (a split axis) carries data parallelism"));
  }
  SECTION("a pipeline with an MoE model: every layer MoE loads, with ZB-H1 too, and with dense layers first") {
    const std::string text = training_with("    fsdp: true\n    tensor: [Z]\n    expert: [X]\n",
                                           "    fsdp: true\n    expert: [X]\n    pipeline: Z\n");
    CHECK(load_scenario_text(text, kScenarioFile).training().plan.pipeline_axis == 2);
    const std::string dense = replaced_in(text, "model: mixtral-8x7b", "model: {preset: mixtral-8x7b, moe: {dense_layers: 2}}");
    CHECK(load_scenario_text(dense, kScenarioFile).training().model.moe->dense_layers == 2);
    const std::string zb = replaced_in(text, "    pipeline: Z\n", "    pipeline: Z\n    schedule: zb_h1\n");
    CHECK(load_scenario_text(zb, kScenarioFile).training().plan.schedule == PipelineSchedule::ZeroBubbleH1);
  }
}

TEST_CASE("MoE routing: bad keys name file, line, key and value", "[scenario][moe]") {
  SECTION("routing on a dense model") {
    const std::string text =
        replaced_in(training_routing("{distribution: zipf}"), "model: mixtral-8x7b", "model: llama2-13b");
    const std::string dense = replaced_in(text, "    expert: [X]\n", "");
    require_error(dense, "workload.routing", "{distribution: zipf}", "routing:");
    CHECK(contains(expected_of(dense), "the model has no experts (llama2-13b is dense)"));
  }
  SECTION("an unknown distribution or key") {
    const std::string text = training_routing("{distribution: normal}");
    require_error(text, "workload.routing.distribution", "normal", "routing:");
    CHECK(contains(expected_of(text), "expected one of: uniform, zipf, loads"));
    require_error(training_routing("{top_k: 2}"), "workload.routing.top_k", "2", "routing:");
  }
  SECTION("zipf_s and shuffle without zipf, loads without loads") {
    const std::string zipf_s = training_routing("{zipf_s: 1.1}");
    require_error(zipf_s, "workload.routing.zipf_s", "1.1", "routing:");
    CHECK(contains(expected_of(zipf_s), "applies to distribution: zipf; expected no zipf_s with distribution: uniform"));
    require_error(training_routing("{distribution: uniform, shuffle: false}"), "workload.routing.shuffle", "false",
                  "routing:");
    require_error(training_routing("{distribution: zipf, loads: x.csv}"), "workload.routing.loads", "x.csv", "routing:");
    CHECK(contains(expected_of(training_routing("{loads: x.csv}")), "applies to distribution: loads"));
  }
  SECTION("distribution: loads without a file") {
    const std::string text = training_routing("{distribution: loads}");
    require_error(text, "workload.routing.loads", "", "routing:");
    CHECK(contains(expected_of(text), "distribution: loads needs loads: <path of an expert-load CSV>"));
  }
  SECTION("zipf_s out of range") {
    require_error(training_routing("{distribution: zipf, zipf_s: -0.5}"), "workload.routing.zipf_s", "-0.5", "routing:");
    require_error(training_routing("{distribution: zipf, zipf_s: .inf}"), "workload.routing.zipf_s", ".inf", "routing:");
    const std::string huge = training_routing("{distribution: zipf, zipf_s: 2000}");
    require_error(huge, "workload.routing.zipf_s", "2000", "routing:");
    CHECK(contains(expected_of(huge), "gives the expert ranked 2 a weight of 1/2^s, which rounds to 0"));
    CHECK(contains(expected_of(huge), "expected zipf_s below 1024"));
    // With one expert per token any exponent leaves the top expert its weight of 1.
    const std::string one =
        replaced_in(huge, "model: mixtral-8x7b", "model: {preset: mixtral-8x7b, moe: {experts_per_token: 1}}");
    CHECK(load_scenario_text(one, kScenarioFile).training().plan.routing.spec.zipf_s == 2000);
  }
  SECTION("capacity factors out of range, padding without a capacity") {
    require_error(training_routing("{capacity_factor: 0}"), "workload.routing.capacity_factor", "0", "routing:");
    require_error(training_routing("{capacity_factor: -1.5}"), "workload.routing.capacity_factor", "-1.5", "routing:");
    const std::string big = training_routing("{capacity_factor: 9}");
    require_error(big, "workload.routing.capacity_factor", "9", "routing:");
    CHECK(contains(expected_of(big), "above the model's 8 experts"));
    CHECK(load_scenario_text(training_routing("{capacity_factor: 8}"), kScenarioFile).training().plan.routing.spec.capacity_factor == 8);
    const std::string pad = training_routing("{distribution: zipf, pad_to_capacity: false}");
    require_error(pad, "workload.routing.pad_to_capacity", "false", "routing:");
    CHECK(contains(expected_of(pad), "applies with capacity_factor"));
    require_error(training_routing("{capacity_factor: 1, pad_to_capacity: no}"), "workload.routing.pad_to_capacity", "no",
                  "routing:");
  }
  SECTION("einsum dispatch: needs a capacity and padded buffers, and only in training") {
    const auto plan = load_scenario_text(training_routing("{capacity_factor: 1.25, dispatch: einsum}"), kScenarioFile)
                          .training().plan;
    CHECK(plan.routing.dispatch == MoeDispatch::Einsum);
    const std::string bare = training_routing("{dispatch: einsum}");
    require_error(bare, "workload.routing.dispatch", "einsum", "routing:");
    CHECK(contains(expected_of(bare), "expected capacity_factor beside it"));
    const std::string uneven = training_routing("{capacity_factor: 1.25, pad_to_capacity: false, dispatch: einsum}");
    require_error(uneven, "workload.routing.dispatch", "einsum", "routing:");
    CHECK(contains(expected_of(uneven), "computes every capacity slot"));
    const std::string unknown = training_routing("{capacity_factor: 1.25, dispatch: dense}");
    require_error(unknown, "workload.routing.dispatch", "dense", "routing:");
    CHECK(contains(expected_of(unknown), "expected one of: grouped, einsum"));
    const std::string decode = kInference + "  routing: {capacity_factor: 1.25, dispatch: einsum}\n";
    require_error(decode, "workload.routing.dispatch", "einsum", "routing:");
    CHECK(contains(expected_of(decode), "applies to a training step"));
  }
  SECTION("a negative or fractional seed") {
    require_error(training_routing("{seed: -1}"), "workload.routing.seed", "-1", "routing:");
    require_error(training_routing("{seed: 1.5}"), "workload.routing.seed", "1.5", "routing:");
  }
  SECTION("a block routing mapping: the line of the key at fault") {
    const std::string text = kTraining + "  routing:\n    distribution: zipf\n    capacity_factor: 1.0\n    shuffle: maybe\n";
    require_error(text, "workload.routing.shuffle", "maybe", "shuffle: maybe");
  }
}

TEST_CASE("MoE inference: expert axes and routing reach the plan", "[scenario][moe]") {
  SECTION("model and expert axes, routing") {
    const Scenario s = load_scenario_text(kInference + "  routing: {distribution: zipf, zipf_s: 0.8}\n", kScenarioFile);
    CHECK(s.inference().plan.model_axes == std::vector<int>{0});
    CHECK(s.inference().plan.expert_axes == std::vector<int>{1});
    CHECK(s.inference().plan.routing.spec.kind == RoutingKind::Zipf);
    CHECK(s.inference().plan.routing.spec.zipf_s == 0.8);
  }
  SECTION("MoE and MLA models load without expert axes") {
    CHECK(load_scenario_text(inference_with("  parallelism: {model: [X], expert: [Y]}\n", ""), kScenarioFile)
              .inference().plan.expert_axes.empty());
    const Scenario s = load_scenario_text(inference_with("model: mixtral-8x7b", "model: deepseek-v3"), kScenarioFile);
    CHECK(s.inference().model.attention == AttentionKind::Mla);
    CHECK(s.inference().plan.expert_axes == std::vector<int>{1});
  }
  SECTION("an expert axis that is also a model axis") {
    const std::string text = inference_with("{model: [X], expert: [Y]}", "{model: [X, Y], expert: [Y]}");
    require_error(text, "workload.parallelism.expert[0]", "Y", "expert:");
    CHECK(contains(expected_of(text), "Y already carries model parallelism; expected expert axes apart from parallelism.model"));
  }
  SECTION("expert axes on a dense model, an unknown one, and experts that do not divide") {
    const std::string dense = inference_with("model: mixtral-8x7b", "model: llama3-8b");
    require_error(dense, "workload.parallelism.expert", "[Y]", "expert:");
    CHECK(contains(expected_of(dense), "the model has no experts"));
    require_error(inference_with("expert: [Y]", "expert: [W]"), "workload.parallelism.expert[0]", "W", "expert:");
    const std::string three = inference_with("{X: 4, Y: 2}", "{X: 4, Y: 3}");
    require_error(three, "workload.parallelism.expert", "[Y]", "expert:");
    CHECK(contains(expected_of(three), "8 experts do not divide over the expert axes (Y=3 ranks)"));
  }
  SECTION("routing on a dense model") {
    const std::string text = replaced_in(inference_with("model: mixtral-8x7b", "model: llama3-8b"), ", expert: [Y]", "") +
                             "  routing: {seed: 2}\n";
    require_error(text, "workload.routing", "{seed: 2}", "routing:");
  }
}

TEST_CASE("MoE serving: expert axes and routing reach both plans", "[scenario][moe]") {
  SECTION("the model axes default to those the expert axes leave") {
    const Scenario s = load_scenario_text(kServing + "  routing: {capacity_factor: 1.5}\n", kScenarioFile);
    CHECK(s.serving().generate.model_axes == std::vector<int>{0});
    CHECK(s.serving().generate.expert_axes == std::vector<int>{1});
    CHECK(s.serving().prefill.expert_axes == std::vector<int>{1});
    CHECK(s.serving().generate.routing.spec.capacity_factor == 1.5);
    CHECK(s.serving().prefill.routing.spec.capacity_factor == 1.5);
  }
  SECTION("both lists given; an MoE model with every axis a model axis") {
    const Scenario s = load_scenario_text(serving_with("{expert: [Y]}", "{model: [X], expert: [Y]}"), kScenarioFile);
    CHECK(s.serving().generate.model_axes == std::vector<int>{0});
    const Scenario all = load_scenario_text(serving_with("  parallelism: {expert: [Y]}\n", ""), kScenarioFile);
    CHECK(all.serving().generate.model_axes == std::vector<int>{0, 1});
    CHECK(all.serving().generate.expert_axes.empty());
  }
  SECTION("model and expert axes that leave an axis out, or share one") {
    const std::string short_of = serving_with("{expert: [Y]}", "{model: [X]}");
    require_error(short_of, "workload.parallelism", "{model: [X]}", "parallelism:");
    CHECK(contains(expected_of(short_of), "expected parallelism.model to list every mesh axis (X, Y)"));
    const std::string both = serving_with("{expert: [Y]}", "{model: [X], expert: []}");
    CHECK(contains(expected_of(both), "expected parallelism.model to list every mesh axis"));
    const std::string shared = serving_with("{expert: [Y]}", "{model: [X, Y], expert: [Y]}");
    require_error(shared, "workload.parallelism.expert[0]", "Y", "expert:");
  }
  SECTION("disaggregated: the prefill servers' own expert axes, or the workload's") {
    const std::string split = kServing + "  policy: disaggregated\n";
    const Scenario inherited = load_scenario_text(split + "  prefill: {servers: 2}\n", kScenarioFile);
    CHECK(inherited.serving().prefill.expert_axes == std::vector<int>{1});
    CHECK(inherited.serving().prefill.model_axes == std::vector<int>{0});
    const Scenario own = load_scenario_text(
        split + "  prefill:\n    topology: {mesh: {X: 2, Y: 4}}\n    parallelism: {expert: [Y]}\n", kScenarioFile);
    CHECK(own.serving().prefill.expert_axes == std::vector<int>{1});
    CHECK(own.serving().prefill.model_axes == std::vector<int>{0});
    const Scenario whole = load_scenario_text(split + "  prefill:\n    topology: {mesh: {X: 2, Y: 4}}\n", kScenarioFile);
    CHECK(whole.serving().prefill.expert_axes.empty());
    CHECK(whole.serving().prefill.model_axes == std::vector<int>{0, 1});
    const std::string bad = split + "  prefill:\n    topology: {mesh: {X: 2, Y: 3}}\n    parallelism: {expert: [Y]}\n";
    require_error(bad, "workload.prefill.parallelism.expert", "[Y]", "    parallelism: {expert");
    CHECK(contains(expected_of(bad), "8 experts do not divide over the expert axes (Y=3 ranks)"));
  }
  SECTION("routing on a dense model") {
    const std::string text =
        replaced_in(serving_with("model: mixtral-8x7b", "model: llama3-8b"), "  parallelism: {expert: [Y]}\n", "") +
        "  routing: {distribution: zipf}\n";
    require_error(text, "workload.routing", "{distribution: zipf}", "routing:");
  }
  SECTION("collective matmuls load: whole-step pricing replays the steps it cannot shift by attention") {
    CHECK(load_scenario_text(kServing + "  collective_matmul: true\n", kScenarioFile).serving().generate.collective_matmul);
    const std::string split = kServing + "  policy: disaggregated\n  prefill: {servers: 1, collective_matmul: true}\n";
    const Scenario disaggregated = load_scenario_text(split, kScenarioFile);
    CHECK(disaggregated.serving().prefill.collective_matmul);
    CHECK_FALSE(disaggregated.serving().generate.collective_matmul);
  }
  SECTION("slots are a multiple of the expert-parallel groups (each holds its share of the caches)") {
    const Scenario s = load_scenario_text(kServing, kScenarioFile);
    const auto& w = s.serving();
    const double kv = kv_cache_bytes_per_token(w.model, w.generate.kv_bytes);
    const double free = 8 * s.topology.chip.usable_hbm_bytes() - server_weight_bytes(w.model, w.generate, s.topology);
    CHECK(w.config.slots == 2 * static_cast<int>(std::floor(free / 2 / (w.max_context * kv))));
  }
}
