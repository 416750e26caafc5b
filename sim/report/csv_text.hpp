#pragma once
// Small text helpers shared by the CSV writers of sweeps, comparisons and serving runs.
#include <string>

namespace podsim {

// The whole file ("" when it cannot be read).
std::string read_text_file(const std::string& path);
// The file without its trailing line breaks: a one-line message such as a point's error.txt.
std::string read_message(const std::string& path);
// A CSV cell: quoted when it holds a comma, quote or line break (line breaks become spaces,
// so every row stays one line).
std::string csv_field(const std::string& text);
// A number as CSV cells write it: 9 significant digits, enough to tell runs apart.
std::string csv_number(double value);

}  // namespace podsim
