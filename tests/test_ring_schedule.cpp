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

// Shards each direction of a chip's links carries over a whole part list, in units of the
// chip's shard (message bytes x sends, summed over the parts), for a one-axis AllGather.
static std::pair<double, double> shards_per_direction(const std::vector<PartSchedule>& parts, double shard) {
  double plus = 0, minus = 0;
  for (const auto& part : parts)
    for (const auto& phase : part)
      for (const auto& c : ring_chains(phase.axis, 0, true))
        (c.direction > 0 ? plus : minus) += c.sends() * phase.message_bytes / shard;
  return {plus, minus};
}

TEST_CASE("antipodal split: each direction of an even wrapped ring carries (X-1)/2 shards in X/2 steps",
          "[schedule]") {
  for (int n : {2, 4, 8, 16}) {
    const double V = 1 << 20, shard = V / n;
    const auto book = ring_parts(CollectiveKind::AllGather, {{0, n, true}}, V);
    const auto split = ring_parts(CollectiveKind::AllGather, {{0, n, true}}, V, nullptr, true);
    REQUIRE(book.size() == 1);
    REQUIRE(split.size() == 2);   // two half-size copies, the long way mirrored
    CHECK(split[0][0].axis.long_way == +1);
    CHECK(split[1][0].axis.long_way == -1);
    // The book's schedule: floor(X/2) shards the long way, X/2 - 1 the other.
    const auto [book_plus, book_minus] = shards_per_direction(book, shard);
    CHECK(book_plus == Approx(n / 2));
    CHECK(book_minus == Approx(n / 2 - 1));
    // Split: (X-1)/2 each way (sharding.md:L352-L356's link bandwidth bytes (X-1)/(2 X t)).
    const auto [plus, minus] = shards_per_direction(split, shard);
    CHECK(plus == Approx((n - 1) / 2.0));
    CHECK(minus == Approx((n - 1) / 2.0));
    // Latency: the longest chain still has X/2 steps.
    int steps = 0;
    for (const auto& part : split)
      for (const auto& c : ring_chains(part[0].axis, 0, true)) steps = std::max(steps, c.receives);
    CHECK(steps == n / 2);
  }
}

TEST_CASE("antipodal split leaves odd rings, lines and DCN-only parts whole", "[schedule]") {
  const double V = 1 << 20;
  CHECK(ring_parts(CollectiveKind::AllGather, {{0, 7, true}}, V, nullptr, true).size() == 1);
  CHECK(ring_parts(CollectiveKind::AllGather, {{0, 4, false}}, V, nullptr, true).size() == 1);
  const RingAxis dcn{kDcnAxis, 4, true};
  CHECK(ring_parts(CollectiveKind::AllReduce, {}, V, &dcn, true).size() == 1);
  // Two axes, one of them even and wrapped: both parts split, bytes conserved.
  const auto parts = ring_parts(CollectiveKind::ReduceScatter, {{0, 3, true}, {1, 4, true}}, V, nullptr, true);
  REQUIRE(parts.size() == 4);
  double first_phase = 0;
  for (const auto& part : parts) first_phase += part[0].message_bytes * part[0].axis.size;
  CHECK(first_phase == Approx(V));
}
