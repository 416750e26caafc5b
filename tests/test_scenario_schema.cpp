// docs/scenario.schema.json against the loader it describes, so the two cannot drift apart
// silently:
//  - keys: every mapping the loader reads is a KeyTable (sim/scenario/schema_keys.hpp; a
//    MapReader cannot be built from anything else), and the schema's definition of that
//    mapping must list exactly its keys, closed (additionalProperties: false); every closed
//    object of the schema must in turn be one of those tables. A key added to the loader or
//    to the schema alone fails here, naming it.
//  - enumerations: each enum of the schema equals the loader's list of choices (read from
//    the loader's own error message for a value it does not know, or from the preset tables).
//  - unit patterns: strings built from the parsers' grammar (numbers, prefixes, units, spaces,
//    signs, good and bad) must match the schema's pattern whenever the parser accepts them
//    (a schema stricter than the loader would flag good files in an editor). std::regex's
//    ECMAScript grammar is the one JSON Schema's `pattern` names.
//  - documents: tests/schema/valid/*.yaml load, and tests/schema/invalid/*.yaml fail at the key
//    their first line names (the Python check, tests/schema/validate_scenarios.py, requires the
//    schema to accept and reject the same files).
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "seeded_rng.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/scenario/schema_keys.hpp"
#include "sim/scenario/units.hpp"
#include "sim/scenario/yaml_fields.hpp"
#include "topology/chip_spec.hpp"
#include "workloads/model_spec.hpp"

using namespace podsim;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const fs::path kSource = PODSIM_SOURCE_DIR;

const json& schema() {
  static const json document = [] {
    std::ifstream in(kSource / "docs/scenario.schema.json");
    REQUIRE(in);
    return json::parse(in);
  }();
  return document;
}

// The schema object describing a table: the document itself, or definitions/<id>.
const json* definition(const std::string& id) {
  if (id == "document") return &schema();
  const json& definitions = schema().at("definitions");
  return definitions.contains(id) ? &definitions.at(id) : nullptr;
}

std::set<std::string> property_names(const json& object) {
  std::set<std::string> names;
  if (object.contains("properties"))
    for (const auto& [name, value] : object.at("properties").items()) names.insert(name);
  return names;
}

std::string listed(const std::set<std::string>& names) {
  std::string text;
  for (const auto& name : names) text += (text.empty() ? "" : ", ") + name;
  return text.empty() ? "(none)" : text;
}

// Every object schema with additionalProperties: false, by JSON pointer.
void closed_objects(const json& node, const std::string& pointer, std::vector<std::string>& out) {
  if (node.is_object()) {
    if (node.contains("additionalProperties") && node.at("additionalProperties") == false) out.push_back(pointer);
    for (const auto& [key, value] : node.items()) closed_objects(value, pointer + "/" + key, out);
  } else if (node.is_array()) {
    for (size_t i = 0; i < node.size(); ++i) closed_objects(node[i], pointer + "/" + std::to_string(i), out);
  }
}

std::set<std::string> enum_of(const std::string& id) {
  const json* d = definition(id);
  REQUIRE(d != nullptr);
  std::set<std::string> values;
  for (const auto& value : d->at("enum")) values.insert(value.get<std::string>());
  return values;
}

// The choices a loader error lists after "expected one of: ".
std::set<std::string> choices_in(const std::string& message) {
  const std::string marker = "expected one of: ";
  const size_t at = message.find(marker);
  REQUIRE(at != std::string::npos);
  std::set<std::string> choices;
  std::istringstream in(message.substr(at + marker.size()));
  std::string item;
  while (std::getline(in, item, ',')) {
    item.erase(0, item.find_first_not_of(' '));
    choices.insert(item);
  }
  return choices;
}

InputError load_error(const std::string& text) {
  try {
    load_scenario_text(text, "schema-test.yaml");
  } catch (const InputError& error) {
    return error;
  }
  FAIL("expected an InputError for:\n" << text);
  return InputError({}, "", "", "");
}

std::string replaced(std::string text, const std::string& value) {
  const size_t at = text.find('@');
  REQUIRE(at != std::string::npos);
  return text.replace(at, 1, value);
}

const std::string kCollectives = R"(version: 1
hardware: {preset: v5p}
topology: {mesh: {X: 4, Y: 4, Z: 4}, slices: 2}
simulation: {hop_model: @}
workload:
  kind: collectives
  operations:
    - {kind: all_gather, axes: [X], bytes: "1 MiB"}
)";

const std::string kOperation = R"(version: 1
hardware: {preset: v5p}
topology: {mesh: {X: 4, Y: 4, Z: 4}, slices: 2}
workload:
  kind: collectives
  operations:
    - {kind: @, axes: [X], bytes: "1 MiB"}
)";

const std::string kDcnOperation = R"(version: 1
hardware: {preset: v5p}
topology: {mesh: {X: 4, Y: 4, Z: 4}, slices: 2}
workload:
  kind: collectives
  operations:
    - {kind: all_reduce, axes: [X], dcn: true, dcn_algorithm: @, bytes: "1 MiB"}
)";

const std::string kWorkloadKind = R"(version: 1
hardware: {preset: v5e}
topology: {mesh: {X: 4}}
workload: {kind: @}
)";

const std::string kTraining = R"(version: 1
hardware: {preset: v5e}
topology: {mesh: {X: 4}}
workload:
  kind: training
  model: {layers: 4, d_model: 256, d_ff: 1024, heads: 4, kv_heads: 4, head_dim: 64, vocab: 0}
  batch_tokens: 8192
  sequence_length: 1024
  checkpointing: @
)";

const std::string kPipeline = R"(version: 1
hardware: {preset: v5e}
topology: {mesh: {X: 4}}
workload:
  kind: training
  model: {layers: 4, d_model: 256, d_ff: 1024, heads: 4, kv_heads: 4, head_dim: 64, vocab: 0}
  batch_tokens: 8192
  sequence_length: 1024
  parallelism: {pipeline: X, schedule: @}
)";

const std::string kInference = R"(version: 1
hardware: {preset: v5e}
topology: {mesh: {X: 4, Y: 2}}
workload:
  kind: inference
  model: llama3-8b
  batch: 1
  context_length: 128
  @
)";

const std::string kServing = R"(version: 1
hardware: {preset: v5e}
topology: {mesh: {X: 4, Y: 2}}
workload:
  kind: serving
  model: llama3-8b
  policy: @
  requests:
    poisson: {rate: "1 /s", count: 2, prompt_tokens: 128, output_tokens: 16}
)";

const std::string kRouting = R"(version: 1
hardware: {preset: v5e}
topology: {mesh: {X: 4, Y: 2}}
workload:
  kind: inference
  model: mixtral-8x7b
  batch: 1
  context_length: 128
  routing: {distribution: @}
)";

// Builds strings from pieces of a grammar, good and bad, so that a parser sees near misses.
std::string pick(podsim_test::Rng& rng, const std::vector<std::string>& pieces) {
  return pieces[static_cast<size_t>(rng.below(static_cast<int>(pieces.size())))];
}

const std::vector<std::string> kSpaces = {"", "", " ", "  ", "\t", " \t"};
const std::vector<std::string> kSigns = {"", "", "", "+", "-", "+-"};
const std::vector<std::string> kNumbers = {"45",  "4.5", ".5",   "5.",    "4.5e10", "1E-3", "1e+3", "0",    "00",
                                           "0.0", "1e",  "e5",   "1.2.3", "inf",    "nan",  "0x10", "",     "1e400",
                                           "1_0", "7",   "1e-400", ".",   "1.e3",   "3e08", "12345678901234567890123"};
const std::vector<std::string> kPrefixes = {"",  "",  "k", "K", "M",  "G",      "T",      "P",  "Ki", "Mi", "Gi", "Ti",
                                            "Pi", "m", "u", "n", "p", "\xC2\xB5", "\xCE\xBC", "E", "x",  "g",  "KI"};
const std::vector<std::string> kUnits = {"B/s", "Bps", "b/s",  "bps",  "s",    "FLOP/s", "FLOPS", "OP/s",
                                         "OPS", "/s",  "/min", "/h",   "/ m in", "B",    "",      "B /s",
                                         "sec", "flops", "/ s", "S",    "Bs",   "/d"};

// A number with a prefix and unit, mostly of the kind `units` lists (so that enough strings are
// accepted), sometimes any of them.
std::function<std::string(podsim_test::Rng&)> quantity(std::vector<std::string> units) {
  return [units](podsim_test::Rng& rng) {
    if (rng.chance(0.03)) return pick(rng, kSpaces) + "i n f / s" + pick(rng, kSpaces);
    if (rng.chance(0.03)) return pick(rng, kSpaces) + "inf/s" + pick(rng, kSpaces);
    const std::string unit = rng.chance(0.7) ? pick(rng, units) : pick(rng, kUnits);
    const std::string prefix = unit.empty() && rng.chance(0.8) ? "" : pick(rng, kPrefixes);
    return pick(rng, kSpaces) + pick(rng, kSigns) + pick(rng, kNumbers) + pick(rng, kSpaces) + prefix + unit +
           pick(rng, kSpaces);
  };
}

const std::vector<std::string> kDtypes = {"f32",  "fp32", "float32", "int32", "s32",  "bf16", "bfloat16", "f16",
                                          "fp16", "float16", "int8", "s8",    "fp8",  "int4", "s4",       "bf8",
                                          "f64",  "",     "BF16"};

std::string array_text(podsim_test::Rng& rng) {
  const std::vector<std::string> dims = {"2048", " 8 ", "0", "", "-1", "1e3", "\t4", "18446744073709551616", "7"};
  std::string text = pick(rng, kSpaces) + pick(rng, kDtypes) + pick(rng, kSpaces) + (rng.chance(0.95) ? "[" : "(");
  const int n = rng.below(4);
  for (int i = 0; i < n; ++i) text += (i ? "," : "") + pick(rng, dims);
  return text + (rng.chance(0.95) ? "]" : "") + pick(rng, kSpaces);
}

std::string sharding_text(podsim_test::Rng& rng) {
  const std::vector<std::string> entries = {"E_Y", "F", "B_XY", " D ", "D_", "_X", "E_Y1", "e2_z", "1", "", "B X"};
  std::string text = pick(rng, kSpaces) + "[";
  const int n = rng.below(4);
  for (int i = 0; i < n; ++i) text += (i ? "," : "") + pick(rng, entries);
  text += rng.chance(0.9) ? "]" : "";
  const std::vector<std::string> tails = {"", "", "{U_Z}", " { U_Z } ", "{U_}", "{Z}", "{U_Z", "x"};
  return text + pick(rng, tails) + pick(rng, kSpaces);
}

struct PatternCase {
  std::string id;                                     // the schema definition holding the pattern
  std::function<bool(const std::string&)> accepts;    // the loader's parser
  std::function<std::string(podsim_test::Rng&)> make;
};

template <typename Parse>
std::function<bool(const std::string&)> accepted_by(Parse parse) {
  return [parse](const std::string& text) {
    try {
      parse(text);
      return true;
    } catch (const std::invalid_argument&) {
      return false;
    }
  };
}

// The pattern of a definition: its own, or that of its string branch.
std::string pattern_of(const std::string& id) {
  const json* d = definition(id);
  REQUIRE(d != nullptr);
  if (d->contains("pattern")) return d->at("pattern").get<std::string>();
  for (const auto& branch : d->at("anyOf"))
    if (branch.contains("pattern")) return branch.at("pattern").get<std::string>();
  FAIL("definition " << id << " has no pattern");
  return "";
}

yaml_fields::Field scalar_field(const std::string& text) { return {YAML::Node(text), "key", {"f", 1, 1}}; }

template <typename Read>
std::function<bool(const std::string&)> read_by(Read read) {
  return [read](const std::string& text) {
    try {
      read(scalar_field(text));
      return true;
    } catch (const InputError&) {
      return false;
    }
  };
}

std::string first_line(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string file_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<fs::path> yaml_files(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().extension() == ".yaml") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

TEST_CASE("the schema's closed objects are exactly the loader's key tables", "[schema]") {
  std::set<std::string> ids;
  for (const KeyTable& table : key_tables()) {
    INFO("table " << table.id << " (" << table.path << ")");
    ids.insert(table.id);
    const json* object = definition(table.id);
    REQUIRE(object != nullptr);   // a mapping the loader reads that the schema does not describe
    const std::set<std::string> in_loader(table.keys.begin(), table.keys.end());
    const std::set<std::string> in_schema = property_names(*object);
    std::set<std::string> loader_only, schema_only;
    std::set_difference(in_loader.begin(), in_loader.end(), in_schema.begin(), in_schema.end(),
                        std::inserter(loader_only, loader_only.end()));
    std::set_difference(in_schema.begin(), in_schema.end(), in_loader.begin(), in_loader.end(),
                        std::inserter(schema_only, schema_only.end()));
    INFO("keys the loader accepts and the schema lacks: " << listed(loader_only));
    INFO("keys the schema lists and the loader rejects: " << listed(schema_only));
    CHECK(loader_only.empty());
    CHECK(schema_only.empty());
    // The loader rejects unknown keys, so the schema must too.
    CHECK(object->value("additionalProperties", json(true)) == false);
    // Mesh axis names as keys: patternProperties in the schema.
    CHECK(object->contains("patternProperties") == table.axis_keys);
  }
  std::vector<std::string> closed;
  closed_objects(schema(), "", closed);
  for (const std::string& pointer : closed) {
    INFO("closed object at #" << pointer);
    const std::string prefix = "/definitions/";
    const bool is_table = pointer.empty() || (pointer.starts_with(prefix) && ids.count(pointer.substr(prefix.size())) > 0);
    CHECK(is_table);   // a mapping only the schema knows about: add it to schema_keys.cpp, or open it
  }
}

TEST_CASE("the schema's enumerations are the loader's choices", "[schema]") {
  struct Choice {
    std::string id, templ, key;
  };
  const std::vector<Choice> choices = {
      {"hop_model", kCollectives, "simulation.hop_model"},
      {"collective_kind", kOperation, "workload.operations[0].kind"},
      {"dcn_algorithm", kDcnOperation, "workload.operations[0].dcn_algorithm"},
      {"workload_kind", kWorkloadKind, "workload.kind"},
      {"checkpointing", kTraining, "workload.checkpointing"},
      {"schedule", kPipeline, "workload.parallelism.schedule"},
      {"phase", replaced(kInference, "phase: @"), "workload.phase"},
      {"weights_dtype", replaced(kInference, "weights: @"), "workload.weights"},
      {"kv_cache_dtype", replaced(kInference, "kv_cache: @"), "workload.kv_cache"},
      // fp8 needs a chip with an fp8 rate: the template gives v5e one.
      {"compute_dtype",
       "version: 1\nhardware: {preset: v5e, overrides: {fp8_flops: \"394 TFLOP/s\"}}" +
           replaced(kInference, "compute: @").substr(std::string("version: 1\nhardware: {preset: v5e}").size()),
       "workload.compute"},
      {"policy", kServing, "workload.policy"},
      {"routing_distribution", kRouting, "workload.routing.distribution"},
  };
  for (const Choice& choice : choices) {
    INFO("definitions/" << choice.id);
    const InputError error = load_error(replaced(choice.templ, "not-a-choice"));
    INFO(error.what());
    CHECK(error.key() == choice.key);
    CHECK(choices_in(error.expected()) == enum_of(choice.id));
    for (const std::string& value : enum_of(choice.id)) {
      // Each value the schema offers is one the loader takes (it may fail later, not there).
      try {
        load_scenario_text(replaced(choice.templ, value), "schema-test.yaml");
      } catch (const InputError& later) {
        INFO(later.what());
        CHECK(later.key() != error.key());
      }
    }
  }
  std::set<std::string> chips, models;
  for (const auto& chip : chip_presets()) chips.insert(chip.name);
  for (const auto& model : model_presets()) models.insert(model.name);
  CHECK(enum_of("chip_preset") == chips);
  CHECK(enum_of("model_preset") == models);
}

TEST_CASE("the schema's unit patterns accept every string the loader's parsers accept", "[schema]") {
  const std::vector<PatternCase> cases = {
      {"bandwidth", accepted_by(parse_bandwidth_Bps), quantity({"B/s", "Bps", "b/s", "bps"})},
      {"time", accepted_by(parse_time_s), quantity({"s"})},
      {"flops", accepted_by(parse_flops_per_s), quantity({"FLOP/s", "FLOPS", "OP/s", "OPS"})},
      {"rate", accepted_by(parse_rate_per_s), quantity({"/s", "/min", "/h", "/ m in", " / s"})},
      {"bytes", accepted_by(parse_bytes), quantity({"B", ""})},
      {"array", accepted_by(parse_array), array_text},
      {"sharding", accepted_by(parse_sharding), sharding_text},
      {"number_text", read_by(yaml_fields::read_real),
       [](podsim_test::Rng& rng) { return pick(rng, kSigns) + pick(rng, kNumbers) + (rng.chance(0.1) ? " " : ""); }},
      {"integer_text", read_by([](const yaml_fields::Field& f) { return yaml_fields::read_integer(f, INT64_MIN, INT64_MAX); }),
       [](podsim_test::Rng& rng) { return pick(rng, kSigns) + pick(rng, kNumbers); }},
      {"name", read_by([](const yaml_fields::Field& f) { return yaml_fields::read_name(f, "a name"); }),
       [](podsim_test::Rng& rng) { return pick(rng, {"op-1", "a_b", "x y", "é", "", "a.b", "A9", "-", "a/b"}); }},
  };
  const int per_case = podsim_test::env_int("PODSIM_SCHEMA_CASES", 4000);
  for (const PatternCase& c : cases) {
    const std::regex pattern(pattern_of(c.id), std::regex::ECMAScript);
    podsim_test::Rng rng{20250101};
    int accepted = 0;
    for (int i = 0; i < per_case; ++i) {
      const std::string text = c.make(rng);
      if (!c.accepts(text)) continue;
      ++accepted;
      INFO("definitions/" << c.id << ": the loader accepts '" << text << "', the schema's pattern does not");
      REQUIRE(std::regex_match(text, pattern));
    }
    INFO("definitions/" << c.id << ": " << accepted << " of " << per_case << " generated strings accepted");
    CHECK(accepted > per_case / 50);   // the generator reaches the accepted side
  }
}

TEST_CASE("the schema's example documents: valid ones load, invalid ones fail where they say", "[schema]") {
  const std::vector<fs::path> valid = yaml_files(kSource / "tests/schema/valid");
  REQUIRE(!valid.empty());
  for (const fs::path& path : valid) {
    INFO(path);
    try {
      load_scenario(path.string());
    } catch (const InputError& error) {
      FAIL(error.what());
    }
  }
  const std::vector<fs::path> invalid = yaml_files(kSource / "tests/schema/invalid");
  REQUIRE(!invalid.empty());
  for (const fs::path& path : invalid) {
    INFO(path);
    const std::string line = first_line(path);
    REQUIRE(line.starts_with("# rejects: "));
    const InputError error = load_error(file_text(path));
    INFO(error.what());
    CHECK(error.key() == line.substr(std::string("# rejects: ").size()));
  }
}

TEST_CASE("the schema's MoE presets and attention kinds are the loader's", "[schema][moe]") {
  std::set<std::string> moe_models;
  for (const auto& model : moe_model_presets()) moe_models.insert(model.name);
  CHECK(enum_of("moe_model_preset") == moe_models);
  const std::string attention = R"(version: 1
hardware: {preset: v5p}
topology: {mesh: {X: 4}}
workload:
  kind: training
  model: {preset: llama2-7b, attention: {kind: @}}
  batch_tokens: 16384
  sequence_length: 4096
)";
  const InputError error = load_error(replaced(attention, "sparse"));
  INFO(error.what());
  CHECK(error.key() == "workload.model.attention.kind");
  CHECK(choices_in(error.expected()) == enum_of("attention_kind"));
}
