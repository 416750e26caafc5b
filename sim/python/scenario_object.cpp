#include "sim/python/scenario_object.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "sim/report/output_files.hpp"
#include "sim/scenario/file_references.hpp"

namespace py = pybind11;
namespace fs = std::filesystem;

namespace podsim::python {

namespace {

// Python containers are converted by recursion, so depth is bounded (a list nested 50,000 deep
// would overflow the C stack) and a container met again on its own path is a cycle (r["x"] = r
// would recurse forever). No real scenario nests more than a few levels; 100 is far beyond it.
// The value count bounds shared references, which are legal but can multiply: a list holding
// one list twice, 64 levels deep, has 2^64 leaves to write.
constexpr int kMaxNesting = 100;
constexpr long kMaxValues = 1'000'000;

struct EmitState {
  std::vector<PyObject*> path;   // the containers from the root to the one being written
  std::string key;               // the key path to it, grown and cut back as the walk goes
  long values = 0;
};

std::string at_key(const std::string& key) { return key.empty() ? std::string() : " at '" + key + "'"; }

}  // namespace

std::string utf8_text(py::handle value, const std::string& key) {
  if (py::isinstance<py::bytes>(value)) return value.cast<std::string>();   // os.fspath may give bytes
  Py_ssize_t size = 0;
  const char* data = py::isinstance<py::str>(value) ? PyUnicode_AsUTF8AndSize(value.ptr(), &size) : nullptr;
  if (data == nullptr) {
    PyErr_Clear();
    throw py::value_error("podsim: " + py::repr(value).cast<std::string>() + at_key(key) +
                          " is not text UTF-8 can hold; expected a str without lone surrogates");
  }
  return std::string(data, static_cast<size_t>(size));
}

namespace {

// A Python value as YAML. Strings inside a document are strings (the emitter quotes what would
// read otherwise); floats keep Python's shortest round-trip form. Containers are tested before
// __fspath__: hasattr on a list raises and clears an AttributeError, the slowest step here.
void emit(YAML::Emitter& out, py::handle value, EmitState& state) {
  const std::string& key = state.key;
  if (++state.values > kMaxValues)
    throw py::value_error("podsim: more than " + std::to_string(kMaxValues) + " values in a scenario (the last" +
                          at_key(key) + "); expected a document of scenario size (is a list shared many times over?)");
  if (value.is_none()) {
    out << YAML::Null;
  } else if (py::isinstance<py::bool_>(value)) {
    out << value.cast<bool>();
  } else if (py::isinstance<py::int_>(value)) {
    out << py::str(value).cast<std::string>();
  } else if (py::isinstance<py::float_>(value)) {
    const double v = value.cast<double>();
    out << (std::isnan(v) ? std::string(".nan")
            : std::isinf(v) ? std::string(v > 0 ? ".inf" : "-.inf")
                            : py::repr(value).cast<std::string>());
  } else if (py::isinstance<py::str>(value)) {
    out << utf8_text(value, key);
  } else if (py::isinstance<py::dict>(value) || py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
    if (std::find(state.path.begin(), state.path.end(), value.ptr()) != state.path.end())
      throw py::value_error("podsim: the " + py::str(py::type::of(value).attr("__name__")).cast<std::string>() +
                            at_key(key) + " contains itself; expected a tree of dicts and lists, without cycles");
    if (static_cast<int>(state.path.size()) >= kMaxNesting)
      throw py::value_error("podsim: a value nested more than " + std::to_string(kMaxNesting) + " levels deep" +
                            at_key(key) + "; expected at most " + std::to_string(kMaxNesting) +
                            " levels of dicts and lists");
    state.path.push_back(value.ptr());
    const size_t length = state.key.size();
    if (py::isinstance<py::dict>(value)) {
      out << YAML::BeginMap;
      for (auto item : py::reinterpret_borrow<py::dict>(value)) {
        if (!py::isinstance<py::str>(item.first))
          throw py::type_error("podsim: scenario keys must be str; got " + py::repr(item.first).cast<std::string>() +
                               (key.empty() ? std::string() : " under '" + key + "'"));
        const std::string name = utf8_text(item.first, key);
        out << YAML::Key << name << YAML::Value;
        state.key.append(length == 0 ? "" : ".").append(name);
        emit(out, item.second, state);
        state.key.resize(length);
      }
      out << YAML::EndMap;
    } else {
      out << YAML::BeginSeq;
      int i = 0;
      for (auto item : value) {
        state.key.append("[").append(std::to_string(i++)).append("]");
        emit(out, item, state);
        state.key.resize(length);
      }
      out << YAML::EndSeq;
    }
    state.path.pop_back();
  } else if (py::hasattr(value, "__fspath__")) {
    out << utf8_text(py::module_::import("os").attr("fspath")(value), key);
  } else {
    throw py::type_error("podsim: cannot write a " + py::str(py::type::of(value).attr("__name__")).cast<std::string>() +
                         (key.empty() ? std::string() : " (at '" + key + "')") +
                         " into a scenario; expected dict, list, str, int, float, bool or None");
  }
}

// `key`: where the value sits ("" for a whole document, the dotted key of an override).
void emit(YAML::Emitter& out, py::handle value, const std::string& key) {
  EmitState state;
  state.key = key;
  emit(out, value, state);
}

std::string fspath(const py::handle& path) {
  return utf8_text(py::module_::import("os").attr("fspath")(path), "");
}

std::string read_whole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::string override_text(const py::handle& value, const std::string& key) {
  if (py::isinstance<py::str>(value)) return utf8_text(value, key);
  YAML::Emitter out;
  // One line, as a --set value is.
  out.SetMapFormat(YAML::Flow);
  out.SetSeqFormat(YAML::Flow);
  emit(out, value, key);
  return out.c_str();
}

std::vector<ScenarioOverride> to_overrides(const py::object& overrides) {
  std::vector<ScenarioOverride> out;
  if (overrides.is_none()) return out;
  if (!py::isinstance<py::dict>(overrides))
    throw py::type_error("podsim: overrides must be a dict of dotted keys to values, e.g. {'workload.batch': 8}");
  for (auto item : py::reinterpret_borrow<py::dict>(overrides)) {
    if (!py::isinstance<py::str>(item.first)) throw py::type_error("podsim: override keys must be str (dotted keys)");
    const std::string key = utf8_text(item.first, "");
    out.push_back({key, override_text(item.second, key)});
  }
  return out;
}

LoadedScenario load_file(const std::string& path, std::vector<ScenarioOverride> overrides) {
  LoadedScenario s;
  s.scenario = load_scenario(path, overrides);   // the CLI's reader and checks, its messages
  s.path = path;
  s.base_dir = fs::path(path).parent_path().string();
  if (s.base_dir.empty()) s.base_dir = ".";
  s.absolute_dir = fs::absolute(s.base_dir).lexically_normal().string();
  s.text = read_whole(path);
  s.overrides = std::move(overrides);
  return s;
}

LoadedScenario load_dict(const py::dict& document, const std::string& base_dir, std::vector<ScenarioOverride> overrides) {
  YAML::Emitter out;
  emit(out, document, "");
  LoadedScenario s;
  s.from_dict = true;
  s.base_dir = base_dir.empty() ? "." : base_dir;
  // Messages name "<dict>"; relative paths in it (a request trace, an expert-load CSV) resolve against base_dir.
  s.path = s.base_dir == "." ? "<dict>" : (fs::path(s.base_dir) / "<dict>").string();
  s.absolute_dir = fs::absolute(s.base_dir).lexically_normal().string();
  s.text = std::string(out.c_str()) + "\n";
  s.scenario = load_scenario_text(s.text, s.path, overrides);
  s.overrides = std::move(overrides);
  return s;
}

std::string where_loaded(const LoadedScenario& s) {
  const fs::path absolute = fs::path(s.absolute_dir) / fs::path(s.path).filename();
  // The path as given while it still names that file (messages and inputs.txt keep it); after a
  // change of directory, the absolute one.
  return fs::absolute(s.path).lexically_normal() == absolute ? s.path : absolute.string();
}

LoadedScenario with_overrides(const LoadedScenario& base, const std::vector<ScenarioOverride>& more) {
  LoadedScenario s = base;
  s.overrides.insert(s.overrides.end(), more.begin(), more.end());
  // A file is read again, as `podsim run FILE --set ...` would read it.
  s.scenario = s.from_dict ? load_scenario_text(s.text, where_loaded(s), s.overrides)
                           : load_scenario(where_loaded(s), s.overrides);
  return s;
}

LoadedScenario as_scenario(const py::object& scenario_or_path, const py::object& overrides) {
  const auto extra = to_overrides(overrides);
  if (py::isinstance<LoadedScenario>(scenario_or_path)) {
    const auto& s = scenario_or_path.cast<const LoadedScenario&>();
    return extra.empty() ? s : with_overrides(s, extra);
  }
  if (py::isinstance<py::str>(scenario_or_path) || py::hasattr(scenario_or_path, "__fspath__"))
    return load_file(fspath(scenario_or_path), extra);
  throw py::type_error("podsim: expected a podsim.Scenario or a path to a scenario file");
}

std::string scenario_file(const LoadedScenario& s, const std::string& directory) {
  if (!s.from_dict) return where_loaded(s);
  YAML::Node document = YAML::Load(s.text);
  // The file moves away from base_dir: the paths it names (file_references()) go with it.
  make_file_references_absolute(document, "", s.absolute_dir);
  YAML::Emitter out;
  out << document;
  ensure_directory(directory);
  OutputFiles files(directory);
  files.add("scenario.yaml", std::string(out.c_str()) + "\n");
  files.commit();
  return files.path("scenario.yaml");
}

std::string point_override(const LoadedScenario& s, const std::string& key, const std::string& value) {
  if (!s.from_dict) return value;   // a file's points read it where it is, as load did
  YAML::Node node;
  try {
    node = YAML::Load(value);
  } catch (const YAML::Exception&) {
    return value;   // the point's run reports it, naming the --set
  }
  if (!make_file_references_absolute(node, key, s.absolute_dir)) return value;
  YAML::Emitter out;
  out.SetMapFormat(YAML::Flow);
  out.SetSeqFormat(YAML::Flow);
  out << node;
  return out.c_str();
}

namespace {

py::dict overrides_dict(const std::vector<ScenarioOverride>& overrides) {
  py::dict d;
  for (const auto& o : overrides) d[py::str(o.key)] = o.value;
  return d;
}

}  // namespace

void bind_scenario(py::module_& m) {
  py::class_<LoadedScenario>(m, "Scenario",
                             "A scenario loaded and checked, overrides applied: podsim.load(path) or "
                             "podsim.load_dict(dict). Pass it to run, sweep, compare or plan.")
      .def_property_readonly("name", [](const LoadedScenario& s) { return s.scenario.name; })
      .def_property_readonly("description", [](const LoadedScenario& s) { return s.scenario.description; })
      .def_property_readonly("kind", [](const LoadedScenario& s) { return workload_kind_name(s.scenario.kind()); },
                             "collectives, training, inference or serving")
      .def_property_readonly(
          "path", [](const LoadedScenario& s) -> py::object { return s.from_dict ? py::object(py::none()) : py::object(py::str(s.path)); },
          "the file it was loaded from (None for a dict)")
      .def_property_readonly("base_dir", [](const LoadedScenario& s) { return s.base_dir; },
                             "where relative paths in it (a request trace, an expert-load CSV) are taken from")
      .def_property_readonly("text", [](const LoadedScenario& s) { return s.text; },
                             "the YAML document before overrides (a dict's as podsim wrote it)")
      .def_property_readonly("overrides", [](const LoadedScenario& s) { return overrides_dict(s.overrides); },
                             "the overrides applied, as --set texts")
      .def(
          "with_overrides",
          [](const LoadedScenario& s, const py::object& overrides) { return with_overrides(s, to_overrides(overrides)); },
          py::arg("overrides"), "The same scenario with more overrides, e.g. {'workload.batch': 16}.")
      .def("__repr__", [](const LoadedScenario& s) {
        return "<podsim.Scenario '" + s.scenario.name + "' (" + workload_kind_name(s.scenario.kind()) + ") from " +
               (s.from_dict ? std::string("a dict") : s.path) + ">";
      });

  m.def(
      "load",
      [](const py::object& path, const py::object& overrides) { return load_file(fspath(path), to_overrides(overrides)); },
      py::arg("path"), py::arg("overrides") = py::none(),
      R"(Load and check a scenario file, as `podsim run FILE --set key=value ...` does.

overrides: {dotted key: value}, e.g. {'workload.batch': 8}; a str value is YAML text as after
--set (so '8' is a number), other values are written as YAML; None removes the key.
Raises podsim.InputError, located in the file (or naming the override), for bad input;
ValueError for a value nested more than 100 levels deep or containing itself.)");
  m.def(
      "load_dict",
      [](const py::dict& document, const py::object& base_dir, const py::object& overrides) {
        return load_dict(document, fspath(base_dir), to_overrides(overrides));
      },
      py::arg("document"), py::arg("base_dir") = ".", py::arg("overrides") = py::none(),
      R"(Load and check a scenario given as a dict (the YAML file's structure: version, name,
hardware, topology, workload, ...). It is written as YAML (Scenario.text) and checked as a file
would be; messages name '<dict>' and the line in Scenario.text. base_dir: where relative paths
in it (a calibration profile, a request trace, an expert-load CSV) are taken from. A dict without
'name' is named '<dict>'. Raises TypeError for a value YAML cannot hold (bytes, an object, a key
that is not str) and ValueError for dicts and lists nested more than 100 levels deep, one that
contains itself, or more than a million values, naming the key path where it happened.)");
}

}  // namespace podsim::python
