#include "sim/commands/perf.hpp"

#include <numeric>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <regex>
#include <stdexcept>

#include "collectives/formulas.hpp"
#include "sim/commands/scenario_run.hpp"
#include "sim/report/csv_text.hpp"
#include "sim/scenario/units.hpp"

namespace podsim {
namespace {

struct PerfType {
  const char* name;     // as the table prints it
  int bits;
};

// nccl-tests' type names (src/common.cu test_typenames), then podsim's array dtypes under the
// nccl-tests name of the same type; int4 has none and keeps its own.
constexpr std::array<std::pair<const char*, PerfType>, 27> kTypes = {{
    {"int8", {"int8", 8}},         {"uint8", {"uint8", 8}},       {"int32", {"int32", 32}},
    {"uint32", {"uint32", 32}},    {"int64", {"int64", 64}},      {"uint64", {"uint64", 64}},
    {"half", {"half", 16}},        {"float", {"float", 32}},      {"double", {"double", 64}},
    {"bfloat16", {"bfloat16", 16}}, {"f8e4m3", {"f8e4m3", 8}},    {"f8e5m2", {"f8e5m2", 8}},
    {"f32", {"float", 32}},        {"fp32", {"float", 32}},       {"float32", {"float", 32}},
    {"s32", {"int32", 32}},        {"bf16", {"bfloat16", 16}},    {"f16", {"half", 16}},
    {"fp16", {"half", 16}},        {"float16", {"half", 16}},     {"s8", {"int8", 8}},
    {"fp8", {"f8e4m3", 8}},        {"int4", {"int4", 4}},         {"s4", {"int4", 4}},
    {"f64", {"double", 64}},       {"fp64", {"double", 64}},      {"float64", {"double", 64}},
}};

const PerfType* find_type(const std::string& name) {
  for (const auto& [key, type] : kTypes) {
    if (name == key) return &type;
  }
  return nullptr;
}

std::string format(const char* pattern, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, pattern, value);
  return buf;
}

// nccl-tests' getFloatStr (src/util.cu): the value in `width` characters, with two decimals
// when they fit, then one, then none, then in e-notation.
std::string nccl_float(double value, int width) {
  char buf[64];
  for (const char* pattern : {"%*.2f", "%*.1f", "%*.0f"}) {
    if (std::snprintf(buf, sizeof buf, pattern, width, value) <= width) return buf;
  }
  std::snprintf(buf, sizeof buf, width >= 7 ? "%*.1e" : "%*.0e", width, value);
  return buf;
}

std::string axes_label(const Scenario& scenario, const CollectiveSpec& spec) {
  std::string out;
  for (int a : spec.axes) out += (out.empty() ? "" : ",") + scenario.topology.axes[a].name;
  if (spec.over_dcn) out += out.empty() ? "DCN" : ",DCN";
  return out;
}

}  // namespace

uint64_t parse_perf_size(const std::string& flag, const std::string& text) {
  const SourceLocation where{flag, 0, 0};
  // nccl-tests' form: a number and at most one of K, M, G (binary: src/common.cu parsesize).
  static const std::regex nccl_form(R"(\s*([0-9]+)(?:\.([0-9]*))?\s*([KkMmGg])\s*)");
  std::smatch m;
  if (std::regex_match(text, m, nccl_form)) {
    const char unit = static_cast<char>(std::toupper(static_cast<unsigned char>(m[3].str()[0])));
    const unsigned __int128 scale = unit == 'K' ? 1ull << 10 : unit == 'M' ? 1ull << 20 : 1ull << 30;
    const std::string digits = m[1].str() + m[2].str();
    const size_t decimals = m[2].length();
    if (digits.size() > 30) throw InputError(where, "", text, "too large; expected at most 16 EiB");
    unsigned __int128 mantissa = 0, ten_power = 1;
    for (char c : digits) mantissa = mantissa * 10 + static_cast<unsigned>(c - '0');
    for (size_t i = 0; i < decimals; ++i) ten_power *= 10;
    const unsigned __int128 scaled = mantissa * scale;
    if (scaled % ten_power != 0) throw InputError(where, "", text, "not a whole number of bytes");
    const unsigned __int128 bytes = scaled / ten_power;
    if (bytes == 0) throw InputError(where, "", text, "must be positive (a collective of 0 bytes has nothing to simulate)");
    if (bytes > UINT64_MAX) throw InputError(where, "", text, "too large; expected at most 16 EiB");
    return static_cast<uint64_t>(bytes);
  }
  try {
    return parse_bytes(text);
  } catch (const std::invalid_argument& e) {
    throw InputError(where, "", text,
                     std::string(e.what()) + "; or nccl-tests' form: 8, 1K, 128M, 1G (K, M, G binary)");
  }
}

PerfSizes perf_sizes(const PerfSizeFlags& flags) {
  const uint64_t begin = parse_perf_size("-b", flags.begin);
  const uint64_t end = parse_perf_size("-e", flags.end);
  if (begin > end) {
    throw InputError({"-b", 0, 0}, "", flags.begin,
                     human_bytes(double(begin)) + " is more than -e " + flags.end + " (" + human_bytes(double(end)) +
                         "); expected -b <= -e");
  }
  uint64_t factor = 0;
  if (!flags.factor.empty()) {
    const auto f = parse_whole_number<uint64_t>(flags.factor);
    if (!f) throw InputError({"-f", 0, 0}, "", flags.factor, "expected a whole multiplication factor, 2 or more");
    if (!flags.increment.empty()) {
      throw InputError({"-f", 0, 0}, "", flags.factor,
                       "given with -i " + flags.increment + "; expected -f (multiply) or -i (add), not both");
    }
    if (*f < 2) {
      throw InputError({"-f", 0, 0}, "", flags.factor,
                       "expected a multiplication factor of 2 or more (nccl-tests falls back to steps of -i, 1M "
                       "by default, below 2: give -i for fixed steps)");
    }
    factor = *f;
  }
  const uint64_t increment = factor > 0 ? 0 : parse_perf_size("-i", flags.increment.empty() ? "1M" : flags.increment);
  PerfSizes out;
  out.begin_bytes = begin;
  out.end_bytes = end;
  out.step = factor > 0 ? std::to_string(factor) + "(factor)" : std::to_string(increment) + "(bytes)";
  for (uint64_t size = begin; size <= end;) {
    if (out.sizes_bytes.size() == kMaxPerfSizes) {
      const std::string flag = factor > 0 ? "-f" : "-i";
      throw InputError({flag, 0, 0}, "", factor > 0 ? flags.factor : flags.increment.empty() ? "1M" : flags.increment,
                       "more than " + std::to_string(kMaxPerfSizes) + " sizes from -b " + flags.begin + " to -e " +
                           flags.end + "; expected a larger step or a narrower range");
    }
    out.sizes_bytes.push_back(size);
    // The next size, stopping before it would overflow (it would be past -e anyway).
    if (factor > 0) {
      if (size > end / factor) break;
      size *= factor;
    } else {
      if (size > end - increment) break;
      size += increment;
    }
  }
  return out;
}

// One operation's row header: its group, element type (nccl-tests' float unless -d or the
// operation's array says), reduction, and the unit every size is rounded down to.
PerfOperation perf_operation(const Scenario& scenario, const Topology& topology, const OperationSpec& op,
                             const PerfType* forced, const PerfSizes& sizes, const PerfOptions& options) {
  PerfOperation p;
  p.name = op.name;
  p.kind = op.collective.kind;
  p.axes = axes_label(scenario, op.collective);
  p.group_size = collective_group_size(topology, op.collective);
  // Without -d, the type the operation's array names, else nccl-tests' default, float.
  const PerfType* type = forced ? forced : find_type(op.array.empty() ? "float" : parse_array(op.array).dtype);
  p.type = type->name;
  p.element_bits = type->bits;
  p.redop = p.kind == CollectiveKind::AllReduce || p.kind == CollectiveKind::ReduceScatter ? "sum" : "none";
  // As nccl-tests does, a size is rounded down to whole elements on every rank (nccl-tests
  // also aligns each share to 16 bytes; podsim needs only whole elements), so `-b 8 -e 128M
  // -f 2` gives a table on any group; the size column is the size simulated. Sizes that
  // round to nothing are left out, and the table says so.
  const uint64_t shares = p.kind == CollectiveKind::AllReduce ? 1 : static_cast<uint64_t>(p.group_size);
  const uint64_t unit_bits = std::lcm(shares * static_cast<uint64_t>(p.element_bits), uint64_t{8});
  p.unit_bytes = unit_bits / 8;
  // Every size rounding to nothing would print an empty table and "simulated 0 chips".
  if (sizes.end_bytes < p.unit_bytes) {
    throw InputError({"-e", 0, 0}, "", options.sizes.end,
                     "every size from -b " + options.sizes.begin + " to -e " + options.sizes.end +
                         " rounds to nothing: operation '" + p.name + "' moves whole " + p.type +
                         " elements on each rank, " + std::to_string(p.unit_bytes) + " bytes at least; expected -e of at least " +
                         std::to_string(p.unit_bytes) + " bytes, or a smaller -d type");
  }
  return p;
}

// One size of one operation, simulated alone.
PerfRow perf_row(const Scenario& scenario, const OperationSpec& spec, PerfOperation& p, uint64_t size,
                 const RunOptions& run_options) {
  // The operation alone, once: a simulation is deterministic, so nccl-tests' iterations
  // and warm-up would repeat the same time.
  Scenario point = scenario;
  OperationSpec op = spec;
  op.collective.bytes = bytes_for_nccl_size(p.kind, double(size), p.group_size);
  op.repeat = 1;
  op.after.clear();
  point.collectives().operations = {op};
  point.expectations.clear();
  const RunResult run = run_scenario(point, run_options);
  const OperationResult& r = run.operations.at(0);
  if (p.simulated_chips == 0) {
    p.fidelity = run.fidelity;
    p.simulated_chips = run.simulated.chip_count();
  }
  PerfRow row;
  row.size_bytes = size;
  row.count = static_cast<uint64_t>(nccl_count_elements(p.kind, double(size), p.element_bits, p.group_size));
  row.time_s = r.time_s;
  row.algbw_Bps = r.collective().algbw_Bps;
  row.busbw_Bps = r.collective().busbw_Bps;
  row.analytic_s = r.analytic() ? r.analytic()->time_s : 0;
  return row;
}

PerfResult run_perf(const Scenario& scenario, const PerfOptions& options) {
  if (scenario.kind() != WorkloadKind::Collectives) {
    throw InputError({scenario.path, 0, 0}, "workload.kind", workload_kind_name(scenario.kind()),
                     "podsim perf sweeps the sizes of collectives; expected a collectives workload (kind: collectives)");
  }
  const PerfSizes sizes = perf_sizes(options.sizes);
  const PerfType* forced = nullptr;
  if (!options.datatype.empty()) {
    forced = find_type(options.datatype);
    if (!forced) {
      throw InputError({"-d", 0, 0}, "", options.datatype,
                       "expected a type: nccl-tests' int8, uint8, int32, uint32, int64, uint64, half, float, double, "
                       "bfloat16, f8e4m3, f8e5m2, or podsim's bf16, f16, f32, fp8, s8, s32, int4");
    }
  }
  PerfResult result;
  result.scenario_name = scenario.name;
  result.scenario_path = scenario.path;
  result.chip = scenario.topology.chip.name;
  result.hop_model = std::string(to_string(scenario.hop_model));
  result.chips = scenario.topology.chips_per_slice() * scenario.topology.slices;
  result.min_bytes = sizes.begin_bytes;
  result.max_bytes = sizes.end_bytes;
  result.step = sizes.step;

  // Every operation and size is checked before the first simulation: a bad flag fails at once.
  const Topology topology(scenario.topology);
  const std::vector<OperationSpec>& operations = scenario.collectives().operations;
  for (const auto& op : operations) result.operations.push_back(perf_operation(scenario, topology, op, forced, sizes, options));

  RunOptions run_options;
  run_options.fidelity = options.fidelity;
  const int total = static_cast<int>(operations.size() * sizes.sizes_bytes.size());
  int finished = 0;
  const auto start = std::chrono::steady_clock::now();
  if (options.on_progress) options.on_progress(0, total, -1);
  for (size_t i = 0; i < operations.size(); ++i) {
    PerfOperation& p = result.operations[i];
    double busbw_sum = 0;
    for (uint64_t requested : sizes.sizes_bytes) {
      const uint64_t size = requested / p.unit_bytes * p.unit_bytes;
      if (size == 0) {
        ++p.below_unit;
        ++finished;
        continue;
      }
      const PerfRow row = perf_row(scenario, operations[i], p, size, run_options);
      busbw_sum += row.busbw_Bps;
      p.rows.push_back(row);
      ++finished;
      if (options.on_progress) {
        const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        options.on_progress(finished, total, elapsed / finished * (total - finished));
      }
    }
    p.avg_busbw_Bps = p.rows.empty() ? 0.0 : busbw_sum / static_cast<double>(p.rows.size());
  }
  return result;
}

std::string perf_table(const PerfResult& result) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "# podsim perf: %s (%s): %d chips (%s), hop model %s\n", result.scenario_name.c_str(),
                result.scenario_path.c_str(), result.chips, result.chip.c_str(), result.hop_model.c_str());
  out += line;
  // nccl-tests' own header line carries these three (src/util.cu).
  std::snprintf(line, sizeof line, "# minBytes %llu maxBytes %llu step: %s; one simulation per size (no iterations: "
                "a simulation repeats exactly)\n", static_cast<unsigned long long>(result.min_bytes),
                static_cast<unsigned long long>(result.max_bytes), result.step.c_str());
  out += line;
  for (const auto& op : result.operations) {
    out += "#\n";
    std::snprintf(line, sizeof line, "# %s: %s over %s, %d ranks, simulated %d chips (%s)\n", op.name.c_str(),
                  std::string(to_string(op.kind)).c_str(), op.axes.c_str(), op.group_size, op.simulated_chips,
                  op.fidelity.c_str());
    out += line;
    if (op.unit_bytes > 1) {
      std::snprintf(line, sizeof line, "# sizes rounded down to a multiple of %llu B (whole %s elements on every rank)%s\n",
                    static_cast<unsigned long long>(op.unit_bytes), op.type.c_str(),
                    op.below_unit > 0 ? (", " + std::to_string(op.below_unit) + " size(s) below that left out").c_str() : "");
      out += line;
    }
    out += "#\n";
    // nccl-tests prints an out-of-place and an in-place set; a simulation has one time for both.
    std::snprintf(line, sizeof line, "# %10s  %12s  %8s  %6s  %6s           simulated\n", "", "", "", "", "");
    out += line;
    std::snprintf(line, sizeof line, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s\n", "size", "count", "type",
                  "redop", "root", "time", "algbw", "busbw", "#wrong");
    out += line;
    std::snprintf(line, sizeof line, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s\n", "(B)", "(elements)", "", "", "",
                  "(us)", "(GB/s)", "(GB/s)");
    out += line;
    for (const auto& r : op.rows) {
      // #wrong is N/A as in nccl-tests without data checks (-c 0): no data is simulated.
      std::snprintf(line, sizeof line, "%12llu  %12llu  %8s  %6s  %6i  %7s  %6s  %6s    N/A\n",
                    static_cast<unsigned long long>(r.size_bytes), static_cast<unsigned long long>(r.count),
                    op.type.c_str(), op.redop.c_str(), -1, nccl_float(r.time_s * 1e6, 7).c_str(),
                    nccl_float(r.algbw_Bps / 1e9, 6).c_str(), nccl_float(r.busbw_Bps / 1e9, 6).c_str());
      out += line;
    }
    std::snprintf(line, sizeof line, "# %-20s : %g\n", "Avg bus bandwidth", op.avg_busbw_Bps / 1e9);
    out += line;
  }
  out += "#\n";
  return out;
}

std::string perf_csv(const PerfResult& result) {
  std::string out =
      "operation,kind,axes,group_size,size_bytes,count,type,redop,root,time_s,algbw_Bps,busbw_Bps,analytic_s\n";
  for (const auto& op : result.operations) {
    for (const auto& r : op.rows) {
      out += csv_field(op.name) + "," + std::string(to_string(op.kind)) + "," + csv_field(op.axes) + "," +
             std::to_string(op.group_size) + "," + std::to_string(r.size_bytes) + "," + std::to_string(r.count) + "," +
             op.type + "," + op.redop + ",-1," + format("%.17g", r.time_s) + "," + format("%.17g", r.algbw_Bps) + "," +
             format("%.17g", r.busbw_Bps) + "," + (r.analytic_s > 0 ? format("%.17g", r.analytic_s) : "") + "\n";
    }
  }
  return out;
}

}  // namespace podsim
