// Policy mixed (vLLM v1's scheduler, workloads/serving.hpp): token budgets, chunked prompts
// beside decode tokens, the sequence limit, the paged KV cache and preemption by recompute, on
// step costs simple enough to follow; and the mixed step's price (serving_whole_steps.cpp)
// against whole-step replays at the real shape on generated cases.
//
// The default suite runs kDefaultCases price cases. For more:
//   PODSIM_MIXED_CASES=1000 build/tests/podsim_tests "[mixed]"
// PODSIM_MIXED_SEED=<n> changes the seed; PODSIM_MIXED_CASE=<index> replays one case alone.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli_helpers.hpp"
#include "meshes.hpp"
#include "run_summary.hpp"
#include "scenario_errors.hpp"
#include "scratch.hpp"
#include "sim/scenario/scenario.hpp"
#include "seeded_rng.hpp"
#include "whole_step_replay.hpp"
#include "sim/engine/serving_costs.hpp"
#include "sim/report/serving_stats.hpp"
#include "workloads/serving.hpp"

using namespace podsim;
using podsim_test::env_int;

namespace {

// A step costs 10 ms plus 10 us a token: the shapes are in steps.csv-like records.
StepCosts linear_costs() {
  StepCosts c;
  c.prefill_s = [](int, int, int) { return 0.0; };
  c.decode_s = [](int, double) { return 0.0; };
  c.kv_transfer_s = [](int) { return 0.0; };
  c.mixed_s = [](const StepShape& s) { return 0.01 + 1e-5 * s.tokens; };
  return c;
}

ServingConfig mixed(int budget, int seqs, long long blocks, int block_size = 16) {
  ServingConfig c;
  c.policy = BatchingPolicy::Mixed;
  c.buckets = {1};
  c.max_num_batched_tokens = budget;
  c.max_num_seqs = seqs;
  c.kv_blocks = blocks;
  c.block_size = block_size;
  return c;
}

}  // namespace

TEST_CASE("mixed steps: a long prompt in chunks of the budget, then one token a step", "[serving][mixed]") {
  const auto run = simulate_serving({{0, 0.0, 5000, 4}}, mixed(2048, 8, 1000), linear_costs());
  REQUIRE(run.steps.size() == 3 + 3);
  CHECK(run.steps[0].tokens == 2048);
  CHECK(run.steps[1].tokens == 2048);
  CHECK(run.steps[2].tokens == 904);
  for (size_t i = 3; i < 6; ++i) CHECK(run.steps[i].tokens == 1);
  for (const auto& s : run.steps) CHECK(s.kind == StepKind::Mixed);
  const auto& r = run.requests[0];
  CHECK(r.first_token_s == Approx(run.steps[2].end_s));   // the step that ends the prompt samples
  CHECK(r.end_s == Approx(run.steps[5].end_s));
  CHECK(run.inter_token_s.size() == 3);
  CHECK(run.peak_kv_blocks_used == (5000 + 3 + 15) / 16);   // the prompt and three fed outputs
}

TEST_CASE("policy mixed: the decode step time is the mean of the steps that decode only", "[serving][mixed]") {
  // A step that carries a prompt's chunk (here at least 2 tokens, one logit row a sequence) has
  // more tokens than logit rows, and costs 10 ms; a step of decode tokens alone costs 1 ms. So
  // the mean over decode-only steps is 1 ms exactly, whatever their number; it was 0 (no step of
  // kind Decode runs under policy mixed).
  StepCosts costs = linear_costs();
  costs.mixed_s = [](const StepShape& s) { return s.tokens > s.logit_rows ? 0.010 : 0.001; };
  std::vector<Request> requests;
  for (int i = 0; i < 12; ++i) requests.push_back({i, 0.004 * i, 40 + 7 * i, 3 + i % 5});
  ServingConfig config = mixed(2048, 4, 1000);
  config.prefix_caching = false;   // every prompt token computed: no chunk shrinks to one token
  const auto run = simulate_serving(requests, config, costs);
  ServingStatsSink stats({50}, {});
  long long decode_only = 0, with_prompts = 0;
  for (const auto& step : run.steps) {
    stats.step(step);
    const double d = step.end_s - step.start_s;
    decode_only += std::fabs(d - 0.001) < 1e-12;
    with_prompts += std::fabs(d - 0.010) < 1e-12;
  }
  REQUIRE(decode_only + with_prompts == static_cast<long long>(run.steps.size()));
  REQUIRE(decode_only > 0);
  REQUIRE(with_prompts > 0);
  const ServingStats st = stats.finish(run, 1);
  CHECK(st.decode_step.count == static_cast<uint64_t>(decode_only));
  CHECK(st.decode_step.mean == Approx(0.001).epsilon(1e-12));
  CHECK(st.prefill_step.count == 0);
  CHECK(st.mixed_step.count == run.steps.size());
}

TEST_CASE("mixed steps: decode tokens and a waiting prompt's chunk share a step, up to the limits",
          "[serving][mixed]") {
  SECTION("the budget: running sequences first, the rest to the next prompt") {
    const std::vector<Request> requests = {{0, 0.0, 100, 10}, {1, 0.005, 3000, 2}};
    const auto run = simulate_serving(requests, mixed(512, 8, 1000), linear_costs());
    // Step 1: request 0's prompt (100). Request 1 arrives during it; step 2: request 0's decode
    // token and 511 of request 1's prompt.
    REQUIRE(run.steps.size() > 3);
    CHECK(run.steps[0].tokens == 100);
    CHECK(run.steps[1].tokens == 512);
    CHECK(run.steps[1].batch == 2);
  }
  SECTION("max_num_seqs: no more running sequences than that") {
    std::vector<Request> requests;
    for (int i = 0; i < 10; ++i) requests.push_back({i, 0.0, 20, 5});
    const auto run = simulate_serving(requests, mixed(2048, 3, 1000), linear_costs());
    for (const auto& s : run.steps) CHECK(s.batch <= 3);
    CHECK(run.steps[0].batch == 3);
    CHECK(run.steps[0].tokens == 60);
  }
}

TEST_CASE("mixed steps: a full KV cache preempts the latest admitted, which recomputes its prompt and outputs",
          "[serving][mixed]") {
  // 12 blocks of 4 tokens (48): two requests of 20 + 10 tokens cannot both finish in it.
  const std::vector<Request> requests = {{0, 0.0, 20, 10}, {1, 0.0, 20, 10}};
  const auto run = simulate_serving(requests, mixed(64, 8, 12, 4), linear_costs());
  CHECK(run.preemptions >= 1);
  CHECK(run.peak_kv_blocks_used <= 12);
  // Request 0 was admitted first: never preempted, it runs as if alone after the first steps.
  REQUIRE(run.requests.size() == 2);
  for (const auto& r : run.requests) CHECK(r.end_s > r.first_token_s);
  size_t gaps = 0;
  for (const auto& r : run.requests) gaps += r.request.output_tokens - 1;
  CHECK(run.inter_token_s.size() == gaps);   // every output once, none lost or doubled
  // Request 1 recomputed: some step after its first token carries more than one of its tokens
  // (its prompt and the outputs so far, again).
  bool recompute = false;
  for (const auto& s : run.steps)
    if (s.start_s >= run.requests[1].first_token_s && s.tokens > 2) recompute = true;
  CHECK(recompute);
  CHECK(run.requests[0].end_s < run.requests[1].end_s);
}

namespace {

constexpr int kDefaultCases = 120;   // 480 step shapes, about 2 s
constexpr uint64_t kDefaultSeed = 20261128;

struct PriceCase {
  TransformerSpec model;
  ServerRole role;
  std::vector<StepShape> shapes;
  bool open_lines = false;
  std::string description;
};

// Dense models and an MoE model (Mixtral 8x7B, its experts over the model axes) cut to a few
// layers on v5e meshes of up to 8 chips (lines and rings), their KV heads covering the model
// axes as policy mixed requires; steps of 1 to 4096 tokens mixing
// decode rows (contexts up to 8k; half the shapes with up to 7 speculative drafts a row) and
// prompt chunks (offsets up to 4k).
PriceCase generate(uint64_t seed, int index) {
  podsim_test::Rng rng = podsim_test::case_rng(seed, index);
  PriceCase c;
  const char* models[] = {"llama2-7b", "llama3-8b", "llama3-70b", "mixtral-8x7b"};
  c.model = *find_model_preset(models[rng.below(4)]);
  c.model.layers = 2 + rng.below(3);
  const std::vector<std::vector<int>> meshes = {{1}, {2}, {4}, {8}, {2, 2}, {2, 4}, {4, 2}};
  const auto& sizes = meshes[rng.below(static_cast<int>(meshes.size()))];
  c.role.topology = podsim_test::v5e_mesh(sizes);
  for (size_t a = 0; a < sizes.size(); ++a) c.role.plan.model_axes.push_back(static_cast<int>(a));
  c.role.plan.weight_bytes = rng.chance(0.5) ? 1 : 2;
  c.role.plan.kv_bytes = rng.chance(0.5) ? 1 : 2;
  c.role.plan.efficiency = rng.uniform(0.4, 1.0);
  c.role.model_degree = model_parallel_degree(c.role.plan, c.role.topology);
  c.role.plan.collective_matmul = c.role.model_degree > 1 && rng.chance(0.3);
  for (const auto& axis : c.role.topology.axes) c.open_lines = c.open_lines || (!axis.wraparound && axis.size > 2);
  for (int k = 0; k < 4; ++k) {
    StepShape s;
    const int decodes = rng.below(64);
    // Half the shapes verify speculative drafts: a decode row then brings 1 + d rows, each with
    // logits, attending over its context and the rows before it as a chunk does.
    const bool speculative = rng.chance(0.5);
    for (int i = 0; i < decodes; ++i) {
      const double context = std::floor(std::exp(rng.uniform(0.0, std::log(8192.0))));
      const double rows = speculative ? 1 + rng.below(8) : 1;
      s.tokens += rows;
      s.attended_tokens += rows * (context + rows - 1);
      s.kv_tokens += context + rows - 1;
      s.logit_rows += rows;
    }
    const int chunks = decodes == 0 ? 1 + rng.below(3) : rng.below(3);
    for (int i = 0; i < chunks; ++i) {
      const double chunk = 1 + rng.below(2048), offset = rng.below(4) * rng.below(1024);
      s.tokens += chunk;
      s.attended_tokens += chunk * (offset + chunk);
      s.kv_tokens += offset + chunk;
    }
    s.logit_rows += chunks;
    s.sequences = decodes + chunks;
    c.shapes.push_back(s);
  }
  // Half the cases pay a cost a sequence in attention (paged attention's serial walk).
  if (rng.chance(0.5)) c.role.topology.chip.attention_sequence_overhead_s = rng.uniform(0.1e-6, 2e-6);
  std::ostringstream d;
  d << c.model.name << " (" << c.model.layers << " layers) on v5e";
  for (size_t a = 0; a < sizes.size(); ++a) d << (a ? "x" : " ") << sizes[a];
  d << ", weights " << c.role.plan.weight_bytes << " B, KV " << c.role.plan.kv_bytes << " B, efficiency "
    << c.role.plan.efficiency << ", collective matmuls " << c.role.plan.collective_matmul << ", attention "
    << c.role.topology.chip.attention_sequence_overhead_s << " s a sequence";
  c.description = d.str();
  return c;
}

}  // namespace

TEST_CASE("generated mixed steps: the price equals the whole-step replay at the real shape",
          "[serving][mixed][shortcut]") {
  const uint64_t seed = static_cast<uint64_t>(env_int("PODSIM_MIXED_SEED", static_cast<int>(kDefaultSeed)));
  const int cases = env_int("PODSIM_MIXED_CASES", kDefaultCases);
  const int only = env_int("PODSIM_MIXED_CASE", -1);
  int shifted = 0, replayed = 0, reused = 0;
  double worst = 0;
  for (int index = (only >= 0 ? only : 0); index < (only >= 0 ? only + 1 : cases); ++index) {
    const PriceCase c = generate(seed, index);
    INFO("seed " << seed << " case " << index << ": " << c.description);
    ServingCostModel costs(c.model, c.role, c.role, {});
    ServingConfig config;
    config.policy = BatchingPolicy::Mixed;
    costs.prepare(config, {{0, 0.0, 4096, 4096}}, true);
    for (const StepShape& shape : c.shapes) {
      const long long before = costs.decode_steps_replayed_whole();
      const size_t shapes_before = costs.mixed_shapes();
      const double priced = costs.mixed_s(shape);
      const bool own = costs.decode_steps_replayed_whole() > before;
      (own ? replayed : shifted) += 1;
      reused += costs.mixed_shapes() == shapes_before;
      const auto whole = podsim_test::whole_step(c.model, c.role, shape);
      INFO(shape.tokens << " tokens, " << shape.attended_tokens << " attended, " << shape.kv_tokens << " cached, "
                        << shape.logit_rows << " logit rows: priced " << priced << " s (own replay " << own
                        << "), whole step " << whole.time_s << " s");
      // Lines of 3 or more: ties broken by float rounding, as test_serving_whole_steps.cpp bounds.
      const double bound = (c.open_lines ? 5e-4 : podsim_test::kExact) * whole.time_s +
                           whole.collectives * podsim_test::kSimGridPrecision_s;
      CHECK(std::fabs(priced - whole.time_s) <= bound);
      worst = std::max(worst, podsim_test::relative(priced, whole.time_s));
    }
  }
  if (only < 0) {
    CHECK(shifted * 2 >= cases * 4);   // most by the shift
    if (std::getenv("PODSIM_MIXED_CASES") != nullptr)
      WARN("worst relative error " << worst << " over " << cases << " cases; " << shifted << " shifted, " << replayed
                                   << " replayed at their own shape, " << reused << " reused a replay");
  }
}

TEST_CASE("the vLLM-shaped scenario: no preemption at 64 or 128 in flight, the client's limit held",
          "[serving][mixed][scenario]") {
  const std::string scenario = podsim_test::source_path("scenarios/serving_llama3_70b_vllm_mixed_v6e_8.yaml");
  // 8 chips' HBM less the headroom, less the bf16 weights, in blocks of 16 tokens of 327,680 B.
  const double blocks = std::floor((8 * podsim::find_chip_preset("v6e")->usable_hbm_bytes() -
                                    2 * podsim::param_count(*podsim::find_model_preset("llama3-70b"))) /
                                   (16 * 327680.0));
  for (int concurrency : {64, 128}) {
    INFO("max_concurrency " << concurrency);
    const auto dir = podsim_test::made_dir("mixed-" + std::to_string(concurrency));
    const auto run = podsim_test::run_podsim("run " + scenario + " --set workload.requests.max_concurrency=" +
                                             std::to_string(concurrency) + " -o " + dir.string());
    REQUIRE(run.exit_code == 0);
    const auto summary = nlohmann::json::parse(podsim_test::read_file(dir / "summary.json"));
    REQUIRE(125.0 * 128 < blocks);
    CHECK(summary["preemptions"] == 0);   // at most 125 blocks a sequence x 128 < blocks
    CHECK(summary["kv_cache_blocks"] == blocks);
    CHECK(summary["workload"]["max_concurrency"] == concurrency);
    CHECK(summary["kv_cache_peak_usage"].get<double>() <= 125.0 * concurrency / blocks);
    CHECK(summary["mixed_steps"].get<long long>() >= 977);   // the token budget's bound (the scenario's comment)
    // From requests.csv: never more sent and unfinished than the limit.
    std::istringstream csv(podsim_test::read_file(dir / "requests.csv"));
    std::string line;
    std::getline(csv, line);
    std::vector<std::pair<double, double>> spans;   // arrival (sent), end
    while (std::getline(csv, line)) {
      std::vector<std::string> cells;
      std::stringstream row(line);
      for (std::string cell; std::getline(row, cell, ',');) cells.push_back(cell);
      spans.emplace_back(std::stod(cells[1]), std::stod(cells[13]));
    }
    REQUIRE(spans.size() == 1000);
    int worst = 0;
    for (const auto& [sent, end] : spans) {
      int in_flight = 0;
      for (const auto& [s, e] : spans) in_flight += s <= sent && e > sent ? 1 : 0;
      worst = std::max(worst, in_flight);
    }
    CHECK(worst == concurrency);
  }
}

TEST_CASE("policy mixed: bad input located", "[serving][mixed][scenario]") {
  using podsim_test::replaced_in;
  using podsim_test::require_error;
  const std::string base = R"(version: 1
hardware: {preset: v6e}
topology: {mesh: {X: 2, Y: 4}}
workload:
  kind: serving
  model: llama3-70b
  policy: mixed
  max_num_batched_tokens: 2048
  max_num_seqs: 256
  requests:
    random: {count: 10, input_len: 1000, output_len: 1000}
)";
  const Scenario s = load_scenario_text(base, podsim_test::kScenarioFile);
  // HBM less the headroom, less the bf16 weights, over 16-token blocks of 327,680 B a token.
  const double usable = 8 * s.topology.chip.usable_hbm_bytes();
  CHECK(s.serving().config.kv_blocks ==
        static_cast<long long>(std::floor((usable - 2 * podsim::param_count(s.serving().model)) / (16 * 327680.0))));
  CHECK(s.serving().config.block_size == 16);
  CHECK(s.serving().max_context == 2000);   // prompts as they are: no bucket padding (1024 + 1000 padded)
  // vLLM refuses a budget below the sequences it may run.
  require_error(replaced_in(base, "max_num_batched_tokens: 2048", "max_num_batched_tokens: 100"),
                "workload.max_num_batched_tokens", "100", "  max_num_batched_tokens:");
  require_error(replaced_in(base, "max_num_seqs: 256", "max_batch: 64"), "workload.max_batch", "64", "  max_batch:");
  require_error(replaced_in(base, "policy: mixed", "policy: continuous"), "workload.max_num_batched_tokens", "2048",
                "  max_num_batched_tokens:");
  require_error(replaced_in(base, "max_num_seqs: 256", "max_num_seqs: 0"), "workload.max_num_seqs", "0", "  max_num_seqs:");
  require_error(replaced_in(base, "max_num_seqs: 256", "router: random"), "workload.router", "random", "  router:");
  CHECK(load_scenario_text(replaced_in(base, "max_num_seqs: 256", "router: least_outstanding"), podsim_test::kScenarioFile)
            .serving()
            .config.router == Router::LeastOutstanding);
  // 8 v5e chips of 16 GB hold less than the 141 GB of bf16 weights: the weights are named, not the
  // requests (issue 42).
  require_error(replaced_in(base, "preset: v6e", "preset: v5e"), "workload.model", "llama3-70b", "model: llama3-70b");
  // No room for a request: int8 weights (70.55e9 B) fit 8 x 9.35e9 B less 5% with 0.5e9 B to
  // spare, less than one request's 2000 tokens of 327,680 B.
  const std::string tight = replaced_in(replaced_in(base, "preset: v6e", "preset: v5e, overrides: {hbm_capacity: \"9.35 GB\"}"),
                                        "model: llama3-70b", "model: llama3-70b\n  weights: int8");
  require_error(tight, "workload.requests.random.output_len", "1000", "    random:");
  CHECK(podsim_test::contains(podsim_test::error_from(tight).what(), "expected shorter requests"));
}

TEST_CASE("prefix caching: a cached prefix's full blocks skip prefill, unused prefixes are evicted LRU",
          "[serving][mixed][prefix]") {
  auto with_prefix = [](int id, double arrival, int prompt, int prefix, int output) {
    Request r{id, arrival, prompt, output};
    r.prefix_id = prefix;
    r.prefix_tokens = 512;
    return r;
  };
  SECTION("the second request with a prefix prefills only what follows its full blocks") {
    // Request 0 prefills 600 tokens (one step); request 1, with the same 512-token prefix, comes
    // after: 32 cached blocks of 16, so its first step carries 600 - 512 = 88 tokens.
    const std::vector<Request> requests = {with_prefix(0, 0.0, 600, 7, 2), with_prefix(1, 1.0, 600, 7, 2)};
    const auto run = simulate_serving(requests, mixed(2048, 8, 1000), linear_costs());
    REQUIRE(run.steps.size() == 4);
    CHECK(run.steps[0].tokens == 600);
    CHECK(run.steps[2].tokens == 88);
    CHECK(run.prefix_hit_tokens == 512);
    CHECK(run.prefix_query_tokens == 1200);
    ServingConfig off = mixed(2048, 8, 1000);
    off.prefix_caching = false;
    const auto uncached = simulate_serving(requests, off, linear_costs());
    CHECK(uncached.steps[2].tokens == 600);
    CHECK(uncached.prefix_hit_tokens == 0);
    // The prefix's 32 blocks stay cached, so request 1 holds only its own 6 (88 + 1 tokens)
    // beside them: the same peak as request 0's 38.
    CHECK(run.peak_kv_blocks_used == 38);
  }
  SECTION("a prompt that is all prefix still computes its last token") {
    const std::vector<Request> requests = {with_prefix(0, 0.0, 512, 1, 2), with_prefix(1, 1.0, 512, 1, 2)};
    const auto run = simulate_serving(requests, mixed(2048, 8, 1000), linear_costs());
    CHECK(run.steps[2].tokens == 16);   // 31 blocks hit, the last block's 16 tokens computed again
  }
  SECTION("least recently used: prefix A evicted for B, so A's next request misses") {
    // 40 blocks of 16: a prefix of 512 tokens takes 32, a request of 520 tokens 33. A runs and
    // leaves its 32 cached; B needs 33 with 8 free, so 25 of A's are evicted, from its end; A's
    // next request finds the first 7 (112 tokens). Each request finishes before the next arrives.
    const std::vector<Request> requests = {with_prefix(0, 0.0, 520, 0, 2), with_prefix(1, 1.0, 520, 1, 2),
                                           with_prefix(2, 2.0, 520, 0, 2)};
    const auto run = simulate_serving(requests, mixed(2048, 8, 40), linear_costs());
    CHECK(run.prefix_hit_tokens == 7 * 16);
    CHECK(run.peak_kv_blocks_used <= 40);
    // With room for both prefixes (80 blocks), A's return is a hit.
    const auto roomy = simulate_serving(requests, mixed(2048, 8, 80), linear_costs());
    CHECK(roomy.prefix_hit_tokens == 512);
  }
}

TEST_CASE("the prefix scenario at a prefix share of one half: the hit rate the block arithmetic gives",
          "[serving][mixed][prefix][scenario]") {
  const std::string share = "--set workload.requests.random.prefix_share=0.5";
  const Scenario loaded = load_scenario(podsim_test::source_path("scenarios/serving_llama3_8b_prefix_cache_v5e_2x2.yaml"),
                                        {{"workload.requests.random.prefix_share", "0.5"}});
  int shared = 0;
  for (const auto& r : loaded.serving().requests) shared += r.prefix_id >= 0;
  const auto summary = podsim_test::run_summary("serving_llama3_8b_prefix_cache_v5e_2x2", share, "prefix-share");
  // Every shared request but each prefix's first finds its 2000 tokens cached (the scenario's
  // comment), over 400 prompts of 2200 tokens looked up.
  const double arithmetic = (shared - 8) * 2000.0 / (400 * 2200.0);
  CHECK(shared > 160);
  CHECK(shared < 240);
  CHECK(summary["prefix_cache_hit_rate"].get<double>() <= arithmetic + 1e-9);
  CHECK(summary["prefix_cache_hit_rate"].get<double>() >= arithmetic * 0.97);
}

TEST_CASE("routers: round robin, least outstanding, and prefix-aware routing over servers", "[serving][mixed][router]") {
  auto with_prefix = [](int id, double arrival, int prefix) {
    Request r{id, arrival, 600, 40};
    r.prefix_id = prefix;
    r.prefix_tokens = 512;
    return r;
  };
  ServingConfig c = mixed(2048, 8, 1000);
  c.servers = 2;
  SECTION("round robin alternates, whatever the load") {
    std::vector<Request> requests;
    for (int i = 0; i < 6; ++i) requests.push_back({i, 0.01 * i, 100, 5});
    c.router = Router::RoundRobin;
    const auto run = simulate_serving(requests, c, linear_costs());
    for (const auto& r : run.requests) CHECK(r.server == r.request.id % 2);
  }
  SECTION("least outstanding sends a request where fewer run or wait") {
    // Request 0 is long (400 tokens out): requests 1-3, each done before the next arrives,
    // all go to the other server.
    std::vector<Request> requests = {{0, 0.0, 100, 400}, {1, 0.5, 100, 2}, {2, 1.0, 100, 2}, {3, 1.5, 100, 2}};
    c.router = Router::LeastOutstanding;
    const auto run = simulate_serving(requests, c, linear_costs());
    CHECK(run.requests[0].server == 0);
    for (int i = 1; i < 4; ++i) CHECK(run.requests[i].server == 1);
    c.router = Router::RoundRobin;
    const auto rr = simulate_serving(requests, c, linear_costs());
    CHECK(rr.requests[2].server == 0);   // round robin puts one beside the long request
  }
  SECTION("kv-aware routing follows the cached prefix; least outstanding does not") {
    // Prefix 7 is cached on server 0 by request 0, prefix 9 on server 1 by request 1. Request 2
    // (prefix 7) arrives when both servers are idle.
    const std::vector<Request> requests = {with_prefix(0, 0.0, 7), with_prefix(1, 0.0, 9), with_prefix(2, 5.0, 7),
                                           with_prefix(3, 5.0, 9)};
    c.router = Router::KvAware;
    const auto aware = simulate_serving(requests, c, linear_costs());
    CHECK(aware.requests[2].server == aware.requests[0].server);
    CHECK(aware.requests[3].server == aware.requests[1].server);
    CHECK(aware.prefix_hit_tokens == 2 * 512);
    c.router = Router::RoundRobin;
    const std::vector<Request> swapped = {with_prefix(0, 0.0, 7), with_prefix(1, 0.0, 9), with_prefix(2, 5.0, 9),
                                          with_prefix(3, 5.0, 7)};
    const auto blind = simulate_serving(swapped, c, linear_costs());
    CHECK(blind.prefix_hit_tokens == 0);   // each lands on the server without its prefix
  }
}

TEST_CASE("swap preemption: a preempted sequence's cache goes to the host and back, nothing recomputed",
          "[serving][mixed][swap]") {
  // The preemption case above (12 blocks of 4 tokens, two requests of 20 + 10 tokens), with
  // swaps at 1 ms a token each way.
  const std::vector<Request> requests = {{0, 0.0, 20, 10}, {1, 0.0, 20, 10}};
  StepCosts costs = linear_costs();
  costs.kv_swap_s = [](long long tokens) { return 1e-3 * static_cast<double>(tokens); };
  ServingConfig config = mixed(64, 8, 12, 4);
  config.preemption = Preemption::Swap;
  SECTION("room on the host: swapped out and in, every token once, no step recomputes") {
    config.swap_blocks = 100;
    const auto run = simulate_serving(requests, config, costs);
    REQUIRE(run.preemptions >= 1);
    CHECK(run.swap_outs == run.preemptions);
    CHECK(run.swap_s > 0);
    size_t gaps = 0;
    for (const auto& r : run.requests) gaps += r.request.output_tokens - 1;
    CHECK(run.inter_token_s.size() == gaps);
    // After the prompts, no step carries more than one token a sequence: the swapped one
    // resumes where it stopped.
    for (const auto& s : run.steps)
      if (s.start_s > 0) CHECK(s.tokens <= s.batch);
    // The copies are in the steps: the run takes longer than its steps' token costs alone.
    double token_costs = 0;
    for (const auto& s : run.steps) token_costs += 0.01 + 1e-5 * s.tokens;
    double busy = 0;
    for (const auto& s : run.steps) busy += s.end_s - s.start_s;
    CHECK(busy == Approx(token_costs + run.swap_s));
    double recorded = 0;   // each step's share, as the trace's spans show it
    for (const auto& s : run.steps) recorded += s.swap_s;
    CHECK(recorded == Approx(run.swap_s));
  }
  SECTION("no room on the host: recomputed, as without swap") {
    config.swap_blocks = 1;
    const auto run = simulate_serving(requests, config, costs);
    CHECK(run.preemptions >= 1);
    CHECK(run.swap_outs == 0);
    CHECK(run.swap_s == 0);
  }
}

TEST_CASE("the swap scenario: the cache's blocks, swaps within the host's space, sooner than recompute",
          "[serving][mixed][swap][scenario]") {
  auto summary_of = [&](const std::string& preemption) {
    return podsim_test::run_summary("serving_llama3_8b_swap_preemption_v5e_2x2", "--set workload.preemption=" + preemption,
                                    "swap-" + preemption);
  };
  const auto swap = summary_of("swap");
  const auto recompute = summary_of("recompute");
  // 4 chips' HBM less the headroom, less the bf16 weights, in blocks of 16 tokens of 131,072 B.
  CHECK(swap["kv_cache_blocks"] == std::floor((4 * podsim::find_chip_preset("v5e")->usable_hbm_bytes() -
                                               2 * podsim::param_count(*podsim::find_model_preset("llama3-8b"))) /
                                              (16 * 131072.0)));
  CHECK(swap["workload"]["swap_blocks"] == 8192);   // 4 x 4 GiB over 16 x 131,072 B
  CHECK(swap["swap_preemptions"].get<long long>() > 0);
  CHECK(swap["swap_preemptions"].get<long long>() <= swap["preemptions"].get<long long>());
  // Each swap moves at most a whole request (4000 tokens) out and back at 2.048 us a token.
  CHECK(swap["kv_swap_time_s"].get<double>() <= swap["swap_preemptions"].get<double>() * 2 * 4000 * 131072.0 / 64e9);
  CHECK(recompute["preemptions"].get<long long>() > 0);
  CHECK_FALSE(recompute.contains("swap_preemptions"));
  CHECK(swap["total_time_s"].get<double>() < recompute["total_time_s"].get<double>());
}

TEST_CASE("swap preemption: bad input located", "[serving][mixed][swap][scenario]") {
  using podsim_test::replaced_in;
  using podsim_test::require_error;
  const std::string base = R"(version: 1
hardware: {preset: v5e}
topology: {mesh: {X: 2, Y: 2}}
workload:
  kind: serving
  model: llama3-8b
  policy: mixed
  preemption: swap
  swap_space: "4 GiB"
  requests:
    random: {count: 10, input_len: 100, output_len: 100}
)";
  CHECK(load_scenario_text(base, podsim_test::kScenarioFile).serving().config.swap_blocks == 8192);
  require_error(replaced_in(base, "preemption: swap", "preemption: drop"), "workload.preemption", "drop", "  preemption:");
  require_error(replaced_in(base, "preemption: swap", "preemption: recompute"), "workload.swap_space", "4 GiB",
                "  swap_space:");
  require_error(replaced_in(base, "swap_space: \"4 GiB\"", "swap_space: \"-1 GiB\""), "workload.swap_space", "-1 GiB",
                "  swap_space:");
  // Several servers on one queue: a swapped cache could not follow its sequence.
  require_error(replaced_in(base, "policy: mixed", "policy: mixed\n  servers: 2"), "workload.preemption", "swap",
                "  preemption:");
  CHECK(load_scenario_text(replaced_in(base, "policy: mixed", "policy: mixed\n  servers: 2\n  router: round_robin"),
                           podsim_test::kScenarioFile)
            .serving()
            .config.servers == 2);
  require_error(replaced_in(base, "policy: mixed", "policy: continuous"), "workload.preemption", "swap", "  preemption:");
}

TEST_CASE("async scheduling: a request sent while a step runs joins the step after next, one step later than "
          "without it",
          "[serving][mixed][async]") {
  // A step costs 10 ms + 10 us a token. A's prompt (10 tokens) is step 1, [0, 10.1 ms]; its
  // first decode token step 2, [10.1, 20.11 ms]. B is sent at 15 ms, while step 2 runs.
  const std::vector<Request> requests = {{0, 0.0, 10, 100}, {1, 0.015, 10, 2}};
  ServingConfig config = mixed(64, 8, 1000);
  const double step1 = 0.01 + 10e-5, decode = 0.01 + 1e-5, with_b = 0.01 + 11e-5;
  SECTION("synchronous: B joins the next step, which starts when step 2 ends") {
    const auto run = simulate_serving(requests, config, linear_costs());
    CHECK(run.requests[1].prefill_start_s == Approx(step1 + decode).epsilon(1e-12));
    CHECK(run.requests[1].first_token_s == Approx(step1 + decode + with_b).epsilon(1e-12));
  }
  SECTION("async: step 3 was scheduled when step 2 started, before B was sent: B joins step 4") {
    config.async_scheduling = true;
    const auto run = simulate_serving(requests, config, linear_costs());
    CHECK(run.steps[2].tokens == 1);   // step 3: A's decode token alone
    CHECK(run.requests[1].prefill_start_s == Approx(step1 + 2 * decode).epsilon(1e-12));
    CHECK(run.requests[1].first_token_s == Approx(step1 + 2 * decode + with_b).epsilon(1e-12));
    // Exactly one step (step 3) later than without async scheduling.
    CHECK(run.requests[1].ttft_s() - (step1 + decode + with_b - 0.015) == Approx(decode).epsilon(1e-9));
  }
  SECTION("async, idle server: a request sent to an idle server starts at once") {
    config.async_scheduling = true;
    const auto run = simulate_serving({{0, 0.0, 10, 2}, {1, 1.0, 10, 2}}, config, linear_costs());
    CHECK(run.requests[1].prefill_start_s == 1.0);
  }
}

TEST_CASE("host overhead: a step lasts device + host, or max(device, host) under async scheduling",
          "[serving][mixed][host]") {
  // One request: its 10-token prompt, then two decode tokens: three steps of one sequence.
  const std::vector<Request> one = {{0, 0.0, 10, 3}};
  ServingConfig config = mixed(64, 8, 1000);
  config.host_overhead_per_step_s = 0.002;
  config.host_overhead_per_sequence_s = 0.001;
  const double host = 0.002 + 0.001 * 1;
  const double device[] = {0.01 + 10e-5, 0.01 + 1e-5, 0.01 + 1e-5};
  SECTION("synchronous") {
    const auto run = simulate_serving(one, config, linear_costs());
    REQUIRE(run.steps.size() == 3);
    for (int i = 0; i < 3; ++i)
      CHECK(run.steps[i].end_s - run.steps[i].start_s == Approx(device[i] + host).epsilon(1e-12));
  }
  SECTION("async: the host's work hides behind the device's until it is the longer") {
    config.async_scheduling = true;
    auto run = simulate_serving(one, config, linear_costs());
    for (int i = 0; i < 3; ++i) CHECK(run.steps[i].end_s - run.steps[i].start_s == Approx(device[i]).epsilon(1e-12));
    config.host_overhead_per_step_s = 0.02;
    run = simulate_serving(one, config, linear_costs());
    for (int i = 0; i < 3; ++i) CHECK(run.steps[i].end_s - run.steps[i].start_s == Approx(0.021).epsilon(1e-12));
  }
  SECTION("policy jetstream: every prefill and generate step carries it, per sequence in the step") {
    ServingConfig js;
    js.policy = BatchingPolicy::JetStream;
    js.slots = 4;
    js.buckets = {16};
    js.host_overhead_per_step_s = 0.002;
    js.host_overhead_per_sequence_s = 0.001;
    StepCosts costs = linear_costs();
    costs.prefill_s = [](int, int, int) { return 0.005; };
    costs.decode_s = [](int, double) { return 0.01; };
    // Two prompts at 0: prefill A, generate A, prefill B, then generate A and B together.
    const auto run = simulate_serving({{0, 0.0, 10, 3}, {1, 0.0, 10, 3}}, js, costs);
    REQUIRE(run.steps.size() >= 4);
    CHECK(run.steps[0].end_s - run.steps[0].start_s == Approx(0.005 + 0.003));
    CHECK(run.steps[1].end_s - run.steps[1].start_s == Approx(0.01 + 0.003));
    CHECK(run.steps[3].batch == 2);
    CHECK(run.steps[3].end_s - run.steps[3].start_s == Approx(0.01 + 0.002 + 0.002));
  }
}

TEST_CASE("policy mixed: vLLM's TPU defaults, max_model_len and async scheduling from a scenario",
          "[serving][mixed][scenario]") {
  using podsim_test::replaced_in;
  using podsim_test::require_error;
  const std::string base = R"(version: 1
hardware: {preset: v6e}
topology: {mesh: {X: 2, Y: 4}}
workload:
  kind: serving
  model: llama3-70b
  policy: mixed
  max_num_batched_tokens: 512
  requests:
    random: {count: 10, input_len: 1000, output_len: 1000}
)";
  auto config = [](const std::string& text) {
    return load_scenario_text(text, podsim_test::kScenarioFile).serving().config;
  };
  // vLLM sets max_num_seqs to min(256, max_num_batched_tokens) when it is not given.
  CHECK(config(base).max_num_seqs == 256);
  CHECK(config(replaced_in(base, "max_num_batched_tokens: 512", "max_num_batched_tokens: 128")).max_num_seqs == 128);
  CHECK(config(base).block_size == 16);
  CHECK_FALSE(config(base).async_scheduling);
  // The page tpu-inference's Pallas backend takes: max_model_len / 16 rounded up to a power of
  // two, within [16, 256]; 16 above 8192 tokens. A given block_size wins.
  const auto with_len = [&](const char* len) {
    return replaced_in(base, "max_num_batched_tokens: 512", std::string("max_num_batched_tokens: 512\n  max_model_len: ") + len);
  };
  CHECK(config(with_len("2048")).block_size == 2048 / 16);
  CHECK(config(with_len("2000")).block_size == 2048 / 16);
  CHECK(config(with_len("8192")).block_size == 256);
  CHECK(config(with_len("9216")).block_size == 16);
  CHECK(config(replaced_in(with_len("2048"), "  max_model_len: 2048", "  max_model_len: 2048\n  block_size: 32")).block_size == 32);
  CHECK(config(replaced_in(base, "max_num_batched_tokens: 512", "max_num_batched_tokens: 512\n  async_scheduling: true"))
            .async_scheduling);
  // vLLM refuses a request longer than max_model_len: the key is named.
  require_error(with_len("1500"), "workload.max_model_len", "1500", "  max_model_len:");
  // vLLM's keys under another policy; a host overhead below zero.
  const std::string continuous = replaced_in(replaced_in(base, "policy: mixed", "policy: continuous"),
                                             "max_num_batched_tokens: 512", "async_scheduling: true");
  require_error(continuous, "workload.async_scheduling", "true", "  async_scheduling:");
  require_error(replaced_in(base, "max_num_batched_tokens: 512", "host_overhead_per_step: \"-2 ms\""),
                "workload.host_overhead_per_step", "-2 ms", "  host_overhead_per_step:");
  const auto host = config(replaced_in(base, "max_num_batched_tokens: 512",
                                       "host_overhead_per_step: \"2 ms\"\n  host_overhead_per_sequence: \"50 us\""));
  CHECK(host.host_overhead_per_step_s == Approx(2e-3));
  CHECK(host.host_overhead_s(10) == Approx(2e-3 + 10 * 50e-6));
}
