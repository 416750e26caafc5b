#pragma once
// Per-chip hardware figures of TPU-style accelerators. Every preset value is cited in
// chip_presets.cpp with its line in docs/reference/hardware.md (the scaling book).
#include <string>
#include <string_view>
#include <vector>

namespace podsim {

// Which slices get ICI wraparound links by default (scaling book, tpus.md:L150, L212).
enum class WrapRule {
  FullCubes,  // v4p/v5p: every axis wraps when the slice is made of full 4x4x4 cubes, none otherwise
  Size16,     // v5e/v6e: an axis wraps only if its size is 16
};

// How a compute op's time is worked out. Book: one roofline over a block's matmul FLOPs and its
// weight and activation bytes (the scaling book's, exact on the ideal machine). Kernels: the
// block as the kernels a TPU runs (workloads/layer_kernels.hpp), each its own roofline with the
// MXU's shape padding, causal flash attention and the memory-bound vector work, each paying
// compute_overhead_s (what a calibration for real hardware uses).
enum class ComputeModel { Book, Kernels };
inline const char* to_string(ComputeModel m) { return m == ComputeModel::Book ? "book" : "kernels"; }

struct ChipSpec {
  std::string name;                 // preset name, e.g. "v5e"
  // TensorCores a chip shows as separate devices (JAX devices, MaxText's and vLLM's "device").
  // 1 on every chip to v6e (v4 and v5p run their two cores as one "megacore" device). 2 on
  // TPU7x, whose two compute dies each hold one TensorCore and half the HBM: podsim then
  // simulates devices, every per-chip figure below is one device's (half the chip's), and the
  // mesh gains an axis "C" of cores_per_chip devices joined by the die-to-die link
  // (docs/modelling.md, "Two TensorCores a chip").
  int cores_per_chip = 1;
  // The die-to-die link between a chip's devices, one direction (cores_per_chip > 1 only).
  double die_to_die_bandwidth_Bps = 0;
  double bf16_flops_per_s = 0;      // peak dense bf16 matmul throughput
  double int8_ops_per_s = 0;        // peak int8 matmul throughput
  // Peak fp8 matmul throughput; 0 where the chip has no fp8 matmuls (none of the TPU presets:
  // the book's table, tpus.md:L192-L199, lists bf16 and int8 only). hardware.overrides.fp8_flops
  // gives one.
  double fp8_flops_per_s = 0;
  double hbm_bytes = 0;             // HBM capacity per chip
  // The share of hbm_bytes a run's own arrays may not count on: XLA's temporary buffers (fusion
  // outputs, collective staging), the runtime's reservation and fragmentation. Every fit check
  // (training, inference, serving's KV cache) counts usable_hbm_bytes(). A fraction, as vLLM's
  // gpu_memory_utilization and JAX's XLA_PYTHON_CLIENT_MEM_FRACTION state it, so one figure
  // holds for every capacity (docs/reference/hardware.md, "HBM headroom").
  double hbm_headroom = 0;
  double hbm_bandwidth_Bps = 0;     // HBM bandwidth per chip
  double ici_bandwidth_Bps = 0;     // one ICI link, one direction
  int ici_links_per_neighbor = 1;   // parallel links to each neighbour along an axis (bandwidth adds)
  double hop_latency_s = 1e-6;      // T_min, the per-hop latency floor
  int chips_per_host = 4;
  std::vector<int> host_shape;      // block of chips one host owns, per mesh axis (e.g. {2,2,1}, {4,2})
  double dcn_bandwidth_per_host_Bps = 0;  // NIC egress (= ingress) per host
  double pcie_bandwidth_Bps = 0;    // chip <-> host, one direction
  int max_torus_dims = 3;           // 2 for v5e/v6e, 3 for v4p/v5p
  WrapRule wrap_rule = WrapRule::Size16;
  std::string source;               // where the figures come from
  // What a real chip achieves of the figures above (a calibration profile sets them;
  // docs/calibration.md). The presets are the book's ideal machine: 1 and 0.
  double hbm_efficiency = 1.0;      // fraction of hbm_bandwidth_Bps a kernel streams at
  double matmul_efficiency = 1.0;   // fraction of the peak FLOPs (bf16 or int8) matmuls reach
  double roofline_overlap = 1.0;    // share of the shorter of math and HBM time hidden under the longer
  double compute_overhead_s = 0;    // fixed cost of every compute op (launch, pipeline fill)
  // Fixed cost per sequence and layer of a serving step's paged attention: the kernel walks the
  // sequences one after another (ragged paged attention's grid, one serial step a sequence), and
  // each pays its grid step and the small DMAs (query, the new token's K and V, the output) the
  // prefetch of its pages does not hide (docs/modelling.md, "Paged attention's cost a sequence").
  double attention_sequence_overhead_s = 0;
  double dcn_latency_s = 0;         // fixed cost of every DCN transfer (NICs, switch, host software)
  // The share of its NIC's bandwidth a host's DCN transfers achieve (protocol, the fabric beyond
  // the switch, other tenants): the NIC links carry dcn_bandwidth_per_host_Bps x this.
  double dcn_efficiency = 1.0;
  // Weight-only quantisation (int8 or int4 weights, bf16 matmuls): the vector units convert
  // each weight before the MXU takes it, at this many weights per second (0: free, the ideal
  // machine; the VPU's ~7e12 ops/s per v5p core, hardware.md, bounds it from above).
  double dequant_weights_per_s = 0;
  // What one chip costs an hour, in US dollars: the preset's public on-demand list price (with
  // its source and date in chip_hour_price_source), or the scenario's
  // hardware.overrides.chip_hour_price_usd (what you pay: prices vary by region and commitment).
  // 0: no price known (v3).
  double chip_hour_price_usd = 0;
  std::string chip_hour_price_source;
  // The matrix unit's tile (hardware.md: one bf16[8,128] @ bf16[128,128] per 8 cycles on a
  // 128x128 systolic array; v6e 256x256): with mxu_padding a matmul [M, K] @ [K, N] costs as if
  // K and N were padded up to mxu_size and M to 8 rows (workloads/matmul_shapes.hpp).
  int mxu_size = 128;
  bool mxu_padding = false;         // the ideal machine: every FLOP of every shape counts
  ComputeModel compute_model = ComputeModel::Book;
  // On a wrapped bidirectional ring of even size X, the shard the opposite chip needs goes half
  // each way, so each direction carries (X-1)/2 shards: V (X-1)/(2 X W_uni), the bound behind
  // the book's measured "link BW" (sharding.md:L352-L356). false, the ideal machine: it goes
  // whole the long way, floor(X/2) shards one way, the book's V/W_bidi (ring_schedule.hpp).
  bool antipodal_split = false;
  // A ReduceScatter's or AllReduce's additions run on the TensorCore (TPUs to v6e), each chip
  // reading and writing 3 (n-1)/n V bytes of HBM beside its compute (workloads/
  // collective_reduction.hpp). false, the ideal machine: reductions cost the core nothing.
  bool reductions_on_tensor_core = false;
  // SparseCores a chip (the Cloud's pages: v5p 4, v6e 2, tpu7x 4; none listed for v3 to v5e).
  int sparse_cores_per_chip = 0;
  // Reducing collectives XLA moves to the SparseCores (the Ironwood recipes'
  // xla_tpu_enable_sparse_core_collective_offload_reduce_scatter / _all_reduce): their additions
  // run there, costing the TensorCore nothing whatever reductions_on_tensor_core says.
  bool reduce_scatter_on_sparse_core = false;
  bool all_reduce_on_sparse_core = false;

  // Physical chips holding `devices` devices: a figure "per chip" (tokens/s, TFLOP/s, price)
  // counts chips as the Cloud and tpu-recipes do, whatever the chip shows JAX.
  double chips_of_devices(double devices) const { return devices / cores_per_chip; }
  // The HBM a run's weights, optimizer state, activations and caches may fill.
  double usable_hbm_bytes() const { return hbm_bytes * (1 - hbm_headroom); }
  // ICI bandwidth from one device to one neighbour, one direction: links x per-link bandwidth,
  // shared evenly by the chip's devices (an SPMD program's cores all send at once, so a static
  // half of every link is what each gets when both use it).
  double neighbor_bandwidth_Bps() const { return ici_bandwidth_Bps * ici_links_per_neighbor / cores_per_chip; }
  // The HBM bandwidth kernels achieve: hbm_bandwidth_Bps x hbm_efficiency.
  double achieved_hbm_Bps() const { return hbm_bandwidth_Bps * hbm_efficiency; }
  // The FLOP rates matmuls achieve: the peaks x matmul_efficiency.
  double achieved_bf16_flops_per_s() const { return bf16_flops_per_s * matmul_efficiency; }
  double achieved_int8_ops_per_s() const { return int8_ops_per_s * matmul_efficiency; }
  double achieved_fp8_flops_per_s() const { return fp8_flops_per_s * matmul_efficiency; }
};

const std::vector<ChipSpec>& chip_presets();
// nullptr when no preset has that name; "ironwood" names tpu7x (the Cloud's own alias).
const ChipSpec* find_chip_preset(std::string_view name);

}  // namespace podsim
