#include "sim/report/perfetto_trace.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace podsim {

long long trace_ns(double time_s) { return std::llround(time_s * 1e9); }

namespace {

// nlohmann-json's dump of a double (serializer::dump_float) without building a json value and
// a serializer per number: the serializer's locale lookup and allocations were a third of the
// time the trace spent printing numbers.
void append_number(std::string& out, double value) {
  if (!std::isfinite(value)) {
    out += "null";
    return;
  }
  char buf[64];
  const char* end = nlohmann::detail::to_chars(buf, buf + sizeof buf, value);
  out.append(buf, static_cast<size_t>(end - buf));
}

// The escapes nlohmann-json writes, so a name prints the same whichever writer printed it
// before. Runs without escapes are copied whole: names are escaped on every event, and a
// byte at a time made the trace 15% slower to write.
void append_quoted(std::string& out, std::string_view text) {
  out += '"';
  size_t run = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(text.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default: {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
        out += buf;
      }
    }
  }
  out.append(text.data() + run, text.size() - run);
  out += '"';
}

// The one rule for ts and dur (perfetto_trace.hpp: trace_us).
void append_us(std::string& out, long long ns) { append_number(out, static_cast<double>(ns) / 1e3); }

void append_int(std::string& out, long long value) {
  char buf[24];
  const char* end = std::to_chars(buf, buf + sizeof buf, value).ptr;
  out.append(buf, static_cast<size_t>(end - buf));
}

}  // namespace

std::string trace_number(double value) {
  std::string out;
  append_number(out, value);
  return out;
}

std::string trace_us(long long ns) {
  std::string out;
  append_us(out, ns);
  return out;
}

std::string json_quoted(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  append_quoted(out, text);
  return out;
}

TraceArgs& TraceArgs::add(std::string_view key, double value) {
  add_text(key, "");
  append_number(text_, value);
  return *this;
}

TraceArgs& TraceArgs::add_g17(std::string_view key, double value) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", value);
  return add_text(key, buf);
}

TraceArgs& TraceArgs::add(std::string_view key, std::string_view value) { return add_text(key, json_quoted(value)); }

TraceArgs& TraceArgs::add_text(std::string_view key, std::string_view json_value) {
  if (!text_.empty()) text_ += ',';
  append_quoted(text_, key);
  text_ += ':';
  text_ += json_value;
  return *this;
}

PerfettoTrace::PerfettoTrace(std::string& out, std::string_view display_time_unit, uint64_t max_events)
    : text_(&out), max_events_(max_events) {
  put("{\"displayTimeUnit\":" + json_quoted(display_time_unit) + ",\"traceEvents\":[\n");
}

PerfettoTrace::PerfettoTrace(std::ostream& out, std::string_view display_time_unit, uint64_t max_events)
    : stream_(&out), max_events_(max_events) {
  put("{\"displayTimeUnit\":" + json_quoted(display_time_unit) + ",\"traceEvents\":[\n");
}

void PerfettoTrace::put(std::string_view text) {
  if (text_ != nullptr) {
    *text_ += text;
  } else {
    stream_->write(text.data(), static_cast<std::streamsize>(text.size()));
  }
}

bool PerfettoTrace::admit(uint64_t count, double at_s) {
  if (!extent_.complete) return false;
  if (max_events_ - extent_.events < count) {
    extent_.complete = false;
    extent_.until_s = at_s;
    return false;
  }
  return true;
}

void PerfettoTrace::write_event() {
  if (extent_.events > 0) put(",\n");
  put(event_);
  ++extent_.events;
}

void PerfettoTrace::begin(std::string_view name, std::optional<std::string_view> cat, std::string_view ph) {
  event_ = "{\"name\":";
  append_quoted(event_, name);
  if (cat) {
    event_ += ",\"cat\":";
    append_quoted(event_, *cat);
  }
  event_ += ",\"ph\":\"";
  event_ += ph;
  event_ += '"';
}

void PerfettoTrace::append_pid_tid(int pid, int tid) {
  event_ += ",\"pid\":";
  append_int(event_, pid);
  event_ += ",\"tid\":";
  append_int(event_, tid);
}

void PerfettoTrace::append_args(const TraceArgs& args) {
  event_ += ",\"args\":{";
  event_ += args.text();
  event_ += "}}";
}

// {"name":..,"ph":"M","pid":..[,"tid":..],"args":{..}}: a process's metadata has no tid.
bool PerfettoTrace::metadata(std::string_view name, int pid, std::optional<int> tid, const TraceArgs& args,
                             double at_s) {
  if (!admit(1, at_s)) return false;
  begin(name, std::nullopt, "M");
  event_ += ",\"pid\":";
  append_int(event_, pid);
  if (tid) {
    event_ += ",\"tid\":";
    append_int(event_, *tid);
  }
  append_args(args);
  write_event();
  return true;
}

bool PerfettoTrace::process_name(int pid, std::string_view name, double at_s) {
  return metadata("process_name", pid, std::nullopt, TraceArgs().add("name", name), at_s);
}

bool PerfettoTrace::thread_name(int pid, int tid, std::string_view name, double at_s) {
  return metadata("thread_name", pid, tid, TraceArgs().add("name", name), at_s);
}

bool PerfettoTrace::thread_sort_index(int pid, int tid, int sort_index, double at_s) {
  return metadata("thread_sort_index", pid, tid, TraceArgs().add("sort_index", sort_index), at_s);
}

bool PerfettoTrace::span(std::string_view name, std::string_view cat, int pid, int tid, double start_s,
                         double end_s, const TraceArgs& args) {
  if (!admit(1, start_s)) return false;
  const long long start_ns = trace_ns(start_s);
  const long long end_ns = std::max(start_ns, trace_ns(end_s));
  begin(name, cat, "X");
  event_ += ",\"ts\":";
  append_us(event_, start_ns);
  event_ += ",\"dur\":";
  append_us(event_, end_ns - start_ns);
  append_pid_tid(pid, tid);
  append_args(args);
  write_event();
  return true;
}

bool PerfettoTrace::counter(std::string_view name, int pid, double time_s, const TraceArgs& series) {
  if (!admit(1, time_s)) return false;
  begin(name, std::nullopt, "C");
  event_ += ",\"ts\":";
  append_us(event_, trace_ns(time_s));
  event_ += ",\"pid\":";
  append_int(event_, pid);
  append_args(series);
  write_event();
  return true;
}

bool PerfettoTrace::flow(std::string_view name, std::string_view cat, FlowEnd from, FlowEnd to) {
  if (!admit(2, static_cast<double>(from.ns) / 1e9)) return false;
  const unsigned long long id = next_flow_id_++;
  write_flow_end(name, cat, "s", id, from);
  write_flow_end(name, cat, "f", id, to);
  return true;
}

// {"name":..,"cat":..,"ph":"s","id":..,"ts":..,"pid":..,"tid":..}; the "f" adds "bp":"e" before the id.
void PerfettoTrace::write_flow_end(std::string_view name, std::string_view cat, std::string_view ph,
                                   unsigned long long id, FlowEnd end) {
  begin(name, cat, ph);
  if (ph == "f") event_ += ",\"bp\":\"e\"";
  event_ += ",\"id\":" + std::to_string(id) + ",\"ts\":";
  append_us(event_, end.ns);
  append_pid_tid(end.pid, end.tid);
  event_ += '}';
  write_event();
}

TraceExtent PerfettoTrace::finish() { return close(nullptr); }

TraceExtent PerfettoTrace::finish(const TraceArgs& other_data) { return close(&other_data); }

TraceExtent PerfettoTrace::close(const TraceArgs* other_data) {
  put("\n]");
  if (other_data != nullptr) put(",\"otherData\":{" + other_data->text() + "}");
  put("}\n");
  return extent_;
}

}  // namespace podsim
