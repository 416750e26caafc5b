#pragma once
// Quantities with explicit units, as scenario files write them, converted once to SI
// (design.md, habit 2). Every function throws std::invalid_argument whose what() says what
// was expected; the scenario loader adds the file, line and key.
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <system_error>
#include <string_view>
#include <vector>

namespace podsim {

// A number that is the whole of `text` (no sign other than '-', no spaces, no unit), as
// std::from_chars reads it; nullopt when it is not one or does not fit in T.
template <typename T>
std::optional<T> parse_whole_number(std::string_view text) {
  T value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// Bytes per second from "45 GB/s", "4.5e10 B/s", "90 GiB/s", or bits from "400 Gbps",
// "400 Gb/s". A unit is required. Must be positive and finite.
double parse_bandwidth_Bps(std::string_view text);

// Seconds from "1 us", "1us", "1 µs", "2.5 ms", "10 ns", "1 s". A unit is required.
// Zero is accepted (a zero overhead or latency is meaningful); negative is not.
double parse_time_s(std::string_view text);

// Events per second from "3 /s", "180 /min", "10 /h". Must be positive and finite.
// "3 /s", "180 /min", "0.5 /h"; "inf /s" is +infinity (every request at once, as vLLM's
// benchmark takes --request-rate inf).
double parse_rate_per_s(std::string_view text);

// Whole bytes from "16 GiB", "16 GB", "1 KiB", "512 B", "8.4e6 B" or a bare integer.
// Computed exactly; must be positive, whole and fit in 64 bits.
uint64_t parse_bytes(std::string_view text);

// Operations per second from "197 TFLOP/s", "1.97e14 FLOP/s", "394 TOP/s" (FLOP and OP
// both count one operation). A unit is required. Must be positive and finite.
double parse_flops_per_s(std::string_view text);

// An array type such as "bf16[2048,8192]".
struct ArrayShape {
  std::string dtype;            // as written, e.g. "bf16"
  int bits_per_element = 0;     // 4, 8, 16 or 32
  std::vector<uint64_t> dims;   // each positive
  uint64_t elements = 0;
  uint64_t bytes = 0;           // elements x bits / 8, rounded up (int4)
};
// Throws on an unknown dtype, a missing, zero or malformed dimension, or a size past 64 bits.
ArrayShape parse_array(std::string_view text);

// The scaling book's sharding notation: "[E_Y, F]", "[B_XY, D]", "[B_X, D_Y]{U_Z}".
// A subscript is a run of single-letter mesh axis names; {U_...} lists unreduced axes,
// which hold partial sums and do not split the array.
struct Sharding {
  std::vector<std::string> dim_names;            // "E", "F", ...
  std::vector<std::vector<std::string>> dim_axes; // per dimension, the axes splitting it, major first
  std::vector<std::string> unreduced;            // axes from {U_...}
  // Every axis that splits the array (not the unreduced ones), in order of appearance.
  std::vector<std::string> sharded_axes() const;
};
// Throws on malformed text or an axis used twice anywhere (dimensions and {U_...} together).
Sharding parse_sharding(std::string_view text);
// Throws when the sharding's rank differs from the array's.
void check_sharding_rank(const Sharding& sharding, const ArrayShape& array);

// The way back, for people: "8 MiB", "372.8 us", "45 GB/s" (4 significant digits). Input
// errors quote sizes in these (a plan that does not fit HBM), as do the tables.
std::string human_bytes(double bytes);
// HBM as a fit check counts it: "89.41 GiB HBM less 5% headroom" ("89.41 GiB HBM" without one;
// ChipSpec::hbm_headroom), so every message and table says the headroom is counted.
std::string human_hbm(double hbm_bytes, double headroom);
// "p99", "p99.9", "p50": how summaries and expectations name a percentile (vLLM's names).
std::string percentile_name(double percent);
std::string human_time(double seconds);
std::string human_bandwidth(double bytes_per_s);
// Compute rates with decimal prefixes: human_flops(1.97e14) is "197 TFLOP/s"; `unit` may be
// "OP/s" for integer operations. Outputs print bytes in binary units (GiB) and rates in
// decimal ones (GB/s, TFLOP/s), as frameworks and nccl-tests do.
std::string human_flops(double per_s, const char* unit = "FLOP/s");
// A number with 12 significant digits ("%.12g"): what a calibration profile keeps of a fitted
// value, enough that reading it back predicts what the fit predicted.
std::string number_text(double value);

}  // namespace podsim
