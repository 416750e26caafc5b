#pragma once
// A compute op's time on one chip: the slower of its FLOPs and its HBM traffic (at the HBM
// bandwidth kernels achieve), scaled by the fraction of the roofline achieved (the book's
// max(T_math, T_memory); roofline.md), plus the chip's fixed cost per op (0 on the ideal machine).
#include <algorithm>

#include "topology/chip_spec.hpp"

namespace podsim {

inline double roofline_s(double flops, double bytes, const ChipSpec& chip, double efficiency) {
  return std::max(flops / chip.bf16_flops_per_s, bytes / chip.achieved_hbm_Bps()) / efficiency + chip.compute_overhead_s;
}

}  // namespace podsim
