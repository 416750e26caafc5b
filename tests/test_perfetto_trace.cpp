// The one trace.json writer (sim/report/perfetto_trace.hpp): framing, escaping, times on the
// nanosecond grid, the event cap. Expectations come from the Trace Event Format (ts and dur in
// microseconds) and JSON's grammar (RFC 8259: '"', '\\' and U+0000..U+001F escaped).
#include <algorithm>
#include <cmath>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "sim/report/perfetto_trace.hpp"

namespace {

// A trace with one of each event kind into `sink`, finished with otherData.
template <typename Sink>
void one_of_each(Sink& sink) {
  podsim::PerfettoTrace trace(sink, "ns");
  trace.process_name(0, "slice 0");
  trace.thread_name(0, 1, "chip (0,0) comm");
  trace.thread_sort_index(0, 1, 1);
  trace.span("L0.attn.allgather", "allgather", 0, 1, 1e-6, 2.5e-6, podsim::TraceArgs().add("repetition", 0));
  trace.counter("HBM used (bytes)", 0, 1e-6, podsim::TraceArgs().add("per chip", 8e9));
  trace.flow("send", "send_flow", {0, 1, 1500}, {0, 2, 2000});
  trace.finish(podsim::TraceArgs().add("send_flows", 1));
}

}  // namespace

TEST_CASE("perfetto trace: names are escaped as JSON strings", "[perfetto_trace]") {
  CHECK(podsim::json_quoted("chip (0,1)") == "\"chip (0,1)\"");
  CHECK(podsim::json_quoted("say \"hi\"\\") == "\"say \\\"hi\\\"\\\\\"");
  CHECK(podsim::json_quoted("a\nb\tc\r\b\f") == "\"a\\nb\\tc\\r\\b\\f\"");
  CHECK(podsim::json_quoted(std::string("\x01\x1f", 2)) == "\"\\u0001\\u001f\"");
  CHECK(podsim::json_quoted(std::string("nul\0", 4)) == "\"nul\\u0000\"");
  // UTF-8 passes through (JSON allows it unescaped): the bytes of "µs → ns".
  CHECK(podsim::json_quoted("\xc2\xb5s \xe2\x86\x92 ns") == "\"\xc2\xb5s \xe2\x86\x92 ns\"");
  // What nlohmann-json reads back is the name itself, for every byte below 0x80.
  std::string all;
  for (int c = 1; c < 0x80; ++c) all += static_cast<char>(c);
  CHECK(nlohmann::json::parse(podsim::json_quoted(all)).get<std::string>() == all);
  CHECK(nlohmann::json::parse(podsim::json_quoted("\xc2\xb5s")).get<std::string>() == "\xc2\xb5s");
}

TEST_CASE("perfetto trace: times are microseconds on the nanosecond grid", "[perfetto_trace]") {
  CHECK(podsim::trace_ns(1.5e-6) == 1500);
  CHECK(podsim::trace_ns(1.0000000004) == 1000000000);   // rounded to the nearest nanosecond
  CHECK(podsim::trace_ns(1.0000000006) == 1000000001);
  CHECK(podsim::trace_us(1) == "0.001");
  CHECK(podsim::trace_us(1500) == "1.5");
  CHECK(podsim::trace_us(2000000000) == "2000000.0");
  CHECK(podsim::trace_us(123456789012) == "123456789.012");
  // A span's dur is end rounded minus start rounded, so spans that touch in the simulation
  // touch on the track: [1.0004 ns, 2.4996 ns] is [1 ns, 2 ns].
  std::string out;
  podsim::PerfettoTrace trace(out, "ns");
  trace.span("a", "c", 0, 0, 1.0004e-9, 2.4996e-9, {});
  trace.span("b", "c", 0, 0, 2.4996e-9, 3.1e-9, {});
  trace.span("backwards", "c", 0, 0, 5e-9, 4e-9, {});   // never a negative duration
  trace.finish();
  const auto events = nlohmann::json::parse(out).at("traceEvents");
  REQUIRE(events.size() == 3);
  CHECK(events[0].at("ts").get<double>() == 0.001);
  CHECK(events[0].at("dur").get<double>() == 0.001);
  CHECK(events[1].at("ts").get<double>() == 0.002);
  CHECK(events[1].at("dur").get<double>() == 0.001);
  CHECK(events[2].at("dur").get<double>() == 0.0);
  CHECK(out.find("{\"name\":\"a\",\"cat\":\"c\",\"ph\":\"X\",\"ts\":0.001,\"dur\":0.001,\"pid\":0,\"tid\":0,\"args\":{}}") !=
        std::string::npos);
}

TEST_CASE("perfetto trace: numbers print as nlohmann-json prints a double", "[perfetto_trace]") {
  // The text every trace had before the shared writer (report.cpp and serving_files.cpp both
  // printed through nlohmann-json), so shipped traces keep their bytes.
  for (double v : {0.0, -0.0, 1.0, 0.1, 1.001, 8192.0, 1.5e-6, 123456789.012, 1e300, -2.5e-310, 1.0 / 3})
    CHECK(podsim::trace_number(v) == nlohmann::json(v).dump());
  CHECK(podsim::trace_number(std::nan("")) == "null");
  CHECK(podsim::trace_number(HUGE_VAL) == "null");
}

TEST_CASE("perfetto trace: args print integers, shortest doubles, %.17g byte counts and strings", "[perfetto_trace]") {
  podsim::TraceArgs args;
  args.add("batch", 8).add("tokens", 8192.0).add("fraction", 0.1).add_g17("bytes", 8192.0).add("op", "L0 \"mlp\"");
  CHECK(args.text() == "\"batch\":8,\"tokens\":8192.0,\"fraction\":0.1,\"bytes\":8192,\"op\":\"L0 \\\"mlp\\\"\"");
}

TEST_CASE("perfetto trace: string and stream sinks frame the same valid JSON", "[perfetto_trace]") {
  std::string text;
  one_of_each(text);
  std::ostringstream stream;
  one_of_each(stream);
  CHECK(stream.str() == text);
  CHECK(text.rfind("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n", 0) == 0);
  const std::string closing = "\n],\"otherData\":{\"send_flows\":1}}\n";
  CHECK(text.substr(text.size() - closing.size()) == closing);
  const auto trace = nlohmann::json::parse(text);
  const auto& events = trace.at("traceEvents");
  REQUIRE(events.size() == 7);   // a flow is two events
  CHECK(trace.at("otherData").at("send_flows") == 1);
  std::vector<std::string> phases;
  for (const auto& e : events) phases.push_back(e.at("ph"));
  CHECK(phases == std::vector<std::string>{"M", "M", "M", "X", "C", "s", "f"});
  CHECK(events[3].at("ts").get<double>() == 1.0);
  CHECK(events[3].at("dur").get<double>() == 1.5);
  CHECK(events[5].at("id") == events[6].at("id"));
  CHECK(events[6].at("bp") == "e");
  CHECK(events[5].at("ts").get<double>() == 1.5);
  CHECK(events[6].at("ts").get<double>() == 2.0);
  // An event a line, between the opening and closing lines.
  CHECK(std::count(text.begin(), text.end(), '\n') == 7 + 2);
  // Without otherData, and with no events at all.
  std::string empty;
  podsim::PerfettoTrace none(empty, "ms");
  const auto extent = none.finish();
  CHECK(empty == "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n\n]}\n");
  CHECK(nlohmann::json::parse(empty).at("traceEvents").empty());
  CHECK(extent.events == 0);
  CHECK(extent.complete);
}

TEST_CASE("perfetto trace: past the cap events are dropped and the extent says where", "[perfetto_trace]") {
  std::ostringstream out;
  podsim::PerfettoTrace trace(out, "ms", 4);
  CHECK(trace.process_name(1, "servers"));
  CHECK(trace.span("decode", "decode", 1, 0, 0.1, 0.2, {}));
  // A flow is two events: with one left it does not fit, and nothing after it goes in.
  CHECK(trace.counter("decode batch 0", 1, 0.1, podsim::TraceArgs().add("sequences", 3)));
  CHECK_FALSE(trace.flow("f", "send_flow", {1, 0, 300000000}, {1, 0, 400000000}));
  CHECK_FALSE(trace.accepting());
  CHECK_FALSE(trace.span("decode", "decode", 1, 0, 0.5, 0.6, {}));
  CHECK_FALSE(trace.thread_name(1, 0, "late", 0.7));
  const auto extent = trace.finish();
  CHECK(extent.events == 3);
  CHECK_FALSE(extent.complete);
  CHECK(extent.until_s == Approx(0.3));   // the flow's start: the first event left out
  const auto parsed = nlohmann::json::parse(out.str());
  CHECK(parsed.at("traceEvents").size() == 3);

  // Exactly at the cap nothing is lost: the trace is complete.
  std::string full;
  podsim::PerfettoTrace exact(full, "ms", 2);
  CHECK(exact.span("a", "c", 0, 0, 0, 1, {}));
  CHECK(exact.span("b", "c", 0, 0, 1, 2, {}));
  const auto whole = exact.finish();
  CHECK(whole.complete);
  CHECK(whole.events == 2);
  // The next one would have been left out, at its start.
  std::string over;
  podsim::PerfettoTrace capped(over, "ms", 2);
  capped.span("a", "c", 0, 0, 0, 1, {});
  capped.span("b", "c", 0, 0, 1, 2, {});
  CHECK_FALSE(capped.span("c", "c", 0, 0, 2.5, 3, {}));
  const auto cut = capped.finish();
  CHECK_FALSE(cut.complete);
  CHECK(cut.until_s == 2.5);
}
