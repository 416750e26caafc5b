// Seeded mutation fuzzing of the three readers of user files: the scenario loader
// (load_scenario_text, with and without --set overrides), the request-trace parser
// (parse_request_trace, its prefix columns too) and the expert-load parser (parse_expert_loads). The promise under test (design.md, habit 3): whatever the bytes, a
// reader returns a value or throws podsim::InputError (a located message, exit status 2) — never
// another exception, a crash, a sanitizer report or a hang — and what it returns is in range.
//
//   podsim_fuzz scenario|trace|loads --corpus DIR... [--seconds S] [--cases N] [--seed N]
//                              [--case I] [--out DIR] [--dump-accepted DIR]
//
// Environment: PODSIM_FUZZ_SECONDS (default 3), PODSIM_FUZZ_SEED, PODSIM_FUZZ_CASE (replay one
// case: the same seed and index give the same input on every machine), PODSIM_FUZZ_CASE_LIMIT
// (seconds one input may take, default 30: a hang).
//
// Plain C++ rather than libFuzzer: no coverage guidance, but no compiler dependency, and a
// failure is reproduced from (seed, case) alone. Every corpus file runs first, unmutated, so
// minimised inputs kept in tests/fuzz/corpus/ stay regression tests. Case i mutates one corpus
// entry 1-6 times with its own random stream (seeded_rng.hpp). A failing input is written to
// --out (default: the working directory) as fuzz-failure-<target>.<ext>, with the seed and case
// printed; a crash or sanitizer report writes it from a signal handler or the sanitizer's death
// callback, a hang from a watchdog thread.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <climits>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <typeinfo>
#include <vector>

#include "seeded_rng.hpp"
#include "sim/scenario/expert_loads.hpp"
#include "sim/scenario/input_error.hpp"
#include "sim/scenario/link_bounds.hpp"
#include "sim/scenario/request_trace.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/scenario/schema_keys.hpp"
#include "topology/topology.hpp"
#include "workloads/inference.hpp"
#include "workloads/model_spec.hpp"
#include "workloads/serving.hpp"

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(undefined_behavior_sanitizer)
#define PODSIM_FUZZ_SANITIZED 1
#include <sanitizer/common_interface_defs.h>
#endif
#endif

namespace fs = std::filesystem;
using podsim::InputError;
using podsim_test::Rng;

namespace {

// ---- what a failure leaves behind (read from signal handlers: plain globals, set up front) ----

const std::string* g_input = nullptr;   // the input under test; stable while it runs
char g_failure_path[4096] = {};
char g_target[16] = {};
std::atomic<uint64_t> g_seed{0};
std::atomic<int64_t> g_case{-1};        // -1: an unmutated corpus file (named in g_corpus_name)
char g_corpus_name[1024] = {};
std::atomic<int64_t> g_case_started_ms{0};

void write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n <= 0) return;
    data += n;
    size -= static_cast<size_t>(n);
  }
}

void write_str(int fd, const char* text) { write_all(fd, text, std::strlen(text)); }

void write_number(int fd, uint64_t value) {
  char digits[24];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value > 0);
  char out[24];
  for (int i = 0; i < n; ++i) out[i] = digits[n - 1 - i];
  write_all(fd, out, static_cast<size_t>(n));
}

// Async-signal-safe: open, write, close.
void save_input_and_say(const char* why) {
  if (g_input != nullptr) {
    const int fd = ::open(g_failure_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      write_all(fd, g_input->data(), g_input->size());
      ::close(fd);
    }
  }
  write_str(2, "\npodsim_fuzz ");
  write_str(2, g_target);
  write_str(2, ": ");
  write_str(2, why);
  if (g_case.load() < 0) {
    write_str(2, " on corpus file ");
    write_str(2, g_corpus_name);
  } else {
    write_str(2, " on seed ");
    write_number(2, g_seed.load());
    write_str(2, " case ");
    write_number(2, static_cast<uint64_t>(g_case.load()));
    write_str(2, " (replay: PODSIM_FUZZ_SEED=");
    write_number(2, g_seed.load());
    write_str(2, " PODSIM_FUZZ_CASE=");
    write_number(2, static_cast<uint64_t>(g_case.load()));
    write_str(2, ")");
  }
  write_str(2, "\nthe input is in ");
  write_str(2, g_failure_path);
  write_str(2, "\n");
}

void on_fatal_signal(int signal_number) {
  save_input_and_say(signal_number == SIGABRT ? "abort" : "crash (fatal signal)");
  ::signal(signal_number, SIG_DFL);
  ::raise(signal_number);
}

#ifdef PODSIM_FUZZ_SANITIZED
void on_sanitizer_death() { save_input_and_say("sanitizer report (above)"); }
#endif

void install_failure_handlers() {
#ifdef PODSIM_FUZZ_SANITIZED
  // The sanitizers own SIGSEGV and friends; they call this after their report.
  __sanitizer_set_death_callback(on_sanitizer_death);
  for (int s : {SIGABRT}) ::signal(s, on_fatal_signal);
#else
  for (int s : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) ::signal(s, on_fatal_signal);
#endif
}

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// A hang is an input that takes longer than `limit_s`: say so, leave the input, stop.
void start_watchdog(double limit_s) {
  std::thread([limit_s] {
    while (true) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      const int64_t started = g_case_started_ms.load();
      if (started > 0 && now_ms() - started > static_cast<int64_t>(limit_s * 1000)) {
        save_input_and_say("hang (an input took longer than PODSIM_FUZZ_CASE_LIMIT)");
        std::_Exit(3);
      }
    }
  }).detach();
}

// ---- mutations ----

std::string pick(Rng& rng, const std::vector<std::string>& items) {
  return items[static_cast<size_t>(rng.below(static_cast<int>(items.size())))];
}

size_t position(Rng& rng, const std::string& text) {
  return text.empty() ? 0 : static_cast<size_t>(rng.next() % (text.size() + 1));
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::string line;
  std::istringstream in(text);
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& line : lines) text += line + "\n";
  return text;
}

// Values at the edges of what a reader takes: numbers past every range, non-numbers, special
// YAML scalars and collections, units at their limits, names of axes and keywords.
const std::vector<std::string> kExtremes = {
    "1e308", "-1e308", "1e309", "1e298", "1e-300", "-1", "0", "-0", "0.0", "nan", ".nan", "inf", ".inf", "-.inf", "1e-320", "5e-324",
    "2147483647", "2147483648", "-2147483649", "4294967296", "9223372036854775807", "9223372036854775808",
    "18446744073709551615", "18446744073709551616", "1e19", "1e30", "0.5", "1", "2", "3", "7", "4096", "4097",
    "1000000", "1000001", "10000000", "10000001", "1073741824", "1073741825", "9007199254740993", "0x10", "0o17",
    "+5", "1_000", "\"\"", "''", "~", "null", "true", "false", "yes", "no", "on", "[]", "{}", "[1, 2]", "[0, 0, 0]",
    "[[0, 0]]", "{a: 1}", "\"1e400 GB/s\"", "\"0 us\"", "\"-1 us\"", "\"1e-300 B/s\"", "\"1e300 TB/s\"",
    "\"1e15 B/s\"", "\"1e3 B/s\"", "\"999 B/s\"", "\"1 PB/s\"", "\"1.0000001 PB/s\"", "\"inf /s\"", "\"0 /s\"",
    "\"1e-320 /s\"", "\"1e308 /h\"", "\"1e-300 /min\"", "\"9 PiB\"", "\"1 PiB\"", "\"1 MiB\"", "\"1048575 B\"",
    "\"18446744073709551615 B\"", "\"18446744073709551616 B\"", "\"1.5 B\"", "\"1e-30 TB\"", "\"1e18 FLOP/s\"",
    "\"1e19 FLOP/s\"", "\"1e6 OP/s\"", "\"1 s\"", "\"1.000001 s\"", "\"1e-15 s\"", "\"1e400 s\"", "\"1 µs\"",
    "\"bf16[0]\"", "\"bf16[18446744073709551615,2]\"", "\"int4[1]\"", "\"int4[3,3]\"", "\"f32[4294967296,4294967296]\"",
    "\"[E_Y, F]{U_Z}\"", "\"[B_XYZ]\"", "\"[B_XX, F]\"", "\"[A,B,C,D,E]\"", "\"[E_Y, F]{U_Y}\"", "X", "Y", "Z", "W",
    "all", "slices", "+X", "-Z", "both", "\"0-99999\"", "\"3-1\"", "\"-1-2\"", "1f1b", "gpipe", "book", "auto",
    "decode", "prefill", "static", "interleaved", "continuous", "disaggregated", "hierarchical", "flat_ring",
    "all_to_all", "additive", "v5p", "v5e", "v3", "llama3-405b", "llama2-7b", "\"4x4x4\"", "\"4096x4096x4096\"",
    "\"0x4\"", "\"1x1x1x1\"", "16", "/dev/zero", "/", "/nonexistent/trace.csv", "requests.csv", "\"\\x01\\u2028\"",
    "&a 1", "*a", "*undefined", "!!str 8", "!!int \"8\"", "!!binary aGVsbG8=", "!tag x", "|\n  block", ">-\n  folded",
};

// Keys of every mapping the loader reads: dropped in where another key was, they reach readers
// a byte-level mutation rarely would.
std::vector<std::string> schema_keys() {
  std::set<std::string> keys;
  for (const auto& table : podsim::key_tables()) keys.insert(table.keys.begin(), table.keys.end());
  return {keys.begin(), keys.end()};
}

// The value part of a `key: value` line (or a list item), if any: [begin, end).
bool value_span(const std::string& line, size_t& begin, size_t& end) {
  size_t colon = line.find(": ");
  if (colon == std::string::npos) {
    const size_t dash = line.find("- ");
    if (dash == std::string::npos) return false;
    colon = dash;
  }
  begin = colon + 2;
  end = line.size();
  const size_t comment = line.find(" #", begin);
  if (comment != std::string::npos) end = comment;
  return begin < end;
}

// A value in flow style ({a: 1, b: "x"}): the text after one ": " or ", " up to the next , } ].
bool flow_value_span(Rng& rng, const std::string& line, size_t& begin, size_t& end) {
  std::vector<size_t> starts;
  for (size_t at = line.find(": "); at != std::string::npos; at = line.find(": ", at + 1)) starts.push_back(at + 2);
  if (starts.empty()) return false;
  begin = starts[static_cast<size_t>(rng.below(static_cast<int>(starts.size())))];
  end = line.find_first_of(",}]", begin);
  if (end == std::string::npos) end = line.size();
  return begin < end;
}

std::string nested(Rng& rng) {
  const int depth = 1 + rng.below(rng.chance(0.5) ? 50 : 3000);
  std::string open, close;
  for (int i = 0; i < depth; ++i) {
    const bool map = rng.chance(0.5);
    open += map ? "{a: " : "[";
    close.insert(0, map ? "}" : "]");
  }
  return open + "1" + close;
}

// One scenario mutation. Byte-level ones find parser edges; line- and value-level ones keep
// the document mostly valid, so that the readers behind the YAML parser see the odd values.
void mutate_scenario(Rng& rng, std::string& text, const std::vector<std::string>& corpus,
                     const std::vector<std::string>& keys) {
  std::vector<std::string> lines = lines_of(text);
  const int kind = rng.below(20);
  if (lines.empty() && kind >= 4) return;
  const size_t l = lines.empty() ? 0 : static_cast<size_t>(rng.below(static_cast<int>(lines.size())));
  switch (kind) {
    case 0:   // flip a bit
      if (!text.empty()) text[position(rng, text) % text.size()] ^= static_cast<char>(1 << rng.below(8));
      return;
    case 1: {   // a structural byte
      std::string bytes = ":-[]{},&*!|>#'\"\t\n ?%@`\\\r\xff\x80";
      bytes += '\0';
      if (!text.empty()) text[position(rng, text) % text.size()] = bytes[static_cast<size_t>(rng.below(static_cast<int>(bytes.size())))];
      return;
    }
    case 2: {   // insert bytes
      std::string bytes;
      for (int i = 0, n = 1 + rng.below(8); i < n; ++i) bytes += static_cast<char>(rng.chance(0.7) ? 32 + rng.below(95) : rng.below(256));
      text.insert(position(rng, text), bytes);
      return;
    }
    case 3: {   // delete bytes, or cut the text short
      const size_t at = position(rng, text);
      text.erase(at, rng.chance(0.2) ? std::string::npos : static_cast<size_t>(1 + rng.below(16)));
      return;
    }
    case 4:   // duplicate a line, sometimes many times (long lists, repeated keys)
      lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(l), rng.chance(0.1) ? 1 + rng.below(2000) : 1, lines[l]);
      break;
    case 5:
      lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(l));
      break;
    case 6:
      std::swap(lines[l], lines[static_cast<size_t>(rng.below(static_cast<int>(lines.size())))]);
      break;
    case 7: case 8: case 9: case 10: {   // a value becomes an extreme one
      size_t begin = 0, end = 0;
      const bool flow = lines[l].find('{') != std::string::npos && rng.chance(0.6);
      if (flow ? flow_value_span(rng, lines[l], begin, end) : value_span(lines[l], begin, end))
        lines[l].replace(begin, end - begin, pick(rng, kExtremes));
      break;
    }
    case 11: {   // a value becomes one from elsewhere in the corpus (a valid value, out of place)
      const std::vector<std::string> other = lines_of(pick(rng, corpus));
      size_t b1 = 0, e1 = 0, b2 = 0, e2 = 0;
      if (!other.empty()) {
        const std::string& from = other[static_cast<size_t>(rng.below(static_cast<int>(other.size())))];
        if (value_span(lines[l], b1, e1) && value_span(from, b2, e2)) lines[l].replace(b1, e1 - b1, from.substr(b2, e2 - b2));
      }
      break;
    }
    case 12: {   // a key becomes another schema key
      const size_t colon = lines[l].find(':');
      const size_t start = lines[l].find_first_not_of(" -");
      if (colon != std::string::npos && start != std::string::npos && start < colon)
        lines[l].replace(start, colon - start, pick(rng, keys));
      break;
    }
    case 13: {   // deep nesting
      size_t begin = 0, end = 0;
      if (value_span(lines[l], begin, end)) lines[l].replace(begin, end - begin, nested(rng));
      else lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(l), "x: " + nested(rng));
      break;
    }
    case 14: {   // anchors and aliases: a value anchored and reused, or containing itself
      size_t begin = 0, end = 0, b2 = 0, e2 = 0;
      const size_t other = static_cast<size_t>(rng.below(static_cast<int>(lines.size())));
      if (!value_span(lines[l], begin, end)) break;
      if (rng.chance(0.3)) {
        lines[l].replace(begin, end - begin, "&r [*r, 1]");
      } else {
        lines[l].insert(begin, "&a ");
        if (value_span(lines[other], b2, e2)) lines[other].replace(b2, e2 - b2, "*a");
      }
      break;
    }
    case 15: {   // splice lines of another corpus entry
      const std::vector<std::string> other = lines_of(pick(rng, corpus));
      if (other.empty()) break;
      const size_t from = static_cast<size_t>(rng.below(static_cast<int>(other.size())));
      const size_t count = std::min(other.size() - from, static_cast<size_t>(1 + rng.below(8)));
      lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(l), other.begin() + static_cast<std::ptrdiff_t>(from),
                   other.begin() + static_cast<std::ptrdiff_t>(from + count));
      break;
    }
    case 16: {   // bytes that are not UTF-8, or control characters, inside a value
      const std::vector<std::string> odd = {"\xC0\x80", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xFF", "\x80", "\xE2\x82",
                                            "\x01", "\x1b[31m", "\xEF\xBB\xBF", "\xE2\x80\xA8", "\t"};
      lines[l].insert(static_cast<size_t>(rng.below(static_cast<int>(lines[l].size()) + 1)), pick(rng, odd));
      break;
    }
    case 17:   // indentation
      if (rng.chance(0.5)) lines[l].insert(0, rng.chance(0.8) ? std::string(1 + rng.below(4), ' ') : "\t");
      else lines[l].erase(0, std::min(lines[l].find_first_not_of(' '), static_cast<size_t>(1 + rng.below(4))));
      break;
    case 18: {   // a number changes: one more, one less, ten times, huge
      std::vector<size_t> digits;
      for (size_t i = 0; i < lines[l].size(); ++i)
        if (std::isdigit(static_cast<unsigned char>(lines[l][i])) && (i == 0 || !std::isdigit(static_cast<unsigned char>(lines[l][i - 1]))))
          digits.push_back(i);
      if (digits.empty()) break;
      const size_t begin = digits[static_cast<size_t>(rng.below(static_cast<int>(digits.size())))];
      size_t end = begin;
      while (end < lines[l].size() && std::isdigit(static_cast<unsigned char>(lines[l][end]))) ++end;
      const std::string number = lines[l].substr(begin, end - begin);
      const std::vector<std::string> changed = {number + "0", number + "000000", "0", "1", std::string(30, '9'),
                                                number.size() > 1 ? number.substr(1) : "2", number + ".5", number + "e9"};
      lines[l].replace(begin, end - begin, pick(rng, changed));
      break;
    }
    default: {   // a huge scalar
      size_t begin = 0, end = 0;
      if (value_span(lines[l], begin, end))
        lines[l].replace(begin, end - begin, std::string(static_cast<size_t>(1 + rng.below(200000)), rng.chance(0.5) ? 'x' : '9'));
      break;
    }
  }
  text = joined(lines);
}

const std::vector<std::string> kCsvCells = {
    "0", "-0", "-1", "1", "1.5", "1e308", "1e309", "1e-320", "nan", "inf", "-inf", "0x10", "", " ", " 7 ", "+1",
    "2147483647", "2147483648", "1073741824", "1073741825", "9223372036854775808", "1e9", "1_000", "\"3\"", "#",
    "\xFF", "\t", std::string(5000, '9')};

// A CSV file's mutations: cells become extreme ones or `names` (its columns and keywords), lines
// are repeated, swapped, cut or padded, and 1 in 3 times the scenario's byte-level mutations.
void mutate_csv(Rng& rng, std::string& text, const std::vector<std::string>& corpus,
                const std::vector<std::string>& names) {
  std::vector<std::string> cells = kCsvCells;
  cells.insert(cells.end(), names.begin(), names.end());
  std::vector<std::string> lines = lines_of(text);
  const int kind = rng.below(12);
  if (kind < 4 || lines.empty()) {
    std::string scenario_text = text;
    std::vector<std::string> keys = names;
    keys.push_back("x");
    mutate_scenario(rng, scenario_text, corpus, keys);
    text = scenario_text;
    return;
  }
  const size_t l = static_cast<size_t>(rng.below(static_cast<int>(lines.size())));
  switch (kind) {
    case 4: case 5: case 6: {   // a cell becomes an extreme one
      std::vector<size_t> starts = {0};
      for (size_t i = 0; i < lines[l].size(); ++i)
        if (lines[l][i] == ',') starts.push_back(i + 1);
      const size_t begin = starts[static_cast<size_t>(rng.below(static_cast<int>(starts.size())))];
      size_t end = lines[l].find(',', begin);
      if (end == std::string::npos) end = lines[l].size();
      lines[l].replace(begin, end - begin, pick(rng, cells));
      break;
    }
    case 7:
      lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(l), rng.chance(0.1) ? 1 + rng.below(100000) : 1, lines[l]);
      break;
    case 8:
      std::swap(lines[l], lines[static_cast<size_t>(rng.below(static_cast<int>(lines.size())))]);
      break;
    case 9: {   // a column more, or fewer
      if (rng.chance(0.5)) lines[l] += "," + pick(rng, cells);
      else if (const size_t comma = lines[l].rfind(','); comma != std::string::npos) lines[l].erase(comma);
      break;
    }
    case 10:
      lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(l), pick(rng, {"", "# comment", "\r", " \t ", ",,", ","}));
      break;
    default:
      lines[l] += "\r";
      break;
  }
  text = joined(lines);
}

// ---- checks of what loads ----

struct RangeError : std::exception {
  std::string message;
  explicit RangeError(std::string m) : message(std::move(m)) {}
  const char* what() const noexcept override { return message.c_str(); }
};

void require(bool ok, const std::string& what) {
  if (!ok) throw RangeError("loaded, but " + what);
}

bool positive_finite(double x) { return std::isfinite(x) && x > 0; }

void check_topology(const podsim::TopologySpec& spec, const char* which) {
  int64_t chips = spec.slices;
  for (const auto& axis : spec.axes) {
    require(axis.size >= 1 && axis.size <= 4096, std::string(which) + " has an axis of size " + std::to_string(axis.size));
    chips *= axis.size;
  }
  require(spec.slices >= 1 && chips <= 1'000'000, std::string(which) + " has " + std::to_string(chips) + " chips");
  const auto& chip = spec.chip;
  for (double rate : {chip.ici_bandwidth_Bps, chip.hbm_bandwidth_Bps, chip.hbm_bytes, chip.bf16_flops_per_s,
                      chip.int8_ops_per_s, chip.dcn_bandwidth_per_host_Bps, chip.pcie_bandwidth_Bps})
    require(positive_finite(rate), std::string(which) + "'s chip has a figure that is not positive and finite");
  require(std::isfinite(chip.hop_latency_s) && chip.hop_latency_s >= 0, "the hop latency is not finite and >= 0");
  require(std::isfinite(spec.dcn_oversubscription) && spec.dcn_oversubscription >= 1, "dcn_oversubscription < 1");
  for (const auto& p : spec.perturbations) {
    // A failed ICI link (bandwidth 0) is accepted only with a way round it (Topology::hop_route).
    const bool failed_link = p.kind == podsim::PerturbationKind::Links && p.bandwidth_scale == 0;
    require(positive_finite(p.compute_slowdown) && (failed_link || positive_finite(p.bandwidth_scale)),
            "a perturbation factor is not > 0 (nor a failed link's 0)");
    require(std::isfinite(p.extra_latency_s) && p.extra_latency_s >= 0, "a perturbation latency is not finite and >= 0");
  }
  // What the loader accepts, the topology must build (it throws std::invalid_argument, not
  // InputError, on what it cannot): cheap up to a few thousand chips.
  if (chips <= 4096) (void)podsim::Topology(spec);
}

void check_model(const podsim::TransformerSpec& model) {
  podsim::validate_transformer_spec(model);   // std::invalid_argument here is a finding
  require(positive_finite(podsim::param_count(model)), "the model's parameter count is not positive and finite");
}

void check_requests(const std::vector<podsim::Request>& requests, int max_tokens) {
  require(!requests.empty(), "no requests");
  double last = 0;
  for (const auto& r : requests) {
    require(std::isfinite(r.arrival_s) && r.arrival_s >= last, "arrivals are not finite and non-decreasing");
    require(r.prompt_tokens >= 1 && r.output_tokens >= 1, "a request has no tokens");
    require(static_cast<int64_t>(r.prompt_tokens) + r.output_tokens <= max_tokens, "a request is longer than the model's context");
    require(r.prefix_id >= -1 && r.prefix_tokens >= 0 && r.prefix_tokens <= r.prompt_tokens &&
                (r.prefix_id >= 0) == (r.prefix_tokens > 0),
            "a shared prefix without an id, or longer than its prompt");
    last = r.arrival_s;
  }
}

// An MoE model for an expert-load file: as many experts as its header has columns after `layer`
// and, most times, the layers its rows name (the highest plus one, the lowest the first MoE
// layer), so that mutants get past the header and the layer checks; otherwise drawn.
podsim::TransformerSpec loads_model(Rng& rng, const std::string& text) {
  int columns = 0, lowest = -1, highest = -1;
  bool header = true;
  for (const std::string& line : lines_of(text)) {
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    if (header) {
      columns = static_cast<int>(std::count(line.begin(), line.end(), ','));
      header = false;
      continue;
    }
    const int layer = std::atoi(line.c_str() + first);   // 0 for `*` and for junk: harmless here
    if (layer < 0 || layer >= 4096) continue;
    lowest = lowest < 0 ? layer : std::min(lowest, layer);
    highest = std::max(highest, layer);
  }
  podsim::TransformerSpec m;
  m.name = "fuzz-moe";
  m.d_model = m.d_ff = m.heads = m.kv_heads = m.head_dim = 1;
  m.max_sequence_length = 1;
  const bool named = highest >= 0 && rng.chance(0.7);
  m.layers = named ? highest + 1 : 1 + rng.below(8);
  const int dense = named ? lowest : rng.below(m.layers + 1);
  const int experts = rng.chance(0.9) && columns >= 1 && columns <= 4096 ? columns : 1 + rng.below(16);
  m.moe = podsim::MoeSpec{experts, 1 + rng.below(std::min(experts, 8)), 0, 1, dense};
  return m;
}

void check_loads(const std::vector<std::vector<double>>& rows, const podsim::TransformerSpec& m) {
  const size_t moe_layers = static_cast<size_t>(m.layers - m.moe->dense_layers);
  require(rows.size() == 1 || rows.size() == moe_layers, "not one row, nor one per MoE layer");
  for (const auto& row : rows) {
    require(row.size() == static_cast<size_t>(m.moe->experts), "a row of the wrong width");
    double sum = 0;
    int positive = 0;
    for (double x : row) {
      require(std::isfinite(x) && x >= 0, "a load that is not finite and >= 0");
      sum += x;
      positive += x > 0;
    }
    require(std::isfinite(sum), "loads whose sum is not finite");
    require(positive >= m.moe->experts_per_token, "fewer positive loads than experts per token");
  }
}

// What routing and expert parallelism the loader fills in: in range for the model and mesh.
void check_moe(const podsim::TransformerSpec& model, const podsim::MoeRouting& routing,
               const std::vector<int>& expert_axes, const podsim::TopologySpec& topology) {
  if (!model.moe) {
    require(expert_axes.empty(), "expert axes on a dense model");
    return;
  }
  int64_t ranks = 1;
  for (int axis : expert_axes) {
    require(axis >= 0 && axis < static_cast<int>(topology.axes.size()), "an expert axis outside the mesh");
    ranks *= topology.axes[static_cast<size_t>(axis)].size;
  }
  require(model.moe->experts % ranks == 0, "experts that do not divide over the expert axes");
  const podsim::RoutingSpec& spec = routing.spec;
  require(std::isfinite(spec.zipf_s) && spec.zipf_s >= 0, "zipf_s is not finite and >= 0");
  require(std::isfinite(spec.capacity_factor) && spec.capacity_factor >= 0 && spec.capacity_factor <= model.moe->experts,
          "capacity_factor is outside [0, experts]");
  if (spec.kind == podsim::RoutingKind::Weights) check_loads(routing.layer_weights, model);
}

// What SimGrid is given for a link: every product of the factors a scenario multiplies in
// stays within link_bounds.hpp (1e298 x a link aborted SimGrid, 1e-320 deadlocked it).
void check_derived_links(const podsim::Scenario& s) {
  const auto& chip = s.topology.chip;
  auto in_range = [](double bandwidth) {
    return bandwidth >= podsim::kMinLinkBandwidth_Bps && bandwidth <= podsim::kMaxLinkBandwidth_Bps;
  };
  for (double base : {chip.ici_bandwidth_Bps, chip.dcn_bandwidth_per_host_Bps})
    require(in_range(base * s.link_efficiency), "a link's bandwidth x link_efficiency is outside 1 kB/s..1 EB/s");
  for (const auto& p : s.topology.perturbations) {
    const double base = p.kind == podsim::PerturbationKind::Nics ? chip.dcn_bandwidth_per_host_Bps : chip.ici_bandwidth_Bps;
    // A failed link (0) is never given to SimGrid: no route crosses it (Topology::hop_route).
    const bool failed = p.kind == podsim::PerturbationKind::Links && p.bandwidth_scale == 0;
    if (p.kind != podsim::PerturbationKind::SlowChips && !failed)
      require(in_range(base * s.link_efficiency * p.bandwidth_scale), "a perturbed link's bandwidth is outside 1 kB/s..1 EB/s");
    require(p.extra_latency_s <= podsim::kMaxLinkLatency_s, "a perturbation's extra latency is over 1 s");
    require(p.compute_slowdown >= 1e-3 && p.compute_slowdown <= 1e6, "a compute slowdown is outside 0.001..1e6");
  }
  require(chip.hop_latency_s <= podsim::kMaxLinkLatency_s, "the hop latency is over 1 s");
}

void check_scenario(const podsim::Scenario& s) {
  check_topology(s.topology, "the topology");
  require(positive_finite(s.link_efficiency) && s.link_efficiency <= 1, "link_efficiency is outside (0, 1]");
  check_derived_links(s);
  require(std::isfinite(s.launch_overhead_s) && s.launch_overhead_s >= 0, "launch_overhead is not finite and >= 0");
  for (const auto& e : s.expectations) {
    require((std::isfinite(e.value) && e.value != 0) || e.field.ends_with("fits_hbm"), "an expectation's value is 0 or not finite");
    require(e.rel_tolerance > 0 && e.rel_tolerance < 1 && e.rel_tolerance_above > 0 && e.rel_tolerance_above < 1,
            "a tolerance is outside (0, 1)");
  }
  switch (s.kind()) {
    case podsim::WorkloadKind::Collectives:
      require(!s.collectives().operations.empty(), "no operations");
      for (const auto& op : s.collectives().operations) {
        require(positive_finite(op.collective.bytes), "an operation's bytes are not positive and finite");
        require(op.repeat >= 1, "an operation's repeat is < 1");
        for (int axis : op.collective.axes)
          require(axis >= 0 && axis < static_cast<int>(s.topology.axes.size()), "an operation names an axis outside the mesh");
      }
      break;
    case podsim::WorkloadKind::Training: {
      const auto& plan = s.training().plan;
      check_model(s.training().model);
      require(positive_finite(plan.global_batch_tokens) && plan.sequence_length >= 1 && plan.microbatches >= 1,
              "the batch, sequence length or microbatches are not positive");
      require(positive_finite(plan.matmul_efficiency) && plan.matmul_efficiency <= 1, "matmul_efficiency is outside (0, 1]");
      require(std::isfinite(podsim::training_flops_per_token(s.training().model, plan.sequence_length, plan.attention_flops)),
              "the FLOPs per token are not finite");
      check_moe(s.training().model, plan.routing, plan.expert_axes, s.topology);
      break;
    }
    case podsim::WorkloadKind::Inference: {
      const auto& plan = s.inference().plan;
      check_model(s.inference().model);
      require(plan.batch >= 1, "the batch is < 1");
      // A model without attention (attention: none) caches nothing; any other caches something.
      require(s.inference().model.attention == podsim::AttentionKind::None
                  ? podsim::kv_cache_bytes_per_token(s.inference().model, plan.kv_bytes) == 0
                  : positive_finite(podsim::kv_cache_bytes_per_token(s.inference().model, plan.kv_bytes)),
              "the KV cache per token is not positive and finite (or not 0 without attention)");
      check_moe(s.inference().model, plan.routing, plan.expert_axes, s.topology);
      break;
    }
    case podsim::WorkloadKind::Serving: {
      const auto& w = s.serving();
      check_model(w.model);
      check_topology(w.prefill_topology, "the prefill topology");
      check_topology(w.generate_topology, "a server's mesh");
      check_topology(w.prefill_server_topology, "a prefill server's mesh");
      check_requests(w.requests, w.model.max_sequence_length);
      check_moe(w.model, w.generate.routing, w.generate.expert_axes, w.generate_topology);
      check_moe(w.model, w.prefill.routing, w.prefill.expert_axes, w.prefill_server_topology);
      // A server's axes are every axis of its mesh: the slice's, less the replica axes (model,
      // 2D weight-stationary D, expert, and a prefill server's context axis).
      auto axes_of = [](const podsim::InferencePlan& p) {
        return p.model_axes.size() + p.d_axes.size() + p.expert_axes.size() + (p.context_axis >= 0 ? 1 : 0);
      };
      require(axes_of(w.generate) == w.generate_topology.axes.size() &&
                  axes_of(w.prefill) == w.prefill_server_topology.axes.size(),
              "a server's model, D, expert and context axes are not every axis of its mesh");
      require(w.replicas_per_slice >= 1 && w.config.servers % w.replicas_per_slice == 0 &&
                  w.generate_topology.chips_per_slice() * w.replicas_per_slice == s.topology.chips_per_slice(),
              "the replicas do not tile the slice");
      if (w.config.policy == podsim::BatchingPolicy::Mixed) {
        // A paged cache: any number of sequences up to max_num_seqs, each request within it.
        require(w.config.kv_blocks >= 1 && w.config.block_size >= 1 && w.config.max_num_seqs >= 1 &&
                    w.config.max_num_batched_tokens >= w.config.max_num_seqs,
                "mixed steps without a cache, a budget or sequences");
        for (const auto& r : w.requests)
          require(static_cast<double>(r.prompt_tokens) + r.output_tokens <=
                      static_cast<double>(w.config.kv_blocks) * w.config.block_size,
                  "a request longer than the KV cache");
      } else {
        require(w.hbm_slots >= 1 && w.config.slots >= 1 && w.config.slots <= w.hbm_slots,
                "the decode slots are not in [1, what HBM holds]");
      }
      require(w.config.prefill_batch >= 1 && w.config.servers >= 1, "the prefill batch or servers are < 1");
      require(w.max_context >= 1, "the longest context is < 1");
      require(!w.config.buckets.empty() && std::is_sorted(w.config.buckets.begin(), w.config.buckets.end()),
              "the prompt buckets are empty or unsorted");
      break;
    }
  }
}

// ---- the run ----

// Large enough for long lists and huge scalars, small enough to keep a case under a second.
// (Scenario files may be 16 MiB; tests/test_scenario_loader.cpp loads lists that long.)
constexpr size_t kMaxInputBytes = 2u << 20;

struct Options {
  std::string target;
  std::vector<std::string> corpus_dirs;
  double seconds = 3;
  int64_t max_cases = -1;
  uint64_t seed = 20250610;
  int64_t only_case = -1;
  double case_limit_s = 30;
  fs::path out = ".";
  fs::path dump_accepted;
  int dump_limit = 300;
};

struct Entry {
  fs::path path;
  std::string text;
};

std::vector<Entry> read_corpus(const Options& o) {
  const std::string extension = o.target == "scenario" ? ".yaml" : ".csv";
  std::vector<Entry> entries;
  for (const auto& dir : o.corpus_dirs) {
    std::vector<fs::path> files;
    for (const auto& f : fs::directory_iterator(dir))
      if (f.path().extension() == extension) files.push_back(f.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      std::ifstream in(f, std::ios::binary);
      std::ostringstream text;
      text << in.rdbuf();
      entries.push_back({f, text.str()});
    }
  }
  return entries;
}

enum class Outcome { Loaded, InputError };

// Runs one input; anything but a load or an InputError is a failure, reported and fatal.
Outcome run_one(const Options& o, const std::string& input, const fs::path& label, Rng& rng,
                const std::vector<std::string>& keys) {
  g_input = &input;
  g_case_started_ms = now_ms();
  std::string failure;
  Outcome outcome = Outcome::InputError;
  try {
    if (o.target == "scenario") {
      std::vector<podsim::ScenarioOverride> overrides;
      if (rng.chance(0.1)) {   // --set: a dotted key through the document, a YAML value
        std::string key = pick(rng, {"workload", "topology", "hardware", "simulation", "workload.requests", "x"});
        key += "." + pick(rng, keys);
        if (rng.chance(0.1)) key = pick(rng, {"", ".", "a..b", "workload.operations.0", std::string(300, 'k')});
        overrides.push_back({key, pick(rng, kExtremes)});
      }
      check_scenario(podsim::load_scenario_text(input, label.string(), overrides));
    } else if (o.target == "loads") {
      const podsim::TransformerSpec model = loads_model(rng, input);
      check_loads(podsim::parse_expert_loads(input, label.string(), model), model);
    } else {
      const int contexts[] = {8192, 8192, 1, 2, 131072, 1 << 30, 2147483647};   // the model's max_sequence_length
      const int max_tokens = contexts[rng.below(7)];
      check_requests(podsim::parse_request_trace(input, label.string(), max_tokens, "model"), max_tokens);
    }
    outcome = Outcome::Loaded;
  } catch (const InputError& error) {
    // Located: it names the file it is about (the scenario, a trace it names, or the --set).
    if (error.where().file.empty() || std::string(error.what()).empty()) failure = "an InputError without a file";
  } catch (const RangeError& error) {
    failure = error.what();
  } catch (const std::exception& error) {
    failure = std::string("an exception that is not InputError: ") + typeid(error).name() + ": " + error.what();
  } catch (...) {
    failure = "an exception that is not a std::exception";
  }
  g_case_started_ms = 0;
  if (!failure.empty()) {
    save_input_and_say(failure.c_str());
    std::exit(1);
  }
  return outcome;
}

int64_t env_int64(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::stoll(v) : fallback;
}

int usage(const std::string& problem) {
  std::cerr << "podsim_fuzz: " << problem << "\n"
            << "usage: podsim_fuzz scenario|trace|loads --corpus DIR... [--seconds S] [--cases N] [--seed N] [--case I]\n"
            << "                   [--out DIR] [--dump-accepted DIR] [--dump-limit N]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (argc < 2) return usage("no target");
  o.target = argv[1];
  if (o.target != "scenario" && o.target != "trace" && o.target != "loads") return usage("unknown target " + o.target);
  o.seconds = std::stod(std::getenv("PODSIM_FUZZ_SECONDS") ? std::getenv("PODSIM_FUZZ_SECONDS") : "3");
  o.seed = static_cast<uint64_t>(env_int64("PODSIM_FUZZ_SEED", static_cast<int64_t>(o.seed)));
  o.only_case = env_int64("PODSIM_FUZZ_CASE", -1);
  o.case_limit_s = static_cast<double>(env_int64("PODSIM_FUZZ_CASE_LIMIT", 30));
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
      return argv[++i];
    };
    try {
      if (arg == "--corpus") o.corpus_dirs.push_back(value());
      else if (arg == "--seconds") o.seconds = std::stod(value());
      else if (arg == "--cases") o.max_cases = std::stoll(value());
      else if (arg == "--seed") o.seed = std::stoull(value());
      else if (arg == "--case") o.only_case = std::stoll(value());
      else if (arg == "--out") o.out = value();
      else if (arg == "--dump-accepted") o.dump_accepted = value();
      else if (arg == "--dump-limit") o.dump_limit = std::stoi(value());
      else return usage("unknown option " + arg);
    } catch (const std::exception& error) {
      return usage(error.what());
    }
  }
  if (o.corpus_dirs.empty()) return usage("no --corpus");

  std::snprintf(g_target, sizeof g_target, "%s", o.target.c_str());
  fs::create_directories(o.out);
  const std::string failure_file = (o.out / ("fuzz-failure-" + o.target + (o.target == "scenario" ? ".yaml" : ".csv"))).string();
  std::snprintf(g_failure_path, sizeof g_failure_path, "%s", failure_file.c_str());
  g_seed = o.seed;
  install_failure_handlers();
  start_watchdog(o.case_limit_s);

  const std::vector<Entry> corpus = read_corpus(o);
  if (corpus.empty()) return usage("the corpus has no " + std::string(o.target == "scenario" ? ".yaml" : ".csv") + " files");
  std::vector<std::string> texts;
  for (const auto& e : corpus) texts.push_back(e.text);
  const std::vector<std::string> keys = schema_keys();
  if (!o.dump_accepted.empty()) {
    fs::remove_all(o.dump_accepted);
    fs::create_directories(o.dump_accepted);
  }

  const auto start = std::chrono::steady_clock::now();
  int64_t loaded = 0, rejected = 0, dumped = 0;
  // The corpus as it is: every kept regression input, every time.
  if (o.only_case < 0) {
    for (const auto& e : corpus) {
      g_case = -1;
      std::snprintf(g_corpus_name, sizeof g_corpus_name, "%s", e.path.string().c_str());
      Rng rng = podsim_test::case_rng(o.seed, -1);
      (run_one(o, e.text, e.path, rng, keys) == Outcome::Loaded ? loaded : rejected)++;
    }
  }
  std::set<size_t> seen;
  int64_t cases = 0, slowest_case = -1, slowest_ms = -1;
  for (int64_t i = o.only_case < 0 ? 0 : o.only_case;; ++i) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (o.only_case >= 0 ? i > o.only_case : (o.max_cases >= 0 ? i >= o.max_cases : elapsed >= o.seconds)) break;
    Rng rng = podsim_test::case_rng(o.seed, static_cast<int>(i));
    const size_t which = static_cast<size_t>(rng.below(static_cast<int>(corpus.size())));
    std::string input = corpus[which].text;
    for (int m = 0, n = 1 + rng.below(6); m < n; ++m) {
      std::string before = input;
      if (o.target == "scenario") mutate_scenario(rng, input, texts, keys);
      else if (o.target == "trace") mutate_csv(rng, input, texts, {"arrival_s", "prompt_tokens", "output_tokens", "prefix_id", "prefix_tokens"});
      else mutate_csv(rng, input, texts, {"layer", "*", "expert_0", "3", "2,1", "0,0,0"});
      // Inputs stay under kMaxInputBytes: stacked duplications would otherwise grow them to
      // hundreds of megabytes, and the fuzzer would spend its minute in yaml-cpp's tokenizer.
      if (input.size() > kMaxInputBytes) input = std::move(before);
    }
    g_case = i;
    const int64_t began = now_ms();
    const Outcome outcome = run_one(o, input, corpus[which].path, rng, keys);
    if (now_ms() - began > slowest_ms) {
      slowest_ms = now_ms() - began;
      slowest_case = i;
    }
    ++cases;
    (outcome == Outcome::Loaded ? loaded : rejected)++;
    // Documents the loader accepts, for the schema check: the schema must accept them too.
    if (outcome == Outcome::Loaded && !o.dump_accepted.empty() && dumped < o.dump_limit &&
        seen.insert(std::hash<std::string>{}(input)).second && input != corpus[which].text) {
      std::ofstream(o.dump_accepted / ("accepted-" + std::to_string(i) + ".yaml"), std::ios::binary) << input;
      ++dumped;
    }
    if (o.only_case >= 0) std::cout << input;
  }
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("podsim_fuzz %s: seed %llu, %zu corpus files, %lld mutated cases in %.1f s (%.0f cases/s): %lld loaded, "
              "%lld InputError; slowest case %lld (%lld ms)%s\n",
              o.target.c_str(), static_cast<unsigned long long>(o.seed), corpus.size(), static_cast<long long>(cases),
              elapsed, elapsed > 0 ? static_cast<double>(cases) / elapsed : 0.0, static_cast<long long>(loaded),
              static_cast<long long>(rejected), static_cast<long long>(slowest_case), static_cast<long long>(slowest_ms),
              dumped > 0 ? (", " + std::to_string(dumped) + " accepted mutants written to " + o.dump_accepted.string()).c_str() : "");
  return 0;
}
