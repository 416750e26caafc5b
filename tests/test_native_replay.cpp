// The native replay (sim/engine/native_replay.hpp) follows the SimGrid replay's rules without
// SimGrid: on generated programs (tests/generated_programs.hpp: random collectives on random
// meshes up to 4x4x8, with and without wraparound, DCN slices, split axes, perturbed chips,
// links and NICs and random stragglers, AllToAlls even and uneven) every chip's start and end of every op must agree with the SimGrid full
// replay within 1e-9 relative, under both hop models.
//
// The default suite runs kDefaultCases cases. For thousands:
//   PODSIM_NATIVE_CASES=2000 build/tests/podsim_tests "[native]"
// PODSIM_NATIVE_SEED=<n> changes the seed; PODSIM_NATIVE_CASE=<index> replays one case.
#include <catch2/catch.hpp>

#include <cmath>
#include <optional>
#include <sstream>
#include <string>

#include "generated_programs.hpp"
#include "seeded_rng.hpp"
#include "sim/engine/fluid_network.hpp"
#include "sim/engine/run.hpp"

using namespace podsim;
using podsim_test::Case;
using podsim_test::close;
using podsim_test::env_int;

namespace {

constexpr int kDefaultCases = 200;
constexpr uint64_t kDefaultSeed = 20261127;


RunOptions full_with(ReplayEngine engine) {
  RunOptions options;
  options.fidelity = Fidelity::Full;
  options.engine = engine;
  return options;
}

// Lands every flow started so far and returns (tag, date) in landing order.
std::vector<std::pair<uint64_t, double>> drain(FluidNetwork& net, double now) {
  std::vector<std::pair<uint64_t, double>> out;
  std::vector<uint64_t> landed;
  net.settle(now);
  while (net.next_date() < 1e300) {
    now = net.next_date();
    landed.clear();
    net.advance(now, landed);
    for (uint64_t tag : landed) out.push_back({tag, now});
    net.settle(now);
  }
  return out;
}

}  // namespace

TEST_CASE("fluid network: one flow takes bytes / its slowest link's bandwidth", "[native]") {
  FluidNetwork net;
  const int a = net.add_link(1e9), b = net.add_link(4e9);
  net.start(0.0, net.add_route({a, b}), 1e6, 7);
  const auto landed = drain(net, 0.0);
  REQUIRE(landed.size() == 1);
  CHECK(landed[0].first == 7);
  CHECK(landed[0].second == Approx(1e6 / 1e9).epsilon(1e-12));   // cut-through: the slowest link
}

TEST_CASE("fluid network: flows share a link max-min, and a flow ending frees its share", "[native]") {
  FluidNetwork net;
  const int shared = net.add_link(1e9), wide = net.add_link(1e12), narrow = net.add_link(2.5e8);
  // f1 over shared alone; f2 over shared + narrow (held to 0.25 GB/s there): f1 gets the rest.
  net.start(0.0, net.add_route({shared}), 1.5e6, 1);
  net.start(0.0, net.add_route({shared, narrow}), 1e6, 2);
  net.start(0.0, net.add_route({wide}), 1e9, 3);   // its own component: 1 ms
  const auto landed = drain(net, 0.0);
  REQUIRE(landed.size() == 3);
  // f1 at 0.75 GB/s: 1.5 MB in 2 ms; f2 at 0.25 GB/s: 4 ms; f3 1 ms.
  CHECK(landed[0].first == 3);
  CHECK(landed[0].second == Approx(1e-3).epsilon(1e-12));
  CHECK(landed[1].first == 1);
  CHECK(landed[1].second == Approx(2e-3).epsilon(1e-12));
  CHECK(landed[2].first == 2);
  CHECK(landed[2].second == Approx(4e-3).epsilon(1e-12));
}

TEST_CASE("fluid network: a flow joining halves the other's rate from then on", "[native]") {
  FluidNetwork net;
  const int link = net.add_link(1e9);
  net.start(0.0, net.add_route({link}), 2e6, 1);   // alone: 2 ms
  net.settle(0.0);
  std::vector<uint64_t> landed;
  net.advance(1e-3, landed);        // nothing lands before 2 ms
  CHECK(landed.empty());
  net.start(1e-3, net.add_route({link}), 1e6, 2);  // from 1 ms both at 0.5 GB/s: each has 1 MB left, 2 ms
  const auto out = drain(net, 1e-3);
  REQUIRE(out.size() == 2);
  CHECK(out[0].second == Approx(3e-3).epsilon(1e-12));
  CHECK(out[1].second == Approx(3e-3).epsilon(1e-12));
}

TEST_CASE("fluid network: more flows on a link than it holds inline share it alike, as they end and start", "[native]") {
  // 20 flows of k MB on one 1 GB/s link (a link keeps 7 in itself, the rest in a spill list):
  // while n flows move each has 1/n GB/s, so flow k lands at sum over j <= k of (21 - j) x 1 ms
  // (each of the 21 - j flows still moving carries the j-th MB alike). Each landing empties an
  // inline place that the spill list's last flow moves into.
  FluidNetwork net;
  const int link = net.add_link(1e9);
  const int route = net.add_route({link});
  for (int k = 1; k <= 20; ++k) net.start(0.0, route, k * 1e6, static_cast<uint64_t>(k));
  const auto out = drain(net, 0.0);
  REQUIRE(out.size() == 20);
  double expected = 0;
  for (int k = 1; k <= 20; ++k) {
    expected += (21 - k) * 1e-3;
    CHECK(out[k - 1].first == static_cast<uint64_t>(k));
    CHECK(out[k - 1].second == Approx(expected).epsilon(1e-12));
  }
  // Then a lone flow on the emptied link has it whole again.
  net.start(out.back().second, route, 1e6, 99);
  const auto last = drain(net, out.back().second);
  REQUIRE(last.size() == 1);
  CHECK(last[0].second == Approx(out.back().second + 1e-3).epsilon(1e-12));
}

// The spans of every real chip that differ between two runs of one program; the first named.
int differing_spans(const RunResult& simgrid, const RunResult& native, int ops, std::string& first) {
  int wrong = 0;
  for (ChipId chip = 0; chip < simgrid.topology.chip_count(); ++chip) {
    for (int op = 0; op < ops; ++op) {
      const auto& s = simgrid.span(op, 0, chip);
      const auto& n = native.span(op, 0, chip);
      if (close(s.start_s, n.start_s) && close(s.end_s, n.end_s)) continue;
      if (wrong++ == 0) {
        std::ostringstream o;
        o.precision(17);
        o << "chip " << simgrid.topology.chip_name(chip) << " op " << op << ": simgrid [" << s.start_s << ", "
          << s.end_s << "] native [" << n.start_s << ", " << n.end_s << "]";
        first = o.str();
      }
    }
  }
  return wrong;
}

TEST_CASE("generated programs: the native replay equals the SimGrid replay on every chip", "[native][property]") {
  const uint64_t seed = static_cast<uint64_t>(env_int("PODSIM_NATIVE_SEED", static_cast<int>(kDefaultSeed)));
  const int cases = env_int("PODSIM_NATIVE_CASES", kDefaultCases);
  const int only = env_int("PODSIM_NATIVE_CASE", -1);
  int compared = 0, perturbed = 0, additive = 0, reduced = 0, all_to_all = 0, uneven = 0, failed = 0;
  for (int index = (only >= 0 ? only : 0); index < (only >= 0 ? only + 1 : cases); ++index) {
    Case c = podsim_test::generate(seed, index, uneven);
    // Every third case under the additive hop model (latency after landing, not a floor).
    if (index % 3 == 2) c.settings.hop_model = HopModel::Additive;
    // Each program full and symmetry-reduced: reduced meshes have rings of 2 positions, whose
    // two neighbours are one chip over two routes.
    for (const Fidelity fidelity : {Fidelity::Full, Fidelity::Auto}) {
      INFO("seed " << seed << " case " << index << ": " << c.description
                   << (c.settings.hop_model == HopModel::Additive ? " additive" : " floor")
                   << (fidelity == Fidelity::Full ? " full" : " reduced where exact"));
      RunOptions with_simgrid = full_with(ReplayEngine::SimGrid), with_native = full_with(ReplayEngine::Native);
      with_simgrid.fidelity = with_native.fidelity = fidelity;
      std::optional<RunResult> simgrid;
      try {
        simgrid.emplace(run_program(c.topology, c.settings, c.program, with_simgrid));
      } catch (const std::invalid_argument& e) {
        INFO(e.what());
        CHECK_THROWS_AS(run_program(c.topology, c.settings, c.program, with_native), std::invalid_argument);
        continue;
      }
      const RunResult native = run_program(c.topology, c.settings, c.program, with_native);
      if (fidelity == Fidelity::Full) {
        ++compared;
        perturbed += c.topology.perturbations.empty() ? 0 : 1;
        for (const auto& p : c.topology.perturbations) {
          if (p.kind == PerturbationKind::Links && p.bandwidth_scale == 0) {
            ++failed;
            break;
          }
        }
        additive += c.settings.hop_model == HopModel::Additive ? 1 : 0;
        for (const auto& op : c.program) {
          if (op.is(ProgramOpKind::Collective) && op.collective().kind == CollectiveKind::AllToAll) {
            ++all_to_all;
            break;
          }
        }
      } else if (simgrid->simulated.chip_count() < simgrid->topology.chip_count()) {
        ++reduced;
      }
      CHECK(native.replay.messages == simgrid->replay.messages);
      std::string first;
      const int wrong = differing_spans(*simgrid, native, static_cast<int>(c.program.size()), first);
      INFO(wrong << " spans differ, first: " << first);
      CHECK(wrong == 0);
    }
  }
  if (only < 0) {
    INFO(compared << " cases compared (" << perturbed << " perturbed, " << additive << " additive, " << all_to_all
                  << " with AllToAlls, " << uneven << " of them uneven, " << failed << " with a failed link), " << reduced
                  << " of them reduced too");
    CHECK(compared * 2 >= cases);
    CHECK(perturbed * 5 >= compared);
    CHECK(additive * 5 >= compared);
    CHECK(reduced * 5 >= compared);
    CHECK(all_to_all * 5 >= compared);
    CHECK(failed * 20 >= compared);
  }
}
