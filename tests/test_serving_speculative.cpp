// Speculative decoding under policy mixed (workloads/speculative.hpp, workloads/serving.cpp):
// the acceptance model and its inverse, the draws' distribution, the steps a verifying
// sequence runs (k + 1 tokens with logits at each, drafts cut at the response's end and by
// the token budget), what is streamed (one ITL sample a chunk, TPOT over tokens), preemption
// with drafts, the loader's located errors, and the shipped scenario against its formula.
#include <catch2/catch.hpp>

#include <cmath>

#include <nlohmann/json.hpp>

#include "run_summary.hpp"
#include "scenario_errors.hpp"
#include "scratch.hpp"
#include "sim/commands/scenario_run.hpp"
#include "sim/engine/serving_costs.hpp"
#include "sim/report/report.hpp"
#include "sim/report/serving_report.hpp"
#include "sim/scenario/scenario.hpp"
#include "workloads/serving.hpp"

using namespace podsim;

namespace {

struct Recorded {
  StepCosts costs;
  std::shared_ptr<std::vector<StepShape>> shapes = std::make_shared<std::vector<StepShape>>();
};

// 10 ms plus 10 us a token, every shape kept.
Recorded recording_costs() {
  Recorded r;
  r.costs.prefill_s = [](int, int, int) { return 0.0; };
  r.costs.decode_s = [](int, double) { return 0.0; };
  r.costs.kv_transfer_s = [](int) { return 0.0; };
  auto shapes = r.shapes;
  r.costs.mixed_s = [shapes](const StepShape& s) {
    shapes->push_back(s);
    return 0.01 + 1e-5 * s.tokens;
  };
  return r;
}

ServingConfig speculative(int k, double p, int budget = 2048, long long blocks = 100000, int block_size = 16) {
  ServingConfig c;
  c.policy = BatchingPolicy::Mixed;
  c.buckets = {1};
  c.max_num_batched_tokens = budget;
  c.max_num_seqs = 256;
  c.kv_blocks = blocks;
  c.block_size = block_size;
  c.speculative.num_tokens = k;
  c.speculative.acceptance_probability = p;
  return c;
}

}  // namespace

TEST_CASE("speculative acceptance: the rate's inverse, and the draws follow P(A >= i) = p^i", "[serving][speculative]") {
  CHECK(expected_accepted_drafts(0.5, 3) == Approx(0.5 + 0.25 + 0.125));
  CHECK(acceptance_probability_for_rate(0.0, 4) == 0.0);
  CHECK(acceptance_probability_for_rate(1.0, 4) == 1.0);
  CHECK(acceptance_probability_for_rate(0.3, 1) == Approx(0.3).epsilon(1e-12));   // one draft: the rate is p
  for (int k = 1; k <= 8; ++k)
    for (double rate = 0.05; rate < 1; rate += 0.1) {
      const double p = acceptance_probability_for_rate(rate, k);
      CHECK(expected_accepted_drafts(p, k) / k == Approx(rate).epsilon(1e-12));
    }
  SpeculativeDecoding spec{DraftMethod::Ngram, 5, 0.7, 11};
  const int draws = 40000;
  std::vector<int> at_least(6, 0);
  for (int i = 0; i < draws; ++i) {
    const int a = accepted_drafts(spec, i % 97, i / 97, 5);
    REQUIRE(a >= 0);
    REQUIRE(a <= 5);
    for (int j = 0; j <= a; ++j) ++at_least[j];
  }
  for (int j = 1; j <= 5; ++j) {
    const double expected = std::pow(0.7, j);
    // Binomial standard error at 40,000 draws is at most 0.0025: 4 of them.
    CHECK(std::fabs(at_least[j] / static_cast<double>(draws) - expected) < 0.01);
  }
  // Counter-based: the same request and step draw the same whatever came before.
  CHECK(accepted_drafts(spec, 3, 17, 5) == accepted_drafts(spec, 3, 17, 5));
  CHECK(accepted_drafts({DraftMethod::Ngram, 5, 0.0, 1}, 3, 17, 5) == 0);
  CHECK(accepted_drafts({DraftMethod::Ngram, 5, 1.0, 1}, 3, 17, 5) == 5);
}

TEST_CASE("speculative steps: k + 1 tokens with logits at each, drafts cut at the response's end", "[serving][speculative]") {
  SECTION("every draft accepted: 4 tokens a step, the last step without drafts") {
    Recorded rec = recording_costs();
    const auto run = simulate_serving({{0, 0.0, 100, 10}}, speculative(3, 1.0), rec.costs);
    // Prefill (first token), then 1 + 3 drafts twice (4 tokens each: 9 out), then one token
    // with no room for a draft.
    REQUIRE(rec.shapes->size() == 4);
    const double tokens[] = {100, 4, 4, 1}, rows[] = {1, 4, 4, 1};
    for (size_t i = 0; i < 4; ++i) {
      CHECK((*rec.shapes)[i].tokens == tokens[i]);
      CHECK((*rec.shapes)[i].logit_rows == rows[i]);
    }
    // Each verifying step's rows attend over the cache and the chunk: (1 + 3) x (100 + 4).
    CHECK((*rec.shapes)[1].attended_tokens == 4 * 104);
    CHECK(run.inter_token_s.size() == 3);   // one ITL sample a streamed chunk
    CHECK(run.spec_drafts == 2);
    CHECK(run.spec_draft_tokens == 6);
    CHECK(run.spec_accepted_tokens == 6);
    const auto& r = run.requests[0];
    CHECK(r.tpot_s() == Approx((r.end_s - r.first_token_s) / 9));
  }
  SECTION("no draft accepted: one token a step, each step k + 1 rows dearer") {
    Recorded rec = recording_costs();
    const auto run = simulate_serving({{0, 0.0, 100, 10}}, speculative(3, 0.0), rec.costs);
    REQUIRE(rec.shapes->size() == 10);   // prefill, then 9 steps of one token each
    for (size_t i = 1; i < 10; ++i) CHECK((*rec.shapes)[i].tokens == std::min<double>(4, 10 - i));
    CHECK(run.inter_token_s.size() == 9);
    CHECK(run.spec_accepted_tokens == 0);
  }
  SECTION("the token budget cuts drafts: running sequences first, each as far as the budget goes") {
    Recorded rec = recording_costs();
    std::vector<Request> requests;
    for (int i = 0; i < 3; ++i) requests.push_back({i, 0.0, 2, 50});
    simulate_serving(requests, speculative(4, 1.0, /*budget=*/8), rec.costs);
    // Step 1 prefills the three prompts (6 tokens); step 2 gives the first 5 (1 + 4 drafts),
    // the second 3 (1 + 2 drafts: the budget's rest), the third none.
    REQUIRE(rec.shapes->size() > 2);
    CHECK((*rec.shapes)[0].tokens == 6);
    CHECK((*rec.shapes)[1].tokens == 8);
    CHECK((*rec.shapes)[1].logit_rows == 8);
  }
}

TEST_CASE("a draft model's passes: after the steps that leave sequences decoding, in those steps' durations",
          "[serving][speculative]") {
  Recorded rec = recording_costs();
  std::vector<std::pair<int, double>> asked;   // (sequences, context) of each drafting
  rec.costs.draft_s = [&asked](const StepShape&, int sequences, double context) {
    asked.emplace_back(sequences, context);
    return 0.002 * sequences;
  };
  ServingConfig config = speculative(3, 1.0);
  config.speculative.method = DraftMethod::DraftModel;
  const auto run = simulate_serving({{0, 0.0, 100, 10}, {1, 0.0, 50, 1}}, config, rec.costs);
  // Step 1 prefills both prompts: request 0 decodes next (its cache 100 tokens), request 1 is
  // done with its one token. Then 1 + 3 drafts twice (all accepted), then the last token with
  // no draft left to make.
  REQUIRE(asked.size() == 3);
  CHECK(asked[0] == std::pair<int, double>{1, 100});
  CHECK(asked[1] == std::pair<int, double>{1, 104});
  CHECK(asked[2] == std::pair<int, double>{1, 108});
  double drafting = 0;
  for (const auto& s : run.steps) {
    drafting += s.draft_s;
    CHECK(s.end_s - s.start_s == Approx(0.01 + 1e-5 * s.tokens + s.draft_s));
  }
  CHECK(drafting == Approx(3 * 0.002));
  CHECK(run.spec_draft_s == Approx(drafting));
}

TEST_CASE("speculative steps: acceptance at the configured rate, every output once, through preemption",
          "[serving][speculative]") {
  const int k = 4;
  const double rate = 0.6, p = acceptance_probability_for_rate(rate, k);
  std::vector<Request> requests;
  for (int i = 0; i < 200; ++i) requests.push_back({i, 0.01 * i, 50 + i % 7, 400 + i % 13});
  SECTION("a roomy cache") {
    Recorded rec = recording_costs();
    ServingConfig config = speculative(k, p);
    config.speculative.seed = 3;
    const auto run = simulate_serving(requests, config, rec.costs);
    const double realised = static_cast<double>(run.spec_accepted_tokens) / static_cast<double>(run.spec_draft_tokens);
    // Drafts cut near a response's end (fewer than k) are accepted a little more often.
    CHECK(realised == Approx(rate).epsilon(0.03));
    CHECK(1.0 + static_cast<double>(run.spec_accepted_tokens) / static_cast<double>(run.spec_drafts) ==
          Approx(1 + expected_accepted_drafts(p, k)).epsilon(0.03));
    // Every token out once: outputs = first tokens + drafts accepted + one a verifying or plain decode step.
    long long outputs = 0;
    for (const auto& r : requests) outputs += r.output_tokens;
    CHECK(static_cast<long long>(run.inter_token_s.size()) + static_cast<long long>(requests.size()) +
              run.spec_accepted_tokens ==
          outputs);
  }
  SECTION("a cache of 300 blocks of 16: preempted sequences recompute and still emit every token once") {
    Recorded rec = recording_costs();
    const auto run = simulate_serving(requests, speculative(k, p, 2048, 300), rec.costs);
    CHECK(run.preemptions > 0);
    CHECK(run.requests.size() == requests.size());
    for (const auto& r : run.requests) CHECK(r.end_s >= r.first_token_s);
    CHECK(run.peak_kv_blocks_used <= 300);
  }
  SECTION("speculation shortens the run against one token a step on the same costs") {
    Recorded plain_rec = recording_costs(), spec_rec = recording_costs();
    const auto plain = simulate_serving(requests, speculative(0, 0.0), plain_rec.costs);
    const auto spec = simulate_serving(requests, speculative(k, p), spec_rec.costs);
    CHECK(spec.end_s < plain.end_s);
    CHECK(spec_rec.shapes->size() < plain_rec.shapes->size());
  }
}

TEST_CASE("speculative decoding and block sizes: bad input located", "[serving][speculative][scenario]") {
  using podsim_test::replaced_in;
  using podsim_test::require_error;
  const std::string base = R"(version: 1
hardware: {preset: v6e}
topology: {mesh: {X: 2, Y: 4}}
workload:
  kind: serving
  model: llama3-70b
  policy: mixed
  block_size: 16
  speculative:
    method: ngram
    num_speculative_tokens: 4
    acceptance_rate: 0.6
  requests:
    random: {count: 10, input_len: 1000, output_len: 1000}
)";
  const Scenario s = load_scenario_text(base, podsim_test::kScenarioFile);
  CHECK(s.serving().config.speculative.num_tokens == 4);
  CHECK(expected_accepted_drafts(s.serving().config.speculative.acceptance_probability, 4) / 4 == Approx(0.6));
  require_error(replaced_in(base, "acceptance_rate: 0.6", "acceptance_rate: 1.5"), "workload.speculative.acceptance_rate",
                "1.5", "    acceptance_rate:");
  require_error(replaced_in(base, "acceptance_rate: 0.6", "acceptance_probability: -0.1"),
                "workload.speculative.acceptance_probability", "-0.1", "    acceptance_probability:");
  require_error(replaced_in(base, "acceptance_rate: 0.6", "acceptance_rate: 0.6\n    acceptance_probability: 0.5"),
                "workload.speculative",
                "{method: ngram, num_speculative_tokens: 4, acceptance_rate: 0.6, acceptance_probability: 0.5}",
                "    method:");
  require_error(replaced_in(base, "method: ngram", "method: eagle"), "workload.speculative.method", "eagle", "    method:");
  require_error(replaced_in(base, "num_speculative_tokens: 4", "num_speculative_tokens: 0"),
                "workload.speculative.num_speculative_tokens", "0", "    num_speculative_tokens:");
  require_error(replaced_in(base, "policy: mixed\n  block_size: 16\n", "policy: continuous\n"), "workload.speculative",
                "{method: ngram, num_speculative_tokens: 4, acceptance_rate: 0.6}", "    method:");
  // Paged attention tiles blocks in powers of two.
  require_error(replaced_in(base, "block_size: 16", "block_size: 24"), "workload.block_size", "24", "  block_size:");
  CHECK(load_scenario_text(replaced_in(base, "block_size: 16", "block_size: 128"), podsim_test::kScenarioFile)
            .serving()
            .config.block_size == 128);
}

TEST_CASE("the speculative vLLM scenario: its acceptance formula, every token once, and TPOT below the plain run's",
          "[serving][speculative][scenario]") {
  const auto spec = podsim_test::run_summary("serving_llama3_70b_vllm_spec_ngram_v6e_8", "", "spec-ngram");
  const auto plain = podsim_test::run_summary("serving_llama3_70b_vllm_mixed_v6e_8", "", "spec-plain");
  CHECK(spec["spec_decode_acceptance_rate"].get<double>() == Approx(0.5).epsilon(0.01));
  CHECK(spec["spec_decode_mean_acceptance_length"].get<double>() == Approx(3.0).epsilon(0.01));
  CHECK(spec["workload"]["speculative"]["expected_acceptance_rate"].get<double>() == Approx(0.5).epsilon(1e-12));
  // One ITL sample a chunk: outputs less first tokens less accepted drafts.
  CHECK(spec["itl_s"]["count"].get<long long>() ==
        1000000 - 1000 - spec["spec_decode_num_accepted_tokens"].get<long long>());
  // Verifying steps are dearer (5 rows a sequence) but bring about 3 tokens: TPOT falls, by
  // less than the 3x the tokens alone would give.
  const double ratio = plain["tpot_s"]["mean"].get<double>() / spec["tpot_s"]["mean"].get<double>();
  CHECK(ratio > 1.3);
  CHECK(ratio < 3.0);
  CHECK(spec["mixed_step_time_s"].get<double>() > plain["mixed_step_time_s"].get<double>());
}

TEST_CASE("a draft model: its passes priced as its own mixed steps, added to the same steps as the ngram run's",
          "[serving][speculative][scenario]") {
  const auto draft = podsim_test::run_summary("serving_llama3_70b_vllm_spec_draft_v6e_8", "", "spec-draft");
  const auto ngram = podsim_test::run_summary("serving_llama3_70b_vllm_spec_ngram_v6e_8", "", "spec-ngram-2");
  // Both models' weights and caches in HBM less the headroom (the scenario's comment).
  const double both_weights = 2 * (podsim::param_count(*podsim::find_model_preset("llama3-70b")) +
                                   podsim::param_count(*podsim::find_model_preset("llama3-8b")));
  CHECK(draft["kv_cache_blocks"] ==
        std::floor((8 * podsim::find_chip_preset("v6e")->usable_hbm_bytes() - both_weights) / (16 * (327680.0 + 131072.0))));
  CHECK(draft["workload"]["speculative"]["model"] == "llama3-8b");
  // The same steps (the same draws, decisions at step ends in the same order), each longer by
  // the draft's passes.
  REQUIRE(draft["mixed_steps"] == ngram["mixed_steps"]);
  CHECK(draft["spec_decode_num_accepted_tokens"] == ngram["spec_decode_num_accepted_tokens"]);
  const double steps = draft["mixed_steps"].get<double>();
  const double drafting = draft["spec_decode_draft_time_s"].get<double>();
  CHECK(drafting > 0);
  CHECK(draft["mixed_step_time_s"].get<double>() * steps ==
        Approx(ngram["mixed_step_time_s"].get<double>() * steps + drafting).epsilon(1e-9));
  // Each step's drafting reads the 8B's weights 4 times at least: 4 x 16.06e9 B / 8 chips over
  // v6e's 1.64e12 B/s.
  CHECK(drafting / steps >= 4 * 16.06e9 / 8 / 1.64e12);
  CHECK(draft["tpot_s"]["mean"].get<double>() > ngram["tpot_s"]["mean"].get<double>());
}

TEST_CASE("policy mixed with a draft model: the summary has the fields its warnings name, and no zeros for "
          "steps it does not run", "[serving][speculative][scenario]") {
  // A cost model's first step replayed at its own shape warns naming the summary field that
  // counts such steps (replays_counted_in): the mixed steps' and the draft model's passes' must
  // each be in the summary (the warning named decode_steps_replayed_at_own_context, which a
  // mixed run's summary does not have). 24 requests keep it short.
  const Scenario s = load_scenario(podsim_test::source_path("scenarios/serving_llama3_70b_vllm_spec_draft_v6e_8.yaml"),
                                   {{"workload.requests.random.count", "24"}});
  const ServingRun run = run_serving(s);
  const auto summary = nlohmann::json::parse(serving_summary_json(s, run, {}));
  auto has_path = [&](const std::string& dotted) {
    const nlohmann::json* at = &summary;
    for (size_t start = 0; start <= dotted.size();) {
      const size_t dot = std::min(dotted.find('.', start), dotted.size());
      const std::string key = dotted.substr(start, dot - start);
      if (!at->is_object() || !at->contains(key)) return false;
      at = &(*at)[key];
      start = dot + 1;
    }
    return at->is_number_integer();
  };
  REQUIRE(run.draft_costs);
  CHECK(has_path(run.costs->replays_counted_in()));
  CHECK(has_path(run.draft_costs->replays_counted_in()));
  CHECK(std::string(run.costs->replays_counted_in()) != run.draft_costs->replays_counted_in());
  // No prefill step runs under policy mixed: no prefill_time_s rather than 0; the decode step
  // time is the steps that decode only, which a run of 1000-token outputs has.
  CHECK_FALSE(summary.contains("prefill_time_s"));
  REQUIRE(summary.contains("decode_step_time_s"));
  const double decode_s = summary["decode_step_time_s"].get<double>();
  CHECK(decode_s > 0);
  // A step reads the 70B's weights once at least: 70.6e9 parameters of a byte or more, over 8
  // chips at v6e's 1.64e12 B/s each.
  CHECK(decode_s >= 70.6e9 / 8 / 1.64e12);
}

TEST_CASE("a draft model: bad input located", "[serving][speculative][scenario]") {
  using podsim_test::replaced_in;
  using podsim_test::require_error;
  const std::string base = R"(version: 1
hardware: {preset: v6e}
topology: {mesh: {X: 2, Y: 4}}
workload:
  kind: serving
  model: llama3-70b
  policy: mixed
  speculative:
    method: draft_model
    model: llama3-8b
    num_speculative_tokens: 4
    acceptance_rate: 0.6
  requests:
    random: {count: 10, input_len: 1000, output_len: 1000}
)";
  const Scenario s = load_scenario_text(base, podsim_test::kScenarioFile);
  REQUIRE(s.serving().draft_model.has_value());
  CHECK(s.serving().draft_model->name == "llama3-8b");
  CHECK(s.serving().config.speculative.method == DraftMethod::DraftModel);
  // No model: named at the method.
  require_error(replaced_in(base, "    model: llama3-8b\n", ""), "workload.speculative.method", "draft_model", "    method:");
  // A model for ngram: named at the model.
  require_error(replaced_in(base, "method: draft_model", "method: ngram"), "workload.speculative.model", "llama3-8b",
                "    model: llama3-8b");
  // An EAGLE-like head of one layer with 4 KV heads cannot shard over 8 chips by heads.
  require_error(replaced_in(base, "model: llama3-8b", "model: {preset: llama3-8b, layers: 1, kv_heads: 4}"),
                "workload.speculative.model", "{preset: llama3-8b, layers: 1, kv_heads: 4}", "    model: {");
  // A draft whose context is shorter than a request.
  require_error(replaced_in(base, "model: llama3-8b", "model: {preset: llama3-8b, max_sequence_length: 1024}"),
                "workload.speculative",
                "{method: draft_model, model: {preset: llama3-8b, max_sequence_length: 1024}, num_speculative_tokens: 4, ...}",
                "    method:");
}
