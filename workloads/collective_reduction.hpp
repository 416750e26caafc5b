#pragma once
// The TensorCore's share of a reducing collective (ChipSpec::reductions_on_tensor_core).
//
// On TPUs up to v6e a ReduceScatter or AllReduce is an XLA "collective fusion" the TensorCore
// runs: the ICI's DMA engines move the chunks, but each received chunk is added to the chip's
// own partial by the core's vector units, which read both from HBM and write the sum. Async
// collective fusion (--xla_tpu_enable_async_collective_fusion, --xla_tpu_overlap_compute_
// collective_tc) interleaves that work with the compute beside it, so the links' time hides and
// the core's does not: it delays the compute. (Ironwood moves it off the core: "SparseCore
// collective offload", real-measurements.md IW-T1; MaxText's
// --xla_tpu_enable_sparse_core_collective_offload_* flags.)
//
// Per chip a reduction over a group of n chips adds (n-1)/n of its V bytes: two reads and one
// write each, at the HBM bandwidth kernels achieve, 3 (n-1)/n V / (hbm_bandwidth x
// hbm_efficiency). AllGathers and AllToAlls add nothing (their data lands by DMA).
//
// The collective itself takes the links' time plus the core's: each chunk a ring step forwards
// is the partial sum the core has just written, so a step's transfer waits for the previous
// step's addition (C1's psum on v6e, 5.12 ms, is then its links at 0.91 of their rate beside
// F1's 0.94 on v5e, where with the additions hidden it would need 0.66: docs/calibration.md).
#include "topology/topology.hpp"
#include "workloads/program.hpp"

namespace podsim {

// The core's seconds for one instance of `spec` (0 for a kind that does not reduce).
double reduction_core_s(const CollectiveSpec& spec, const TopologySpec& topology);

// Gives every ReduceScatter and AllReduce of `program` its core time, as a compute op (role
// CollectiveReduction, named "<collective>.reduce") right behind the latest compute op the
// collective waits for (its producer), which every compute op that waited for that producer
// now waits for too: the core adds the chunks before it takes its next kernel. The collective
// waits for its reduction (the links' time and the core's add up). A collective that waits
// for no compute op gets its reduction right before it, waiting for what the collective waited
// for, beside the compute (it steals no kernel's time: the approximation named in
// docs/modelling.md). Indices are renumbered so every op still comes after what it waits for.
// Nothing changes unless the chip's reductions_on_tensor_core is set.
Program with_collective_reductions(Program program, const TopologySpec& topology);

}  // namespace podsim
