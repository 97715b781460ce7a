// The public API's host-side contract: status strings, the kernel table, and the
// validation every call runs before it looks at the GPU. Runs on machines without one.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <set>
#include <string>

#include "anvil/anvil.h"

namespace {

using anvil::Activation;
using anvil::BiasMode;
using anvil::DataType;
using anvil::Diagnostic;
using anvil::GemmArgs;
using anvil::GemmDesc;
using anvil::Order;
using anvil::Status;

// Stand-ins for device pointers: validation compares them with null and checks their
// alignment but never dereferences them.
alignas(256) unsigned char g_fake_memory[4096];
void* fake(size_t byte_offset = 0) { return g_fake_memory + byte_offset; }

GemmArgs full_args() {
  GemmArgs args;
  args.a = fake(0);
  args.b = fake(512);
  args.c = fake(1024);
  args.d = fake(1536);
  args.bias = fake(2048);
  return args;
}

GemmDesc base_desc() { return anvil::linear_desc(128, 256, 64, DataType::kBF16, DataType::kBF16); }

// What a valid problem gets without a GPU: success, or the device check's refusal.
bool passes_description_checks(Status s) { return s == Status::kSuccess || s == Status::kArchMismatch; }
// For descriptions the production kernel serves by repacking an operand into the
// workspace: valid, and the only complaint allowed is the missing workspace.
bool valid_given_workspace(Status s) { return passes_description_checks(s) || s == Status::kWorkspaceTooSmall; }

// Runs can_implement and checks the diagnostic agrees with the returned status.
Status check(const GemmDesc& desc, const GemmArgs* args, std::string* message = nullptr) {
  Diagnostic diag;
  const Status s = anvil::can_implement(desc, args, &diag);
  if (s != Status::kSuccess) {
    EXPECT_EQ(diag.status, s) << "the diagnostic must carry the returned status";
    EXPECT_GT(std::strlen(diag.message), 0u) << "a refusal must say why";
  }
  if (message != nullptr) *message = diag.message;
  return s;
}

TEST(StatusStrings, EveryStatusHasItsOwnName) {
  std::set<std::string> names;
  for (int s = int(Status::kSuccess); s <= int(Status::kInternalError); ++s) {
    const char* name = anvil::to_string(static_cast<Status>(s));
    ASSERT_NE(name, nullptr) << s;
    EXPECT_GT(std::strlen(name), 0u) << s;
    names.insert(name);
  }
  EXPECT_EQ(names.size(), size_t(int(Status::kInternalError) + 1));
  EXPECT_NE(anvil::to_string(static_cast<Status>(1000)), nullptr);
}

TEST(StatusStrings, EveryDataTypeHasItsOwnName) {
  std::set<std::string> names;
  for (DataType t : {DataType::kBF16, DataType::kF16, DataType::kF32}) {
    const char* name = anvil::to_string(t);
    ASSERT_NE(name, nullptr);
    EXPECT_GT(std::strlen(name), 0u);
    names.insert(name);
  }
  EXPECT_EQ(names.size(), 3u);
  EXPECT_NE(anvil::to_string(static_cast<DataType>(77)), nullptr);
}

TEST(KernelTable, NamesAreUniqueAndSummarised) {
  const int count = anvil::kernel_count();
  ASSERT_GT(count, 0);
  std::set<std::string> names;
  for (int i = 0; i < count; ++i) {
    const char* name = anvil::kernel_name(i);
    ASSERT_NE(name, nullptr) << i;
    EXPECT_GT(std::strlen(name), 0u) << i;
    EXPECT_STRNE(name, "auto") << "'auto' selects the dispatcher and cannot name a kernel";
    ASSERT_NE(anvil::kernel_summary(i), nullptr) << name;
    EXPECT_GT(std::strlen(anvil::kernel_summary(i)), 0u) << name;
    names.insert(name);
  }
  EXPECT_EQ(names.size(), size_t(count));
  EXPECT_EQ(anvil::kernel_name(-1), nullptr);
  EXPECT_EQ(anvil::kernel_name(count), nullptr);
  EXPECT_EQ(anvil::kernel_summary(count), nullptr);
}

TEST(LinearDesc, IsTheNnLinearLayout) {
  const GemmDesc d = anvil::linear_desc(8, 24, 40, DataType::kF16, DataType::kF32);
  EXPECT_EQ(d.m, 8);
  EXPECT_EQ(d.n, 24);
  EXPECT_EQ(d.k, 40);
  EXPECT_EQ(d.batch, 1);
  EXPECT_EQ(d.a.dtype, DataType::kF16);
  EXPECT_EQ(d.a.order, Order::kRowMajor);
  EXPECT_EQ(d.a.ld, 40);
  EXPECT_EQ(d.b.dtype, DataType::kF16);
  EXPECT_EQ(d.b.order, Order::kColMajor);  // W[N, K] row-major
  EXPECT_EQ(d.b.ld, 40);
  EXPECT_EQ(d.d.dtype, DataType::kF32);
  EXPECT_EQ(d.d.order, Order::kRowMajor);
  EXPECT_EQ(d.d.ld, 24);
  EXPECT_EQ(d.alpha, 1.0f);
  EXPECT_EQ(d.beta, 0.0f);
  EXPECT_EQ(d.epilogue.activation, Activation::kIdentity);
  EXPECT_EQ(d.epilogue.bias, BiasMode::kNone);
  EXPECT_EQ(d.kernel, nullptr);
}

// Every negative test below changes one thing about this case, so it must itself be valid.
TEST(Validation, BaseCaseIsValid) {
  const GemmArgs args = full_args();
  std::string message;
  EXPECT_TRUE(passes_description_checks(check(base_desc(), &args, &message))) << message;
  EXPECT_TRUE(passes_description_checks(check(base_desc(), nullptr, &message))) << message;
}

TEST(Validation, NullPointers) {
  const GemmDesc desc = base_desc();
  GemmArgs args = full_args();
  args.a = nullptr;
  EXPECT_EQ(check(desc, &args), Status::kInvalidArgument) << "A";
  args = full_args();
  args.b = nullptr;
  EXPECT_EQ(check(desc, &args), Status::kInvalidArgument) << "B";
  args = full_args();
  args.d = nullptr;
  EXPECT_EQ(check(desc, &args), Status::kInvalidArgument) << "D";

  GemmDesc with_beta = desc;
  with_beta.beta = 1.0f;
  args = full_args();
  args.c = nullptr;
  EXPECT_EQ(check(with_beta, &args), Status::kInvalidArgument) << "C with beta != 0";
  EXPECT_TRUE(passes_description_checks(check(desc, &args))) << "C may be null when beta == 0";

  GemmDesc with_bias = desc;
  with_bias.epilogue.bias = BiasMode::kPerColumn;
  args = full_args();
  args.bias = nullptr;
  EXPECT_EQ(check(with_bias, &args), Status::kInvalidArgument) << "bias";

  args = full_args();
  args.workspace_bytes = 1024;
  EXPECT_EQ(check(desc, &args), Status::kInvalidArgument) << "workspace bytes without a workspace";
}

TEST(Validation, NegativeSizes) {
  for (int which = 0; which < 4; ++which) {
    GemmDesc desc = base_desc();
    (which == 0 ? desc.m : which == 1 ? desc.n : which == 2 ? desc.k : desc.batch) = -1;
    const GemmArgs args = full_args();
    EXPECT_EQ(check(desc, &args), Status::kInvalidArgument) << "field " << which;
    EXPECT_EQ(check(desc, nullptr), Status::kInvalidArgument) << "field " << which << ", description only";
  }
}

TEST(Validation, LeadingDimensionSmallerThanALine) {
  const GemmArgs args = full_args();
  GemmDesc desc = base_desc();
  desc.a.ld = desc.k - 1;  // row-major A: a line is K long
  EXPECT_EQ(check(desc, &args), Status::kInvalidArgument) << "lda";

  desc = base_desc();
  desc.a.order = Order::kColMajor;
  desc.a.ld = desc.m - 1;  // column-major A: a line is M long
  EXPECT_EQ(check(desc, &args), Status::kInvalidArgument) << "column-major lda";
  desc.a.ld = desc.m;
  EXPECT_TRUE(valid_given_workspace(check(desc, &args)));

  desc = base_desc();
  desc.b.ld = desc.k - 1;  // column-major B: a line is K long
  EXPECT_EQ(check(desc, &args), Status::kInvalidArgument) << "ldb";

  desc = base_desc();
  desc.b.order = Order::kRowMajor;
  desc.b.ld = desc.n - 1;
  EXPECT_EQ(check(desc, &args), Status::kInvalidArgument) << "row-major ldb";

  desc = base_desc();
  desc.d.ld = desc.n - 1;
  desc.c.ld = desc.n - 1;
  EXPECT_EQ(check(desc, &args), Status::kInvalidArgument) << "ldd";

  // SwiGLU's D is n/2 wide: n/2 is enough, n/2 - 1 is not.
  desc = base_desc();
  desc.epilogue.activation = Activation::kSwiGLU;
  desc.d.ld = desc.n / 2;
  EXPECT_TRUE(passes_description_checks(check(desc, &args)));
  desc.d.ld = desc.n / 2 - 1;
  EXPECT_EQ(check(desc, &args), Status::kInvalidArgument) << "SwiGLU ldd";
}

TEST(Validation, OverlappingOutputBatches) {
  const GemmArgs args = full_args();
  GemmDesc desc = base_desc();
  desc.batch = 2;
  desc.a.batch_stride = desc.m * desc.k;
  desc.b.batch_stride = 0;  // a shared weight is fine
  desc.d.batch_stride = desc.m * desc.n;
  EXPECT_TRUE(valid_given_workspace(check(desc, &args)));
  desc.d.batch_stride = desc.m * desc.n - 1;
  EXPECT_EQ(check(desc, &args), Status::kInvalidArgument);
}

TEST(Validation, UnsupportedTypeCombinations) {
  const GemmArgs args = full_args();
  GemmDesc desc = base_desc();
  desc.b.dtype = DataType::kF16;  // bf16 x fp16
  EXPECT_EQ(check(desc, &args), Status::kNotSupported) << "mixed inputs";

  desc = base_desc();
  desc.a.dtype = DataType::kF32;
  desc.b.dtype = DataType::kF32;
  EXPECT_EQ(check(desc, &args), Status::kNotSupported) << "fp32 inputs";

  desc = base_desc();
  desc.beta = 1.0f;
  desc.c.dtype = DataType::kF32;  // C must match D when it is read
  EXPECT_EQ(check(desc, &args), Status::kNotSupported) << "C dtype";
  desc.beta = 0.0f;
  EXPECT_TRUE(passes_description_checks(check(desc, &args))) << "C's dtype is irrelevant when beta == 0";

  for (DataType in : {DataType::kBF16, DataType::kF16}) {
    for (DataType out : {DataType::kBF16, DataType::kF16, DataType::kF32}) {
      std::string message;
      EXPECT_TRUE(passes_description_checks(check(anvil::linear_desc(64, 64, 64, in, out), &args, &message)))
          << anvil::to_string(in) << " -> " << anvil::to_string(out) << ": " << message;
    }
  }
}

TEST(Validation, SwiGLUNeedsWholeGateUpBlocks) {
  const GemmArgs args = full_args();
  GemmDesc desc = anvil::linear_desc(64, 192, 64, DataType::kBF16, DataType::kBF16);
  desc.epilogue.activation = Activation::kSwiGLU;
  desc.d.ld = 96;
  EXPECT_EQ(check(desc, &args), Status::kNotSupported);
}

TEST(Validation, UnknownKernelName) {
  const GemmArgs args = full_args();
  GemmDesc desc = base_desc();
  desc.kernel = "no-such-kernel";
  std::string message;
  EXPECT_EQ(check(desc, &args, &message), Status::kNotSupported);
  EXPECT_NE(message.find("no-such-kernel"), std::string::npos) << message;
}

TEST(Validation, PointerNotAlignedToItsElement) {
  const GemmDesc desc = base_desc();
  GemmArgs args = full_args();
  args.a = fake(1);  // a bf16 at an odd byte address
  EXPECT_EQ(check(desc, &args), Status::kMisalignedOperand);
}

TEST(Validation, EmptyProblemsAreSuccessfulNoOps) {
  // Nothing to compute means nothing to check on the device and nothing to point at.
  for (int which = 0; which < 3; ++which) {
    GemmDesc desc = base_desc();
    (which == 0 ? desc.m : which == 1 ? desc.n : desc.batch) = 0;
    const GemmArgs none;
    Diagnostic diag;
    EXPECT_EQ(anvil::can_implement(desc, &none, &diag), Status::kSuccess) << which << ": " << diag.message;
    EXPECT_EQ(anvil::gemm(desc, none, &diag), Status::kSuccess) << which << ": " << diag.message;
    EXPECT_EQ(anvil::can_implement(desc, nullptr, &diag), Status::kSuccess) << which << ": " << diag.message;
  }
}

TEST(Validation, WorkspaceTooSmall) {
  // sm90-gemm repacks operands TMA cannot read (a row-major B here) into the workspace:
  // without room for the copies it refuses. sm90-gemm-streamk always needs its partials.
  GemmDesc desc = anvil::linear_desc(256, 10240, 8192, DataType::kBF16, DataType::kBF16);
  desc.b = anvil::MatrixLayout{DataType::kBF16, anvil::Order::kRowMajor, desc.n, 0};
  for (const char* kernel : {static_cast<const char*>(nullptr), "sm90-gemm", "sm90-gemm-streamk", "sm90-gemm-fit",
                             "sm90-gemm-pow2"}) {
    desc.kernel = kernel;
    const size_t need = anvil::workspace_size(desc);
    ASSERT_GT(need, 0u) << (kernel ? kernel : "auto");
    GemmArgs args = full_args();
    args.workspace = fake(3072);
    args.workspace_bytes = 0;
    EXPECT_EQ(check(desc, &args), Status::kWorkspaceTooSmall) << (kernel ? kernel : "auto");
    args.workspace_bytes = need;
    EXPECT_TRUE(passes_description_checks(check(desc, &args))) << (kernel ? kernel : "auto");
  }
  desc.b = anvil::MatrixLayout{DataType::kBF16, anvil::Order::kColMajor, desc.k, 0};
  desc.kernel = "sm90-gemm-streamk";
  GemmArgs args = full_args();
  args.workspace = fake(3072);
  args.workspace_bytes = anvil::workspace_size(desc) - 1;
  EXPECT_EQ(check(desc, &args), Status::kWorkspaceTooSmall);
}

TEST(Validation, RepackBeyondItsGridIsRefused) {
  // The transposing copy of an MN-major operand has one grid row per 32 rows (at most
  // 65535); the row copy of a K-contiguous operand with an odd ld has no such limit.
  const int64_t m = int64_t{65535} * 32 + 1;
  for (const bool k_contiguous : {false, true}) {
    GemmDesc desc = anvil::linear_desc(m, 256, 64, DataType::kBF16, DataType::kBF16);
    desc.a = k_contiguous ? anvil::MatrixLayout{DataType::kBF16, Order::kRowMajor, 65, 0}
                          : anvil::MatrixLayout{DataType::kBF16, Order::kColMajor, m, 0};
    desc.kernel = "sm90-gemm";
    GemmArgs args = full_args();
    args.workspace = fake(3072);
    args.workspace_bytes = anvil::workspace_size(desc);
    std::string message;
    const Status s = check(desc, &args, &message);
    if (k_contiguous) {
      EXPECT_TRUE(passes_description_checks(s)) << message;
    } else {
      EXPECT_EQ(s, Status::kNotSupported) << message;
      EXPECT_NE(message.find("too large to repack"), std::string::npos) << message;
    }
  }
}

TEST(Validation, StreamKWorkspaceIsOptional) {
  // 256 x 4096 x 14336 makes 32 tall tiles (or 64 narrow ones) for 132 SMs: the plan
  // streams K, and workspace_size asks for the partials' room. Without it sm90-gemm still
  // runs, on whole tiles.
  GemmDesc desc = anvil::linear_desc(256, 4096, 14336, DataType::kBF16, DataType::kBF16);
  desc.kernel = "sm90-gemm";
  EXPECT_GT(anvil::workspace_size(desc), 0u);
  GemmArgs args = full_args();
  EXPECT_TRUE(passes_description_checks(check(desc, &args)));
  // Batch-invariant results may not depend on how a problem is cut: no stream-K, no workspace.
  desc.batch_invariant = true;
  EXPECT_EQ(anvil::workspace_size(desc), 0u);
}

// Sizes whose products would overflow 64-bit element offsets are refused up front, before
// any kernel could compute an index from them.
TEST(Validation, ASizeAbove2To31) {
  const GemmArgs args = full_args();
  for (int which = 0; which < 4; ++which) {
    GemmDesc desc = base_desc();
    (which == 0 ? desc.m : which == 1 ? desc.n : which == 2 ? desc.k : desc.batch) = (int64_t{1} << 31) + 1;
    std::string message;
    EXPECT_EQ(check(desc, &args, &message), Status::kInvalidArgument) << "field " << which;
    EXPECT_NE(message.find("exceeds 2^31"), std::string::npos) << message;
    EXPECT_EQ(check(desc, nullptr), Status::kInvalidArgument) << "field " << which << ", description only";
  }
  GemmDesc at_limit = base_desc();
  at_limit.batch = int64_t{1} << 31;
  at_limit.a.batch_stride = 0;
  at_limit.b.batch_stride = 0;
  at_limit.d.batch_stride = at_limit.m * at_limit.n;  // 2^46 elements of D in all: still indexable
  EXPECT_NE(check(at_limit, nullptr), Status::kInvalidArgument) << "2^31 itself is allowed";
}

TEST(Validation, StorageBeyond2To46Elements) {
  const GemmArgs args = full_args();
  std::string message;
  GemmDesc desc = base_desc();
  desc.a.ld = int64_t{1} << 40;  // 128 rows of 2^40: 2^47 elements
  EXPECT_EQ(check(desc, &args, &message), Status::kInvalidArgument);
  EXPECT_NE(message.find("overflow the index range"), std::string::npos) << message;

  desc = base_desc();
  desc.d.order = Order::kColMajor;  // 256 columns of 2^39
  desc.d.ld = int64_t{1} << 39;
  EXPECT_EQ(check(desc, &args, &message), Status::kInvalidArgument) << "D";

  desc = base_desc();
  desc.batch = 4;
  desc.a.batch_stride = int64_t{1} << 45;  // x 4 batches = 2^47
  desc.d.batch_stride = desc.m * desc.n;
  EXPECT_EQ(check(desc, &args, &message), Status::kInvalidArgument) << "A's batch stride";
  EXPECT_NE(message.find("overflows the index range"), std::string::npos) << message;
  desc.a.batch_stride = int64_t{1} << 43;  // x 4 = 2^45: fine
  EXPECT_TRUE(valid_given_workspace(check(desc, &args, &message))) << message;
}

TEST(Validation, CMustShareDsOrderAndLeadingDimension) {
  const GemmArgs args = full_args();
  GemmDesc desc = base_desc();
  desc.beta = 1.0f;
  EXPECT_TRUE(passes_description_checks(check(desc, &args)));

  desc.c.order = Order::kColMajor;
  desc.c.ld = desc.m;
  std::string message;
  EXPECT_EQ(check(desc, &args, &message), Status::kNotSupported) << "C column-major, D row-major";
  EXPECT_NE(message.find("storage order and leading dimension"), std::string::npos) << message;

  desc = base_desc();
  desc.beta = 1.0f;
  desc.c.ld = desc.d.ld + 8;
  EXPECT_EQ(check(desc, &args), Status::kNotSupported) << "C's ld differs from D's";
  desc.beta = 0.0f;
  EXPECT_TRUE(passes_description_checks(check(desc, &args))) << "C's layout is irrelevant when beta == 0";
}

TEST(Validation, RepackedOperandsNeedA16ByteAlignedWorkspace) {
  GemmDesc desc = base_desc();
  desc.b = anvil::MatrixLayout{DataType::kBF16, Order::kRowMajor, desc.n, 0};  // MN-major: repacked
  desc.kernel = "sm90-gemm";
  const size_t need = anvil::workspace_size(desc);
  ASSERT_GT(need, 0u) << "sm90-gemm no longer repacks a row-major B";
  GemmArgs args = full_args();
  args.workspace_bytes = need;
  args.workspace = fake(3072 + 8);
  std::string message;
  EXPECT_EQ(check(desc, &args, &message), Status::kMisalignedOperand);
  EXPECT_NE(message.find("16-byte aligned"), std::string::npos) << message;
  args.workspace = fake(3072 + 16);
  EXPECT_TRUE(passes_description_checks(check(desc, &args, &message))) << message;
}

}  // namespace
