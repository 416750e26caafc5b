// TPU7x (Ironwood): the preset's figures are one device's (half the Cloud's per-chip figures,
// docs/reference/hardware.md s7), a mesh of chips gains the axis C of each chip's two devices
// joined by the die-to-die link, every ICI link is shared by a chip's two dies, per-chip
// figures count physical chips, and fp8 training (MaxText's quantization: fp8_full) runs the
// weight matmuls at the fp8 rate (docs/modelling.md, "Two TensorCores a chip", "fp8 training").
#include <catch2/catch.hpp>

#include <string>

#include "scenario_errors.hpp"
#include "sim/commands/scenario_run.hpp"
#include "sim/report/training_report.hpp"
#include "workloads/collective_reduction.hpp"
#include "workloads/layer_kernels.hpp"

using namespace podsim;
using podsim_test::replaced_in;

namespace {

const std::string kCollective = R"(version: 1
name: tpu7x_gather
hardware: {preset: tpu7x, profile: ideal}
topology: {mesh: "2x2x1"}
workload:
  kind: collectives
  operations:
    - name: gather
      kind: all_gather
      axes: [C]
      bytes: "64 MB"
)";

const std::string kTraining = R"(version: 1
name: tpu7x_training
hardware: {preset: ironwood, profile: ideal, overrides: {compute_model: kernels}}
topology: {mesh: "2x2x1"}
workload:
  kind: training
  model: {preset: llama3-8b, layers: 2}
  batch_tokens: 65536
  sequence_length: 8192
  parallelism: {data: [X, Y, C], fsdp: true}
  remat_policy: full
)";

TrainingReport simulate(const Scenario& s) {
  TrainingLayout layout;
  const Program program = training_program(s.training().model, s.training().plan, s.topology, layout);
  const RunResult run = run_program(s.topology, simulation_settings(s), program, {});
  return training_report(s.training(), layout, program, run);
}

double operation_time_s(const std::string& text) {
  const Scenario s = load_scenario_text(text, "tpu7x.yaml");
  const RunResult run = run_scenario(s, {});
  REQUIRE(run.operations.size() == 1);
  return run.operations[0].time_s;
}

}  // namespace

TEST_CASE("tpu7x: one device's figures, half the Cloud's chip", "[topology][tpu7x]") {
  const ChipSpec* chip = find_chip_preset("tpu7x");
  REQUIRE(chip != nullptr);
  CHECK(find_chip_preset("ironwood") == chip);
  CHECK(chip->cores_per_chip == 2);
  // Cloud TPU7x page: 2,307 / 4,614 TFLOP/s, 192 GiB, 7,380 GB/s a chip; two dies.
  CHECK(chip->bf16_flops_per_s * 2 == Approx(2.307e15));
  CHECK(chip->fp8_flops_per_s * 2 == Approx(4.614e15));
  CHECK(chip->hbm_bytes * 2 == Approx(192.0 * (1ull << 30)));
  CHECK(chip->hbm_bandwidth_Bps * 2 == Approx(7.38e12));
  CHECK(chip->mxu_size == 256);
  // Each die gets half of every link; DCN 12.5 GB/s a chip, 4 chips (8 devices) a host.
  CHECK(chip->neighbor_bandwidth_Bps() == chip->ici_bandwidth_Bps / 2);
  CHECK(chip->dcn_bandwidth_per_host_Bps == 4 * 12.5e9);
  CHECK(chip->chips_per_host == 8);
  CHECK(chip->chips_of_devices(256) == 128);
  // v5p's rule: full cubes wrap, 2x2x1 to 2x4x4 do not.
  CHECK(default_wraparound(*chip, {4, 4, 8}) == std::vector<bool>{true, true, true});
  CHECK(default_wraparound(*chip, {2, 4, 4}) == std::vector<bool>{false, false, false});
}

TEST_CASE("tpu7x: a mesh of chips gains axis C, the die-to-die link of each chip", "[topology][tpu7x]") {
  const Scenario s = load_scenario_text(kCollective, "tpu7x.yaml");
  REQUIRE(s.topology.axes.size() == 4);
  CHECK(s.topology.axes[3].name == "C");
  CHECK(s.topology.axes[3].size == 2);
  CHECK(s.topology.axes[3].die_to_die);
  const Topology topo(s.topology);
  CHECK(topo.chip_count() == 8);     // devices
  CHECK(topo.host_count() == 1);     // one 2x2x1 host holds all 8
  int d2d = 0, ici = 0;
  for (const LinkInfo& link : topo.links()) {
    if (link.kind != LinkKind::Ici) continue;
    if (link.axis == 3) {
      ++d2d;
      CHECK(link.bandwidth_Bps == s.topology.chip.die_to_die_bandwidth_Bps);
    } else {
      ++ici;
      CHECK(link.bandwidth_Bps == s.topology.chip.ici_bandwidth_Bps / 2);
    }
  }
  CHECK(d2d == 4);    // one a chip
  CHECK(ici == 8);    // per device: X and Y of a 2x2 without wraparound, one link each
  // The gather over the chip's two devices moves half the volume over the die-to-die link, one
  // hop (the book's floor: the larger of the hop latency and the transfer).
  const double t = operation_time_s(kCollective);
  CHECK(t == Approx(32e6 / s.topology.chip.die_to_die_bandwidth_Bps).epsilon(1e-6));
  // The same gather over X crosses the chips' ICI links, half of each a die: far slower.
  CHECK(operation_time_s(replaced_in(kCollective, "axes: [C]", "axes: [X]")) ==
        Approx(32e6 / (s.topology.chip.ici_bandwidth_Bps / 2)).epsilon(1e-6));
}

TEST_CASE("tpu7x: per-chip figures count chips, and fp8 training halves the weight matmuls", "[training][tpu7x][fp8]") {
  const Scenario bf16 = load_scenario_text(kTraining, "tpu7x.yaml");
  const TrainingReport r = simulate(bf16);
  // 8 devices, 4 chips: tokens a second a chip are twice a device's.
  CHECK(r.tokens_per_s_per_chip == Approx(65536 / r.step_time_s / 4));
  CHECK(r.mfu == Approx(r.total_flops / (8 * bf16.topology.chip.bf16_flops_per_s * r.step_time_s)));
  const std::string fixed = replaced_in(kTraining, "remat_policy: full",
                                        "remat_policy: full\n  quantization: fp8_full\n"
                                        "  weight_quantization_calibration_method: \"fixed,-224,224\"\n"
                                        "  act_quantization_calibration_method: \"fixed,-224,224\"");
  const Scenario fp8 = load_scenario_text(fixed, "tpu7x.yaml");
  CHECK(fp8.training().plan.quantization.fixed_weight_scale);
  CHECK(fp8.training().plan.quantization.fixed_act_scale);
  // MaxText's default calibration, absmax, reads each operand for its scale: slower than fixed.
  const Scenario absmax =
      load_scenario_text(replaced_in(kTraining, "remat_policy: full", "remat_policy: full\n  quantization: fp8_full"), "tpu7x.yaml");
  CHECK_FALSE(absmax.training().plan.quantization.fixed_weight_scale);
  CHECK(simulate(absmax).step_time_s > simulate(fp8).step_time_s);
  CHECK(fp8.training().plan.quantization.fp8);
  const double fp8_s = simulate(fp8).step_time_s;
  CHECK(fp8_s < r.step_time_s);
  CHECK(fp8_s > r.step_time_s / 2);   // attention, the logits and the casts stay

  // Each weight matmul: the three products at the fp8 rate, X and W cast, dY quantized twice.
  ChipSpec chip = bf16.topology.chip;
  const TransformerSpec& m = bf16.training().model;
  const double tokens = 8192;
  MatmulQuantization q;
  q.fp8 = true;
  q.fixed_act_scale = q.fixed_weight_scale = true;
  const double a = m.activation_bytes, hbm = chip.achieved_hbm_Bps(), rate = chip.achieved_fp8_flops_per_s();
  auto cast_s = [&](double e) { return e * (a + 1) / hbm; };
  auto quantize_s = [&](double e) { return (e * a + e * (a + 1)) / hbm; };
  bool saw = false;
  for (const Kernel& k : layer_kernels(m, 1, tokens, 8192, chip)) {
    if (k.kind != KernelKind::Matmul) continue;
    INFO(k.name);
    saw = true;
    const KernelTimes t = kernel_times(k, tokens, chip, 1.0, q);
    const double x = k.k_dim * tokens, w = k.k_dim * k.n_dim, y = k.n_dim * tokens;
    const double math_s = t.flops / rate;
    CHECK(t.forward_s == Approx(math_s + cast_s(x) + cast_s(w)).epsilon(1e-9));
    CHECK(t.backward_s == Approx(2 * math_s + 2 * quantize_s(y) + cast_s(w) + cast_s(x)).epsilon(1e-9));
  }
  CHECK(saw);
}

TEST_CASE("tpu7x: fp8 and axis C refuse what cannot be, with located errors", "[tpu7x][errors]") {
  const std::string fp8 = replaced_in(kTraining, "remat_policy: full", "remat_policy: full\n  quantization: fp8");
  // v6e has no fp8 matmuls in podsim's presets.
  podsim_test::require_error(
      replaced_in(replaced_in(replaced_in(fp8, "preset: ironwood", "preset: v6e"), "mesh: \"2x2x1\"", "mesh: \"2x2\""),
                  "parallelism: {data: [X, Y, C], fsdp: true}", "parallelism: {data: [X, Y], fsdp: true}"),
      "workload.quantization", "fp8", "quantization");
  // A calibration method without fp8, and one that is neither absmax nor fixed,LO,HI.
  podsim_test::require_error(replaced_in(kTraining, "remat_policy: full",
                                         "remat_policy: full\n  act_quantization_calibration_method: absmax"),
                             "workload.act_quantization_calibration_method", "absmax", "act_quantization");
  podsim_test::require_error(replaced_in(fp8, "quantization: fp8", "quantization: fp8\n  weight_quantization_calibration_method: \"fixed,224,-224\""),
                             "workload.weight_quantization_calibration_method", "fixed,224,-224", "weight_quantization");
  // A mesh that names an axis C on a tpu7x clashes with the chip's devices.
  podsim_test::require_error(replaced_in(kCollective, "mesh: \"2x2x1\"", "mesh: {X: 2, C: 2}"), "topology.mesh",
                             "{X: 2, C: 2}", "mesh");
}

TEST_CASE("tpu7x: reductions offloaded to the SparseCores leave the TensorCore", "[tpu7x][sparsecore]") {
  // libtpu's default on Ironwood offloads reduce-scatters and all-reduces: their additions cost
  // the TensorCore nothing; sparse_core_offload: [] brings them back (3 (n-1)/n V of HBM time).
  const std::string base = replaced_in(replaced_in(kCollective, "kind: all_gather", "kind: reduce_scatter"),
                                       "hardware: {preset: tpu7x, profile: ideal}",
                                       "hardware: {preset: tpu7x, profile: ideal, overrides: {reductions_on_tensor_core: true}}");
  const Scenario offloaded = load_scenario_text(base, "tpu7x.yaml");
  CHECK(offloaded.topology.chip.reduce_scatter_on_sparse_core);
  const CollectiveSpec& rs = offloaded.collectives().operations[0].collective;
  CHECK(reduction_core_s(rs, offloaded.topology) == 0);
  const Scenario on_core = load_scenario_text(
      replaced_in(base, "reductions_on_tensor_core: true", "reductions_on_tensor_core: true, sparse_core_offload: []"), "tpu7x.yaml");
  CHECK_FALSE(on_core.topology.chip.reduce_scatter_on_sparse_core);
  CHECK(reduction_core_s(on_core.collectives().operations[0].collective, on_core.topology) ==
        Approx(3.0 * 1 / 2 * 64e6 / on_core.topology.chip.achieved_hbm_Bps()));
  const Scenario ar_only = load_scenario_text(
      replaced_in(base, "reductions_on_tensor_core: true", "reductions_on_tensor_core: true, sparse_core_offload: [all_reduce]"),
      "tpu7x.yaml");
  CHECK_FALSE(ar_only.topology.chip.reduce_scatter_on_sparse_core);
  CHECK(ar_only.topology.chip.all_reduce_on_sparse_core);
  // Errors: a chip without SparseCores, a kind XLA does not offload.
  const std::string v5e = replaced_in(replaced_in(kCollective, "preset: tpu7x, profile: ideal",
                                                  "preset: v5e, profile: ideal, overrides: {sparse_core_offload: [all_gather]}"),
                                      "mesh: \"2x2x1\"", "mesh: \"2x2\"");
  podsim_test::require_error(replaced_in(v5e, "axes: [C]", "axes: [X]"), "hardware.overrides.sparse_core_offload",
                             "[all_gather]", "hardware:");
  podsim_test::require_error(
      replaced_in(base, "reductions_on_tensor_core: true", "reductions_on_tensor_core: true, sparse_core_offload: [all_to_all]"),
      "hardware.overrides.sparse_core_offload[0]", "all_to_all", "hardware:");
}
