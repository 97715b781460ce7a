// Reliability beyond the hand-picked sweep: a fixed-seed run of the fuzzer's problems,
// eight host threads calling anvil::gemm at once on their own streams, a problem with
// more than 2^31 output elements, where any 32-bit index arithmetic would wrap, and a
// cached plan across cudaDeviceReset.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gpu/gpu_support.h"
#include "verify/fuzz_problem.h"
#include "verify/fuzz_runner.h"

namespace {

using anvil::DataType;
using anvil::Diagnostic;
using anvil::GemmDesc;
using anvil::Status;
using anvil_test::DeviceBuffer;
namespace verify = anvil::verify;
using anvil_test::Stream;

std::string failure_text(const verify::FuzzProblem& p, const verify::FuzzOutcome& o) {
  return verify::describe(p) + " | kernel " + o.kernel + ": " + o.message;
}

// The same problems as `anvil-fuzz --small --seed 5 --problems 150`, through the dispatcher.
TEST(FuzzSubset, FixedSeedSmallProblemsMatchTheReference) {
  REQUIRE_SM90();
  constexpr uint64_t kSeed = 5;
  constexpr int kProblems = 150;
  Stream stream;
  CHECK_CUDA(stream.create());
  verify::FuzzRunner runner(stream.handle);
  const verify::FuzzLimits limits = verify::small_fuzz_limits();
  for (int64_t i = 0; i < kProblems; ++i) {
    const verify::FuzzProblem problem = verify::make_fuzz_problem(kSeed, i, limits);
    const verify::FuzzOutcome outcome = runner.run(problem, nullptr);
    EXPECT_EQ(outcome.result, verify::FuzzResult::kPassed) << failure_text(problem, outcome);
    ASSERT_FALSE(outcome.context_lost) << "the CUDA context is unusable after: " << failure_text(problem, outcome);
  }
}

// The fuzzer's padding check must be able to fail: a stray 16-bit store just before D's
// base, just past its last element or in the padding after a row is reported, both where
// the whole allocation is compared (64 x 256) and where only the ends and the padding are
// (4096 x 4352 and 4096 x 4096 with rows 4104 apart, bf16: 34 and 32.1 MiB, past the
// host-checked limit), including padding that is itself past that limit (4096 x 256 with
// rows 4608 apart: 34 MiB of padding, compared in chunks).
TEST(FuzzPaddingCheck, StoresOutsideTheOutputAreReported) {
  REQUIRE_SM90();
  Stream stream;
  CHECK_CUDA(stream.create());
  verify::FuzzRunner runner(stream.handle);
  struct Case {
    int64_t m, n, ld;
  };
  for (const Case c : {Case{64, 256, 264}, Case{4096, 4352, 4352}, Case{4096, 4096, 4104}, Case{4096, 256, 4608}}) {
    verify::FuzzProblem problem;
    problem.desc = anvil::linear_desc(c.m, c.n, 64, DataType::kBF16, DataType::kBF16);
    problem.desc.d.ld = c.ld;
    problem.d_offset = 8;
    problem.data_seed = 11;
    // Nothing stray first (the check passes), then the element before D's base, the first
    // one after its storage, and (padded rows) the first padding element of row 5.
    constexpr int64_t kNone = INT64_MIN;
    std::vector<int64_t> strays = {kNone, -1, c.m * c.ld};
    if (c.ld > c.n) strays.push_back(5 * c.ld + c.n);
    for (int64_t stray : strays) {
      SCOPED_TRACE("m=" + std::to_string(c.m) + " ld=" + std::to_string(c.ld) +
                   (stray == kNone ? " no stray store" : " stray element " + std::to_string(stray)));
      ASSERT_FALSE(runner.prepare(problem, nullptr).has_value());
      Diagnostic diag;
      ASSERT_EQ(runner.launch(&diag), Status::kSuccess) << diag.message;
      if (stray != kNone) {
        auto* d = static_cast<unsigned char*>(const_cast<void*>(runner.args().d));
        CHECK_CUDA(cudaMemsetAsync(d + stray * 2, 0, 2, stream.handle));
      }
      const verify::FuzzOutcome outcome = runner.check();
      EXPECT_EQ(outcome.result, stray == kNone ? verify::FuzzResult::kPassed : verify::FuzzResult::kFailed)
          << outcome.message;
    }
  }
}

// Eight threads, each with its own stream and problems, launching back to back and
// checking every round: host-side state shared by launches (cached device facts, kernel
// attributes, plan caches) must stay correct under concurrent calls.
TEST(Concurrency, EightThreadsOnTheirOwnStreams) {
  REQUIRE_SM90();
  constexpr int kThreads = 8;
  constexpr int kProblemsPerThread = 4;
  constexpr int kRounds = 10;
  std::vector<std::vector<std::string>> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &failures] {
      std::vector<std::string>& mine = failures[size_t(t)];
      Stream stream;
      if (cudaSetDevice(0) != cudaSuccess || stream.create() != cudaSuccess) {
        mine.push_back("cannot set up the thread's device and stream");
        return;
      }
      // A mix of shapes, layouts and epilogues per thread, different in every thread.
      std::vector<std::unique_ptr<verify::FuzzRunner>> runners;
      std::vector<verify::FuzzProblem> problems;
      for (int i = 0; i < kProblemsPerThread; ++i) {
        problems.push_back(verify::make_fuzz_problem(1000 + uint64_t(t), i, verify::small_fuzz_limits()));
        runners.push_back(std::make_unique<verify::FuzzRunner>(stream.handle));
        if (auto refused = runners.back()->prepare(problems.back(), nullptr)) {
          mine.push_back("prepare: " + failure_text(problems.back(), *refused));
          return;
        }
      }
      for (int round = 0; round < kRounds; ++round) {
        for (auto& runner : runners) {
          Diagnostic diag;
          const cudaError_t reset = runner->reset_output();
          const Status s = runner->launch(&diag);
          if (reset != cudaSuccess || s != Status::kSuccess) {
            mine.push_back(std::string("round ") + std::to_string(round) + ": reset " + cudaGetErrorName(reset) +
                           ", gemm " + anvil::to_string(s) + ": " + diag.message);
            return;
          }
        }
        for (size_t i = 0; i < runners.size(); ++i) {
          const verify::FuzzOutcome o = runners[i]->check();
          if (o.result != verify::FuzzResult::kPassed) {
            mine.push_back("round " + std::to_string(round) + ": " + failure_text(problems[i], o));
          }
          if (o.context_lost) return;
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) {
    for (const std::string& f : failures[size_t(t)]) ADD_FAILURE() << "thread " << t << ": " << f;
  }
}

// ---- more than 2^31 output elements ----

// Dot product in fp64 of host copies: independent of every GPU path, the reference's too.
double host_dot(const std::vector<unsigned char>& a, const std::vector<unsigned char>& b, const GemmDesc& d, int64_t i,
                int64_t j) {
  double sum = 0.0;
  for (int64_t kk = 0; kk < d.k; ++kk) {
    sum += anvil_test::load_element(a, d.a.dtype, anvil_test::offset_of(d.a, i, kk, 0)) *
           anvil_test::load_element(b, d.b.dtype, anvil_test::offset_of(d.b, kk, j, 0));
  }
  return sum;
}

// Outputs a wrapped 32-bit index would get wrong: the corners, the elements on both sides
// of flat index 2^31 and 2^32, the last row and column, and a scatter in between.
std::vector<std::pair<int64_t, int64_t>> sample_positions(int64_t m, int64_t n) {
  std::vector<std::pair<int64_t, int64_t>> at = {{0, 0}, {0, n - 1}, {m - 1, 0}, {m - 1, n - 1}};
  for (int64_t flat : {int64_t{1} << 31, int64_t{1} << 32}) {
    for (int64_t delta = -2; delta <= 2; ++delta) {
      const int64_t f = flat + delta;
      if (f >= 0 && f < m * n) at.emplace_back(f / n, f % n);
    }
  }
  uint64_t state = 12345;
  for (int s = 0; s < 400; ++s) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    at.emplace_back(int64_t((state >> 33) % uint64_t(m)), int64_t((state >> 13) % uint64_t(n)));
    at.emplace_back(m - 1, int64_t((state >> 40) % uint64_t(n)));
    at.emplace_back(int64_t((state >> 20) % uint64_t(m)), n - 1);
  }
  return at;
}

TEST(LargeProblem, MoreThan2To31OutputElementsComputeOrAreRefused) {
  REQUIRE_SM90();
  // 65539 x 32771 = 2^31 + 294921 elements of bf16: 4.3 GB of D. K = 16 keeps the math
  // trivial; both extents are just past a power of two, so the last tiles are ragged.
  const int64_t m = 65539, n = 32771, k = 16;
  const GemmDesc desc = anvil::linear_desc(m, n, k, DataType::kBF16, DataType::kBF16);
  ASSERT_GT(m * n, int64_t{1} << 31);

  const size_t d_bytes = size_t(m * n) * 2;
  const size_t ref_bytes = size_t(m * n) * 4;
  size_t free_bytes = 0, total_bytes = 0;
  CHECK_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (free_bytes < d_bytes + (size_t{1} << 30)) GTEST_SKIP() << "needs " << d_bytes << " bytes of free GPU memory";
  const bool full_compare = free_bytes > d_bytes + ref_bytes + (size_t{2} << 30);

  // A guard band after D: a store that wrapped past the end would land there.
  constexpr int64_t kGuard = 4096;
  DeviceBuffer a, b, d, workspace;
  CHECK_CUDA(a.allocate(size_t(m * k) * 2));
  CHECK_CUDA(b.allocate(size_t(n * k) * 2));
  CHECK_CUDA(d.allocate(d_bytes + kGuard * 2));
  CHECK_CUDA(verify::fill_random(a.get(), DataType::kBF16, m * k, 31, 1.0f, nullptr));
  CHECK_CUDA(verify::fill_random(b.get(), DataType::kBF16, n * k, 32, 1.0f, nullptr));
  CHECK_CUDA(verify::poison(d.get(), DataType::kBF16, m * n + kGuard, nullptr));
  anvil::GemmArgs args;
  args.a = a.get();
  args.b = b.get();
  args.d = d.get();
  args.workspace_bytes = anvil::workspace_size(desc, args);
  if (args.workspace_bytes > 0) {
    CHECK_CUDA(workspace.allocate(args.workspace_bytes));
    args.workspace = workspace.get();
  }

  Diagnostic diag;
  const Status s = anvil::can_implement(desc, &args, &diag);
  // A size limit may refuse the problem (kNotSupported, as the API allows); nothing else may.
  if (s == Status::kNotSupported) GTEST_SKIP() << "refused with a status, as allowed: " << diag.message;
  ASSERT_EQ(s, Status::kSuccess) << anvil::to_string(s) << ": " << diag.message;
  std::printf("%s runs %lld x %lld x %lld\n", anvil::dispatch_name(desc), static_cast<long long>(m),
              static_cast<long long>(n), static_cast<long long>(k));
  ASSERT_EQ(anvil::gemm(desc, args, &diag), Status::kSuccess) << diag.message;
  CHECK_CUDA(cudaDeviceSynchronize());

  std::vector<unsigned char> host_a, host_b;
  ASSERT_NO_FATAL_FAILURE(anvil_test::download(a, host_a));
  ASSERT_NO_FATAL_FAILURE(anvil_test::download(b, host_b));
  const verify::Tolerance tol = verify::tolerance_for(desc);
  int64_t bad = 0;
  for (const auto& [i, j] : sample_positions(m, n)) {
    uint16_t bits = 0;
    CHECK_CUDA(cudaMemcpy(&bits, static_cast<const unsigned char*>(d.get()) + (i * n + j) * 2, 2, cudaMemcpyDeviceToHost));
    const double got = anvil_test::from_bf16_bits(bits);
    const double want = host_dot(host_a, host_b, desc, i, j);
    if (!(std::fabs(got - want) <= tol.max_abs + tol.max_rel * std::fabs(want)) && ++bad <= 10) {
      ADD_FAILURE() << "D[" << i << ", " << j << "] (flat " << i * n + j << ") = " << got << ", expected " << want;
    }
  }
  EXPECT_EQ(bad, 0) << "sampled outputs out of tolerance";

  std::vector<uint16_t> guard(kGuard);
  CHECK_CUDA(cudaMemcpy(guard.data(), static_cast<const unsigned char*>(d.get()) + d_bytes, kGuard * 2,
                        cudaMemcpyDeviceToHost));
  for (int64_t g = 0; g < kGuard; ++g) ASSERT_EQ(guard[size_t(g)], 0xFFFF) << "written past D's end at +" << g;

  if (!full_compare) {
    std::printf("not enough free memory for the full comparison; sampled only\n");
    return;
  }
  DeviceBuffer ref;
  CHECK_CUDA(ref.allocate(ref_bytes));
  CHECK_CUDA(verify::reference_gemm(desc, args, ref.as_float(), nullptr));
  const verify::Comparison cmp = verify::compare(desc, d.get(), ref.as_float(), tol, nullptr);
  ASSERT_GE(cmp.count, 0) << "the comparison itself failed (CUDA error)";
  EXPECT_TRUE(cmp.passed) << anvil_test::describe(cmp);
}

// ---- plans and the CUDA context ----

// One 512 x 1024 x 512 GEMM through sm90-gemm - more dynamic shared memory than a kernel
// may use before cudaFuncSetAttribute raises its limit, which the plan's build does - on
// freshly allocated operands, checked against the reference. "" when it passes; *used
// gets the arguments (their addresses are part of the plan key).
std::string gemm_on_fresh_operands(anvil::GemmArgs* used) {
  GemmDesc desc = anvil::linear_desc(512, 1024, 512, DataType::kBF16, DataType::kBF16);
  desc.kernel = "sm90-gemm";
  anvil_test::Operands op;
  anvil_test::make_operands(op, desc, 77);
  if (::testing::Test::HasFatalFailure()) return "allocating or filling the operands failed";
  *used = op.args;
  if (verify::reference_gemm(desc, op.args, op.ref.as_float(), nullptr) != cudaSuccess) return "the reference failed";
  Diagnostic diag;
  const Status s = anvil::gemm(desc, op.args, &diag);
  if (s != Status::kSuccess) return std::string("gemm: ") + anvil::to_string(s) + ": " + diag.message;
  const cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) return std::string("after gemm: ") + cudaGetErrorName(e);
  const verify::Comparison cmp =
      verify::compare(desc, op.d.get(), op.ref.as_float(), verify::tolerance_for(desc), nullptr);
  return cmp.passed ? "" : "D differs from the reference: " + anvil_test::describe(cmp);
}

// Runs in a child process, as the reset takes every other test's device state with it:
// a GEMM, cudaDeviceReset, then the same GEMM on operands at the same addresses, so the
// second call meets the plan the first one cached. A plan may hold nothing that dies with
// its context (a module or function handle, a stream, an event): the kernel attribute
// it sets, the shared-memory limit, the runtime re-applies in the new context (H200,
// CUDA 13.0: this passed with plans keyed by context id and without).
// The allocator does not always hand the new context the old addresses (H200:
// once in five runs, and a retry of the reset did not always help), and then no second
// call can meet the first's plan: the child says so with its own exit code and the test
// skips, visibly. Any wrong result, or a failed call, still fails it.
constexpr int kOperandsMoved = 3;

[[noreturn]] void gemm_across_device_reset() {
  constexpr int kTries = 4;
  anvil::GemmArgs before, after;
  std::string error = gemm_on_fresh_operands(&before);
  bool same_addresses = false;
  for (int attempt = 0; error.empty() && !same_addresses && attempt < kTries; ++attempt) {
    const cudaError_t e = cudaDeviceReset();
    if (e != cudaSuccess) {
      error = std::string("cudaDeviceReset: ") + cudaGetErrorName(e);
      break;
    }
    error = gemm_on_fresh_operands(&after);
    same_addresses = before.a == after.a && before.b == after.b && before.d == after.d;
  }
  if (!error.empty()) std::fprintf(stderr, "%s\n", error.c_str());
  std::fflush(stderr);
  std::_Exit(!error.empty() ? 1 : same_addresses ? 0 : kOperandsMoved);
}

int g_reset_child_status = -1;  // the death test's child's wait status, read after it exits

TEST(PlanCacheDeathTest, PlansDoNotOutliveTheirContext) {
  REQUIRE_SM90();
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // a fresh process, not a fork of this one
  EXPECT_EXIT(
      gemm_across_device_reset(),
      [](int status) {
        g_reset_child_status = status;
        return ::testing::ExitedWithCode(0)(status) || ::testing::ExitedWithCode(kOperandsMoved)(status);
      },
      "");
  if (::testing::ExitedWithCode(kOperandsMoved)(g_reset_child_status)) {
    GTEST_SKIP() << "the allocator moved the operands across every reset: the plan could not be met";
  }
}

}  // namespace
