// The book's closed-form collective costs (collectives/formulas.hpp). Every expectation is
// derived from the formula and the hardware numbers (hardware.md section 2, book-cases.md
// Part 3); the book's printed answers are checked only loosely, where its rounding is known.
#include <catch2/catch.hpp>

#include <algorithm>
#include <stdexcept>

#include "collectives/formulas.hpp"

using namespace podsim;

namespace {

constexpr double kUs = 1e-6;
constexpr double kBf16 = 2;         // bytes per bf16 element
constexpr double kIciUni = 4.5e10;  // v5e and v4p one-way ICI link bandwidth (tpus.md:L203-L212)
constexpr double kIciBidi = 2 * kIciUni;
constexpr double kHop = 1e-6;       // T_min (sharding.md:L338)

FormulaInputs inputs(CollectiveKind kind, std::vector<AxisInfo> axes, double bytes,
                     bool bidirectional = true) {
  FormulaInputs in;
  in.kind = kind;
  in.axes = std::move(axes);
  in.bytes = bytes;
  in.bidirectional = bidirectional;
  in.link_bandwidth_Bps = kIciUni;
  in.hop_latency_s = kHop;
  return in;
}

}  // namespace

TEST_CASE("v5e {X:8,Y:4} AllGather_Y of bf16[2048,8192] (book case 22)", "[formulas]") {
  const double v = 2048.0 * 8192.0 * kBf16;  // 33,554,432 B
  REQUIRE(v == 33554432.0);

  SECTION("with wraparound: V/W_bidi, bandwidth-bound") {
    const FormulaResult r = book_collective_time(inputs(CollectiveKind::AllGather, {{4, true}}, v));
    CHECK(r.bandwidth_time_s == Approx(v / kIciBidi));
    CHECK(r.latency_time_s == Approx(2 * kHop));  // floor(4/2) hops
    CHECK(r.time_s == Approx(v / kIciBidi));      // ~372.8 us
    CHECK(r.regime == "bandwidth-bound");
    CHECK(r.source.find("sharding.md:L326-L332") != std::string::npos);
    // The book rounds V to 34e6 and prints 377 us; our exact V gives ~1% less.
    CHECK(r.time_s == Approx(34e6 / kIciBidi).epsilon(0.02));
  }

  SECTION("without wraparound (v5e axis of 4): (X-1)*shard/W_uni") {
    const FormulaResult r = book_collective_time(inputs(CollectiveKind::AllGather, {{4, false}}, v));
    const double shard = v / 4;
    CHECK(r.bandwidth_time_s == Approx(3 * shard / kIciUni));  // ~559 us
    CHECK(r.latency_time_s == Approx(3 * kHop));
    CHECK(r.time_s == Approx(3 * shard / kIciUni));
    CHECK(r.regime == "bandwidth-bound");
    CHECK(r.source.find("sharding.md:L366-L375") != std::string::npos);
    CHECK(r.time_s == Approx(560 * kUs).epsilon(0.01));  // the book's 560 us
  }
}

TEST_CASE("v5e AllGather_Y of bf16[256,256] without wraparound is latency-bound (book case 23)",
          "[formulas]") {
  const double v = 256.0 * 256.0 * kBf16;
  const FormulaResult r = book_collective_time(inputs(CollectiveKind::AllGather, {{4, false}}, v));
  CHECK(r.bandwidth_time_s == Approx(3 * (v / 4) / kIciUni));
  CHECK(r.latency_time_s == Approx(3 * kHop));
  REQUIRE(r.latency_time_s >= r.bandwidth_time_s);
  CHECK(r.regime == "latency-bound");
  CHECK(r.time_s == Approx(3 * kHop));
}

TEST_CASE("v4p 4x4x4 cube, B=1024, D=4096 bf16 (book case 25)", "[formulas]") {
  const double b = 1024, d = 4096;
  const int x = 4, y = 4;  // mesh {X:4, Y:4, Z:4}; every axis is a 4-ring
  const AxisInfo ring{4, true};

  SECTION("(a) AllGather_X([B_X, D_Y]): V = 2BD/Y over one axis -> V/W_bidi") {
    const double v = kBf16 * b * d / y;
    const FormulaResult r = book_collective_time(inputs(CollectiveKind::AllGather, {ring}, v));
    CHECK(r.time_s == Approx(v / kIciBidi));
    CHECK(r.regime == "bandwidth-bound");
    CHECK(r.time_s == Approx(23 * kUs).epsilon(0.02));
  }

  SECTION("(b) AllGather_XY([B_X, D_Y]): V = 2BD over two axes -> V/(2*W_bidi)") {
    const double v = kBf16 * b * d;
    const FormulaResult r = book_collective_time(inputs(CollectiveKind::AllGather, {ring, ring}, v));
    CHECK(r.bandwidth_time_s == Approx(v / (2 * kIciBidi)));
    CHECK(r.latency_time_s == Approx((2 + 2) * kHop));  // the book's 4 us latency bound
    CHECK(r.time_s == Approx(v / (2 * kIciBidi)));
    CHECK(r.time_s == Approx(46 * kUs).epsilon(0.02));
    CHECK(r.source.find("L358-L362") != std::string::npos);
  }

  SECTION("(c) AllReduce_Z([B_X, D_Y]{U_Z}): V = 2BD/(XY) -> 2V/W_bidi") {
    const double v = kBf16 * b * d / (x * y);
    const FormulaResult r = book_collective_time(inputs(CollectiveKind::AllReduce, {ring}, v));
    CHECK(r.bandwidth_time_s == Approx(2 * v / kIciBidi));
    CHECK(r.latency_time_s == Approx(2 * 2 * kHop));
    CHECK(r.time_s == Approx(2 * v / kIciBidi));
    CHECK(r.time_s == Approx(11.6 * kUs).epsilon(0.01));
    CHECK(r.source.find("sharding.md:L423-L429") != std::string::npos);
  }

  SECTION("case 26 (a): reshard to [B_XZ, D_Y] and AllGather_XZ: V = 2BD/Y over two axes") {
    const double v = kBf16 * b * d / y;
    const FormulaResult r = book_collective_time(inputs(CollectiveKind::AllGather, {ring, ring}, v));
    CHECK(r.time_s == Approx(v / (2 * kIciBidi)));
  }
}

TEST_CASE("latency-bound AllGather_X([B_X]) with B=128 on a v4p 4-ring (book case 27)", "[formulas]") {
  const double v = 128 * kBf16;  // 256 B total, 64 B per device
  const FormulaResult r = book_collective_time(inputs(CollectiveKind::AllGather, {{4, true}}, v));
  CHECK(r.latency_time_s == Approx(2 * kHop));  // floor(4/2) = 2 hops
  CHECK(r.bandwidth_time_s == Approx(v / kIciBidi));
  CHECK(r.regime == "latency-bound");
  CHECK(r.time_s == Approx(2 * kHop));
}

TEST_CASE("regime flips where T_min*floor(X/2) equals V/W_bidi (book case 20)", "[formulas]") {
  const int x = 16;
  const double v_threshold = kHop * (x / 2) * kIciBidi;
  const auto at = [&](double v) {
    return book_collective_time(inputs(CollectiveKind::AllGather, {{x, true}}, v));
  };
  CHECK(at(v_threshold).regime == "latency-bound");  // ties count as latency-bound
  CHECK(at(0.5 * v_threshold).regime == "latency-bound");
  CHECK(at(2 * v_threshold).regime == "bandwidth-bound");
  // Per hop the book's threshold is one hop's data = W_uni * T_min = 45 kB (sharding.md:L348):
  // each hop moves 2V/(X*W_bidi) = (V/X)/W_uni.
  CHECK(v_threshold / x == Approx(kIciUni * kHop));
}

TEST_CASE("AllReduce is twice AllGather and ReduceScatter equals AllGather", "[formulas]") {
  const double v = 64e6;
  const std::vector<std::vector<AxisInfo>> groups = {
      {{8, true}}, {{4, true}, {4, true}}, {{4, false}}, {{16, true}, {4, false}}};
  for (bool bidir : {true, false}) {
    for (const auto& axes : groups) {
      const FormulaResult ag = book_collective_time(inputs(CollectiveKind::AllGather, axes, v, bidir));
      const FormulaResult rs = book_collective_time(inputs(CollectiveKind::ReduceScatter, axes, v, bidir));
      const FormulaResult ar = book_collective_time(inputs(CollectiveKind::AllReduce, axes, v, bidir));
      CHECK(rs.time_s == Approx(ag.time_s));
      CHECK(ar.bandwidth_time_s == Approx(2 * ag.bandwidth_time_s));
      CHECK(ar.latency_time_s == Approx(2 * ag.latency_time_s));
      CHECK(ar.time_s == Approx(2 * ag.time_s));
    }
  }
}

TEST_CASE("AllToAll (book case 30)", "[formulas]") {
  const double v = 64e6;

  SECTION("1D bidirectional ring: V/(4*W_bidi), a quarter of the AllGather") {
    const FormulaResult a2a = book_collective_time(inputs(CollectiveKind::AllToAll, {{8, true}}, v));
    const FormulaResult ag = book_collective_time(inputs(CollectiveKind::AllGather, {{8, true}}, v));
    CHECK(a2a.bandwidth_time_s == Approx(v / (4 * kIciBidi)));
    CHECK(a2a.bandwidth_time_s == Approx(ag.bandwidth_time_s / 4));
    CHECK(a2a.latency_time_s == Approx(4 * kHop));  // floor(8/2)
    CHECK(a2a.source == "sharding.md:L471-L479");
  }

  SECTION("ND: V*max(A,B)/(4*N*W_bidi) with N the device count") {
    const FormulaResult r =
        book_collective_time(inputs(CollectiveKind::AllToAll, {{4, true}, {8, true}}, v));
    CHECK(r.bandwidth_time_s == Approx(v * 8 / (4 * 32 * kIciBidi)));
    CHECK(r.latency_time_s == Approx((2 + 4) * kHop));
  }

  SECTION("unidirectional ring: half of the unidirectional AllGather") {
    const FormulaResult a2a =
        book_collective_time(inputs(CollectiveKind::AllToAll, {{8, true}}, v, false));
    const FormulaResult ag =
        book_collective_time(inputs(CollectiveKind::AllGather, {{8, true}}, v, false));
    CHECK(a2a.bandwidth_time_s == Approx(ag.bandwidth_time_s / 2));
    CHECK(a2a.bandwidth_time_s == Approx(v / kIciUni * 7.0 / 8.0 / 2));
  }

  SECTION("no wraparound: the wraparound formula, flagged") {
    const FormulaResult r = book_collective_time(inputs(CollectiveKind::AllToAll, {{4, false}}, v));
    CHECK(r.bandwidth_time_s == Approx(v / (4 * kIciBidi)));
    CHECK(r.formula.find("assumes wraparound") != std::string::npos);
  }
}

TEST_CASE("unidirectional rings: V/W_uni*(X-1)/X, (X-1) hops", "[formulas]") {
  const double v = 64e6;
  const FormulaResult one = book_collective_time(inputs(CollectiveKind::AllGather, {{8, true}}, v, false));
  CHECK(one.bandwidth_time_s == Approx(v / kIciUni * 7.0 / 8.0));
  CHECK(one.latency_time_s == Approx(7 * kHop));
  CHECK(one.source.find("sharding.md:L566") != std::string::npos);

  // Several axes: each carries V/N_axes under the same rule, the slowest sets the time.
  const FormulaResult two =
      book_collective_time(inputs(CollectiveKind::AllGather, {{8, true}, {4, true}}, v, false));
  CHECK(two.bandwidth_time_s == Approx((v / 2) / kIciUni * 7.0 / 8.0));
  CHECK(two.latency_time_s == Approx((7 + 3) * kHop));
}

TEST_CASE("mixed wraparound: each axis's share under its own rule, max over axes", "[formulas]") {
  // v5e 16x4: the 16 axis wraps, the 4 axis does not (tpus.md:L150).
  const double v = 64e6;
  const FormulaResult r =
      book_collective_time(inputs(CollectiveKind::AllGather, {{16, true}, {4, false}}, v));
  const double share = v / 2;
  const double ring_s = share / kIciBidi;
  const double line_s = 3 * (share / 4) / kIciUni;
  CHECK(r.bandwidth_time_s == Approx(std::max(ring_s, line_s)));
  CHECK(r.latency_time_s == Approx((8 + 3) * kHop));
  CHECK(r.source.find("sharding.md:L326-L332") != std::string::npos);
  CHECK(r.source.find("L366-L375") != std::string::npos);
}

TEST_CASE("axes of size 1 contribute nothing", "[formulas]") {
  const double v = 64e6;
  for (CollectiveKind kind : {CollectiveKind::AllGather, CollectiveKind::ReduceScatter,
                              CollectiveKind::AllReduce, CollectiveKind::AllToAll}) {
    const FormulaResult none = book_collective_time(inputs(kind, {{1, true}, {1, false}}, v));
    CHECK(none.time_s == 0);
    CHECK(book_collective_time(inputs(kind, {}, v)).time_s == 0);
    const FormulaResult with_ones = book_collective_time(inputs(kind, {{1, false}, {8, true}, {1, true}}, v));
    const FormulaResult alone = book_collective_time(inputs(kind, {{8, true}}, v));
    CHECK(with_ones.time_s == Approx(alone.time_s));
    CHECK(with_ones.latency_time_s == Approx(alone.latency_time_s));
  }
  // No bandwidth is needed when nothing moves.
  FormulaInputs trivial = inputs(CollectiveKind::AllReduce, {{1, true}}, v);
  trivial.link_bandwidth_Bps = 0;
  CHECK(book_collective_time(trivial).time_s == 0);
}

TEST_CASE("allgather_bidir_time_s matches the general formula", "[formulas]") {
  const double v = 33554432;
  CHECK(allgather_bidir_time_s(v, 4, kIciUni, kHop) == Approx(v / kIciBidi));
  CHECK(allgather_bidir_time_s(256, 4, kIciUni, kHop) == Approx(2 * kHop));
  CHECK(allgather_bidir_time_s(v, 1, kIciUni, kHop) == 0);
}

TEST_CASE("DCN AllReduce: hierarchical vs one flat ring", "[formulas]") {
  // v5p: 6.25e9 B/s DCN per chip, 4 chips per host -> 2.5e10 per host (hardware.md section 4).
  const double w_chip = 6.25e9;
  const double w_host = 4 * w_chip;
  const double v = 1e9;
  const int chips = 64, slices = 4;

  const double hier = dcn_hierarchical_allreduce_time_s(v, chips, slices, w_chip);
  CHECK(hier == Approx(2 * (v / chips) * 3.0 / 4.0 / w_chip));
  const double flat = dcn_flat_ring_allreduce_time_s(v, chips * slices, slices, w_host);
  const double n = chips * slices;
  CHECK(flat == Approx(2 * v * (n - 1) / n / w_host));
  CHECK(flat > hier);

  CHECK(dcn_hierarchical_allreduce_time_s(v, chips, 1, w_chip) == 0);
  CHECK(dcn_flat_ring_allreduce_time_s(v, chips, 1, w_host) == 0);
}

TEST_CASE("nccl-tests size: an AllToAll's is one rank's send buffer", "[formulas]") {
  for (auto kind : {CollectiveKind::AllGather, CollectiveKind::ReduceScatter, CollectiveKind::AllReduce}) {
    CHECK(nccl_size_bytes(kind, 64e6, 16) == 64e6);
  }
  CHECK(nccl_size_bytes(CollectiveKind::AllToAll, 64e6, 16) == 4e6);
  // The v5e 16-ring: a 128 MiB AllToAll at the book's V / (4 W_bidi) = 2.98 ms has
  // algbw 128 MiB / 16 / 2.98 ms = 2.8 GB/s per rank (not the whole array's 45 GB/s).
  const double v = 128.0 * 1024 * 1024, t = v / (4 * 9e10);
  CHECK(algbw_Bps(nccl_size_bytes(CollectiveKind::AllToAll, v, 16), t) == Approx(4 * 9e10 / 16));
}

namespace {

// nccl-tests 2.19.6 (src/common.cu setupArgs and TimeTest's preamble, src/{all_reduce,
// all_gather,reduce_scatter,alltoall}.cu GetCollByteCount and GetBw), transcribed: for a
// requested size, the size and count its table prints and the bandwidths it computes.
struct NcclTestsRow {
  size_t size = 0, count = 0;
  double algbw_GBps = 0, busbw_GBps = 0;
};
NcclTestsRow nccl_tests_row(CollectiveKind kind, size_t size, size_t elt, int nranks, double sec) {
  const size_t count = size / elt;
  size_t send = 0, recv = 0, param = 0;
  if (kind == CollectiveKind::AllReduce) {
    send = recv = param = count;
  } else {
    const size_t base = (count / nranks) & ~(16 / elt - 1);
    param = base;
    send = kind == CollectiveKind::AllGather ? base : base * nranks;
    recv = kind == CollectiveKind::ReduceScatter ? base : base * nranks;
  }
  NcclTestsRow row;
  row.size = std::max(send, recv) * elt;
  row.count = param;
  const double base_bw = kind == CollectiveKind::AllReduce ? double(param * elt) / 1.0E9 / sec
                                                           : double(param * elt * nranks) / 1.0E9 / sec;
  row.algbw_GBps = base_bw;
  row.busbw_GBps = base_bw * (kind == CollectiveKind::AllReduce ? double(2 * (nranks - 1)) / double(nranks)
                                                                : double(nranks - 1) / double(nranks));
  return row;
}

}  // namespace

TEST_CASE("size, count, algbw and busbw as nccl-tests computes them", "[formulas]") {
  const double sec = 123e-6;
  for (CollectiveKind kind : {CollectiveKind::AllReduce, CollectiveKind::AllGather, CollectiveKind::ReduceScatter,
                              CollectiveKind::AllToAll}) {
    for (int n : {2, 8, 16, 64}) {
      for (size_t elt : {1, 2, 4}) {
        // Sizes that split into 16-byte shares, where nccl-tests rounds nothing away.
        for (size_t size : {size_t(16) * n, size_t(1024) * n, size_t(1) << 30}) {
          INFO(to_string(kind) << " n " << n << " element " << elt << " size " << size);
          const NcclTestsRow ref = nccl_tests_row(kind, size, elt, n, sec);
          CHECK(ref.size == size);
          const double bytes = bytes_for_nccl_size(kind, double(size), n);
          CHECK(nccl_size_bytes(kind, bytes, n) == double(size));
          CHECK(nccl_count_elements(kind, double(size), int(8 * elt), n) == double(ref.count));
          CHECK(algbw_Bps(double(size), sec) / 1e9 == Approx(ref.algbw_GBps).epsilon(1e-15));
          CHECK(busbw_Bps(kind, double(size), sec, n) / 1e9 == Approx(ref.busbw_GBps).epsilon(1e-15));
        }
      }
    }
  }
  CHECK_THROWS_AS(nccl_count_elements(CollectiveKind::AllGather, 64, 0, 4), std::invalid_argument);
  CHECK_THROWS_AS(bytes_for_nccl_size(CollectiveKind::AllToAll, 64, 0), std::invalid_argument);
}

TEST_CASE("nccl-tests algbw and busbw", "[formulas]") {
  const double bytes = 1e9, t = 0.01;
  CHECK(algbw_Bps(bytes, t) == Approx(1e11));
  CHECK(busbw_Bps(CollectiveKind::AllReduce, bytes, t, 8) == Approx(1e11 * 2 * 7.0 / 8.0));
  for (CollectiveKind kind : {CollectiveKind::AllGather, CollectiveKind::ReduceScatter,
                              CollectiveKind::AllToAll}) {
    CHECK(busbw_Bps(kind, bytes, t, 8) == Approx(1e11 * 7.0 / 8.0));
  }
  CHECK(busbw_Bps(CollectiveKind::AllReduce, bytes, t, 1) == 0);

  // Consistency: a bidirectional-ring AllGather's busbw is (X-1)/X * V/T = (X-1)/X * W_bidi,
  // the bandwidth the book says each chip puts on its axis (book case 21 measures this).
  const double v = 1e8;
  const double time = allgather_bidir_time_s(v, 16, kIciUni, 0);
  CHECK(busbw_Bps(CollectiveKind::AllGather, v, time, 16) == Approx(kIciBidi * 15.0 / 16.0));
}

TEST_CASE("bad inputs throw std::invalid_argument", "[formulas]") {
  SECTION("axis size 0") {
    REQUIRE_THROWS_AS(book_collective_time(inputs(CollectiveKind::AllGather, {{0, true}}, 1e6)),
                      std::invalid_argument);
  }
  SECTION("negative bytes") {
    REQUIRE_THROWS_AS(book_collective_time(inputs(CollectiveKind::AllGather, {{4, true}}, -1)),
                      std::invalid_argument);
  }
  SECTION("zero bandwidth with data to move") {
    FormulaInputs in = inputs(CollectiveKind::AllGather, {{4, true}}, 1e6);
    in.link_bandwidth_Bps = 0;
    REQUIRE_THROWS_AS(book_collective_time(in), std::invalid_argument);
  }
  SECTION("negative hop latency") {
    FormulaInputs in = inputs(CollectiveKind::AllGather, {{4, true}}, 1e6);
    in.hop_latency_s = -1e-6;
    REQUIRE_THROWS_AS(book_collective_time(in), std::invalid_argument);
  }
  SECTION("DCN helpers") {
    REQUIRE_THROWS_AS(dcn_hierarchical_allreduce_time_s(1e6, 0, 2, 1e9), std::invalid_argument);
    REQUIRE_THROWS_AS(dcn_hierarchical_allreduce_time_s(1e6, 4, 2, 0), std::invalid_argument);
    REQUIRE_THROWS_AS(dcn_flat_ring_allreduce_time_s(1e6, 2, 4, 1e9), std::invalid_argument);
    REQUIRE_THROWS_AS(dcn_flat_ring_allreduce_time_s(1e6, 8, 0, 1e9), std::invalid_argument);
  }
  SECTION("bandwidth helpers") {
    REQUIRE_THROWS_AS(algbw_Bps(1e6, 0), std::invalid_argument);
    REQUIRE_THROWS_AS(busbw_Bps(CollectiveKind::AllGather, 1e6, 1e-3, 0), std::invalid_argument);
  }
}
