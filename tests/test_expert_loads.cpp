// The expert-load CSV reader (sim/scenario/expert_loads.hpp; format in docs/scenario-schema.md,
// `workload.routing`): good files in both shapes, and every bad shape named by file, line,
// column, value and what was expected.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "sim/scenario/expert_loads.hpp"
#include "scratch.hpp"
#include "sim/scenario/input_error.hpp"

using namespace podsim;
namespace fs = std::filesystem;

namespace {

const std::string kPath = "loads.csv";

// 8 layers, the first 2 dense: MoE layers 2..7; 4 experts, 2 per token.
TransformerSpec small_moe() {
  TransformerSpec m;
  m.name = "tiny-moe";
  m.layers = 8;
  m.d_model = 64;
  m.d_ff = 256;
  m.heads = 4;
  m.kv_heads = 4;
  m.head_dim = 16;
  m.vocab = 0;
  m.max_sequence_length = 1024;
  m.moe = MoeSpec{4, 2, 0, 128, 2};
  return m;
}

std::vector<std::vector<double>> parsed(const std::string& text) {
  return parse_expert_loads(text, kPath, small_moe());
}

InputError error_of(const std::string& text, const TransformerSpec& model = small_moe()) {
  try {
    parse_expert_loads(text, kPath, model);
  } catch (const InputError& error) {
    return error;
  }
  FAIL("expected an InputError for:\n" << text);
  return InputError({}, "", "", "");
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The error names the file and line, the key (a column name, "layer", "header", "row"), the
// value as written and a piece of what was expected.
void require_error(const std::string& text, int line, const std::string& key, const std::string& value,
                   const std::string& expected) {
  const InputError error = error_of(text);
  const std::string message = error.what();
  INFO(message);
  CHECK(error.where().file == kPath);
  CHECK(error.where().line == line);
  CHECK(contains(message, kPath + ":" + std::to_string(line)));
  CHECK(error.key() == key);
  if (!key.empty()) CHECK(contains(message, "key '" + key + "'"));
  CHECK(error.value() == value);
  if (!value.empty()) CHECK(contains(message, "value '" + value + "'"));
  CHECK(contains(error.expected(), expected));
}

const std::string kHeader = "layer,expert_0,expert_1,expert_2,expert_3\n";

}  // namespace

TEST_CASE("expert loads: one * row for every MoE layer", "[expert_loads][moe]") {
  const auto rows = parsed("# measured on a held-out batch\n" + kHeader + "\n*, 10, 0, 5.5, 2e1\n");
  REQUIRE(rows.size() == 1);
  CHECK(rows[0] == std::vector<double>{10, 0, 5.5, 20});
}

TEST_CASE("expert loads: one row per MoE layer, in any order, stored in layer order", "[expert_loads][moe]") {
  const std::string text = "layer, a, b, c, d\r\n"
                           "7,1,1,0,0\r\n"
                           "# the first MoE layer is 2\r\n"
                           "2,2,2,0,0\r\n"
                           "  \r\n"
                           "5,5,5,0,0\r\n"
                           "3,3,3,0,0\r\n"
                           "6,6,6,0,0\r\n"
                           "4,4,4,0,-0\r\n";
  const auto rows = parsed(text);
  REQUIRE(rows.size() == 6);
  for (int i = 0; i < 6; ++i) {
    INFO("MoE layer " << i);
    const double expected = i == 5 ? 1 : i + 2;
    CHECK(rows[static_cast<size_t>(i)] == std::vector<double>{expected, expected, 0, 0});
  }
}

TEST_CASE("expert loads: a model whose every layer has experts", "[expert_loads][moe]") {
  TransformerSpec m = small_moe();
  m.moe->dense_layers = 0;
  m.layers = 2;
  const auto rows = parse_expert_loads(kHeader + "1,1,1,1,1\n0,0,1,1,0\n", kPath, m);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0] == std::vector<double>{0, 1, 1, 0});
}

TEST_CASE("expert loads: bad headers", "[expert_loads][moe]") {
  SECTION("more expert columns than experts") {
    const std::string text = "layer,e0,e1,e2,e3,e4\n*,1,1,1,1,1\n";
    require_error(text, 1, "header", "layer,e0,e1,e2,e3,e4", "5 expert columns for a model with 4 experts");
    CHECK(contains(error_of(text).expected(), "(expected layer + 4)"));
  }
  SECTION("fewer") {
    require_error("layer,e0\n*,1\n", 1, "header", "layer,e0", "1 expert column for a model with 4 experts");
  }
  SECTION("a first column that is not layer") {
    require_error("# header below\nexpert_0,expert_1,expert_2,expert_3\n1,1,1,1\n", 2, "header", "expert_0",
                  "first column is layer");
  }
  SECTION("no header at all") {
    const InputError error = error_of("# nothing\n\n");
    CHECK(error.where().file == kPath);
    CHECK(error.where().line == 0);
    CHECK(contains(error.expected(), "empty expert-load file"));
  }
  SECTION("a header and no rows") {
    require_error(kHeader + "# no rows\n", 2, "", "", "no rows after the header");
  }
}

TEST_CASE("expert loads: bad layers", "[expert_loads][moe]") {
  SECTION("a dense layer") {
    require_error(kHeader + "1,1,1,1,1\n", 2, "layer", "1", "layer 1 is dense (MoE layers are 2..7)");
  }
  SECTION("beyond the model's layers, or negative") {
    require_error(kHeader + "8,1,1,1,1\n", 2, "layer", "8", "not one of tiny-moe's 8 layers (MoE layers are 2..7)");
    require_error(kHeader + "-1,1,1,1,1\n", 2, "layer", "-1", "not one of tiny-moe's 8 layers");
  }
  SECTION("not a layer index") {
    require_error(kHeader + "two,1,1,1,1\n", 2, "layer", "two", "expected a model layer index (MoE layers are 2..7) or *");
    require_error(kHeader + "2.0,1,1,1,1\n", 2, "layer", "2.0", "or * for every MoE layer");
    require_error(kHeader + ",1,1,1,1\n", 2, "layer", "", "expected a model layer index");
  }
  SECTION("a duplicate layer") {
    const std::string text = kHeader + "2,1,1,1,1\n3,1,1,1,1\n\n2,1,1,1,1\n";
    require_error(text, 5, "layer", "2", "duplicate layer: 2 is given twice (first at line 2)");
  }
  SECTION("missing layers") {
    const std::string text = kHeader + "2,1,1,1,1\n3,1,1,1,1\n5,1,1,1,1\n6,1,1,1,1\n";
    require_error(text, 5, "layer", "", "missing MoE layers 4, 7");
    require_error(kHeader + "2,1,1,1,1\n3,1,1,1,1\n4,1,1,1,1\n5,1,1,1,1\n6,1,1,1,1\n", 6, "layer", "",
                  "missing MoE layer 7;");
  }
  SECTION("many missing layers are cut short") {
    TransformerSpec m = small_moe();
    m.layers = 100;
    const InputError error = error_of(kHeader + "50,1,1,1,1\n", m);
    INFO(error.what());
    CHECK(contains(error.expected(), "missing MoE layers 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, ... (97 in all)"));
  }
  SECTION("a * row beside rows for single layers, or twice") {
    require_error(kHeader + "2,1,1,1,1\n*,1,1,1,1\n", 3, "layer", "*", "a * row after rows for single layers");
    require_error(kHeader + "*,1,1,1,1\n2,1,1,1,1\n", 3, "layer", "2", "a row for one layer after the * row (line 2)");
    require_error(kHeader + "*,1,1,1,1\n*,1,1,1,1\n", 3, "layer", "*", "* given twice (first at line 2)");
  }
}

TEST_CASE("expert loads: bad rows and values", "[expert_loads][moe]") {
  SECTION("a row with a column more or fewer than the header") {
    require_error(kHeader + "*,1,1,1\n", 2, "row", "*,1,1,1", "4 columns; expected 5, as in the header");
    require_error(kHeader + "*,1,1,1,1,\n", 2, "row", "*,1,1,1,1,", "6 columns; expected 5");
  }
  SECTION("negative, not a number, not finite, empty") {
    require_error(kHeader + "*,1,-2,1,1\n", 2, "expert_1", "-2", "expected a finite number >= 0");
    require_error(kHeader + "*,1,1,many,1\n", 2, "expert_2", "many", "a token count or a relative weight");
    require_error(kHeader + "*,1,1,1,inf\n", 2, "expert_3", "inf", "expected a finite number >= 0");
    require_error(kHeader + "*,nan,1,1,1\n", 2, "expert_0", "nan", "expected a finite number >= 0");
    require_error(kHeader + "*,1,,1,1\n", 2, "expert_1", "", "expected a finite number >= 0");
    require_error(kHeader + "*,1,1e999,1,1\n", 2, "expert_1", "1e999", "expected a finite number >= 0");
  }
  SECTION("the column of a value is named by the header") {
    const InputError error = error_of("layer,a,b,,d\n*,1,1,x,1\n");
    CHECK(error.key() == "column 4");
    CHECK(error.where().column == 4);
  }
  SECTION("fewer positive loads than experts per token") {
    require_error(kHeader + "2,1,1,1,1\n3,0,0,7,0\n", 3, "layer 3", "", "1 expert has a load above 0; expected at least 2");
    require_error(kHeader + "*,0,0,0,0\n", 2, "layer *", "", "0 experts have a load above 0");
  }
  SECTION("loads whose sum is infinite") {
    require_error(kHeader + "*,1e308,1e308,0,0\n", 2, "layer *", "", "only their ratios count");
  }
}

TEST_CASE("expert loads: the file itself", "[expert_loads][moe]") {
  const fs::path dir = podsim_test::made_dir("expert-loads");
  const fs::path good = dir / "loads.csv";
  std::ofstream(good) << kHeader << "*,4,3,2,1\n";
  CHECK(read_expert_loads(good.string(), small_moe()) == std::vector<std::vector<double>>{{4, 3, 2, 1}});
  const auto error_reading = [](const fs::path& path) {
    try {
      read_expert_loads(path.string(), small_moe());
    } catch (const InputError& error) {
      return error;
    }
    FAIL("expected an InputError for " << path);
    return InputError({}, "", "", "");
  };
  const InputError missing = error_reading(dir / "absent.csv");
  CHECK(missing.where().file == (dir / "absent.csv").string());
  CHECK(contains(missing.what(), "cannot open expert-load file"));
  CHECK(contains(error_reading(dir).what(), "it is a directory"));
  const fs::path latin1 = dir / "latin1.csv";
  std::ofstream(latin1) << kHeader << "*,1,1,1,1 # caf\xE9\n";
  const InputError bad_bytes = error_reading(latin1);
  CHECK(bad_bytes.where().line == 2);
  CHECK(contains(bad_bytes.what(), "not UTF-8"));
  fs::remove_all(dir);
}
