#pragma once
// The time of a compute op on one chip, from its FLOPs and HBM traffic (roofline.md), with the
// chip's calibration (topology/chip_spec.hpp: achieved rates, overlap, fixed cost per op).
#include <algorithm>

#include "topology/chip_spec.hpp"

namespace podsim {

// Work that takes math_s on the matrix units and memory_s streaming HBM: the book's
// max(T_math, T_memory) when the two overlap perfectly (roofline_overlap 1, the ideal machine),
// plus the part of the shorter one that does not overlap (a calibration fits it: near the
// critical batch measured layers are slower than the max; docs/calibration.md).
inline double overlapped_s(double math_s, double memory_s, const ChipSpec& chip) {
  return std::max(math_s, memory_s) + (1 - chip.roofline_overlap) * std::min(math_s, memory_s);
}

// A compute op's time on one chip: its FLOPs at `flops_per_s` (the rate matmuls achieve: bf16 or
// int8) and its HBM traffic at the bandwidth kernels achieve, overlapped, scaled by the fraction
// of the roofline achieved (roofline.md), plus the chip's fixed cost per op (0 on the ideal machine).
// `vector_s`: work on the vector units in line with the matmuls (dequantising weights).
inline double roofline_s(double flops, double bytes, double flops_per_s, const ChipSpec& chip, double efficiency,
                         double vector_s = 0) {
  return overlapped_s(flops / flops_per_s + vector_s, bytes / chip.achieved_hbm_Bps(), chip) / efficiency +
         chip.compute_overhead_s;
}

// The same with bf16 matmuls (training).
inline double roofline_s(double flops, double bytes, const ChipSpec& chip, double efficiency) {
  return roofline_s(flops, bytes, chip.achieved_bf16_flops_per_s(), chip, efficiency);
}

}  // namespace podsim
