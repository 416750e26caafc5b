// A reducing collective's additions on the TensorCore (workloads/collective_reduction.hpp):
// each expectation is 3 (n-1)/n V / (HBM bandwidth x efficiency), placed where the core runs it.
#include <catch2/catch.hpp>

#include "meshes.hpp"

#include "sim/engine/run.hpp"
#include "workloads/collective_reduction.hpp"
#include "workloads/program_builder.hpp"
#include "workloads/training.hpp"

using namespace podsim;

namespace {

int index_of(const Program& program, const std::string& name) {
  for (size_t i = 0; i < program.size(); ++i)
    if (program[i].name == name) return static_cast<int>(i);
  FAIL("no op " << name);
  return -1;
}

CollectiveSpec spec(CollectiveKind kind, std::vector<int> axes, double bytes, bool over_dcn = false) {
  CollectiveSpec c;
  c.kind = kind;
  c.axes = std::move(axes);
  c.bytes = bytes;
  c.over_dcn = over_dcn;
  return c;
}

}  // namespace

TEST_CASE("a reduction's core time: 3 (n-1)/n V over the HBM kernels achieve, none for gathers", "[reduction]") {
  auto topo = podsim_test::v5p_mesh({4, 4});
  topo.slices = 2;
  topo.chip.hbm_efficiency = 0.8;
  const double hbm = topo.chip.hbm_bandwidth_Bps * 0.8, v = 64.0 * 1024 * 1024;
  CHECK(reduction_core_s(spec(CollectiveKind::ReduceScatter, {0}, v), topo) == Approx(3 * 0.75 * v / hbm));
  CHECK(reduction_core_s(spec(CollectiveKind::AllReduce, {0, 1}, v), topo) == Approx(3 * 15.0 / 16 * v / hbm));
  // Across the two slices only (a DCN all-reduce of a shard), and ICI plus DCN.
  CHECK(reduction_core_s(spec(CollectiveKind::AllReduce, {}, v, true), topo) == Approx(3 * 0.5 * v / hbm));
  CHECK(reduction_core_s(spec(CollectiveKind::ReduceScatter, {0}, v, true), topo) == Approx(3 * 7.0 / 8 * v / hbm));
  // A slice of an axis: its chips only.
  auto sliced = spec(CollectiveKind::ReduceScatter, {0}, v);
  sliced.slices = {{1, 2}};
  CHECK(reduction_core_s(sliced, topo) == Approx(3 * 0.5 * v / hbm));
  CHECK(reduction_core_s(spec(CollectiveKind::AllGather, {0}, v), topo) == 0);
  CHECK(reduction_core_s(spec(CollectiveKind::AllToAll, {0}, v), topo) == 0);
}

TEST_CASE("the core adds a ReduceScatter's chunks before its next kernel, and the links' time follows", "[reduction]") {
  auto topo = podsim_test::v5p_mesh({4});
  const double v = 256.0 * 1024 * 1024, t = 1e-3;
  ProgramBuilder b;
  const int a = b.compute("a", t, 0, {}, -1, OpRole::Forward);
  const int rs = b.collective("rs", CollectiveKind::ReduceScatter, {0}, {}, v, {a}, -1, OpRole::FsdpReduceScatter);
  const int next = b.compute("b", t, 0, {a}, -1, OpRole::Forward);
  b.collective("ag", CollectiveKind::AllGather, {0}, {}, v, {next}, -1, OpRole::FsdpAllGather);
  b.compute("c", t, 0, {rs, next}, -1, OpRole::Optimizer);
  const Program plain = b.take();
  CHECK(with_collective_reductions(plain, topo).size() == plain.size());   // off: unchanged

  topo.chip.reductions_on_tensor_core = true;
  const Program p = with_collective_reductions(plain, topo);
  REQUIRE(p.size() == plain.size() + 1);   // the AllGather reduces nothing
  for (size_t i = 0; i < p.size(); ++i)
    for (int d : p[i].after) CHECK(d < static_cast<int>(i));
  const int r = index_of(p, "rs.reduce");
  CHECK(p[static_cast<size_t>(r)].role == OpRole::CollectiveReduction);
  const double core = 3 * 0.75 * v / topo.chip.achieved_hbm_Bps();
  CHECK(p[static_cast<size_t>(r)].compute().compute_s == Approx(core));

  const auto run = run_program(topo, {}, p, {});
  const auto& rs_span = run.span(index_of(p, "rs"), 0, 0);
  const auto& b_span = run.span(index_of(p, "b"), 0, 0);
  CHECK(run.span(r, 0, 0).start_s == Approx(t).epsilon(1e-12));   // the core adds when a ends
  CHECK(b_span.start_s == Approx(t + core).epsilon(1e-12));          // before its next kernel
  CHECK(rs_span.start_s == Approx(t + core).epsilon(1e-12));         // and the links follow
}

TEST_CASE("a collective waiting for no kernel: its links' time plus the core's, the reduction first", "[reduction]") {
  auto topo = podsim_test::v5p_mesh({4, 4});
  const double v = 64.0 * 1024 * 1024;
  ProgramBuilder b;
  const int ar = b.collective("psum", CollectiveKind::AllReduce, {0, 1}, {}, v, {}, -1, OpRole::ScenarioCollective);
  b.collective("gather", CollectiveKind::AllGather, {0}, {}, v, {ar}, -1, OpRole::ScenarioCollective);
  const Program plain = b.take();
  const double links = run_program(topo, {}, plain, {}).total_time_s;
  topo.chip.reductions_on_tensor_core = true;
  const Program p = with_collective_reductions(plain, topo);
  REQUIRE(p.size() == 3);
  CHECK(p[0].name == "psum.reduce");
  CHECK(p[0].after.empty());
  CHECK(p[1].after == std::vector<int>{0});
  CHECK(p[2].after == std::vector<int>{1});
  const double core = 3 * 15.0 / 16 * v / topo.chip.achieved_hbm_Bps();
  CHECK(run_program(topo, {}, p, {}).total_time_s == Approx(links + core).epsilon(1e-9));
}

TEST_CASE("a compute-bound FSDP step grows by its reductions' core time, less what hides at the end", "[reduction]") {
  auto topo = podsim_test::v5p_mesh({8});
  TransformerSpec model = *find_model_preset("llama2-7b");
  model.layers = 4;
  TrainingPlan plan;
  plan.data_axes = {0};
  plan.fsdp = true;
  plan.sequence_length = 1024;
  plan.global_batch_tokens = 8 * 64 * 1024.0;   // far above the FSDP balance: communication hides
  plan.matmul_efficiency = 0.5;
  TrainingLayout layout;
  const Program off = training_program(model, plan, topo, layout);
  topo.chip.reductions_on_tensor_core = true;
  const Program on = training_program(model, plan, topo, layout);
  double total = 0, last = 0;
  int reductions = 0, reducing = 0, latest_producer = -1;
  for (const auto& op : off)
    if (op.is(ProgramOpKind::Collective) && reduction_core_s(op.collective(), topo) > 0) ++reducing;
  for (size_t i = 0; i < on.size(); ++i) {
    if (on[i].role != OpRole::CollectiveReduction) continue;
    ++reductions;
    total += on[i].compute().compute_s;
    latest_producer = std::max(latest_producer, on[i].after.at(0));
  }
  CHECK(reductions == reducing);
  REQUIRE(reductions > 0);
  // The reductions behind the step's last backward kernel come before its last ReduceScatters:
  // at most they all add, at least those before the last kernel's do.
  for (const auto& op : on)
    if (op.role == OpRole::CollectiveReduction && op.after.at(0) == latest_producer) last += op.compute().compute_s;
  const double step_off = run_program(topo, {}, off, {}).total_time_s;
  const double step_on = run_program(topo, {}, on, {}).total_time_s;
  CHECK(step_on - step_off <= total * (1 + 1e-9));
  CHECK(step_on - step_off >= (total - last) * (1 - 1e-9));
}
