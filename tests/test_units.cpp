// Quantities with units (sim/scenario/units.hpp): each expectation is the SI definition of the unit.
#include <catch2/catch.hpp>

#include <cmath>
#include <stdexcept>
#include <string>

#include "sim/scenario/units.hpp"

using namespace podsim;
using Catch::Matchers::Contains;

TEST_CASE("bandwidths convert to bytes per second", "[units]") {
  CHECK(parse_bandwidth_Bps("45 GB/s") == Approx(4.5e10));
  CHECK(parse_bandwidth_Bps("4.5e10 B/s") == Approx(4.5e10));
  CHECK(parse_bandwidth_Bps("1.8e11 B/s") == Approx(1.8e11));
  CHECK(parse_bandwidth_Bps("90 GiB/s") == Approx(90.0 * (1ULL << 30)));
  CHECK(parse_bandwidth_Bps("45GBps") == Approx(4.5e10));
  SECTION("lower-case b means bits") {
    CHECK(parse_bandwidth_Bps("400 Gbps") == Approx(5e10));
    CHECK(parse_bandwidth_Bps("400 Gb/s") == Approx(5e10));
    CHECK(parse_bandwidth_Bps("200 Mb/s") == Approx(2.5e7));
  }
  SECTION("kilo is k or K, binary kilo is Ki") {
    CHECK(parse_bandwidth_Bps("1 kB/s") == Approx(1e3));
    CHECK(parse_bandwidth_Bps("1 KB/s") == Approx(1e3));
    CHECK(parse_bandwidth_Bps("1 KiB/s") == Approx(1024));
    CHECK(parse_bandwidth_Bps("2 PB/s") == Approx(2e15));
    CHECK(parse_bandwidth_Bps("1 TiB/s") == Approx(0x1p40));
  }
}

TEST_CASE("bad bandwidths are rejected with what was expected", "[units]") {
  for (const char* text : {"45", "4.5e10", "45 GB", "45 gb/s", "45 mB/s", "-45 GB/s", "0 GB/s", "nan GB/s",
                           "inf B/s", "1e400 B/s", "GB/s", "", "   ", "45 GB/s extra", "0x10 B/s", "1e999999999999 GB/s"}) {
    INFO(text);
    CHECK_THROWS_AS(parse_bandwidth_Bps(text), std::invalid_argument);
  }
  CHECK_THROWS_WITH(parse_bandwidth_Bps("45"), Contains("missing unit") && Contains("45 GB/s"));
  CHECK_THROWS_WITH(parse_bandwidth_Bps("-1 GB/s"), Contains("negative"));
  CHECK_THROWS_WITH(parse_bandwidth_Bps("0 GB/s"), Contains("positive"));
  CHECK_THROWS_WITH(parse_bandwidth_Bps("1 furlong/s"), Contains("unknown unit 'furlong/s'"));
}

TEST_CASE("times convert to seconds", "[units]") {
  CHECK(parse_time_s("1 us") == Approx(1e-6));
  CHECK(parse_time_s("1us") == Approx(1e-6));
  CHECK(parse_time_s("1 \xC2\xB5s") == Approx(1e-6));   // MICRO SIGN
  CHECK(parse_time_s("1 \xCE\xBCs") == Approx(1e-6));   // GREEK SMALL LETTER MU
  CHECK(parse_time_s("2.5 ms") == Approx(2.5e-3));
  CHECK(parse_time_s("10 ns") == Approx(1e-8));
  CHECK(parse_time_s("1 s") == Approx(1.0));
  CHECK(parse_time_s("560 us") == Approx(5.6e-4));
  CHECK(parse_time_s(".5 s") == Approx(0.5));
  CHECK(parse_time_s("0 us") == 0.0);   // a zero overhead is meaningful
  CHECK(parse_time_s("1 min") == 60.0);
  CHECK(parse_time_s("48 h") == 48 * 3600.0);
  CHECK(parse_time_s("1.5d") == 1.5 * 86400);
}

TEST_CASE("bad times are rejected", "[units]") {
  for (const char* text : {"1", "1e-6", "-1 us", "1 Ms", "1 mh", "1 kd", "h", "-2 h", "1 Gs", "nan s", "1 uss", "us", "1.2.3 s", "1e s"}) {
    INFO(text);
    CHECK_THROWS_AS(parse_time_s(text), std::invalid_argument);
  }
  CHECK_THROWS_WITH(parse_time_s("5"), Contains("missing unit") && Contains("bare number is not accepted"));
}

TEST_CASE("byte counts are exact", "[units]") {
  CHECK(parse_bytes("16 GiB") == 16ULL << 30);
  CHECK(parse_bytes("16 GB") == 16'000'000'000ULL);
  CHECK(parse_bytes("1 KiB") == 1024);
  CHECK(parse_bytes("512 B") == 512);
  CHECK(parse_bytes("8.4e6 B") == 8'400'000);
  CHECK(parse_bytes("34 MB") == 34'000'000);
  CHECK(parse_bytes("1.5 KiB") == 1536);
  CHECK(parse_bytes("1.1 GB") == 1'100'000'000ULL);
  CHECK(parse_bytes("4096") == 4096);
  CHECK(parse_bytes("18446744073709551615") == 18446744073709551615ULL);
  CHECK(parse_bytes("15 PiB") == 15ULL << 50);
}

TEST_CASE("bad byte counts are rejected", "[units]") {
  for (const char* text : {"0", "0 B", "-1 B", "0.5 B", "1.0001 KB", "16 G", "16 Gb", "nan", "inf B", "B",
                           "18446744073709551616", "16384 PiB", "1e20 B", "1e-400 B", "1 mB"}) {
    INFO(text);
    CHECK_THROWS_AS(parse_bytes(text), std::invalid_argument);
  }
  CHECK_THROWS_WITH(parse_bytes("16384 PiB"), Contains("64 bits"));
  CHECK_THROWS_WITH(parse_bytes("0.5 B"), Contains("whole"));
}

TEST_CASE("operation rates convert to per second", "[units]") {
  CHECK(parse_flops_per_s("197 TFLOP/s") == Approx(1.97e14));
  CHECK(parse_flops_per_s("1.97e14 FLOP/s") == Approx(1.97e14));
  CHECK(parse_flops_per_s("394 TOP/s") == Approx(3.94e14));
  CHECK(parse_flops_per_s("459 TFLOPS") == Approx(4.59e14));
  for (const char* text : {"1.97e14", "197 T", "197 TB/s", "-1 TFLOP/s", "0 FLOP/s"}) {
    INFO(text);
    CHECK_THROWS_AS(parse_flops_per_s(text), std::invalid_argument);
  }
}

TEST_CASE("request rates convert to per second, within the range arrival times can take", "[units]") {
  CHECK(parse_rate_per_s("3 /s") == 3);
  CHECK(parse_rate_per_s("180 /min") == Approx(3));
  CHECK(parse_rate_per_s("3.6e-5 /h") == Approx(1e-8));
  CHECK(std::isinf(parse_rate_per_s("inf /s")));
  for (const char* text : {"0 /s", "-1 /s", "3", "1e-320 /s", "9e-10 /s", "1e-6 /h"}) {
    INFO(text);
    CHECK_THROWS_AS(parse_rate_per_s(text), std::invalid_argument);
  }
  CHECK_THROWS_WITH(parse_rate_per_s("1e-320 /s"), Contains("below 1e-9 /s"));
}

TEST_CASE("arrays give element count times dtype size", "[units]") {
  const ArrayShape a = parse_array("bf16[2048,8192]");
  CHECK(a.dtype == "bf16");
  CHECK(a.dims == std::vector<uint64_t>{2048, 8192});
  CHECK(a.elements == 2048ULL * 8192);
  CHECK(a.bytes == 2048ULL * 8192 * 2);
  CHECK(parse_array("f32[1024, 4096]").bytes == 1024ULL * 4096 * 4);
  CHECK(parse_array("fp32[3]").bytes == 12);
  CHECK(parse_array("int8[128,2048]").bytes == 128ULL * 2048);
  CHECK(parse_array("int4[3]").bytes == 2);   // 1.5 bytes round up
  CHECK(parse_array("int32[5]").bytes == 20);
  CHECK(parse_array("fp8[7]").bytes == 7);
}

TEST_CASE("bad arrays are rejected", "[units]") {
  for (const char* text : {"bf16", "bf16[]", "bf16[0,4]", "bf16[-1]", "bf16[2,]", "bf16[2.5]", "q7[4]",
                           "bf16[4]x", "[4]", "f32[4294967296,4294967296]", "bf16[4294967296,2147483648]",
                           "bf16[99999999999999999999]"}) {
    INFO(text);
    CHECK_THROWS_AS(parse_array(text), std::invalid_argument);
  }
  CHECK_THROWS_WITH(parse_array("f32[4294967296,4294967296]"), Contains("64 bits"));
  CHECK_THROWS_WITH(parse_array("q7[4]"), Contains("unknown dtype 'q7'"));
}

TEST_CASE("shardings list mesh axes per dimension", "[units]") {
  const Sharding s = parse_sharding("[E_Y, F]");
  CHECK(s.dim_names == std::vector<std::string>{"E", "F"});
  CHECK(s.dim_axes == std::vector<std::vector<std::string>>{{"Y"}, {}});
  CHECK(s.unreduced.empty());

  const Sharding xy = parse_sharding("[B_XY, D]");
  CHECK(xy.dim_axes[0] == std::vector<std::string>{"X", "Y"});
  CHECK(xy.sharded_axes() == std::vector<std::string>{"X", "Y"});

  const Sharding u = parse_sharding(" [B_X, D_Y]{U_Z} ");
  CHECK(u.sharded_axes() == std::vector<std::string>{"X", "Y"});
  CHECK(u.unreduced == std::vector<std::string>{"Z"});

  CHECK_NOTHROW(check_sharding_rank(u, parse_array("bf16[1024,4096]")));
  CHECK_THROWS_WITH(check_sharding_rank(u, parse_array("bf16[1024]")), Contains("2 dimensions"));
}

TEST_CASE("bad shardings are rejected", "[units]") {
  for (const char* text : {"", "E_Y, F", "[]", "[E_Y, F_Y]", "[E_YY]", "[E_X, F]{U_X}", "[E_, F]", "[_X, F]",
                           "[E_Y, F]{Z}", "[E_Y, F] junk", "[E_Y, F]{U_}", "[E_1, F]", "[E_Y,, F]"}) {
    INFO(text);
    CHECK_THROWS_AS(parse_sharding(text), std::invalid_argument);
  }
  CHECK_THROWS_WITH(parse_sharding("[E_Y, F_Y]"), Contains("axis 'Y' is used twice"));
}
