#pragma once
// A number in summary.json named as expectations and measurements name it: a dotted path into
// objects ("step_time_s", "moe.dispatch_bytes_per_chip", "exposed_comm_by_axis_s.X"), or
// "operations.<name>.<field>" for an operation of the list (names may contain dots).
#include <string>

#include <nlohmann/json.hpp>

namespace podsim {

// Booleans read as 1 or 0. Throws std::out_of_range naming the field when no row of the summary
// field table (summary_field_table.hpp) names it, or when this summary does not have it.
double summary_field_value(const nlohmann::json& summary, const std::string& field);

}  // namespace podsim
