#pragma once
// An override far from its preset's figure (issue 42: ici_bandwidth: "100Gbps" is, correctly,
// 12.5 GB/s, 7x below v5p's 90 GB/s, and the step quadrupled without a word). Not an error (a
// hypothetical chip may differ that much), but a warning naming the key, both figures and, where
// a factor of 8 explains the gap, bits written where bytes were meant (or the reverse).
#include <optional>
#include <string>

namespace podsim {

// Beyond this factor either way an override is "far": more than any measured derating (the
// calibrated efficiencies are 0.43-0.99 of the nominal figures, calibration.md) and more than a
// chip generation's step in most figures (v5e to v6e doubles HBM and ICI bandwidth), while a
// bits-for-bytes slip (8x) is well beyond it.
constexpr double kFarOverrideFactor = 4;
// Within this share of the preset's figure after a factor of 8, the gap reads as bits for bytes.
constexpr double kBitsTolerance = 0.2;

// How a figure is shown and whether bits and bytes can be confused in it.
enum class OverrideQuantity { Bandwidth, Bytes, Flops, Ops };

// The warning for `key` (e.g. "hardware.overrides.ici_bandwidth") set to `value` where the preset
// `preset_name` has `preset` (same SI unit); nullopt when within kFarOverrideFactor or the preset
// has no figure (0).
std::optional<std::string> far_override_warning(const std::string& key, double value, double preset,
                                                const std::string& preset_name, OverrideQuantity quantity);

}  // namespace podsim
