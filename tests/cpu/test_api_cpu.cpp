// The public API's host-side contract: status strings, the kernel table, and the
// validation every call runs before it looks at the GPU. Runs on machines without one.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <set>
#include <string>

#include <cuda_runtime_api.h>

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

// Stand-ins for device pointers: validation compares them with null, checks their
// alignment and whether D's memory overlaps another operand's, but never dereferences
// them. Each operand has its own 2^50-byte region, beyond the largest storage validation
// accepts (2^47 elements of 4 bytes), so no two overlap.
enum Slot : uintptr_t { kSlotA = 1, kSlotB, kSlotC, kSlotD, kSlotBias, kSlotWorkspace };
void* fake(Slot slot, size_t byte_offset = 0) {
  return reinterpret_cast<void*>((uintptr_t{slot} << 50) + byte_offset);
}

GemmArgs full_args() {
  GemmArgs args;
  args.a = fake(kSlotA);
  args.b = fake(kSlotB);
  args.c = fake(kSlotC);
  args.d = fake(kSlotD);
  args.bias = fake(kSlotBias);
  return args;
}

GemmDesc base_desc() { return anvil::linear_desc(128, 256, 64, DataType::kBF16, DataType::kBF16); }

// What a valid problem gets without a GPU: success, or the device check's refusal (no
// driver or no GPU here; a GPU other than sm_90 elsewhere).
bool passes_description_checks(Status s) {
  return s == Status::kSuccess || s == Status::kDriverUnavailable || s == Status::kArchMismatch;
}
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
  for (int s = int(Status::kSuccess); s <= int(Status::kDriverUnavailable); ++s) {
    const char* name = anvil::to_string(static_cast<Status>(s));
    ASSERT_NE(name, nullptr) << s;
    EXPECT_GT(std::strlen(name), 0u) << s;
    names.insert(name);
  }
  EXPECT_EQ(names.size(), size_t(int(Status::kDriverUnavailable) + 1));
  EXPECT_NE(anvil::to_string(static_cast<Status>(1000)), nullptr);
}

TEST(StatusStrings, EveryDataTypeHasItsOwnName) {
  std::set<std::string> names;
  for (DataType t : {DataType::kBF16, DataType::kF16, DataType::kF32, DataType::kE4M3, DataType::kE5M2}) {
    const char* name = anvil::to_string(t);
    ASSERT_NE(name, nullptr);
    EXPECT_GT(std::strlen(name), 0u);
    names.insert(name);
  }
  EXPECT_EQ(names.size(), 5u);
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
  std::string message;
  EXPECT_EQ(check(desc, &args, &message), Status::kInvalidArgument);
  EXPECT_NE(message.find("output batches would overlap"), std::string::npos) << message;
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

// Every pointer is checked, and the message names the operand and the alignment it needs.
TEST(Validation, PointerNotAlignedToItsElement) {
  GemmDesc desc = base_desc();
  desc.beta = 1.0f;
  desc.epilogue.bias = BiasMode::kPerColumn;
  desc.epilogue.bias_dtype = DataType::kF32;
  const GemmArgs aligned = full_args();
  std::string message;
  ASSERT_TRUE(passes_description_checks(check(desc, &aligned, &message))) << message;
  struct Probe {
    const char* name;
    const void* GemmArgs::*pointer;
    Slot slot;
    size_t offset;       // bytes past an aligned address
    const char* needs;   // what the message must say
  };
  const Probe probes[] = {
      {"A", &GemmArgs::a, kSlotA, 1, "aligned to 2 bytes"},
      {"B", &GemmArgs::b, kSlotB, 1, "aligned to 2 bytes"},
      {"C", &GemmArgs::c, kSlotC, 1, "aligned to 2 bytes"},
      {"bias", &GemmArgs::bias, kSlotBias, 2, "aligned to 4 bytes"},  // fp32
  };
  for (const Probe& p : probes) {
    GemmArgs args = aligned;
    args.*p.pointer = fake(p.slot, p.offset);
    EXPECT_EQ(check(desc, &args, &message), Status::kMisalignedOperand) << p.name;
    EXPECT_EQ(message.rfind(std::string(p.name) + " (", 0), 0u) << p.name << ": " << message;
    EXPECT_NE(message.find(p.needs), std::string::npos) << p.name << ": " << message;
  }
  GemmArgs args = aligned;
  args.d = fake(kSlotD, 1);
  EXPECT_EQ(check(desc, &args, &message), Status::kMisalignedOperand) << "D";
  EXPECT_EQ(message.rfind("D (", 0), 0u) << message;
  EXPECT_NE(message.find("aligned to 2 bytes"), std::string::npos) << message;

  // fp32 D needs 4 bytes: 2 bytes off is refused, 4 is fine.
  GemmDesc f32_out = anvil::linear_desc(128, 256, 64, DataType::kBF16, DataType::kF32);
  args = aligned;
  args.d = fake(kSlotD, 2);
  EXPECT_EQ(check(f32_out, &args, &message), Status::kMisalignedOperand);
  EXPECT_NE(message.find("D ("), std::string::npos) << message;
  EXPECT_NE(message.find("aligned to 4 bytes"), std::string::npos) << message;
  args.d = fake(kSlotD, 4);
  EXPECT_TRUE(valid_given_workspace(check(f32_out, &args, &message))) << message;
}

// With k == 0 nothing is read from A or B (D = act(bias) + beta C): both may be null.
TEST(Validation, NullInputsAreLegalWhenKIsZero) {
  GemmDesc desc = base_desc();
  desc.k = 0;
  desc.a.ld = 1;
  desc.b.ld = 1;
  GemmArgs args = full_args();
  args.a = nullptr;
  args.b = nullptr;
  std::string message;
  EXPECT_TRUE(passes_description_checks(check(desc, &args, &message))) << message;
  args.d = nullptr;
  EXPECT_EQ(check(desc, &args, &message), Status::kInvalidArgument) << "D is still written";
  EXPECT_STREQ(message.c_str(), "D is null");

  desc = base_desc();
  args = full_args();
  args.b = nullptr;
  EXPECT_EQ(check(desc, &args, &message), Status::kInvalidArgument) << "k > 0 reads B";
  EXPECT_STREQ(message.c_str(), "B is null");
}

// An enum value cast from an out-of-range integer is refused, not read as a neighbour.
TEST(Validation, UnknownEnumValuesAreRefused) {
  const GemmArgs args = full_args();
  std::string message;
  for (int bad : {-1, int(DataType::kE5M2) + 1, 77}) {
    const DataType t = static_cast<DataType>(bad);
    for (int which = 0; which < 5; ++which) {
      GemmDesc desc = base_desc();
      desc.beta = 1.0f;
      desc.epilogue.bias = BiasMode::kPerColumn;
      (which == 0   ? desc.a.dtype
       : which == 1 ? desc.b.dtype
       : which == 2 ? desc.c.dtype
       : which == 3 ? desc.d.dtype
                    : desc.epilogue.bias_dtype) = t;
      EXPECT_EQ(check(desc, &args, &message), Status::kInvalidArgument) << "dtype field " << which << " = " << bad;
      EXPECT_NE(message.find("unknown dtype"), std::string::npos) << message;
    }
  }
  for (int bad : {-1, 2, 9}) {
    const Order o = static_cast<Order>(bad);
    for (int which = 0; which < 4; ++which) {
      GemmDesc desc = base_desc();
      desc.beta = 1.0f;
      (which == 0 ? desc.a.order : which == 1 ? desc.b.order : which == 2 ? desc.c.order : desc.d.order) = o;
      EXPECT_EQ(check(desc, &args, &message), Status::kInvalidArgument) << "order field " << which << " = " << bad;
      EXPECT_NE(message.find("unknown storage order"), std::string::npos) << message;
    }
  }
  for (int bad : {-1, int(Activation::kSwiGLU) + 1, 100}) {
    GemmDesc desc = base_desc();
    desc.epilogue.activation = static_cast<Activation>(bad);
    EXPECT_EQ(check(desc, &args, &message), Status::kInvalidArgument) << "activation " << bad;
    EXPECT_NE(message.find("unknown activation"), std::string::npos) << message;
  }
  for (int bad : {-1, int(BiasMode::kPerRow) + 1, 100}) {
    GemmDesc desc = base_desc();
    desc.epilogue.bias = static_cast<BiasMode>(bad);
    EXPECT_EQ(check(desc, &args, &message), Status::kInvalidArgument) << "bias mode " << bad;
    EXPECT_NE(message.find("unknown bias mode"), std::string::npos) << message;
  }
  // The largest known values are accepted (the range checks end at the right place).
  GemmDesc desc = base_desc();
  desc.epilogue.activation = Activation::kSwiGLU;
  desc.d.ld = desc.n / 2;
  desc.epilogue.bias = BiasMode::kPerRow;
  desc.epilogue.bias_dtype = DataType::kF32;
  EXPECT_TRUE(passes_description_checks(check(desc, &args, &message))) << message;
}

// Inputs may repeat one matrix for every batch; no operand may have a negative stride.
TEST(Validation, BatchStrides) {
  const GemmArgs args = full_args();
  GemmDesc desc = base_desc();
  desc.batch = 2;
  desc.a.batch_stride = desc.m * desc.k;
  desc.b.batch_stride = desc.n * desc.k;
  desc.d.batch_stride = desc.m * desc.n;
  std::string message;
  ASSERT_TRUE(valid_given_workspace(check(desc, &args, &message))) << message;

  for (int which = 0; which < 3; ++which) {
    GemmDesc bad = desc;
    bad.beta = 1.0f;
    bad.c.batch_stride = bad.d.batch_stride;
    (which == 0 ? bad.a.batch_stride : which == 1 ? bad.b.batch_stride : bad.c.batch_stride) = -8;
    EXPECT_EQ(check(bad, &args, &message), Status::kInvalidArgument) << "input " << which;
    EXPECT_NE(message.find("batch stride -8 is negative"), std::string::npos) << message;
    EXPECT_EQ(message.find("one matrix ("), std::string::npos) << "an input needs no whole matrix: " << message;
    (which == 0 ? bad.a.batch_stride : which == 1 ? bad.b.batch_stride : bad.c.batch_stride) = 0;
    EXPECT_TRUE(valid_given_workspace(check(bad, &args, &message))) << "input " << which << " broadcast: " << message;
  }
  GemmDesc bad = desc;
  bad.d.batch_stride = -8;
  EXPECT_EQ(check(bad, &args, &message), Status::kInvalidArgument);
  EXPECT_EQ(message.rfind("D: batch stride -8 is negative", 0), 0u) << message;
  bad.d.batch_stride = 0;
  EXPECT_EQ(check(bad, &args, &message), Status::kInvalidArgument);
  EXPECT_NE(message.find("smaller than one matrix (32768 elements)"), std::string::npos) << message;
}

// C's layout is checked whenever C is read, whatever the sign of beta.
TEST(Validation, CsLayoutIsCheckedForNegativeBeta) {
  const GemmArgs args = full_args();
  for (float beta : {-1.0f, -0.5f, 2.0f}) {
    GemmDesc desc = base_desc();
    desc.beta = beta;
    desc.c.ld = desc.d.ld + 8;
    EXPECT_EQ(check(desc, &args), Status::kNotSupported) << "beta " << beta;
    desc = base_desc();
    desc.beta = beta;
    desc.c.ld = desc.n - 1;
    EXPECT_EQ(check(desc, &args), Status::kInvalidArgument) << "short C lines, beta " << beta;
    desc = base_desc();
    desc.beta = beta;
    desc.c.dtype = DataType::kF32;
    EXPECT_EQ(check(desc, &args), Status::kNotSupported) << "C dtype, beta " << beta;
    desc = base_desc();
    desc.beta = beta;
    GemmArgs no_c = args;
    no_c.c = nullptr;
    EXPECT_EQ(check(desc, &no_c), Status::kInvalidArgument) << "null C, beta " << beta;
  }
}

// D is written while A and B are read: any shared byte is refused, exact or partial,
// with the extents the strides address (not just the logical matrix's first bytes).
TEST(Validation, DOverlappingAnInputIsRefused) {
  const GemmDesc desc = base_desc();  // A 128 x 64 row-major, B 64 x 256 K-major, D 128 x 256
  std::string message;
  GemmArgs args = full_args();
  args.d = const_cast<void*>(args.a);
  EXPECT_EQ(check(desc, &args, &message), Status::kInvalidArgument) << "D is A";
  EXPECT_EQ(message.rfind("D overlaps A", 0), 0u) << message;
  args = full_args();
  args.d = const_cast<void*>(args.b);
  EXPECT_EQ(check(desc, &args, &message), Status::kInvalidArgument) << "D is B";
  EXPECT_EQ(message.rfind("D overlaps B", 0), 0u) << message;

  // D ends one element into A, and starts one element before A ends.
  const int64_t d_bytes = desc.m * desc.n * 2, a_bytes = desc.m * desc.k * 2;
  args = full_args();
  args.d = fake(kSlotA, 0);
  args.a = fake(kSlotA, size_t(d_bytes - 2));
  EXPECT_EQ(check(desc, &args, &message), Status::kInvalidArgument) << "D's last element is A's first";
  EXPECT_EQ(message.rfind("D overlaps A", 0), 0u) << message;
  args.a = fake(kSlotA, size_t(d_bytes));
  EXPECT_TRUE(passes_description_checks(check(desc, &args, &message))) << "A right after D: " << message;
  args = full_args();
  args.a = fake(kSlotA, 0);
  args.d = fake(kSlotA, size_t(a_bytes - 2));
  EXPECT_EQ(check(desc, &args, &message), Status::kInvalidArgument) << "A's last element is D's first";
  args.d = fake(kSlotA, size_t(a_bytes));
  EXPECT_TRUE(passes_description_checks(check(desc, &args, &message))) << "D right after A: " << message;

  // The padding of A's lines counts: with lda = 2048 A spans 127 * 2048 + 64 elements.
  GemmDesc padded = desc;
  padded.a.ld = 2048;
  args = full_args();
  args.a = fake(kSlotA, 0);
  args.d = fake(kSlotA, size_t((127 * 2048 + 62) * 2));  // on A's last element
  EXPECT_EQ(check(padded, &args, &message), Status::kInvalidArgument);
  EXPECT_EQ(message.rfind("D overlaps A", 0), 0u) << message;
  args.d = fake(kSlotA, size_t((127 * 2048 + 64) * 2));  // right after it
  EXPECT_TRUE(valid_given_workspace(check(padded, &args, &message))) << message;

  // Batches count: A's second matrix lands on D.
  GemmDesc batched = desc;
  batched.batch = 2;
  batched.a.batch_stride = int64_t{1} << 20;
  batched.d.batch_stride = desc.m * desc.n;
  args = full_args();
  args.a = fake(kSlotA, 0);
  args.d = fake(kSlotA, size_t(int64_t{1} << 21));
  EXPECT_EQ(check(batched, &args, &message), Status::kInvalidArgument) << "A's second batch is D";
  batched.a.batch_stride = 0;  // one A for both batches: D after it is apart
  EXPECT_TRUE(valid_given_workspace(check(batched, &args, &message))) << message;

  // Column slices of one wider row-major matrix: A = X[:, 0:64], D = X[:, 64:320] with
  // ld = 320 share a span but no element.
  GemmDesc slices = desc;
  slices.a.ld = 320;
  slices.d.ld = 320;
  args = full_args();
  args.a = fake(kSlotA, 0);
  args.d = fake(kSlotA, 64 * 2);
  EXPECT_TRUE(valid_given_workspace(check(slices, &args, &message))) << message;
  args.d = fake(kSlotA, 62 * 2);  // D's lines start on A's last two columns
  EXPECT_EQ(check(slices, &args, &message), Status::kInvalidArgument);
  EXPECT_EQ(message.rfind("D overlaps A", 0), 0u) << message;

  // With k == 0 A and B are not read: sharing is harmless.
  GemmDesc k_zero = desc;
  k_zero.k = 0;
  args = full_args();
  args.d = const_cast<void*>(args.a);
  EXPECT_TRUE(passes_description_checks(check(k_zero, &args, &message))) << message;
}

// C == D is the in-place residual add and stays legal; a C that is part of D, or D
// shifted, is refused.
TEST(Validation, CMayBeDButNotOverlapIt) {
  GemmDesc desc = base_desc();
  desc.beta = 1.0f;
  std::string message;
  GemmArgs args = full_args();
  args.c = args.d;
  EXPECT_TRUE(passes_description_checks(check(desc, &args, &message))) << "C == D: " << message;

  args.c = fake(kSlotD, 2 * 256);  // C one row into D
  EXPECT_EQ(check(desc, &args, &message), Status::kInvalidArgument);
  EXPECT_EQ(message.rfind("D overlaps C", 0), 0u) << message;
  args.c = fake(kSlotD, 128 * 256 * 2);  // C right after D
  EXPECT_TRUE(passes_description_checks(check(desc, &args, &message))) << message;

  // In place over batches needs the same batch stride: a broadcast C at D's address would
  // be overwritten by batch 0 while batch 1 still reads it.
  desc.batch = 2;
  desc.a.batch_stride = 0;
  desc.b.batch_stride = 0;
  desc.d.batch_stride = desc.m * desc.n;
  desc.c.batch_stride = desc.d.batch_stride;
  args = full_args();
  args.c = args.d;
  EXPECT_TRUE(valid_given_workspace(check(desc, &args, &message))) << message;
  desc.c.batch_stride = 0;
  EXPECT_EQ(check(desc, &args, &message), Status::kInvalidArgument);
  EXPECT_EQ(message.rfind("D overlaps C", 0), 0u) << message;

  // With beta == 0 C is not read: where it points does not matter.
  desc = base_desc();
  args = full_args();
  args.c = fake(kSlotD, 2);
  EXPECT_TRUE(passes_description_checks(check(desc, &args, &message))) << message;
}

// Without a driver (CI, build machines) the device check says so, not "wrong GPU".
TEST(DeviceCheck, AMissingDriverIsNotAnArchitectureMismatch) {
  int devices = 0;
  const cudaError_t e = cudaGetDeviceCount(&devices);
  cudaGetLastError();
  if (e == cudaSuccess && devices > 0) GTEST_SKIP() << "this machine has a CUDA device";
  std::string message;
  const GemmArgs args = full_args();
  EXPECT_EQ(check(base_desc(), &args, &message), Status::kDriverUnavailable) << message;
  EXPECT_NE(message.find(cudaGetErrorName(e)), std::string::npos) << message;
  Diagnostic diag;
  EXPECT_EQ(anvil::gemm(base_desc(), args, &diag), Status::kDriverUnavailable) << diag.message;
  EXPECT_STREQ(anvil::to_string(Status::kDriverUnavailable), "CUDA driver unavailable");
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
    args.workspace = fake(kSlotWorkspace);
    args.workspace_bytes = 0;
    EXPECT_EQ(check(desc, &args), Status::kWorkspaceTooSmall) << (kernel ? kernel : "auto");
    args.workspace_bytes = need;
    EXPECT_TRUE(passes_description_checks(check(desc, &args))) << (kernel ? kernel : "auto");
  }
  desc.b = anvil::MatrixLayout{DataType::kBF16, anvil::Order::kColMajor, desc.k, 0};
  desc.kernel = "sm90-gemm-streamk";
  GemmArgs args = full_args();
  args.workspace = fake(kSlotWorkspace);
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
    args.workspace = fake(kSlotWorkspace);
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
  // 256 x 18432 x 8192 makes 144 tall tiles for 132 SMs: the plan streams K, and
  // workspace_size asks for the partials' room. Without it sm90-gemm still runs, on whole
  // tiles.
  GemmDesc desc = anvil::linear_desc(256, 18432, 8192, DataType::kBF16, DataType::kBF16);
  desc.kernel = "sm90-gemm";
  EXPECT_GT(anvil::workspace_size(desc), 0u);
  GemmArgs args = full_args();
  EXPECT_TRUE(passes_description_checks(check(desc, &args)));
  // Batch-invariant results may not depend on how a problem is cut: no stream-K, no workspace.
  desc.batch_invariant = true;
  EXPECT_EQ(anvil::workspace_size(desc), 0u);
}

TEST(Validation, BatchInvariantSplitCountsItsPartials) {
  // A weight of 12 tiles and a long K: the mode cuts K in 8 slices at every M; at 300 rows
  // sm90-gemm's split-K carries them, and workspace_size asks for their fp32 partials.
  GemmDesc desc = anvil::linear_desc(300, 1536, 40960, DataType::kBF16, DataType::kBF16);
  desc.batch_invariant = true;
  EXPECT_EQ(anvil::workspace_size(desc), size_t(8) * 300 * 1536 * 4);
  desc.m = 64;  // sm90-decode's cluster: none
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
  args.workspace = fake(kSlotWorkspace, 8);
  std::string message;
  EXPECT_EQ(check(desc, &args, &message), Status::kMisalignedOperand);
  EXPECT_NE(message.find("16-byte aligned"), std::string::npos) << message;
  args.workspace = fake(kSlotWorkspace, 16);
  EXPECT_TRUE(passes_description_checks(check(desc, &args, &message))) << message;
}

}  // namespace
