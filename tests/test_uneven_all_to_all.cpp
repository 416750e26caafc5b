// AllToAll with per-pair sizes (CollectiveSpec::pair_bytes), the primitive of an MoE layer's
// dispatch and combine under uneven routing: equal pair sizes are the uniform AllToAll, a lone
// block takes the time of one message, and chips with more to receive finish later.
#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include "meshes.hpp"
#include "sim/engine/run.hpp"

using namespace podsim;

namespace {

ProgramOp all_to_all(std::vector<int> axes, double bytes, std::vector<double> pairs = {}) {
  ProgramOp op;
  op.name = "a2a";
  op.collective().kind = CollectiveKind::AllToAll;
  op.collective().axes = std::move(axes);
  op.collective().bytes = bytes;
  op.collective().pair_bytes = std::move(pairs);
  return op;
}

}  // namespace

TEST_CASE("uneven all_to_all: equal pair sizes are the uniform AllToAll on every chip", "[collectives][moe]") {
  for (const auto& sizes : {std::vector<int>{8}, std::vector<int>{4, 4}, std::vector<int>{4, 2}}) {
    const TopologySpec pod = podsim_test::v5e_mesh(sizes);
    std::vector<int> axes;
    long long g = 1;
    for (size_t a = 0; a < sizes.size(); ++a) {
      axes.push_back(static_cast<int>(a));
      g *= sizes[a];
    }
    const double bytes = 64e6;
    std::vector<double> pairs(g * g, bytes / double(g * g));
    const auto uniform = run_program(pod, {}, {all_to_all(axes, bytes)}, {Fidelity::Full, false, {}});
    const auto uneven = run_program(pod, {}, {all_to_all(axes, bytes, pairs)}, {Fidelity::Full, false, {}});
    for (ChipId chip = 0; chip < uniform.topology.chip_count(); ++chip) {
      CHECK(uneven.span(0, 0, chip).end_s == Approx(uniform.span(0, 0, chip).end_s).epsilon(1e-12));
    }
    // With pair sizes the reduction keeps the axes whole and says why.
    const auto reduced = run_program(pod, {}, {all_to_all(axes, bytes, pairs)}, {Fidelity::Auto, false, {}});
    CHECK(reduced.simulated.chip_count() == reduced.topology.chip_count());
    CHECK(reduced.reduction.axes[0].reason.find("uneven blocks") != std::string::npos);
  }
}

TEST_CASE("uneven all_to_all: one block alone arrives after bytes / W, or its hops' latency floor", "[collectives][moe]") {
  const TopologySpec pod = podsim_test::v5e_mesh({16});   // a wrapped ring of 16
  const double w = pod.chip.neighbor_bandwidth_Bps();
  for (const double b : {1e3, 4.5e5, 8e6}) {
    for (const int to : {1, 3, 8}) {
      std::vector<double> pairs(16 * 16, 0.0);
      pairs[0 * 16 + to] = b;
      const auto run = run_program(pod, {}, {all_to_all({0}, b, pairs)}, {Fidelity::Full, false, {}});
      const int hops = std::min(to, 16 - to);
      // Half way round, the block splits over both directions: each half on its own link.
      const double transfer = to == 8 ? b / 2 / w : b / w;
      INFO(b << " bytes to chip " << to);
      // The receiver holds it until its hops' latency floor (the floor hop model); the sender
      // is done when its block has left.
      CHECK(run.span(0, 0, to).end_s == Approx(std::max(transfer, hops * pod.chip.hop_latency_s)).epsilon(1e-9));
      CHECK(run.span(0, 0, 0).end_s == Approx(transfer).epsilon(1e-9));
      CHECK(run.span(0, 0, 5).end_s == 0.0);   // nothing to send or receive
    }
  }
}

TEST_CASE("uneven all_to_all: the chip that receives the most finishes last", "[collectives][moe]") {
  // Every chip sends chip 2 four times what it sends the others (a hot expert's chip).
  const TopologySpec pod = podsim_test::v5e_mesh({8});
  std::vector<double> pairs(64);
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) pairs[i * 8 + j] = j == 2 ? 4e6 : 1e6;
  const auto run = run_program(pod, {}, {all_to_all({0}, 0, pairs)}, {Fidelity::Full, false, {}});
  const double hot = run.span(0, 0, 2).end_s;
  for (ChipId chip = 0; chip < 8; ++chip) CHECK(run.span(0, 0, chip).end_s <= hot + 1e-15);
  // Chip 2's incoming links carry 7 x 4 MB over its two ports: at least 14 MB / W each.
  CHECK(hot >= 14e6 / pod.chip.neighbor_bandwidth_Bps() * (1 - 1e-9));
}
