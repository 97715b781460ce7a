// The grouped GEMM (anvil/grouped.h) against the expert-by-expert reference: both layouts,
// both input dtypes, every tile configuration, experts with 0, 1 and more rows than a tile,
// unaligned segments, E = 1 and E > 128, N and K off the tile grid, fused epilogues; D is
// poisoned before each run and every row no expert owns must still hold the poison. The
// masked layout is replayed from one captured CUDA graph while the counts change; invalid
// offsets must set the error word and leave memory outside D's rows alone. FP8 (GroupedFp8/*):
// e4m3 operands with random scales in [0.5, 1.5] (row/column, per tensor, DeepSeek-V3
// blocks, B's per expert or shared, none), each tile configuration, both layouts; the reference dequantizes with the
// same scales, so a scale missed, misplaced by an expert's offset or applied twice fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gpu/gpu_support.h"
#include "verify/grouped_fuzz.h"
#include "verify/grouped_reference.h"

namespace {

using anvil::Activation;
using anvil::BiasMode;
using anvil::DataType;
using anvil::GroupedGemmArgs;
using anvil::GroupedGemmDesc;
using anvil::GroupedLayout;
using anvil::IndexType;
using anvil_test::DeviceBuffer;
namespace verify = anvil::verify;

// Waits for the stream at most `seconds`; a kernel that never finishes fails the test by name
// instead of hanging the suite silently (the process still waits for it on exit).
::testing::AssertionResult wait_bounded(cudaStream_t stream, double seconds) {
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    const cudaError_t e = cudaStreamQuery(stream);
    if (e == cudaSuccess) return ::testing::AssertionSuccess();
    if (e != cudaErrorNotReady) return ::testing::AssertionFailure() << "stream error: " << cudaGetErrorName(e);
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > seconds) {
      return ::testing::AssertionFailure() << "the grouped kernel did not finish within " << seconds << " s (hang)";
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

struct GroupedCase {
  std::string name;
  GroupedLayout layout = GroupedLayout::kContiguous;
  int64_t n = 256, k = 128;
  DataType input = DataType::kBF16, output = DataType::kBF16;
  IndexType index = IndexType::kInt32;
  std::vector<int64_t> rows;  // per expert
  int64_t lead = 0, trail = 0;  // contiguous: rows before offsets[0] and after offsets[E]
  int64_t max_rows = 0;         // masked
  Activation act = Activation::kIdentity;
  BiasMode bias = BiasMode::kNone;
  float alpha = 1.0f;
  int64_t hint = 0;             // expected_rows_per_expert: picks the tile configuration
  const char* expect_kernel = nullptr;
  anvil::ScaleMode scales = anvil::ScaleMode::kNone;  // e4m3 inputs
  bool scale_b_per_expert = true;
  bool ends = false;  // contiguous, lead 0: the bounds are torch's E row ends
};

std::ostream& operator<<(std::ostream& os, const GroupedCase& c) { return os << c.name; }

// Routing with `experts` experts, rows drawn so that some experts are empty, some have one
// row and some more than a tile.
std::vector<int64_t> mixed_rows(int experts, int64_t most, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> rows(static_cast<size_t>(experts));
  for (int e = 0; e < experts; ++e) {
    switch (rng() % 5) {
      case 0: rows[e] = 0; break;
      case 1: rows[e] = 1; break;
      default: rows[e] = int64_t(rng() % uint64_t(most + 1)); break;
    }
  }
  return rows;
}

GroupedGemmDesc make_desc(const GroupedCase& c) {
  GroupedGemmDesc d;
  d.layout = c.layout;
  d.experts = int64_t(c.rows.size());
  d.n = c.n;
  d.k = c.k;
  d.input = c.input;
  d.output = c.output;
  d.index_type = c.index;
  d.alpha = c.alpha;
  d.epilogue.activation = c.act;
  d.epilogue.bias = c.bias;
  d.expected_rows_per_expert = c.hint;
  d.scales = c.scales;
  d.scale_b_per_expert = c.scale_b_per_expert;
  d.offsets_are_ends = c.ends;
  if (c.layout == GroupedLayout::kMasked) {
    d.rows = c.max_rows;
  } else {
    int64_t total = c.lead + c.trail;
    for (int64_t r : c.rows) total += r;
    d.rows = total;
  }
  return d;
}

std::vector<int64_t> make_bounds(const GroupedCase& c) {
  if (c.layout == GroupedLayout::kMasked) return c.rows;
  std::vector<int64_t> offsets{c.lead};
  for (int64_t r : c.rows) offsets.push_back(offsets.back() + r);
  if (c.ends) offsets.erase(offsets.begin());
  return offsets;
}

int64_t out_cols(const GroupedGemmDesc& d) { return d.epilogue.activation == Activation::kSwiGLU ? d.n / 2 : d.n; }
int64_t storage_rows(const GroupedGemmDesc& d) {
  return d.layout == GroupedLayout::kMasked ? d.experts * d.rows : d.rows;
}

void upload_bounds(DeviceBuffer& buffer, const std::vector<int64_t>& bounds, IndexType type, cudaStream_t stream) {
  if (type == IndexType::kInt64) {
    CHECK_CUDA(cudaMemcpyAsync(buffer.get(), bounds.data(), bounds.size() * 8, cudaMemcpyHostToDevice, stream));
  } else {
    std::vector<int32_t> narrow(bounds.begin(), bounds.end());
    CHECK_CUDA(cudaMemcpyAsync(buffer.get(), narrow.data(), narrow.size() * 4, cudaMemcpyHostToDevice, stream));
  }
  CHECK_CUDA(cudaStreamSynchronize(stream));
}

// The problem's device memory. D has `guard` extra rows after its last, poisoned, which no
// call may write.
struct GroupedOperands {
  GroupedGemmDesc desc;
  DeviceBuffer a, w, d, bias, bounds, ref, flags, scale_a, scale_b;
  GroupedGemmArgs args;
  static constexpr int64_t kGuardRows = 3;

  size_t d_bytes() const {
    return size_t((storage_rows(desc) + kGuardRows) * out_cols(desc)) * verify::dtype_bytes(desc.output);
  }
};

void make_operands(GroupedOperands& op, const GroupedGemmDesc& desc, uint64_t seed) {
  op.desc = desc;
  const int64_t rows = storage_rows(desc);
  const int64_t a_count = rows * desc.k, w_count = desc.experts * desc.n * desc.k;
  CHECK_CUDA(op.a.allocate(size_t(a_count) * verify::dtype_bytes(desc.input)));
  CHECK_CUDA(op.w.allocate(size_t(w_count) * verify::dtype_bytes(desc.input)));
  CHECK_CUDA(op.d.allocate(op.d_bytes()));
  CHECK_CUDA(op.ref.allocate(size_t(rows * out_cols(desc)) * sizeof(float)));
  CHECK_CUDA(op.bounds.allocate(size_t(desc.experts + 1) * 8));
  CHECK_CUDA(op.flags.allocate(sizeof(int)));
  CHECK_CUDA(cudaMemset(op.flags.get(), 0, sizeof(int)));
  CHECK_CUDA(verify::fill_random(op.a.get(), desc.input, a_count, seed * 8 + 0, 1.0f, nullptr));
  CHECK_CUDA(verify::fill_random(op.w.get(), desc.input, w_count, seed * 8 + 1, 1.0f, nullptr));
  op.args = GroupedGemmArgs{};
  op.args.a = op.a.get();
  op.args.w = op.w.get();
  op.args.d = op.d.get();
  op.args.bounds = op.bounds.get();
  op.args.error_flags = static_cast<int*>(op.flags.get());
  if (desc.epilogue.bias != BiasMode::kNone) {
    CHECK_CUDA(op.bias.allocate(size_t(desc.experts * desc.n) * verify::dtype_bytes(desc.epilogue.bias_dtype)));
    CHECK_CUDA(verify::fill_random(op.bias.get(), desc.epilogue.bias_dtype, desc.experts * desc.n, seed * 8 + 3,
                                   1.0f, nullptr));
    op.args.bias = op.bias.get();
  }
  if (desc.scales != anvil::ScaleMode::kNone) {
    // Row scales for every storage row, column scales for every expert: the kernel must pick
    // the expert's own (a shared-B description reads the first block only).
    // Block scales: ceil(K/128) per storage row, and per 128 x 128 block of each expert's W.
    const int64_t k_blocks = (desc.k + 127) / 128;
    const bool block = desc.scales == anvil::ScaleMode::kBlock128;
    anvil_test::fill_operand_scales(op, std::max<int64_t>(rows, 1) * (block ? k_blocks : 1),
                                    desc.experts * (block ? (desc.n + 127) / 128 * k_blocks : desc.n), seed);
  }
  CHECK_CUDA(cudaDeviceSynchronize());
}

void poison_d(GroupedOperands& op, cudaStream_t stream) {
  const int64_t elements = int64_t(op.d_bytes() / verify::dtype_bytes(op.desc.output));
  CHECK_CUDA(verify::poison(op.d.get(), op.desc.output, elements, stream));
}

// Rows of D (guard rows included) that no expert owns must hold the poison (0xFF bytes).
void expect_unowned_rows_untouched(const GroupedOperands& op, const std::vector<int64_t>& bounds) {
  std::vector<unsigned char> bytes;
  ASSERT_NO_FATAL_FAILURE(anvil_test::download(op.d, bytes));
  const int64_t total = storage_rows(op.desc) + GroupedOperands::kGuardRows;
  std::vector<bool> owned(size_t(total), false);
  for (const verify::ExpertRows& r : verify::expert_rows(op.desc, bounds)) {
    for (int64_t i = r.first; i < r.first + r.rows; ++i) owned[size_t(i)] = true;
  }
  const size_t row_bytes = size_t(out_cols(op.desc)) * verify::dtype_bytes(op.desc.output);
  int64_t touched_rows = 0, first_row = -1, first_byte = -1;
  for (int64_t i = 0; i < total; ++i) {
    if (owned[size_t(i)]) continue;
    for (size_t b = 0; b < row_bytes; ++b) {
      if (bytes[size_t(i) * row_bytes + b] != 0xFF) {
        if (first_row < 0) first_row = i, first_byte = int64_t(b);
        ++touched_rows;
        break;
      }
    }
  }
  EXPECT_EQ(touched_rows, 0) << touched_rows << " rows no expert owns were written; first: row " << first_row
                             << " (of " << storage_rows(op.desc) << " + " << GroupedOperands::kGuardRows
                             << " guard rows), byte " << first_byte;
}

int read_flags(const GroupedOperands& op) {
  int flags = -1;
  EXPECT_EQ(cudaMemcpy(&flags, op.flags.get(), sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess);
  return flags;
}

// One run: poison, grouped_gemm, reference, compare, untouched rows, error word clear.
void run_and_check(GroupedOperands& op, const std::vector<int64_t>& bounds, cudaStream_t stream) {
  ASSERT_NO_FATAL_FAILURE(poison_d(op, stream));
  ASSERT_NO_FATAL_FAILURE(upload_bounds(op.bounds, bounds, op.desc.index_type, stream));
  op.args.stream = stream;
  anvil::Diagnostic diag;
  ASSERT_EQ(anvil::grouped_gemm(op.desc, op.args, &diag), anvil::Status::kSuccess) << diag.message;
  ASSERT_TRUE(wait_bounded(stream, 30.0));
  CHECK_CUDA(cudaGetLastError());
  EXPECT_EQ(read_flags(op), 0) << "the kernel reported invalid bounds for valid ones";
  CHECK_CUDA(verify::reference_grouped(op.desc, op.args, bounds, op.ref.as_float(), stream));
  const verify::GroupedComparison c = verify::compare_grouped(op.desc, op.d.get(), op.ref.as_float(), bounds, stream);
  CHECK_CUDA(cudaStreamSynchronize(stream));
  EXPECT_TRUE(c.passed) << verify::describe(c);
  expect_unowned_rows_untouched(op, bounds);
}

class GroupedSweep : public ::testing::TestWithParam<GroupedCase> {};

TEST_P(GroupedSweep, MatchesReferenceAndLeavesOtherRows) {
  REQUIRE_SM90();
  const GroupedCase& c = GetParam();
  const GroupedGemmDesc desc = make_desc(c);
  anvil::Diagnostic diag;
  ASSERT_EQ(anvil::can_implement(desc, nullptr, &diag), anvil::Status::kSuccess) << diag.message;
  if (c.expect_kernel != nullptr) {
    const char* name = anvil::grouped_dispatch_name(desc);
    ASSERT_NE(name, nullptr);
    EXPECT_STREQ(name, c.expect_kernel) << "the case no longer covers the configuration it was written for";
  }
  anvil_test::Stream stream;
  CHECK_CUDA(stream.create());
  GroupedOperands op;
  ASSERT_NO_FATAL_FAILURE(make_operands(op, desc, 1234 + c.rows.size()));
  const std::vector<int64_t> bounds = make_bounds(c);
  ASSERT_NO_FATAL_FAILURE(run_and_check(op, bounds, stream.handle));
  // A second run with the same routing: the cached launch parameters give the same result.
  ASSERT_NO_FATAL_FAILURE(run_and_check(op, bounds, stream.handle));
}

constexpr const char* kWide = "sm90-grouped/128x256";
constexpr const char* kNarrow = "sm90-grouped/128x128";
constexpr const char* kShort = "sm90-grouped/64x128";

std::vector<GroupedCase> grouped_cases() {
  std::vector<GroupedCase> cases;
  auto add = [&](GroupedCase c) { cases.push_back(std::move(c)); };
  for (DataType in : {DataType::kBF16, DataType::kF16}) {
    const std::string t = in == DataType::kBF16 ? "bf16" : "fp16";
    // Contiguous: empty, one-row and multi-tile experts, unaligned segments, leading and
    // trailing rows no expert owns; each tile configuration.
    {
      GroupedCase c;
    c.name = "contig_mixed_wide_" + t;
      c.input = c.output = in;
      c.rows = {0, 1, 300, 77, 0, 129, 128, 5};
      c.lead = 5, c.trail = 3, c.n = 512, c.k = 192, c.hint = 4000, c.expect_kernel = kWide;
      add(c);
    }
    {
      GroupedCase c;
    c.name = "contig_mixed_narrow_" + t;
      c.input = c.output = in;
      c.rows = {129, 0, 1, 255, 64, 3};
      c.lead = 1, c.trail = 0, c.n = 200, c.k = 136, c.hint = 200, c.expect_kernel = kNarrow;
      add(c);
    }
    {
      GroupedCase c;
    c.name = "contig_mixed_short_" + t;
      c.input = c.output = in;
      c.rows = {65, 1, 0, 64, 63, 130};
      c.trail = 7, c.n = 328, c.k = 72, c.hint = 16, c.expect_kernel = kShort;
      add(c);
    }
    {
      GroupedCase c;
    c.name = "contig_one_expert_" + t;
      c.input = c.output = in;
      c.rows = {1000};
      c.n = 384, c.k = 520;
      add(c);
    }
    {
      GroupedCase c;
    c.name = "contig_160_experts_" + t;
      c.input = c.output = in;
      c.rows = mixed_rows(160, 150, 7);
      c.lead = 2, c.trail = 2, c.n = 192, c.k = 64;
      add(c);
    }
    {
      GroupedCase c;
    c.name = "masked_mixed_" + t;
      c.layout = GroupedLayout::kMasked;
      c.input = c.output = in;
      c.index = IndexType::kInt64;
      c.max_rows = 200;
      c.rows = {0, 1, 200, 65, 128, 0, 199};
      c.n = 256, c.k = 128;
      add(c);
    }
    {
      GroupedCase c;
    c.name = "masked_short_" + t;
      c.layout = GroupedLayout::kMasked;
      c.input = c.output = in;
      c.max_rows = 48;
      c.rows = mixed_rows(130, 48, 11);
      c.n = 136, c.k = 264;
      c.expect_kernel = kShort;
      add(c);
    }
  }
  // Epilogues: bias + GELU, SwiGLU, alpha, fp32 output, an odd output width.
  {
    GroupedCase c;
    c.name = "contig_bias_gelu";
    c.rows = {10, 0, 140, 1};
    c.n = 256, c.k = 128, c.act = Activation::kGeluTanh, c.bias = BiasMode::kPerColumn;
    add(c);
  }
  {
    GroupedCase c;
    c.name = "contig_swiglu_wide";
    c.rows = {10, 0, 140, 1, 300};
    c.n = 512, c.k = 256, c.act = Activation::kSwiGLU, c.hint = 4000, c.expect_kernel = kWide;
    add(c);
  }
  {
    GroupedCase c;
    c.name = "masked_swiglu_bias_short";
    c.layout = GroupedLayout::kMasked;
    c.max_rows = 40;
    c.rows = {3, 0, 40, 1};
    c.n = 256, c.k = 64, c.act = Activation::kSwiGLU, c.bias = BiasMode::kPerColumn, c.expect_kernel = kShort;
    add(c);
  }
  {
    GroupedCase c;
    c.name = "contig_alpha_fp32_out";
    c.rows = {33, 0, 200};
    c.output = DataType::kF32, c.alpha = 0.5f, c.n = 96, c.k = 64;
    add(c);
  }
  {
    GroupedCase c;
    c.name = "contig_odd_width_silu";
    c.rows = {1, 70, 0, 129};
    c.n = 77, c.k = 32, c.act = Activation::kSiLU;
    add(c);
  }
  {
    GroupedCase c;
    c.name = "contig_odd_width_plain";
    c.rows = {1, 70, 0, 129};
    c.n = 77, c.k = 32;
    add(c);
  }
  {
    GroupedCase c;
    c.name = "contig_row_ends";
    c.rows = {0, 1, 300, 77, 0, 129, 128, 5};
    c.trail = 3, c.ends = true, c.n = 256, c.k = 128;
    add(c);
  }
  {
    GroupedCase c;
    c.name = "contig_all_empty";
    c.rows = {0, 0, 0};
    c.lead = 4, c.trail = 4;
    add(c);
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Grouped, GroupedSweep, ::testing::ValuesIn(grouped_cases()),
                         [](const ::testing::TestParamInfo<GroupedCase>& info) { return info.param.name; });

constexpr const char* kWideFp8 = "sm90-grouped-fp8/128x256";
constexpr const char* kNarrowFp8 = "sm90-grouped-fp8/128x128";
constexpr const char* kShortFp8 = "sm90-grouped-fp8/64x128";
constexpr const char* kNarrowBlock = "sm90-grouped-fp8-block/128x128";
constexpr const char* kShortBlock = "sm90-grouped-fp8-block/64x128";

// e4m3 operands (K a multiple of 16, often not of the 128-value stage), bf16 output unless
// stated, torch._scaled_grouped_mm's row/column scales unless stated.
std::vector<GroupedCase> grouped_fp8_cases() {
  using anvil::ScaleMode;
  std::vector<GroupedCase> cases;
  auto fp8 = [](std::string name) {
    GroupedCase c;
    c.name = std::move(name);
    c.input = DataType::kE4M3;
    c.output = DataType::kBF16;
    c.scales = ScaleMode::kRowColumn;
    return c;
  };
  {
    GroupedCase c = fp8("contig_rowcol_wide");
    c.rows = {0, 1, 300, 77, 0, 129, 128, 5};
    c.lead = 5, c.trail = 3, c.n = 512, c.k = 272, c.hint = 4000, c.expect_kernel = kWideFp8;
    cases.push_back(c);
  }
  {
    GroupedCase c = fp8("contig_rowcol_narrow");
    c.rows = {129, 0, 1, 255, 64, 3};
    c.lead = 1, c.n = 200, c.k = 144, c.hint = 200, c.expect_kernel = kNarrowFp8;
    cases.push_back(c);
  }
  {
    GroupedCase c = fp8("contig_rowcol_short");
    c.rows = {65, 1, 0, 64, 63, 130};
    c.trail = 7, c.n = 328, c.k = 80, c.hint = 16, c.expect_kernel = kShortFp8;
    cases.push_back(c);
  }
  {
    GroupedCase c = fp8("contig_rowcol_160_experts");
    c.rows = mixed_rows(160, 150, 7);
    c.lead = 2, c.trail = 2, c.n = 192, c.k = 512;
    cases.push_back(c);
  }
  {
    GroupedCase c = fp8("contig_rowcol_64_experts_k2048");
    c.rows = mixed_rows(64, 400, 13);
    c.n = 768, c.k = 2048, c.hint = 4000, c.expect_kernel = kWideFp8;
    cases.push_back(c);
  }
  {
    GroupedCase c = fp8("contig_rowcol_row_ends_short");
    c.rows = {0, 1, 37, 0, 300, 64, 129, 5};
    c.trail = 11, c.ends = true, c.n = 384, c.k = 256, c.hint = 16, c.expect_kernel = kShortFp8;
    cases.push_back(c);
  }
  {
    GroupedCase c = fp8("contig_rowcol_shared_b");
    c.rows = {3, 0, 140, 1};
    c.scale_b_per_expert = false, c.n = 256, c.k = 128;
    cases.push_back(c);
  }
  {
    GroupedCase c = fp8("contig_tensor_per_expert");
    c.rows = {3, 0, 140, 1, 257};
    c.scales = ScaleMode::kTensor, c.n = 384, c.k = 256, c.hint = 4000, c.expect_kernel = kWideFp8;
    cases.push_back(c);
  }
  {
    GroupedCase c = fp8("contig_tensor_shared_b");
    c.rows = {3, 0, 140, 1};
    c.scales = ScaleMode::kTensor, c.scale_b_per_expert = false, c.n = 256, c.k = 128, c.hint = 16;
    c.expect_kernel = kShortFp8;
    cases.push_back(c);
  }
  {
    GroupedCase c = fp8("contig_no_scales");
    c.rows = {1, 70, 0, 129};
    c.scales = ScaleMode::kNone, c.n = 256, c.k = 64;
    cases.push_back(c);
  }
  {
    GroupedCase c = fp8("masked_rowcol");
    c.layout = GroupedLayout::kMasked;
    c.index = IndexType::kInt64;
    c.max_rows = 200;
    c.rows = {0, 1, 200, 65, 128, 0, 199};
    c.n = 256, c.k = 128;
    cases.push_back(c);
  }
  {
    GroupedCase c = fp8("masked_rowcol_short");
    c.layout = GroupedLayout::kMasked;
    c.max_rows = 48;
    c.rows = mixed_rows(130, 48, 11);
    c.n = 136, c.k = 272, c.expect_kernel = kShortFp8;
    cases.push_back(c);
  }
  {
    GroupedCase c = fp8("contig_rowcol_swiglu_bias");
    c.rows = {10, 0, 140, 1, 300};
    c.n = 512, c.k = 256, c.act = Activation::kSwiGLU, c.bias = BiasMode::kPerColumn;
    cases.push_back(c);
  }
  {
    GroupedCase c = fp8("contig_rowcol_alpha_fp32_out");
    c.rows = {33, 0, 200};
    c.output = DataType::kF32, c.alpha = 0.5f, c.n = 96, c.k = 64;
    cases.push_back(c);
  }
  // DeepSeek-V3 block scales (1 x 128 per row of A, 128 x 128 per block of W): K of
  // whole, partial and single blocks, ragged experts, row counts not multiples of 4 (the
  // scale line's boxes start on 16-byte boundaries), the 128x256 rule's experts on 128x128.
  {
    GroupedCase c = fp8("contig_block_narrow");
    c.rows = {129, 0, 1, 255, 64, 3};
    c.scales = ScaleMode::kBlock128, c.lead = 1, c.n = 200, c.k = 400, c.hint = 200, c.expect_kernel = kNarrowBlock;
    cases.push_back(c);
  }
  {
    GroupedCase c = fp8("contig_block_wide_rule");
    c.rows = {0, 1, 300, 77, 0, 129, 128, 5};
    c.scales = ScaleMode::kBlock128, c.lead = 5, c.trail = 3, c.n = 512, c.k = 1024, c.hint = 4000;
    c.expect_kernel = kNarrowBlock;
    cases.push_back(c);
  }
  {
    GroupedCase c = fp8("contig_block_short_shared_b");
    c.rows = {65, 1, 0, 64, 63, 130};
    c.scales = ScaleMode::kBlock128, c.scale_b_per_expert = false, c.trail = 7, c.n = 328, c.k = 128, c.hint = 16;
    c.expect_kernel = kShortBlock;
    cases.push_back(c);
  }
  {
    GroupedCase c = fp8("masked_block");
    c.layout = GroupedLayout::kMasked;
    c.max_rows = 61;
    c.rows = {0, 1, 61, 17, 60, 0, 33};
    c.scales = ScaleMode::kBlock128, c.n = 256, c.k = 784;
    cases.push_back(c);
  }
  {
    GroupedCase c = fp8("contig_block_swiglu_bias_fp32");
    c.rows = {10, 0, 140, 1, 300};
    c.scales = ScaleMode::kBlock128, c.output = DataType::kF32, c.n = 512, c.k = 2048;
    c.act = Activation::kSwiGLU, c.bias = BiasMode::kPerColumn;
    cases.push_back(c);
  }
  {
    GroupedCase c = fp8("contig_rowcol_fp16_out_odd_width");
    c.rows = {1, 70, 0, 129};
    c.output = DataType::kF16, c.n = 77, c.k = 32, c.act = Activation::kGeluErf;
    cases.push_back(c);
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(GroupedFp8, GroupedSweep, ::testing::ValuesIn(grouped_fp8_cases()),
                         [](const ::testing::TestParamInfo<GroupedCase>& info) { return info.param.name; });

// Replays a captured grouped call once per routing (bounds uploaded before each replay, D
// poisoned) and checks each result against the reference and the unowned rows untouched.
void replay_with_routings(GroupedOperands& op, const GroupedGemmDesc& desc, cudaGraphExec_t exec,
                          cudaStream_t stream, const std::vector<std::vector<int64_t>>& routings) {
  for (size_t i = 0; i < routings.size(); ++i) {
    SCOPED_TRACE("routing " + std::to_string(i));
    ASSERT_NO_FATAL_FAILURE(poison_d(op, stream));
    ASSERT_NO_FATAL_FAILURE(upload_bounds(op.bounds, routings[i], desc.index_type, stream));
    CHECK_CUDA(cudaGraphLaunch(exec, stream));
    ASSERT_TRUE(wait_bounded(stream, 30.0));
    EXPECT_EQ(read_flags(op), 0);
    CHECK_CUDA(verify::reference_grouped(desc, op.args, routings[i], op.ref.as_float(), stream));
    const verify::GroupedComparison cmp = verify::compare_grouped(desc, op.d.get(), op.ref.as_float(), routings[i], stream);
    CHECK_CUDA(cudaStreamSynchronize(stream));
    EXPECT_TRUE(cmp.passed) << verify::describe(cmp);
    expect_unowned_rows_untouched(op, routings[i]);
  }
}

// The masked layout in a CUDA graph captured once: each replay reads the counts the device
// holds at that moment, whatever they were at capture.
TEST(GroupedGraph, MaskedReplaysWithChangingCounts) {
  REQUIRE_SM90();
  GroupedCase c;
    c.name = "graph";
  c.layout = GroupedLayout::kMasked;
  c.max_rows = 96;
  c.rows = std::vector<int64_t>(16, 96);
  c.n = 256, c.k = 256;
  const GroupedGemmDesc desc = make_desc(c);
  anvil_test::Stream stream;
  CHECK_CUDA(stream.create());
  GroupedOperands op;
  ASSERT_NO_FATAL_FAILURE(make_operands(op, desc, 99));
  op.args.stream = stream.handle;
  ASSERT_NO_FATAL_FAILURE(upload_bounds(op.bounds, c.rows, desc.index_type, stream.handle));

  // One direct call first: the capture below then records a call whose launch parameters
  // are already built (CaptureAsFirstCall covers the other order).
  ASSERT_NO_FATAL_FAILURE(run_and_check(op, c.rows, stream.handle));

  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  CHECK_CUDA(cudaStreamBeginCapture(stream.handle, cudaStreamCaptureModeThreadLocal));
  anvil::Diagnostic diag;
  const anvil::Status s = anvil::grouped_gemm(desc, op.args, &diag);
  CHECK_CUDA(cudaStreamEndCapture(stream.handle, &graph));
  ASSERT_EQ(s, anvil::Status::kSuccess) << diag.message;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));

  const std::vector<std::vector<int64_t>> routings = {
      mixed_rows(16, 96, 1),
      std::vector<int64_t>(16, 0),
      {96, 0, 1, 2, 3, 95, 64, 65, 0, 0, 0, 17, 96, 1, 0, 33},
      std::vector<int64_t>(16, 96),
      mixed_rows(16, 96, 2),
  };
  ASSERT_NO_FATAL_FAILURE(replay_with_routings(op, desc, exec, stream.handle, routings));
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

// A grouped call whose first use is inside a stream capture (its launch parameters are
// built while capturing), contiguous layout, replayed with changing offsets.
TEST(GroupedGraph, CaptureAsFirstCall) {
  REQUIRE_SM90();
  GroupedCase c;
  c.name = "capture_first";
  c.rows = {40, 0, 200, 1, 90};
  c.n = 328, c.k = 96;
  const GroupedGemmDesc desc = make_desc(c);  // rows = 331
  anvil_test::Stream stream;
  CHECK_CUDA(stream.create());
  GroupedOperands op;
  ASSERT_NO_FATAL_FAILURE(make_operands(op, desc, 77));
  op.args.stream = stream.handle;
  ASSERT_NO_FATAL_FAILURE(upload_bounds(op.bounds, make_bounds(c), desc.index_type, stream.handle));
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  CHECK_CUDA(cudaStreamBeginCapture(stream.handle, cudaStreamCaptureModeThreadLocal));
  anvil::Diagnostic diag;
  const anvil::Status s = anvil::grouped_gemm(desc, op.args, &diag);
  const cudaError_t end = cudaStreamEndCapture(stream.handle, &graph);
  ASSERT_EQ(s, anvil::Status::kSuccess) << diag.message;
  CHECK_CUDA(end);
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  const std::vector<std::vector<int64_t>> routings = {
      {0, 40, 40, 240, 331, 331}, {0, 0, 0, 0, 0, 331}, {5, 6, 100, 100, 101, 300}, {0, 0, 0, 0, 0, 0}};
  ASSERT_NO_FATAL_FAILURE(replay_with_routings(op, desc, exec, stream.handle, routings));
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

// Offsets the kernel must refuse: it sets the error word, skips the invalid experts and
// writes nothing outside D's rows; the host check names the same fault.
TEST(GroupedBounds, UnsortedAndOutOfRangeOffsetsAreReported) {
  REQUIRE_SM90();
  GroupedCase c;
    c.name = "bounds";
  c.rows = {50, 50, 50, 50};
  const GroupedGemmDesc desc = make_desc(c);  // rows = 200
  anvil_test::Stream stream;
  CHECK_CUDA(stream.create());
  GroupedOperands op;
  ASSERT_NO_FATAL_FAILURE(make_operands(op, desc, 5));
  op.args.stream = stream.handle;
  struct Bad {
    std::vector<int64_t> offsets;
    int flag;
  };
  const std::vector<Bad> bad = {
      {{0, 100, 60, 150, 200}, anvil::kGroupedOffsetsDecrease},
      {{0, 50, 100, 150, 260}, anvil::kGroupedOffsetsOutOfRange},
      {{-8, 50, 100, 150, 200}, anvil::kGroupedOffsetsOutOfRange},
  };
  for (const Bad& b : bad) {
    SCOPED_TRACE("offsets " + std::to_string(b.offsets[1]) + "," + std::to_string(b.offsets[2]) + ",.." +
                 std::to_string(b.offsets[4]));
    CHECK_CUDA(cudaMemset(op.flags.get(), 0, sizeof(int)));
    ASSERT_NO_FATAL_FAILURE(poison_d(op, stream.handle));
    ASSERT_NO_FATAL_FAILURE(upload_bounds(op.bounds, b.offsets, desc.index_type, stream.handle));
    anvil::Diagnostic diag;
    ASSERT_EQ(anvil::grouped_gemm(desc, op.args, &diag), anvil::Status::kSuccess) << diag.message;
    ASSERT_TRUE(wait_bounded(stream.handle, 30.0));
    CHECK_CUDA(cudaGetLastError());
    const int flags = read_flags(op);
    EXPECT_NE(flags & b.flag, 0) << "error word " << flags;
    anvil::Diagnostic message;
    EXPECT_EQ(anvil::grouped_error_status(flags, &message), anvil::Status::kInvalidArgument);
    EXPECT_NE(std::strlen(message.message), 0u);
    EXPECT_EQ(anvil::check_grouped_bounds(desc, b.offsets.data(), nullptr), anvil::Status::kInvalidArgument);
    // Nothing beyond D's last row (the guard rows) was written.
    std::vector<unsigned char> bytes;
    ASSERT_NO_FATAL_FAILURE(anvil_test::download(op.d, bytes));
    const size_t row_bytes = size_t(out_cols(desc)) * verify::dtype_bytes(desc.output);
    for (size_t i = size_t(desc.rows) * row_bytes; i < bytes.size(); ++i) {
      ASSERT_EQ(bytes[i], 0xFF) << "guard byte " << i - size_t(desc.rows) * row_bytes << " written";
    }
  }
}

// A fixed-seed run of the grouped fuzzer's small problems (anvil-fuzz --grouped --small).
TEST(GroupedFuzzSubset, SmallProblemsPass) {
  REQUIRE_SM90();
  anvil_test::Stream stream;
  CHECK_CUDA(stream.create());
  int failures = 0;
  for (int64_t i = 0; i < 150; ++i) {
    const verify::GroupedFuzzProblem p = verify::make_grouped_fuzz_problem(20261202, i, true);
    const verify::FuzzOutcome o = verify::run_grouped_fuzz_problem(p, stream.handle);
    EXPECT_EQ(o.result, verify::FuzzResult::kPassed)
        << verify::describe(p) << " | " << o.kernel << ": " << o.message
        << "\n  rerun: anvil-fuzz --grouped --small --seed 20261202 --only " << i;
    if (o.result != verify::FuzzResult::kPassed) ++failures;
    if (o.context_lost || failures >= 5) break;
  }
}

}  // namespace
