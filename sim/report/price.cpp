#include "sim/report/price.hpp"

namespace podsim {

namespace {
constexpr const char* kOverride = "hardware.overrides.chip_hour_price_usd";
}

std::string price_origin(const ChipSpec& chip) {
  if (chip.chip_hour_price_source == kOverride) return "the scenario's price";
  return chip.name + " on-demand list price; its source is in summary.json";
}

}  // namespace podsim
