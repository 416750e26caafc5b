// Ring schedules as plain data: hop counts and bytes per step, derived by hand.
#include <catch2/catch.hpp>

#include "collectives/ring_schedule.hpp"

using namespace podsim;

TEST_CASE("bidirectional ring with wraparound: floor(X/2) steps one way, the rest the other", "[schedule]") {
  for (int n : {2, 3, 4, 7, 16}) {
    const auto chains = ring_chains({0, n, true}, 0, true);
    int total_received = 0;
    for (const auto& c : chains) {
      CHECK(c.sends_own);
      CHECK(c.forwards == c.receives - 1);
      total_received += c.receives;
    }
    CHECK(chains[0].receives == n / 2);
    CHECK(total_received == n - 1);   // every other shard arrives exactly once
  }
}

TEST_CASE("a line: every chip receives every other shard, ends send one way only", "[schedule]") {
  const int n = 4;
  for (int i = 0; i < n; ++i) {
    int received = 0, sends_right = 0, sends_left = 0;
    for (const auto& c : ring_chains({0, n, false}, i, true)) {
      received += c.receives;
      (c.direction > 0 ? sends_right : sends_left) += c.sends();
    }
    CHECK(received == n - 1);
    CHECK(sends_right == (i < n - 1 ? i + 1 : 0));
    CHECK(sends_left == (i > 0 ? n - i : 0));
  }
}

TEST_CASE("one-way ring on a line closes over the reverse links", "[schedule]") {
  const auto last = ring_chains({0, 8, false}, 7, false);
  REQUIRE(last.size() == 1);
  CHECK(last[0].hops == 7);
  CHECK(ring_chains({0, 8, false}, 3, false)[0].hops == 1);
}

TEST_CASE("multi-axis parts rotate the axes and split the bytes", "[schedule]") {
  const std::vector<RingAxis> axes = {{0, 4, true}, {1, 8, true}};
  const double V = 64.0 * 1024;
  const auto parts = ring_parts(CollectiveKind::AllGather, axes, V);
  REQUIRE(parts.size() == 2);
  CHECK(parts[0][0].axis.axis == 0);
  CHECK(parts[1][0].axis.axis == 1);
  // Part 0 starts from V/2/(4*8) per chip and gathers 4x over X, then 8x over Y.
  CHECK(parts[0][0].message_bytes == Approx(V / 2 / 32));
  CHECK(parts[0][1].message_bytes == Approx(V / 2 / 8));
  const auto reduce = ring_parts(CollectiveKind::AllReduce, axes, V);
  REQUIRE(reduce[0].size() == 4);
  CHECK(reduce[0][0].message_bytes == Approx(V / 2 / 4));    // scatter over X first
  CHECK(reduce[0][3].axis.axis == 0);                        // gather over X last
}

TEST_CASE("DCN phases sit innermost", "[schedule]") {
  const RingAxis dcn{kDcnAxis, 2, true};
  const auto ar = ring_parts(CollectiveKind::AllReduce, {{0, 4, true}}, 1024, &dcn);
  REQUIRE(ar[0].size() == 4);
  CHECK(ar[0][1].axis.axis == kDcnAxis);
  CHECK(ar[0][2].axis.axis == kDcnAxis);
  const auto ag = ring_parts(CollectiveKind::AllGather, {{0, 4, true}}, 1024, &dcn);
  CHECK(ag[0][0].axis.axis == kDcnAxis);
}
