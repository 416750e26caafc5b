#include "sim/scenario/units.hpp"

#include <algorithm>
#include <cctype>
#include <utility>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <stdexcept>

namespace podsim {
namespace {

using u128 = unsigned __int128;

// What each kind of quantity looks like, quoted in every error so the user sees a fix.
constexpr std::string_view kBandwidthHint =
    "expected a positive bandwidth with a unit, e.g. \"45 GB/s\", \"90 GiB/s\" or \"400 Gbps\" "
    "(B = bytes, b = bits; a bare number is not accepted, so that units stay explicit)";
constexpr std::string_view kTimeHint =
    "expected a non-negative time with a unit, e.g. \"1 us\", \"1 µs\", \"2.5 ms\", \"10 ns\", \"2 h\" or "
    "\"1 s\" (a bare number is not accepted, so that units stay explicit)";
constexpr std::string_view kRateHint =
    "expected a positive rate with a unit, e.g. \"3 /s\", \"180 /min\" or \"0.5 /s\", or \"inf /s\" (all at once)";
constexpr std::string_view kBytesHint =
    "expected a positive whole number of bytes below 2^64, e.g. \"16 GiB\", \"34 MB\", \"512 B\" "
    "or a bare integer";
constexpr std::string_view kFlopsHint =
    "expected a positive rate with a unit, e.g. \"197 TFLOP/s\", \"1.97e14 FLOP/s\" or "
    "\"394 TOP/s\" (a bare number is not accepted, so that units stay explicit)";

[[noreturn]] void fail(std::string_view reason, std::string_view hint) {
  throw std::invalid_argument(std::string(reason) + "; " + std::string(hint));
}

bool is_space(char c) { return c == ' ' || c == '\t'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_letter(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }

std::string_view trim(std::string_view text) {
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}

// A decimal literal split into its parts, so byte counts can be computed exactly and
// "inf", "nan" or hex never sneak in through strtod.
struct NumberToken {
  bool negative = false;
  std::string_view literal;     // without the sign, e.g. "8.4e6"
  std::string_view int_digits;  // "8"
  std::string_view frac_digits; // "4"
  int64_t exponent = 0;         // 6
};

struct Quantity {
  NumberToken number;
  std::string_view unit;        // trimmed; empty when the text is a bare number
};

size_t scan_digits(std::string_view text, size_t pos) {
  while (pos < text.size() && is_digit(text[pos])) ++pos;
  return pos;
}

// Exponents past this are out of range for any quantity; saturating keeps the arithmetic safe.
constexpr int64_t kExponentCap = 100000;

std::optional<size_t> scan_exponent(std::string_view text, size_t pos, int64_t& exponent) {
  if (pos >= text.size() || (text[pos] != 'e' && text[pos] != 'E')) return std::nullopt;
  size_t p = pos + 1;
  bool negative = false;
  if (p < text.size() && (text[p] == '+' || text[p] == '-')) negative = text[p++] == '-';
  const size_t end = scan_digits(text, p);
  if (end == p) return std::nullopt;   // "5e" alone: leave the 'e' to the unit, which then fails
  int64_t value = 0;
  for (size_t i = p; i < end; ++i) value = std::min(kExponentCap, value * 10 + (text[i] - '0'));
  exponent = negative ? -value : value;
  return end;
}

std::optional<NumberToken> scan_number(std::string_view text, size_t& end) {
  NumberToken token;
  size_t pos = 0;
  if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) token.negative = text[pos++] == '-';
  const size_t start = pos;
  size_t int_end = scan_digits(text, pos);
  token.int_digits = text.substr(pos, int_end - pos);
  pos = int_end;
  if (pos < text.size() && text[pos] == '.') {
    const size_t frac_end = scan_digits(text, pos + 1);
    token.frac_digits = text.substr(pos + 1, frac_end - pos - 1);
    pos = frac_end;
  }
  if (token.int_digits.empty() && token.frac_digits.empty()) return std::nullopt;
  if (auto after = scan_exponent(text, pos, token.exponent)) pos = *after;
  token.literal = text.substr(start, pos - start);
  end = pos;
  return token;
}

Quantity split_quantity(std::string_view text, std::string_view hint) {
  text = trim(text);
  size_t end = 0;
  auto number = scan_number(text, end);
  if (!number) fail("does not start with a number", hint);
  return Quantity{*number, trim(text.substr(end))};
}

bool is_zero(const NumberToken& number) {
  auto zero = [](std::string_view digits) {
    return std::all_of(digits.begin(), digits.end(), [](char c) { return c == '0'; });
  };
  return zero(number.int_digits) && zero(number.frac_digits);
}

struct Prefix {
  std::string_view symbol;
  double factor;
  uint64_t exact;   // the same factor as an integer; 0 for sub-unit prefixes
};

constexpr std::array kLargePrefixes = {
    Prefix{"", 1, 1},
    Prefix{"k", 1e3, 1000ULL},
    Prefix{"K", 1e3, 1000ULL},   // common in "KB"; binary kilo is spelt Ki
    Prefix{"M", 1e6, 1000000ULL},
    Prefix{"G", 1e9, 1000000000ULL},
    Prefix{"T", 1e12, 1000000000000ULL},
    Prefix{"P", 1e15, 1000000000000000ULL},
    Prefix{"Ki", 0x1p10, 1ULL << 10},
    Prefix{"Mi", 0x1p20, 1ULL << 20},
    Prefix{"Gi", 0x1p30, 1ULL << 30},
    Prefix{"Ti", 0x1p40, 1ULL << 40},
    Prefix{"Pi", 0x1p50, 1ULL << 50},
};

constexpr std::array kTimePrefixes = {
    Prefix{"", 1, 1},
    Prefix{"m", 1e-3, 0},
    Prefix{"u", 1e-6, 0},
    Prefix{"\xC2\xB5", 1e-6, 0},   // µ, MICRO SIGN
    Prefix{"\xCE\xBC", 1e-6, 0},   // μ, GREEK SMALL LETTER MU
    Prefix{"n", 1e-9, 0},
    Prefix{"p", 1e-12, 0},
};

struct BaseUnit {
  std::string_view symbol;
  double factor;   // to the SI unit of the quantity
};

// Finds prefix + base in `unit`; bases are tried longest first so "FLOPS" is not read as F+"LOPS".
template <size_t NB, size_t NP>
std::optional<double> unit_factor(std::string_view unit, const std::array<BaseUnit, NB>& bases,
                                  const std::array<Prefix, NP>& prefixes,
                                  const Prefix** matched = nullptr) {
  for (const BaseUnit& base : bases) {
    if (unit.size() < base.symbol.size() || !unit.ends_with(base.symbol)) continue;
    const std::string_view symbol = unit.substr(0, unit.size() - base.symbol.size());
    for (const Prefix& prefix : prefixes) {
      if (prefix.symbol != symbol) continue;
      if (matched) *matched = &prefix;
      return prefix.factor * base.factor;
    }
  }
  return std::nullopt;
}

double to_double(const NumberToken& number, std::string_view hint) {
  double value = 0;
  const auto [ptr, ec] =
      std::from_chars(number.literal.data(), number.literal.data() + number.literal.size(), value);
  if (ec == std::errc::result_out_of_range) fail("number out of range", hint);
  if (ec != std::errc() || ptr != number.literal.data() + number.literal.size())
    fail("malformed number", hint);
  return value;
}

template <size_t NB, size_t NP>
double parse_real(std::string_view text, const std::array<BaseUnit, NB>& bases,
                  const std::array<Prefix, NP>& prefixes, bool allow_zero, std::string_view hint) {
  const Quantity q = split_quantity(text, hint);
  if (q.number.negative && !is_zero(q.number)) fail("must not be negative", hint);
  if (q.unit.empty()) fail("missing unit", hint);
  const auto factor = unit_factor(q.unit, bases, prefixes);
  if (!factor) fail("unknown unit '" + std::string(q.unit) + "'", hint);
  if (is_zero(q.number)) {
    if (!allow_zero) fail("must be positive", hint);
    return 0.0;
  }
  const double value = to_double(q.number, hint) * *factor;
  if (!std::isfinite(value)) fail("too large", hint);
  if (value == 0.0) fail("too small to represent", hint);
  return value;
}

constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();

// value = digits x 10^power, exactly, with digits' trailing zeros folded into power.
struct ExactDecimal {
  u128 digits = 0;
  int64_t power = 0;
};

ExactDecimal exact_decimal(const NumberToken& number, std::string_view hint) {
  std::string all(number.int_digits);
  all += number.frac_digits;
  int64_t power = number.exponent - static_cast<int64_t>(number.frac_digits.size());
  const size_t first = all.find_first_not_of('0');
  const size_t last = all.find_last_not_of('0');
  power += static_cast<int64_t>(all.size() - 1 - last);
  const std::string_view significant = std::string_view(all).substr(first, last - first + 1);
  if (significant.size() > 38) fail("too many significant digits", hint);   // u128 holds 38
  ExactDecimal result;
  for (char c : significant) result.digits = result.digits * 10 + static_cast<unsigned>(c - '0');
  result.power = power;
  return result;
}

uint64_t exact_bytes(const NumberToken& number, uint64_t prefix, std::string_view hint) {
  const ExactDecimal decimal = exact_decimal(number, hint);
  u128 value = 0;
  if (__builtin_mul_overflow(decimal.digits, static_cast<u128>(prefix), &value))
    fail("does not fit in 64 bits", hint);
  if (decimal.power < 0) {
    // value < 2^128 < 10^39 and not zero, so dividing by 10^39 or more cannot leave a whole number.
    if (-decimal.power > 38) fail("not a whole number of bytes", hint);
    u128 divisor = 1;
    for (int64_t i = 0; i < -decimal.power; ++i) divisor *= 10;
    if (value % divisor != 0) fail("not a whole number of bytes", hint);
    value /= divisor;
  }
  for (int64_t i = 0; i < decimal.power; ++i) {
    value *= 10;
    if (value > kU64Max) fail("does not fit in 64 bits", hint);
  }
  if (value > kU64Max) fail("does not fit in 64 bits", hint);
  return static_cast<uint64_t>(value);
}

constexpr std::array kBandwidthUnits = {
    BaseUnit{"B/s", 1}, BaseUnit{"Bps", 1}, BaseUnit{"b/s", 0.125}, BaseUnit{"bps", 0.125}};
constexpr std::array kTimeUnits = {BaseUnit{"s", 1}};
constexpr std::array kByteUnits = {BaseUnit{"B", 1}};
constexpr std::array kFlopsUnits = {BaseUnit{"FLOP/s", 1}, BaseUnit{"FLOPS", 1},
                                    BaseUnit{"OP/s", 1}, BaseUnit{"OPS", 1}};

// ---- arrays and shardings ----

struct Dtype {
  std::string_view name;
  int bits;
};

constexpr std::array kDtypes = {
    Dtype{"f32", 32},  Dtype{"fp32", 32},  Dtype{"float32", 32},  Dtype{"int32", 32},
    Dtype{"s32", 32},  Dtype{"bf16", 16},  Dtype{"bfloat16", 16}, Dtype{"f16", 16},
    Dtype{"fp16", 16}, Dtype{"float16", 16}, Dtype{"int8", 8},     Dtype{"s8", 8},
    Dtype{"fp8", 8},   Dtype{"int4", 4},   Dtype{"s4", 4},
};

constexpr std::string_view kArrayHint =
    "expected an array type such as \"bf16[2048,8192]\": a dtype (f32, fp32, float32, int32, s32, "
    "bf16, bfloat16, f16, fp16, float16, int8, s8, fp8, int4, s4) and positive dimensions";

uint64_t parse_dimension(std::string_view text) {
  text = trim(text);
  if (text.empty()) fail("empty dimension", kArrayHint);
  uint64_t value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc::result_out_of_range) fail("dimension does not fit in 64 bits", kArrayHint);
  if (ec != std::errc() || ptr != text.data() + text.size())
    fail("dimension '" + std::string(text) + "' is not a whole number", kArrayHint);
  if (value == 0) fail("dimension 0", kArrayHint);
  return value;
}

std::vector<std::string_view> split_commas(std::string_view text) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    parts.push_back(text.substr(start, comma == std::string_view::npos ? comma : comma - start));
    if (comma == std::string_view::npos) return parts;
    start = comma + 1;
  }
}

uint64_t bytes_of(uint64_t elements, int bits) {
  if (bits < 8) {
    const uint64_t per_byte = 8 / static_cast<uint64_t>(bits);
    return elements / per_byte + (elements % per_byte != 0 ? 1 : 0);
  }
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(elements, static_cast<uint64_t>(bits / 8), &bytes))
    fail("size in bytes does not fit in 64 bits", kArrayHint);
  return bytes;
}

constexpr std::string_view kShardingHint =
    "expected a sharding such as \"[E_Y, F]\", \"[B_XY, D]\" or \"[B_X, D_Y]{U_Z}\": one entry per "
    "array dimension, a name optionally followed by '_' and single-letter mesh axis names, then "
    "optionally {U_...} naming unreduced axes; each axis at most once";

// "XY" -> {"X", "Y"}.
std::vector<std::string> axis_letters(std::string_view subscript, std::string_view entry) {
  if (subscript.empty()) fail("no axis after '_' in '" + std::string(entry) + "'", kShardingHint);
  std::vector<std::string> axes;
  for (char c : subscript) {
    if (!is_letter(c))
      fail("'" + std::string(1, c) + "' in '" + std::string(entry) + "' is not an axis letter",
           kShardingHint);
    axes.emplace_back(1, c);
  }
  return axes;
}

void parse_sharding_dimension(std::string_view entry, Sharding& out) {
  entry = trim(entry);
  const size_t underscore = entry.find('_');
  const std::string_view name = entry.substr(0, underscore);
  if (name.empty() || !std::all_of(name.begin(), name.end(), [](char c) { return is_letter(c) || is_digit(c); }))
    fail("dimension entry '" + std::string(entry) + "' needs a name of letters and digits",
         kShardingHint);
  out.dim_names.emplace_back(name);
  out.dim_axes.push_back(underscore == std::string_view::npos
                             ? std::vector<std::string>{}
                             : axis_letters(entry.substr(underscore + 1), entry));
}

void parse_unreduced(std::string_view text, Sharding& out) {
  text = trim(text);
  if (text.empty()) return;
  if (text.front() != '{' || text.back() != '}')
    fail("unexpected text '" + std::string(text) + "' after ']'", kShardingHint);
  const std::string_view inner = trim(text.substr(1, text.size() - 2));
  if (!inner.starts_with("U_"))
    fail("'{" + std::string(inner) + "}' must be {U_<axes>}", kShardingHint);
  out.unreduced = axis_letters(inner.substr(2), inner);
}

void check_axes_unique(const Sharding& sharding) {
  std::vector<std::string> seen = sharding.sharded_axes();
  seen.insert(seen.end(), sharding.unreduced.begin(), sharding.unreduced.end());
  for (size_t i = 0; i < seen.size(); ++i)
    if (std::find(seen.begin(), seen.begin() + static_cast<std::ptrdiff_t>(i), seen[i]) !=
        seen.begin() + static_cast<std::ptrdiff_t>(i))
      fail("axis '" + seen[i] + "' is used twice (an axis can split or be unreduced on one "
           "dimension only)",
           kShardingHint);
}

}  // namespace

double parse_bandwidth_Bps(std::string_view text) {
  return parse_real(text, kBandwidthUnits, kLargePrefixes, false, kBandwidthHint);
}

double parse_time_s(std::string_view text) {
  // Minutes, hours and days (long limits: --max-time "48 h"), without SI prefixes ("1 mh" is
  // not a time): the number is read as seconds, then scaled.
  for (const auto& [unit, factor] : {std::pair<std::string_view, double>{"min", 60}, {"h", 3600}, {"d", 86400}}) {
    const size_t end = text.find_last_not_of(' ');
    if (end == std::string_view::npos || end + 1 < unit.size()) continue;
    const std::string_view number = text.substr(0, end + 1 - unit.size());
    if (text.substr(end + 1 - unit.size(), unit.size()) != unit || number.empty() ||
        !(number.back() == ' ' || std::isdigit(static_cast<unsigned char>(number.back())) || number.back() == '.'))
      continue;
    return factor * parse_real(std::string(number) + " s", kTimeUnits, kTimePrefixes, true, kTimeHint);
  }
  return parse_real(text, kTimeUnits, kTimePrefixes, true, kTimeHint);
}

double parse_rate_per_s(std::string_view text) {
  // vLLM's benchmark_serving --request-rate inf: every request arrives at time 0.
  std::string compact(trim(text));
  compact.erase(std::remove(compact.begin(), compact.end(), ' '), compact.end());
  if (compact == "inf/s") return std::numeric_limits<double>::infinity();
  const Quantity q = split_quantity(text, kRateHint);
  if (q.number.negative || is_zero(q.number)) fail("must be positive", kRateHint);
  std::string unit(q.unit);
  unit.erase(std::remove(unit.begin(), unit.end(), ' '), unit.end());
  double per = 0;
  if (unit == "/s") per = 1;
  else if (unit == "/min") per = 60;
  else if (unit == "/h") per = 3600;
  else fail(unit.empty() ? "missing unit" : "unknown unit '" + unit + "'", kRateHint);
  const double value = parse_real(std::string(q.number.literal) + " s", kTimeUnits, kTimePrefixes, false, kRateHint) / per;
  if (!std::isfinite(value) || value <= 0) fail("must be positive and finite", kRateHint);
  // Arrival times are sums of 1/rate gaps: at rates near double's smallest (the fuzzer's
  // 1e-320 /s) they were infinite. One request in 32 years is slow enough for any fleet.
  if (value < 1e-9) fail("is below 1e-9 /s (one request in 32 years)", kRateHint);
  return value;
}

double parse_flops_per_s(std::string_view text) {
  return parse_real(text, kFlopsUnits, kLargePrefixes, false, kFlopsHint);
}

uint64_t parse_bytes(std::string_view text) {
  const Quantity q = split_quantity(text, kBytesHint);
  // The form first: "0x10" is a 0 followed by a unit "x10", and "must be positive" would
  // blame its value rather than its form.
  if (q.number.literal == "0" && !q.unit.empty() && (q.unit.front() == 'x' || q.unit.front() == 'X'))
    fail("is not a decimal size (hexadecimal is not accepted)", kBytesHint);
  const Prefix* prefix = nullptr;
  if (!q.unit.empty() && !unit_factor(q.unit, kByteUnits, kLargePrefixes, &prefix))
    fail("is not a size: unknown unit '" + std::string(q.unit) + "'", kBytesHint);
  if (q.number.negative && !is_zero(q.number)) fail("must not be negative", kBytesHint);
  if (is_zero(q.number)) fail("must be positive", kBytesHint);
  return exact_bytes(q.number, prefix ? prefix->exact : 1, kBytesHint);
}

ArrayShape parse_array(std::string_view text) {
  text = trim(text);
  const size_t open = text.find('[');
  if (open == std::string_view::npos || text.back() != ']') fail("no [dimensions]", kArrayHint);
  ArrayShape shape;
  shape.dtype = std::string(trim(text.substr(0, open)));
  const auto dtype = std::find_if(kDtypes.begin(), kDtypes.end(),
                                  [&](const Dtype& d) { return d.name == shape.dtype; });
  if (dtype == kDtypes.end()) fail("unknown dtype '" + shape.dtype + "'", kArrayHint);
  shape.bits_per_element = dtype->bits;
  const std::string_view inside = text.substr(open + 1, text.size() - open - 2);
  if (trim(inside).empty()) fail("no dimensions", kArrayHint);
  shape.elements = 1;
  for (std::string_view part : split_commas(inside)) {
    shape.dims.push_back(parse_dimension(part));
    if (__builtin_mul_overflow(shape.elements, shape.dims.back(), &shape.elements))
      fail("element count does not fit in 64 bits", kArrayHint);
  }
  shape.bytes = bytes_of(shape.elements, shape.bits_per_element);
  return shape;
}

std::vector<std::string> Sharding::sharded_axes() const {
  std::vector<std::string> axes;
  for (const auto& dim : dim_axes) axes.insert(axes.end(), dim.begin(), dim.end());
  return axes;
}

Sharding parse_sharding(std::string_view text) {
  text = trim(text);
  const size_t close = text.find(']');
  if (text.empty() || text.front() != '[' || close == std::string_view::npos)
    fail("not of the form [...]", kShardingHint);
  const std::string_view inside = text.substr(1, close - 1);
  if (trim(inside).empty()) fail("no dimensions", kShardingHint);
  Sharding sharding;
  for (std::string_view entry : split_commas(inside)) parse_sharding_dimension(entry, sharding);
  parse_unreduced(text.substr(close + 1), sharding);
  check_axes_unique(sharding);
  return sharding;
}

void check_sharding_rank(const Sharding& sharding, const ArrayShape& array) {
  if (sharding.dim_axes.size() != array.dims.size())
    throw std::invalid_argument("the sharding has " + std::to_string(sharding.dim_axes.size()) +
                                " dimensions but the array has " + std::to_string(array.dims.size()) +
                                "; expected one sharding entry per array dimension");
}

namespace {

std::string scaled(double value, const char* const* units, int count, double step, const char* fmt) {
  int i = 0;
  while (i + 1 < count && std::fabs(value) >= step) {
    value /= step;
    ++i;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, value);
  return std::string(buf) + " " + units[i];
}

}  // namespace

std::string human_bytes(double bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  return scaled(bytes, units, 5, 1024.0, "%.4g");
}

std::string human_hbm(double hbm_bytes, double headroom) {
  if (!(headroom > 0)) return human_bytes(hbm_bytes) + " HBM";
  char percent[32];
  std::snprintf(percent, sizeof percent, "%.4g%%", 100 * headroom);
  return human_bytes(hbm_bytes) + " HBM less " + percent + " headroom";
}

std::string human_time(double seconds) {
  if (seconds == 0) return "0 s";
  // Past an hour, hours and days (a preflight estimate, a long serving run), still parseable.
  char buf[32];
  if (std::abs(seconds) >= 86400 * 10) {
    std::snprintf(buf, sizeof buf, "%.4g d", seconds / 86400);
    return buf;
  }
  if (std::abs(seconds) >= 3600 * 10) {
    std::snprintf(buf, sizeof buf, "%.4g h", seconds / 3600);
    return buf;
  }
  static const char* units[] = {"ns", "us", "ms", "s"};
  return scaled(seconds * 1e9, units, 4, 1000.0, "%.4g");
}

std::string human_bandwidth(double bytes_per_s) {
  static const char* units[] = {"B/s", "kB/s", "MB/s", "GB/s", "TB/s"};
  return scaled(bytes_per_s, units, 5, 1000.0, "%.4g");
}

std::string human_flops(double per_s, const char* unit) {
  static const char* prefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  std::string units[7];
  const char* names[7];
  for (int i = 0; i < 7; ++i) {
    units[i] = std::string(prefixes[i]) + unit;
    names[i] = units[i].c_str();
  }
  return scaled(per_s, names, 7, 1000.0, "%.4g");
}

std::string percentile_name(double percent) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "p%.10g", percent);
  return buf;
}

std::string number_text(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.12g", value);
  return buffer;
}

}  // namespace podsim
