// Chip presets. Every figure comes from docs/reference/hardware.md, which quotes the
// scaling book ("How to Scale Your Model", jax-ml/scaling-book @ 37acb5ea); each comment names
// the book line the figure is read from. "assumed" marks the few figures the book does not give.
// Prices are not the book's: each names its public source and date (docs/modelling.md, "Prices").
#include <algorithm>
#include <utility>

#include "topology/chip_spec.hpp"

namespace podsim {
namespace {

// Shared by every TPU preset: ~1 us per ICI hop whatever the volume (sharding.md:L338;
// tpus.md:L271 "per-hop latency for TPU v5e is 1us").
constexpr double kHopLatency_s = 1e-6;
// One link to each neighbour along an axis; the per-link numbers below are the book's
// "per link" figures (tpus.md:L203-L212), so no multiplier is needed.
constexpr int kLinksPerNeighbor = 1;
// HBM a run cannot fill with its own arrays (XLA's temporaries, the runtime, fragmentation): 5%.
// Bounds: the runtime's own reservation is under 1% (v4: bytes_limit 34088157184 of 32 GiB,
// pytorch/xla #7086); vLLM's TPU backend leaves 10% by default (gpu_memory_utilization 0.9,
// vllm-project/tpu-inference #1419), more than real runs need: JetStream's measured LLaMA-2 7B
// server on v5e-8 (scenarios/real/s2) fills 91% of HBM with weights and 96 caches of 2048
// tokens, and MaxText's measured m5 run 96.8% by podsim's count. Not the book's: its arithmetic
// counts all of HBM (a scenario reproducing it sets hardware.overrides.hbm_headroom: 0).
// docs/reference/hardware.md, "HBM headroom".
constexpr double kHbmHeadroom = 0.05;
// TPU7x's die-to-die link, one direction: no public figure (hardware.md s7). Assumed equal to
// one die's HBM bandwidth, so a transfer between the dies costs what a copy within one does.
constexpr double kTpu7xDieToDie_Bps = 7.38e12 / 2;

std::vector<ChipSpec> make_presets() {
  std::vector<ChipSpec> presets;

  {
    ChipSpec c;
    c.name = "v3";
    c.bf16_flops_per_s = 1.4e14;    // tpus.md:L192-L199 (v3 row)
    c.int8_ops_per_s = 1.4e14;      // tpus.md:L192-L199 (v3 row: no int8 speed-up)
    c.hbm_bytes = 32e9;             // tpus.md:L192-L199 (32GB)
    c.hbm_bandwidth_Bps = 9.0e11;   // tpus.md:L192-L199
    c.ici_bandwidth_Bps = 1.0e11;   // tpus.md:L203-L212 (one-way per link)
    c.ici_links_per_neighbor = kLinksPerNeighbor;
    c.hop_latency_s = kHopLatency_s;
    c.chips_per_host = 8;           // tpus.md:L192-L199 (host 4x2)
    c.host_shape = {4, 2};          // tpus.md:L192-L199 (host 4x2)
    // Assumed: the book gives no v3 DCN figure; we use the v5p/v5e per-host 2.5e10
    // (training.md:L572; hardware.md section 4).
    c.dcn_bandwidth_per_host_Bps = 2.5e10;
    c.pcie_bandwidth_Bps = 1.6e10;  // tpus.md:L136, L214 ("typical 1.6e10 per TPU")
    c.max_torus_dims = 2;           // tpus.md:L140 (2D torus, 4 neighbours)
    // Assumed: the book states the wrap rule only for v4p/v5p and v5e/v6e (tpus.md:L150, L212);
    // we treat the 2D v3 like v5e, so a 32x32 v3 pod gets no wraparound under this preset.
    c.wrap_rule = WrapRule::Size16;
    c.source = "hardware.md s1 (tpus.md:L192-L199), s2 (tpus.md:L203-L212), s4 (tpus.md:L136, L214); "
               "DCN per host and wrap rule assumed";
    presets.push_back(std::move(c));
  }

  {
    ChipSpec c;
    c.name = "v4p";
    c.bf16_flops_per_s = 2.75e14;   // tpus.md:L192-L199 (v4p row)
    c.int8_ops_per_s = 2.75e14;     // tpus.md:L192-L199 (v4p row)
    c.hbm_bytes = 32e9;             // tpus.md:L192-L199 (32GB)
    c.hbm_bandwidth_Bps = 1.2e12;   // tpus.md:L192-L199 (Q1 answer uses 1.23e12, tpus.md:L224)
    c.ici_bandwidth_Bps = 4.5e10;   // tpus.md:L203-L212 (one-way per link)
    c.ici_links_per_neighbor = kLinksPerNeighbor;
    c.hop_latency_s = kHopLatency_s;
    c.chips_per_host = 4;           // tpus.md:L132, L201 (one 4-chip tray per host)
    c.host_shape = {2, 2, 1};       // tpus.md:L192-L199 (host 2x2x1)
    // Assumed: the book gives DCN per chip only for v5p/v5e/v6e (tpus.md:L164, L214); we take
    // v5p's 6.25e9 per chip x 4 chips per host.
    c.dcn_bandwidth_per_host_Bps = 4 * 6.25e9;
    c.pcie_bandwidth_Bps = 1.6e10;  // tpus.md:L136 (v4: 16GB/s each way), L214
    c.max_torus_dims = 3;           // tpus.md:L140 (3D torus, 6 neighbours)
    c.wrap_rule = WrapRule::FullCubes;  // tpus.md:L150, L212 footnote (full 4x4x4 cubes)
    c.source = "hardware.md s1 (tpus.md:L192-L199), s2 (tpus.md:L203-L212), s3 (tpus.md:L150), "
               "s4 (tpus.md:L136, L214); DCN per host assumed from v5p";
    // On-demand list price, one chip-hour (no commitment; region as the source says).
    c.chip_hour_price_usd = 3.22;
    c.chip_hour_price_source = "Google Cloud TPU pricing page (cloud.google.com/tpu/pricing), TPU v4 on-demand, us-central2, "
                               "as quoted on 2022-08-11 (infer-pub.com question 1114)";
    presets.push_back(std::move(c));
  }

  {
    ChipSpec c;
    c.name = "v5p";
    c.bf16_flops_per_s = 4.59e14;   // tpus.md:L192-L199 (v5p row)
    c.int8_ops_per_s = 9.18e14;     // tpus.md:L192-L199 (v5p row)
    c.hbm_bytes = 96e9;             // tpus.md:L192-L199 (96GB)
    c.hbm_bandwidth_Bps = 2.8e12;   // tpus.md:L192-L199
    // tpus.md:L203-L212 (one-way per link); tpus.md:L163 says to use 9e10 over the Cloud page's 100GB/s.
    c.ici_bandwidth_Bps = 9.0e10;
    c.ici_links_per_neighbor = kLinksPerNeighbor;
    c.hop_latency_s = kHopLatency_s;
    c.chips_per_host = 4;           // tpus.md:L132, L201 (one 4-chip tray per host)
    c.host_shape = {2, 2, 1};       // tpus.md:L192-L199 (host 2x2x1)
    // training.md:L572: ~200Gbps = 25GB/s per host = 4 chips x 6.25e9 (tpus.md:L164, L214).
    c.dcn_bandwidth_per_host_Bps = 4 * 6.25e9;
    c.pcie_bandwidth_Bps = 1.6e10;  // tpus.md:L136, L214
    c.max_torus_dims = 3;           // tpus.md:L140 (3D torus, 6 neighbours)
    c.wrap_rule = WrapRule::FullCubes;  // tpus.md:L150, L212 footnote (full 4x4x4 cubes)
    c.source = "hardware.md s1 (tpus.md:L192-L199), s2 (tpus.md:L203-L212, L163), s3 (tpus.md:L150), "
               "s4 (tpus.md:L136, L164, L214; training.md:L572)";
    // On-demand list price, one chip-hour (no commitment; region as the source says).
    c.chip_hour_price_usd = 4.20;
    c.chip_hour_price_source = "applied-inference.md:L97-L101 (book-cases.md row 78): Google Cloud's $4.2 an hour, "
                               "as of Feb 2025; also the Cloud TPU v5p launch blog (2023-12-06)";
    presets.push_back(std::move(c));
  }

  {
    ChipSpec c;
    c.name = "v5e";
    c.bf16_flops_per_s = 1.97e14;   // tpus.md:L192-L199 (v5e row)
    c.int8_ops_per_s = 3.94e14;     // tpus.md:L192-L199 (v5e row)
    c.hbm_bytes = 16e9;             // tpus.md:L192-L199 (16GB)
    c.hbm_bandwidth_Bps = 8.2e11;   // tpus.md:L192-L199 (8.1e11 before Feb-2025 edit)
    c.ici_bandwidth_Bps = 4.5e10;   // tpus.md:L203-L212 (one-way per link)
    c.ici_links_per_neighbor = kLinksPerNeighbor;
    c.hop_latency_s = kHopLatency_s;
    c.chips_per_host = 8;           // tpus.md:L132, L201 (two 4-chip trays per host)
    c.host_shape = {4, 2};          // tpus.md:L192-L199 (host 4x2)
    // tpus.md:L164, L214: 3.125e9 per chip; x 8 chips = 2.5e10 per host (hardware.md s4, derived).
    c.dcn_bandwidth_per_host_Bps = 8 * 3.125e9;
    c.pcie_bandwidth_Bps = 1.6e10;  // tpus.md:L136, L214
    c.max_torus_dims = 2;           // tpus.md:L140 (2D torus, 4 neighbours)
    c.wrap_rule = WrapRule::Size16; // tpus.md:L150 footnote, L212 (wrap only on axes of size 16)
    c.source = "hardware.md s1 (tpus.md:L192-L199), s2 (tpus.md:L203-L212), s3 (tpus.md:L150, L212), "
               "s4 (tpus.md:L136, L164, L214)";
    // On-demand list price, one chip-hour (no commitment; region as the source says).
    c.chip_hour_price_usd = 1.20;
    c.chip_hour_price_source = "applied-inference.md:L97-L101 (book-cases.md row 78): Google Cloud's $1.2 an hour, "
                               "as of Feb 2025; also cloud.google.com/tpu (\"Starting at $1.2000 per chip-hour\")";
    presets.push_back(std::move(c));
  }

  {
    ChipSpec c;
    c.name = "v6e";
    c.bf16_flops_per_s = 9.20e14;   // tpus.md:L192-L199 (v6e row; roofline.md:L92 says 9.1e14)
    c.int8_ops_per_s = 1.84e15;     // tpus.md:L192-L199 (v6e row)
    c.mxu_size = 256;               // tpus.md:L349, L374 (v6e's MXU is 256x256)
    c.hbm_bytes = 32e9;             // tpus.md:L192-L199 (32GB)
    c.hbm_bandwidth_Bps = 1.6e12;   // tpus.md:L192-L199
    c.ici_bandwidth_Bps = 9.0e10;   // tpus.md:L203-L212 (one-way per link)
    c.ici_links_per_neighbor = kLinksPerNeighbor;
    c.hop_latency_s = kHopLatency_s;
    c.chips_per_host = 8;           // tpus.md:L132, L201 (two 4-chip trays per host)
    c.host_shape = {4, 2};          // tpus.md:L192-L199 (host 4x2)
    // tpus.md:L164, L214: 12.5e9 per chip; x 8 chips = 1e11 per host (hardware.md s4, derived).
    c.dcn_bandwidth_per_host_Bps = 8 * 12.5e9;
    c.pcie_bandwidth_Bps = 3.2e10;  // tpus.md:L214 (3.2e10 on v6e)
    c.max_torus_dims = 2;           // tpus.md:L140 (2D torus, 4 neighbours)
    c.wrap_rule = WrapRule::Size16; // tpus.md:L150 footnote, L212 (wrap only on axes of size 16)
    c.source = "hardware.md s1 (tpus.md:L192-L199), s2 (tpus.md:L203-L212), s3 (tpus.md:L150, L212), "
               "s4 (tpus.md:L136, L164, L214)";
    // On-demand list price, one chip-hour (no commitment; region as the source says).
    c.chip_hour_price_usd = 2.70;
    c.chip_hour_price_source = "Google Cloud, Trillium general availability (2024-12), as reported by Neowin: "
                               "\"available starting at $2.7000 per chip-hour\" (US East, Europe West, Asia Northeast)";
    presets.push_back(std::move(c));
  }

  {
    // TPU7x (Ironwood). Two compute dies a chip, each one TensorCore with half the HBM, shown
    // to JAX as two devices (hardware.md s7): every figure here is one device's, half the
    // chip's, and cores_per_chip makes the mesh's axis C of the chip's two devices.
    ChipSpec c;
    c.name = "tpu7x";
    c.cores_per_chip = 2;
    c.bf16_flops_per_s = 2.307e15 / 2;   // hardware.md s7: Cloud TPU7x page, 2,307 TFLOP/s bf16 a chip
    c.fp8_flops_per_s = 4.614e15 / 2;    // hardware.md s7: Cloud TPU7x page, 4,614 TFLOP/s fp8 a chip
    c.int8_ops_per_s = 4.61e15 / 2;      // tpus.md:L192-L199 (TPU7x row: 4.61e15; the Cloud page lists none)
    c.hbm_bytes = 192.0 * (1ull << 30) / 2;  // hardware.md s7: 192 GiB a chip (Cloud TPU7x page), 96 GiB a die
    c.hbm_bandwidth_Bps = 7.38e12 / 2;   // hardware.md s7: 7,380 GB/s a chip (Cloud TPU7x page)
    c.mxu_size = 256;                    // hardware.md s7: 256x256 MXU (MaxText's Ironwood guide)
    // One ICI link one way, shared by the chip's two dies (neighbor_bandwidth_Bps halves it):
    // tpus.md:L203-L212 gives 9e10 as for v5p, whose Cloud page states the same 1,200 GB/s a
    // chip both ways that TPU7x's does (hardware.md s7), and which the book reads as 9e10 a link.
    c.ici_bandwidth_Bps = 9.0e10;
    c.ici_links_per_neighbor = kLinksPerNeighbor;
    c.hop_latency_s = kHopLatency_s;
    c.die_to_die_bandwidth_Bps = kTpu7xDieToDie_Bps;
    c.chips_per_host = 8;                // devices: 4 chips a host (Cloud: tpu7x-standard-4t), 2 each
    c.host_shape = {2, 2, 1, 2};         // tpus.md:L192-L199 (host 2x2x1), by the devices' axis C
    // hardware.md s4, s7: 12.5e9 a chip (100 Gb/s, the Cloud page), 4 chips a host.
    c.dcn_bandwidth_per_host_Bps = 4 * 12.5e9;
    c.pcie_bandwidth_Bps = 3.2e10 / 2;   // assumed: v6e's 3.2e10 a chip (tpus.md:L214), half a die
    c.max_torus_dims = 3;                // hardware.md s7: 3D torus (4x4x4 cubes, as v5p)
    c.wrap_rule = WrapRule::FullCubes;   // hardware.md s7: full cubes wrap, 2x2x1 to 2x4x4 do not
    c.sparse_cores_per_chip = 4;         // hardware.md s7: 4 SparseCores a chip (Cloud TPU7x page)
    // libtpu's default on Ironwood: all-gather, reduce-scatter and all-reduce offloaded to the
    // SparseCores (MaxText a0fceb5 benchmarks/xla_flags_library.py:78-125).
    c.reduce_scatter_on_sparse_core = true;
    c.all_reduce_on_sparse_core = true;
    c.source = "hardware.md s7 (Cloud TPU7x page; tpus.md:L192-L199, L203-L212); PCIe and die-to-die assumed";
    presets.push_back(std::move(c));
  }

  for (ChipSpec& c : presets) c.hbm_headroom = kHbmHeadroom;
  return presets;
}

}  // namespace

const std::vector<ChipSpec>& chip_presets() {
  static const std::vector<ChipSpec> presets = make_presets();
  return presets;
}

const ChipSpec* find_chip_preset(std::string_view name) {
  if (name == "ironwood") name = "tpu7x";   // hardware.md s7: Ironwood is the family, TPU7x its chip
  const auto& presets = chip_presets();
  auto it = std::find_if(presets.begin(), presets.end(),
                         [&](const ChipSpec& c) { return c.name == name; });
  return it == presets.end() ? nullptr : &*it;
}

}  // namespace podsim
