#pragma once
// The chip-hour price behind a summary's costs, stated beside them: its value and where it comes
// from (a preset's public list price with its source and date, or the scenario's own).
#include <string>

#include <nlohmann/json.hpp>

#include "topology/chip_spec.hpp"

namespace podsim {

// Adds chip_hour_price_usd and chip_hour_price_source to a summary object.
void add_price(nlohmann::ordered_json& summary, const ChipSpec& chip);

// For the text summary: "the scenario's price" or "v5p on-demand list price; its source is in
// summary.json".
std::string price_origin(const ChipSpec& chip);

}  // namespace podsim
