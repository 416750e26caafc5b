// A program op's work is one of three kinds (workloads/program.hpp): what each builder call
// makes, and a read of the wrong kind refused rather than a default value read silently.
#include <catch2/catch.hpp>

#include <stdexcept>

#include "workloads/program_builder.hpp"

using namespace podsim;

TEST_CASE("program ops: each builder call makes its kind, and reading another kind throws naming both", "[program]") {
  ProgramBuilder b;
  const int gather = b.collective("gather", CollectiveKind::AllGather, {0, 1}, {}, 4e6, {}, 3, OpRole::FsdpAllGather);
  const int matmul = b.compute("matmul", 2e-3, 5e12, {gather}, 3, OpRole::Forward);
  const int send = b.send("send", 2, -1, 1e6, {matmul}, OpRole::PipelineSend, true);
  const Program p = b.take();
  CHECK(p[gather].kind() == ProgramOpKind::Collective);
  CHECK(p[gather].collective().axes == std::vector<int>{0, 1});
  CHECK(p[gather].bytes() == 4e6);
  CHECK(p[gather].flops() == 0);
  CHECK(p[matmul].kind() == ProgramOpKind::Compute);
  CHECK(p[matmul].compute().compute_s == 2e-3);
  CHECK(p[matmul].flops() == 5e12);
  CHECK(p[matmul].bytes() == 0);
  CHECK(p[send].kind() == ProgramOpKind::Send);
  CHECK(p[send].send().axis == 2);
  CHECK(p[send].send().direction == -1);
  CHECK(p[send].send().round_the_end);
  CHECK(p[send].bytes() == 1e6);
  CHECK_THROWS_WITH(p[matmul].collective(), "op 'matmul' is a compute op, not a collective op");
  CHECK_THROWS_WITH(p[gather].send(), "op 'gather' is a collective op, not a send op");
  CHECK_THROWS_AS(p[send].compute(), std::logic_error);
  // A default op is a collective (what the scenario's collectives workload fills in).
  CHECK(ProgramOp{}.is(ProgramOpKind::Collective));
}
