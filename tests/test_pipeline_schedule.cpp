// Pipeline schedules (workloads/pipeline_schedule.hpp) against their papers' closed forms, on
// generated stage and microbatch counts: each order is run with nominal pass times by a
// list executor written here (a pass starts when its stage's previous pass and its input are
// done), and the makespan must be the formula's.
#include <catch2/catch.hpp>

#include <map>
#include <tuple>

#include "seeded_rng.hpp"
#include "workloads/pipeline_schedule.hpp"

using namespace podsim;

namespace {

struct PassTimes {
  double forward = 1, backward = 2, weight = 0;   // a chunk's B excludes W when W > 0
};

// Runs every stage's order; returns the makespan, or -1 if the orders deadlock.
double makespan(PipelineSchedule schedule, int P, int M, int v, const PassTimes& t) {
  std::vector<std::vector<PipelinePass>> orders;
  for (int s = 0; s < P; ++s) orders.push_back(stage_order(schedule, s, P, M, v));
  std::map<std::tuple<int, int, int, int>, double> done;   // (stage, kind, chunk, mb) -> end
  std::vector<double> clock(P, 0.0);
  std::vector<size_t> next(P, 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (int s = 0; s < P; ++s) {
      while (next[s] < orders[s].size()) {
        const auto& p = orders[s][next[s]];
        std::vector<std::tuple<int, int, int, int>> inputs;
        if (p.kind == PipelinePass::Forward) {
          if (s > 0) inputs.push_back({s - 1, PipelinePass::Forward, p.chunk, p.microbatch});
          else if (p.chunk > 0) inputs.push_back({P - 1, PipelinePass::Forward, p.chunk - 1, p.microbatch});
        } else if (p.kind == PipelinePass::Backward) {
          inputs.push_back({s, PipelinePass::Forward, p.chunk, p.microbatch});
          if (s < P - 1) inputs.push_back({s + 1, PipelinePass::Backward, p.chunk, p.microbatch});
          else if (p.chunk < v - 1) inputs.push_back({0, PipelinePass::Backward, p.chunk + 1, p.microbatch});
        } else {
          inputs.push_back({s, PipelinePass::Backward, p.chunk, p.microbatch});
        }
        double start = clock[s];
        bool ready = true;
        for (const auto& in : inputs) {
          const auto it = done.find(in);
          if (it == done.end()) {
            ready = false;
            break;
          }
          start = std::max(start, it->second);
        }
        if (!ready) break;
        const double length = p.kind == PipelinePass::Forward ? t.forward
                              : p.kind == PipelinePass::Backward ? t.backward : t.weight;
        clock[s] = start + length;
        done[{s, p.kind, p.chunk, p.microbatch}] = clock[s];
        ++next[s];
        progress = true;
      }
    }
  }
  for (int s = 0; s < P; ++s) {
    if (next[s] != orders[s].size()) return -1;
  }
  return *std::max_element(clock.begin(), clock.end());
}

}  // namespace

TEST_CASE("every schedule runs each pass once and its makespan is the paper's formula", "[pipeline][generated]") {
  const int cases = podsim_test::env_int("PODSIM_SCHEDULE_CASES", 300);
  int interleaved_cases = 0, zero_bubble_cases = 0;
  for (int c = 0; c < cases; ++c) {
    auto rng = podsim_test::case_rng(0x91fe, c);
    const int P = 1 + rng.below(8);
    const int M = 1 + rng.below(24);
    const double f = rng.uniform(0.5, 2), bwd = rng.uniform(0.5, 3);
    INFO("case " << c << ": P=" << P << " M=" << M << " F=" << f << " B=" << bwd);
    // GPipe and 1F1B: P-1 idle slots of one microbatch's F+B (training.md, pipelining).
    for (auto schedule : {PipelineSchedule::GPipe, PipelineSchedule::OneFOneB}) {
      CHECK(makespan(schedule, P, M, 1, {f, bwd, 0}) == Approx((M + P - 1) * (f + bwd)));
      const auto order = stage_order(schedule, rng.below(P), P, M);
      CHECK(order.size() == static_cast<size_t>(2 * M));
    }
    // Interleaved: chunks of 1/v of the stage; (vM + P - 1) chunk slots (Narayanan et al. 2021).
    const int v = 2 + rng.below(3);
    const int Mi = P * (1 + rng.below(4));
    {
      INFO("interleaved v=" << v << " M=" << Mi);
      CHECK(makespan(PipelineSchedule::Interleaved1F1B, P, Mi, v, {f / v, bwd / v, 0}) ==
            Approx((v * Mi + P - 1) * (f + bwd) / v));
      CHECK(stage_order(PipelineSchedule::Interleaved1F1B, 0, P, Mi, v).size() == static_cast<size_t>(2 * v * Mi));
      ++interleaved_cases;
    }
    // ZB-H1, M >= P, W no longer than F: M(F+B+W) + (P-1)(F+B-W) (Qi et al. 2024, sec. 2.1).
    if (M >= P) {
      const double w = rng.uniform(0.1, 1.0) * std::min(f, bwd);
      const double b_only = bwd;
      INFO("ZB-H1 W=" << w);
      CHECK(makespan(PipelineSchedule::ZeroBubbleH1, P, M, 1, {f, b_only, w}) ==
            Approx(M * (f + b_only + w) + (P - 1) * (f + b_only - w)));
      CHECK(stage_order(PipelineSchedule::ZeroBubbleH1, 0, P, M).size() == static_cast<size_t>(3 * M));
      ++zero_bubble_cases;
    }
  }
  CHECK(interleaved_cases > 0);
  CHECK(zero_bubble_cases > 0);
}

TEST_CASE("activations in flight: 1F1B holds P microbatches, GPipe all, ZB-H1 no more than 1F1B", "[pipeline]") {
  CHECK(peak_passes_in_flight(PipelineSchedule::OneFOneB, 4, 16, 1) == 4);
  CHECK(peak_passes_in_flight(PipelineSchedule::GPipe, 4, 16, 1) == 16);
  CHECK(peak_passes_in_flight(PipelineSchedule::ZeroBubbleH1, 4, 16, 1) == 4);
  // Interleaved: stage 0 warms up with 2(P-1) + (v-1)P chunks and starts one more before its
  // first backward: (2(P-1) + (v-1)P + 1) / v stages' worth (Narayanan et al. 2021, sec. 2.2).
  CHECK(peak_passes_in_flight(PipelineSchedule::Interleaved1F1B, 4, 16, 2) == Approx((2.0 * 3 + 4 + 1) / 2));
}

TEST_CASE("impossible schedules are refused with the reason", "[pipeline]") {
  CHECK_THAT(check_pipeline_schedule(PipelineSchedule::Interleaved1F1B, 4, 6, 2), Catch::Contains("multiple of the pipeline stages"));
  CHECK_THAT(check_pipeline_schedule(PipelineSchedule::Interleaved1F1B, 4, 8, 1), Catch::Contains("at least 2 virtual stages"));
  CHECK_THAT(check_pipeline_schedule(PipelineSchedule::OneFOneB, 4, 8, 2), Catch::Contains("need the interleaved schedule"));
  CHECK(check_pipeline_schedule(PipelineSchedule::ZeroBubbleH1, 4, 8, 1).empty());
  CHECK_THROWS_WITH(stage_order(PipelineSchedule::Interleaved1F1B, 0, 4, 6, 2), Catch::Contains("multiple"));
}
