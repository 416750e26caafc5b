#pragma once
// Where the chip-hour price behind a summary's costs comes from, for the text summary (summary.json
// states the price and its source itself: summary_field_table.hpp): a preset's public list price with
// its source and date, or the scenario's own.
#include <string>

#include "topology/chip_spec.hpp"

namespace podsim {

// For the text summary: "the scenario's price" or "v5p on-demand list price; its source is in
// summary.json".
std::string price_origin(const ChipSpec& chip);

}  // namespace podsim
