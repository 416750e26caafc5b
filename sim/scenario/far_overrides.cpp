#include "sim/scenario/far_overrides.hpp"

#include <cmath>
#include <cstdio>

#include "sim/scenario/units.hpp"

namespace podsim {
namespace {

std::string shown(double value, OverrideQuantity quantity) {
  switch (quantity) {
    case OverrideQuantity::Bandwidth: return human_bandwidth(value);
    case OverrideQuantity::Bytes: return human_bytes(value);
    case OverrideQuantity::Ops: return human_flops(value, "OP/s");
    case OverrideQuantity::Flops: break;
  }
  return human_flops(value);
}

bool near(double a, double b) { return std::abs(a / b - 1) <= kBitsTolerance; }

// A byte is 8 bits: a figure 8x off its preset's in a quantity of bytes reads as the other unit.
std::string bits_hint(double value, double preset, OverrideQuantity quantity) {
  if (quantity == OverrideQuantity::Flops || quantity == OverrideQuantity::Ops) return "";
  const char* bits_unit = quantity == OverrideQuantity::Bandwidth ? " Gbit/s" : " Gbit";
  char text[160];
  if (near(value * 8, preset)) {
    std::snprintf(text, sizeof text, "; it looks like bits where bytes were meant (%.4g%s is %s)", value * 8 / 1e9,
                  bits_unit, shown(value, quantity).c_str());
    return text;
  }
  if (near(value / 8, preset)) {
    std::snprintf(text, sizeof text, "; it looks like bytes where bits were meant (%s is %.4g%s)",
                  shown(value, quantity).c_str(), value * 8 / 1e9, bits_unit);
    return text;
  }
  return "";
}

}  // namespace

std::optional<std::string> far_override_warning(const std::string& key, double value, double preset,
                                                const std::string& preset_name, OverrideQuantity quantity) {
  if (!(preset > 0) || !(value > 0)) return std::nullopt;
  const double ratio = value / preset;
  if (ratio <= kFarOverrideFactor && ratio >= 1 / kFarOverrideFactor) return std::nullopt;
  char factor[64];
  std::snprintf(factor, sizeof factor, "%.3gx %s", ratio > 1 ? ratio : 1 / ratio, ratio > 1 ? "above" : "below");
  char limit[16];
  std::snprintf(limit, sizeof limit, "%gx", kFarOverrideFactor);
  return key + " is " + shown(value, quantity) + ", " + factor + " the " + preset_name + " preset's " +
         shown(preset, quantity) + " (more than " + limit + " either way)" + bits_hint(value, preset, quantity) +
         "; simulated as given";
}

}  // namespace podsim
