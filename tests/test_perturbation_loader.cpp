// The `perturbations:` block (sim/scenario/perturbation_loader.cpp, schema in
// docs/scenario-schema.md): every selector form round trips into the boxes Topology applies,
// and every malformed entry gets one message naming file, line, key and value.
#include <catch2/catch.hpp>

#include <string>

#include "sim/scenario/scenario.hpp"

using namespace podsim;

namespace {

const std::string kFile = "perturbed.yaml";

// Two v4p 4x4x4 slices (wrapped: full cubes; hosts of 2x2x1 chips, 16 a slice).
const std::string kBase = R"(version: 1
hardware:
  preset: v4p
topology:
  mesh: {X: 4, Y: 4, Z: 4}
  slices: 2
perturbations:
  - name: slow_chip
    chips: [1, 2, 3]
    compute_slowdown: 1.5
workload:
  kind: collectives
  operations:
    - name: ar_x
      kind: all_reduce
      axes: [X]
      bytes: "1 MB"
)";

const std::string kEntry = "  - name: slow_chip\n    chips: [1, 2, 3]\n    compute_slowdown: 1.5\n";

std::string with(const std::string& from, const std::string& to, const std::string& base = kBase) {
  const size_t at = base.find(from);
  REQUIRE(at != std::string::npos);
  return base.substr(0, at) + to + base.substr(at + from.size());
}

// kBase with its one perturbation replaced by `entries` (YAML list items, indented two spaces).
std::string perturbed(const std::string& entries) { return with(kEntry, entries); }

int line_of(const std::string& text, const std::string& needle) {
  const size_t at = text.find(needle);
  REQUIRE(at != std::string::npos);
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::vector<Perturbation> load(const std::string& text) {
  return load_scenario_text(text, kFile).topology.perturbations;
}

// The error names file, line (that of `line_needle`), key and value, and says what was expected.
void require_error(const std::string& text, const std::string& key, const std::string& value,
                   const std::string& line_needle, const std::string& expected) {
  try {
    load_scenario_text(text, kFile);
  } catch (const InputError& error) {
    const std::string message = error.what();
    INFO(message);
    const int line = line_of(text, line_needle);
    CHECK(error.where().file == kFile);
    CHECK(error.where().line == line);
    CHECK(contains(message, kFile + ":" + std::to_string(line) + ":"));
    CHECK(error.key() == key);
    CHECK(error.value() == value);
    CHECK(contains(error.expected(), expected));
    return;
  }
  FAIL("expected an InputError");
}

}  // namespace

TEST_CASE("perturbations: every selector form loads", "[scenario][perturbation]") {
  SECTION("one chip, in every slice") {
    const auto p = load(kBase);
    REQUIRE(p.size() == 1);
    CHECK(p[0].name == "slow_chip");
    CHECK(p[0].kind == PerturbationKind::SlowChips);
    CHECK(p[0].compute_slowdown == 1.5);
    REQUIRE(p[0].chips.size() == 1);
    const ChipBox& box = p[0].chips[0];
    CHECK(box.axes[0].first == 1);
    CHECK(box.axes[1].last == 2);
    CHECK(box.axes[2].first == 3);
    CHECK(box.slices.first == 0);
    CHECK(box.slices.last == 1);
  }
  SECTION("a list of chips, and ranges per axis in one slice") {
    const auto p = load(perturbed("  - chips: [[0, 0, 0], [3, 3, 3]]\n    compute_slowdown: 2\n"
                                  "  - chips: {X: \"0-3\", Y: 2, Z: [1, 2], slice: 1}\n    compute_slowdown: 1.25\n"));
    REQUIRE(p.size() == 2);
    CHECK(p[0].name == "perturbation0");
    CHECK(p[0].chips.size() == 2);
    CHECK(p[0].chips[1].axes[2].first == 3);
    CHECK(p[1].name == "perturbation1");
    const ChipBox& box = p[1].chips.at(0);
    CHECK(box.axes[0].first == 0);
    CHECK(box.axes[0].last == 3);
    CHECK(box.axes[1].first == 2);
    CHECK(box.axes[1].last == 2);
    CHECK(box.axes[2].first == 1);
    CHECK(box.axes[2].last == 2);
    CHECK(box.slices.first == 1);
    CHECK(box.slices.last == 1);
  }
  SECTION("one directed link, with a bandwidth scale and extra latency") {
    const auto p = load(perturbed("  - name: bad_link\n    links: {chip: [0, 0, 0], direction: \"+X\"}\n"
                                  "    bandwidth_scale: 0.5\n    extra_latency: \"2 us\"\n"));
    REQUIRE(p.size() == 1);
    CHECK(p[0].kind == PerturbationKind::Links);
    CHECK(p[0].axis == 0);
    CHECK(p[0].direction == +1);
    CHECK(p[0].bandwidth_scale == 0.5);
    CHECK(p[0].extra_latency_s == Approx(2e-6));
    CHECK(p[0].chips.at(0).axes[1].last == 0);
  }
  SECTION("every link of an axis, both ways; a direction given as -1 with an axis") {
    const auto p = load(perturbed("  - links: {axis: Y}\n    bandwidth_scale: 0.9\n"
                                  "  - links: {axis: Z, direction: -1, X: 1}\n    extra_latency: \"1 us\"\n"));
    REQUIRE(p.size() == 2);
    CHECK(p[0].axis == 1);
    CHECK(p[0].direction == 0);
    CHECK(p[0].chips.at(0).axes[0].last == 3);
    CHECK(p[1].axis == 2);
    CHECK(p[1].direction == -1);
    CHECK(p[1].bandwidth_scale == 1.0);
    CHECK(p[1].chips.at(0).axes[0].first == 1);
  }
  SECTION("a host's NIC, by index or by one of its chips") {
    const auto p = load(perturbed("  - nics: {slice: 1, host: 5}\n    bandwidth_scale: 0.25\n"
                                  "  - nics: {chip: [3, 3, 0], slice: 0}\n    bandwidth_scale: 0.5\n"));
    REQUIRE(p.size() == 2);
    CHECK(p[0].kind == PerturbationKind::Nics);
    // Host 5 of a 4x4x4 of 2x2x1 hosts (2 x 2 x 4 blocks, first axis fastest): block (1, 0, 1).
    const ChipBox& box = p[0].chips.at(0);
    CHECK(box.axes[0].first == 2);
    CHECK(box.axes[0].last == 3);
    CHECK(box.axes[1].first == 0);
    CHECK(box.axes[1].last == 1);
    CHECK(box.axes[2].first == 1);
    CHECK(box.axes[2].last == 1);
    CHECK(box.slices.first == 1);
    CHECK(p[1].chips.at(0).axes[0].first == 3);
    CHECK(p[1].chips.at(0).slices.last == 0);
  }
  SECTION("a whole host's chips slow, or its links") {
    const auto p = load(perturbed("  - chips: {host: 5, slice: 1}\n    compute_slowdown: 1.2\n"
                                  "  - chips: {host: \"0-1\"}\n    compute_slowdown: 1.1\n"
                                  "  - links: {host: 5, axis: Z}\n    bandwidth_scale: 0.5\n"));
    REQUIRE(p.size() == 3);
    // Host 5 of 2x2x1 hosts on the 4x4x4: block (1, 0, 1), as for its NIC above.
    REQUIRE(p[0].chips.size() == 1);
    const ChipBox& box = p[0].chips[0];
    CHECK(box.axes[0].first == 2);
    CHECK(box.axes[0].last == 3);
    CHECK(box.axes[1].first == 0);
    CHECK(box.axes[1].last == 1);
    CHECK(box.axes[2].first == 1);
    CHECK(box.axes[2].last == 1);
    CHECK(box.slices.first == 1);
    CHECK(box.slices.last == 1);
    CHECK(p[1].chips.size() == 2);   // hosts 0 and 1, every slice
    CHECK(p[1].chips[1].axes[0].first == 2);
    CHECK(p[1].chips[1].slices.last == 1);
    CHECK(p[2].chips[0].axes == box.axes);
    CHECK(p[2].chips[0].slices.last == 1);
  }
  SECTION("an empty block perturbs nothing") {
    CHECK(load(with(kEntry, "", with("perturbations:\n", "perturbations: []\n"))).empty());
  }
}

TEST_CASE("perturbations: bad entries name file, line, key and value", "[scenario][perturbation]") {
  SECTION("unknown key in an entry") {
    const auto text = perturbed("  - chips: [1, 2, 3]\n    compute_slowdwn: 1.5\n");
    require_error(text, "perturbations[0].compute_slowdwn", "1.5", "compute_slowdwn", "unknown key");
  }
  SECTION("an axis name in the wrong case") {
    const auto text = perturbed("  - chips: {x: \"0-3\"}\n    compute_slowdown: 1.5\n");
    require_error(text, "perturbations[0].chips.x", "0-3", "{x:", "unknown key; expected one of: chip, chips, host, slice, X, Y, Z");
  }
  SECTION("a chip out of range") {
    const auto text = perturbed("  - chips: [1, 2, 4]\n    compute_slowdown: 1.5\n");
    require_error(text, "perturbations[0].chips[2]", "4", "chips: [1, 2, 4]", "axis Z from 0 to 3");
  }
  SECTION("a chip with too few coordinates") {
    const auto text = perturbed("  - chips: [1, 2]\n    compute_slowdown: 1.5\n");
    require_error(text, "perturbations[0].chips", "[1, 2]", "chips: [1, 2]", "one per mesh axis (X, Y, Z), e.g. [3, 3, 3]");
  }
  SECTION("a range past the axis") {
    const auto text = perturbed("  - chips: {Y: \"0-4\"}\n    compute_slowdown: 1.5\n");
    require_error(text, "perturbations[0].chips.Y", "0-4", "{Y:", "from 0 to 3 on axis Y");
  }
  SECTION("a range the wrong way round") {
    const auto text = perturbed("  - chips: {Y: [3, 1]}\n    compute_slowdown: 1.5\n");
    require_error(text, "perturbations[0].chips.Y", "[3, 1]", "{Y:", "both ends included");
  }
  SECTION("a slice out of range") {
    const auto text = perturbed("  - chips: {slice: 2}\n    compute_slowdown: 1.5\n");
    require_error(text, "perturbations[0].chips.slice", "2", "{slice: 2}", "from 0 to 1 on the slices");
  }
  SECTION("coordinates and ranges together") {
    const auto text = perturbed("  - chips: {chip: [0, 0, 0], X: 1}\n    compute_slowdown: 1.5\n");
    require_error(text, "perturbations[0].chips.X", "1", "{chip:", "not both");
  }
  SECTION("a factor of zero") {
    const auto text = perturbed("  - chips: [1, 2, 3]\n    compute_slowdown: 0\n");
    require_error(text, "perturbations[0].compute_slowdown", "0", "compute_slowdown: 0", "a factor > 0");
  }
  SECTION("a negative bandwidth scale") {
    const auto text = perturbed("  - links: {axis: X}\n    bandwidth_scale: -0.5\n");
    require_error(text, "perturbations[0].bandwidth_scale", "-0.5", "bandwidth_scale", "a factor > 0");
  }
  // Each factor in its own range, the link SimGrid gets out of its range: 1e298 made SimGrid
  // abort ("The Impossible Did Happen"), 1e-320 deadlocked it.
  SECTION("a bandwidth scale that overflows the link") {
    const auto text = perturbed("  - links: {axis: X}\n    bandwidth_scale: 1e298\n");
    require_error(text, "perturbations[0].bandwidth_scale", "1e298", "bandwidth_scale", "between 1 kB/s and 1 EB/s");
  }
  SECTION("a bandwidth scale that stalls the link") {
    const auto text = perturbed("  - links: {axis: X}\n    bandwidth_scale: 1e-320\n");
    require_error(text, "perturbations[0].bandwidth_scale", "1e-320", "bandwidth_scale", "between 1 kB/s and 1 EB/s");
  }
  SECTION("a NIC scale that stalls the host's DCN") {
    const auto text = perturbed("  - nics: {slice: 0}\n    bandwidth_scale: 1e-12\n");
    require_error(text, "perturbations[0].bandwidth_scale", "1e-12", "bandwidth_scale", "between 1 kB/s and 1 EB/s");
  }
  SECTION("an extra latency beyond a second") {
    const auto text = perturbed("  - links: {axis: X}\n    extra_latency: \"1e300 s\"\n");
    require_error(text, "perturbations[0].extra_latency", "1e300 s", "extra_latency", "from 0 s to 1 s");
  }
  SECTION("a compute slowdown beyond a million") {
    const auto text = perturbed("  - chips: [1, 2, 3]\n    compute_slowdown: 1e300\n");
    require_error(text, "perturbations[0].compute_slowdown", "1e300", "compute_slowdown", "from 0.001 to 1e6");
  }
  SECTION("a link efficiency that stalls every link") {
    const auto text = with("workload:\n", "simulation: {link_efficiency: 1e-320}\nworkload:\n");
    require_error(text, "simulation.link_efficiency", "1e-320", "link_efficiency", "between 1 kB/s and 1 EB/s");
  }
  SECTION("a factor that is not a number") {
    const auto text = perturbed("  - chips: [1, 2, 3]\n    compute_slowdown: slow\n");
    require_error(text, "perturbations[0].compute_slowdown", "slow", "compute_slowdown", "a finite number");
  }
  SECTION("an unknown axis") {
    const auto text = perturbed("  - links: {axis: W}\n    bandwidth_scale: 0.5\n");
    require_error(text, "perturbations[0].links.axis", "W", "{axis: W}", "not a mesh axis; the mesh has X, Y, Z");
  }
  SECTION("a direction naming an unknown axis") {
    const auto text = perturbed("  - links: {direction: \"+W\"}\n    bandwidth_scale: 0.5\n");
    require_error(text, "perturbations[0].links.direction", "+W", "{direction:", "not a mesh axis");
  }
  SECTION("a direction that is not one") {
    const auto text = perturbed("  - links: {axis: X, direction: sideways}\n    bandwidth_scale: 0.5\n");
    require_error(text, "perturbations[0].links.direction", "sideways", "sideways", "expected +1, -1");
  }
  SECTION("a direction along another axis than `axis`") {
    const auto text = perturbed("  - links: {axis: X, direction: \"-Y\"}\n    bandwidth_scale: 0.5\n");
    require_error(text, "perturbations[0].links.direction", "-Y", "-Y", "names axis Y but axis is X");
  }
  SECTION("links without an axis") {
    const auto text = perturbed("  - links: {chip: [0, 0, 0]}\n    bandwidth_scale: 0.5\n");
    require_error(text, "perturbations[0].links.axis", "", "links:", "missing the links' axis");
  }
  SECTION("latency without a unit") {
    const auto text = perturbed("  - links: {axis: X}\n    extra_latency: 2\n");
    require_error(text, "perturbations[0].extra_latency", "2", "extra_latency", "missing unit");
  }
  SECTION("latency in an unknown unit") {
    const auto text = perturbed("  - links: {axis: X}\n    extra_latency: \"2 parsecs\"\n");
    require_error(text, "perturbations[0].extra_latency", "2 parsecs", "extra_latency", "unit");
  }
  SECTION("a link beyond the end of a line") {
    const auto text = with("slices: 2\n", "slices: 2\n  wraparound: {X: false}\n",
                           perturbed("  - links: {chip: [3, 0, 0], direction: \"+X\"}\n    bandwidth_scale: 0.5\n"));
    require_error(text, "perturbations[0].links", "{chip: [3, 0, 0], direction: +X}", "links:", "selects no link");
  }
  SECTION("an effect for something else") {
    const auto text = perturbed("  - links: {axis: X}\n    compute_slowdown: 2\n");
    require_error(text, "perturbations[0].compute_slowdown", "2", "compute_slowdown", "does not apply to links");
    const auto chips = perturbed("  - chips: [0, 0, 0]\n    bandwidth_scale: 0.5\n");
    require_error(chips, "perturbations[0].bandwidth_scale", "0.5", "bandwidth_scale", "does not apply to chips");
  }
  SECTION("no effect") {
    const auto text = perturbed("  - chips: [0, 0, 0]\n");
    require_error(text, "perturbations[0]", "{chips: [0, 0, 0]}", "chips: [0, 0, 0]", "expected an effect: compute_slowdown");
  }
  SECTION("nothing to apply to, or two things") {
    require_error(perturbed("  - compute_slowdown: 2\n"), "perturbations[0]", "{compute_slowdown: 2}", "compute_slowdown",
                  "expected one of chips, links, nics or stragglers");
    require_error(perturbed("  - chips: [0, 0, 0]\n    links: {axis: X}\n    compute_slowdown: 2\n"),
                  "perturbations[0].links", "{axis: X}", "links:", "chips is given already");
  }
  SECTION("stragglers: a probability and a factor or range, or a histogram") {
    const std::string entry = "  - name: s\n    stragglers: ";
    require_error(perturbed(entry + "{probability: 1.5, compute_slowdown: 1.2}\n"), "perturbations[0].stragglers.probability",
                  "1.5", "stragglers:", "expected a probability from 0 to 1");
    require_error(perturbed(entry + "{probability: 0.1}\n"), "perturbations[0].stragglers", "{probability: 0.1}",
                  "stragglers:", "expected probability (each chip's chance of being slow");
    require_error(perturbed(entry + "{probability: 0.1, compute_slowdown: [1.5, 1.1]}\n"),
                  "perturbations[0].stragglers.compute_slowdown", "[1.5, 1.1]", "stragglers:", "high end is below its low end");
    require_error(perturbed(entry + "{probability: 0.1, compute_slowdown: [1.1, 1.2, 1.3]}\n"),
                  "perturbations[0].stragglers.compute_slowdown", "[1.1, 1.2, 1.3]", "stragglers:", "a range [low, high]");
    require_error(perturbed(entry + "{probability: 0.1, compute_slowdown: 0}\n"),
                  "perturbations[0].stragglers.compute_slowdown", "0", "stragglers:", "expected a factor > 0");
    require_error(perturbed(entry + "{probability: 0.1, compute_slowdown: 1.2, histogram: [[1.2, 1]]}\n"),
                  "perturbations[0].stragglers.histogram", "[[1.2, 1]]", "stragglers:", "not both");
    require_error(perturbed(entry + "{histogram: [[1.2, 0], [1.0, 0]]}\n"), "perturbations[0].stragglers.histogram",
                  "[[1.2, 0], [1.0, 0]]", "stragglers:", "every weight is 0");
    require_error(perturbed(entry + "{histogram: [1.2, 3]}\n"), "perturbations[0].stragglers.histogram[0]", "1.2",
                  "stragglers:", "expected a [factor, weight] pair");
    require_error(perturbed(entry + "{histogram: [[1.2, -3]]}\n"), "perturbations[0].stragglers.histogram[0][1]", "-3",
                  "stragglers:", "expected a weight from 0");
    require_error(perturbed(entry + "{probability: 0.1, compute_slowdown: 1.2, seed: -1}\n"),
                  "perturbations[0].stragglers.seed", "-1", "stragglers:", "");
    require_error(perturbed(entry + "{probability: 0.1, compute_slowdown: 1.2, chips: [0, 0, 0]}\n"),
                  "perturbations[0].stragglers.chips", "[0, 0, 0]", "stragglers:", "");
    require_error(perturbed(entry + "{probability: 0.1, compute_slowdown: 1.2}\n    compute_slowdown: 2\n"),
                  "perturbations[0].compute_slowdown", "2", "    compute_slowdown: 2", "inside the stragglers mapping");
    // What loads: draw 0 of the spec, after the hand-written entries.
    const Scenario s = load_scenario_text(
        perturbed("  - chips: [0, 0, 0]\n    compute_slowdown: 2\n" + entry + "{probability: 1, compute_slowdown: 1.25}\n"),
        kFile);
    REQUIRE(s.stragglers.size() == 1);
    CHECK(s.fixed_perturbations == 1);
    REQUIRE(s.topology.perturbations.size() == 2);
    CHECK(s.topology.perturbations[1].name == "s.0");
    CHECK(s.topology.perturbations[1].compute_slowdown == 1.25);
    CHECK(s.topology.perturbations[1].chips.size() == static_cast<size_t>(2 * s.topology.chips_per_slice()));   // both slices
  }
  SECTION("failed links with no way round them are refused, with the reason") {
    // Every X link gone: a detour along Y or Z needs an X link beside the failed one.
    require_error(perturbed("  - links: {axis: X}\n    bandwidth_scale: 0\n"), "perturbations[0].bandwidth_scale", "0",
                  "bandwidth_scale: 0", "has failed and no route goes round it");
    // The X links beside the first one's, on +-Y and +-Z, fail one by one: the last entry
    // takes the last way round it.
    const std::string beside = "    bandwidth_scale: 0\n  - links: {direction: \"+X\", chip: ";
    require_error(perturbed("  - links: {direction: \"+X\", chip: [0, 0, 0]}\n" + beside + "[0, 1, 0]}\n" + beside +
                            "[0, 3, 0]}\n" + beside + "[0, 0, 1]}\n" + beside + "[0, 0, 3]}\n    bandwidth_scale: 0.0\n"),
                  "perturbations[4].bandwidth_scale", "0.0", "bandwidth_scale: 0.0", "has failed and no route goes round it");
  }
  SECTION("a failed link with a way round it is read") {
    const auto read = load(perturbed("  - links: {chip: [0, 0, 0], direction: \"+X\"}\n    bandwidth_scale: 0\n"));
    REQUIRE(read.size() == 1);
    CHECK(read[0].bandwidth_scale == 0);
  }
  SECTION("a failed NIC is refused: its host has no other way out") {
    require_error(perturbed("  - nics: {host: 0}\n    bandwidth_scale: 0\n"), "perturbations[0].bandwidth_scale", "0",
                  "bandwidth_scale: 0", "a failed NIC (bandwidth 0) is not simulated");
  }
  SECTION("a host beside coordinates, or out of range") {
    require_error(perturbed("  - chips: {host: 1, chip: [0, 0, 0]}\n    compute_slowdown: 2\n"),
                  "perturbations[0].chips.host", "1", "chips:", "give either host");
    require_error(perturbed("  - chips: {host: 16}\n    compute_slowdown: 2\n"), "perturbations[0].chips.host", "16",
                  "chips:", "from 0 to 15 on the 16 hosts of a slice");
  }
  SECTION("a name used twice") {
    const auto text = perturbed("  - name: a\n    chips: [0, 0, 0]\n    compute_slowdown: 2\n"
                                "  - name: a\n    chips: [1, 0, 0]\n    compute_slowdown: 2\n");
    const std::string second = "  - name: a\n    chips: [1";
    try {
      load_scenario_text(text, kFile);
      FAIL("expected an InputError");
    } catch (const InputError& error) {
      CHECK(error.key() == "perturbations[1].name");
      CHECK(error.where().line == line_of(text, second));
      CHECK(contains(error.expected(), "used twice"));
    }
  }
  SECTION("a NIC on a single slice") {
    const auto text = with("  slices: 2\n", "", perturbed("  - nics: {host: 0}\n    bandwidth_scale: 0.5\n"));
    require_error(text, "perturbations[0].nics", "{host: 0}", "nics:", "topology.slices is 1");
  }
  SECTION("a host out of range") {
    const auto text = perturbed("  - nics: {host: 16}\n    bandwidth_scale: 0.5\n");
    require_error(text, "perturbations[0].nics.host", "16", "{host: 16}", "from 0 to 15 on the 16 hosts of a slice");
  }
  SECTION("the block as a mapping") {
    const auto text = with(kEntry, "  slow: {chips: [0, 0, 0]}\n");
    require_error(text, "perturbations", "{slow: {chips: [0, 0, 0]}}", "slow:", "expected a list");
  }

}
