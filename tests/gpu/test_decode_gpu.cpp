// The decode kernels (sm90-decode, and sm90-decode-ldg and the 64-row kernels on the same
// cases) against the reference: token counts from 1 to past one 256-wide tile, feature and
// K tails, splits of K from 1 to 8 (uneven ones included), every epilogue, output layouts
// that defeat the vector store; and batch invariance.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "gpu/gpu_support.h"
#include "plan/launch.h"

namespace {

using anvil::Activation;
using anvil::BiasMode;
using anvil::DataType;
using anvil::Diagnostic;
using anvil::GemmDesc;
using anvil::Order;
using anvil::Status;
using anvil_test::Operands;
namespace verify = anvil::verify;

struct DecodeCase {
  std::string name;
  GemmDesc desc;
  bool c_is_d = false;
};
void PrintTo(const DecodeCase& c, std::ostream* os) { *os << c.name; }

GemmDesc linear(int64_t m, int64_t n, int64_t k, DataType in = DataType::kBF16, DataType out = DataType::kBF16) {
  GemmDesc d = anvil::linear_desc(m, n, k, in, out);
  d.kernel = "sm90-decode";
  return d;
}

GemmDesc with_epilogue(GemmDesc d, Activation act, BiasMode bias) {
  d.epilogue.activation = act;
  d.epilogue.bias = bias;
  d.epilogue.bias_dtype = DataType::kBF16;
  const int64_t n_out = act == Activation::kSwiGLU ? d.n / 2 : d.n;
  d.c.ld = d.d.ld = n_out;
  return d;
}

// A strided batch of d, each matrix 64 elements past the previous one's end.
GemmDesc strided_batch(GemmDesc d, int64_t batch) {
  d.batch = batch;
  d.a.batch_stride = d.m * d.k + 64;
  d.b.batch_stride = d.n * d.k + 64;
  d.c.batch_stride = d.d.batch_stride = d.m * d.n + 64;
  return d;
}

std::vector<DecodeCase> decode_cases() {
  std::vector<DecodeCase> cases;
  // Every token tile (8 ... 256) and its edges, and two 256-wide tiles; K = 1000 is 15 full
  // k-tiles and a partial one.
  for (int64_t m : {1, 3, 8, 9, 17, 33, 64, 65, 127, 128, 200, 256, 257, 513}) {
    cases.push_back({"tokens_" + std::to_string(m) + "_384x1000", linear(m, 384, 1000)});
  }
  // Few feature tiles and long K: the planner splits K across the cluster (8 ways for the
  // first; 10 k-tiles for the second). K ranges of unequal length come from K tails such as
  // 4104 = 64 full k-tiles and a partial one, below.
  cases.push_back({"split8_4x1024x8192", linear(4, 1024, 8192)});
  cases.push_back({"split_uneven_1x128x640", linear(1, 128, 640)});
  // Feature and K tails.
  cases.push_back({"tails_16x1000x4104", linear(16, 1000, 4104)});
  cases.push_back({"tails_100x129x72", linear(100, 129, 72)});
  cases.push_back({"tile96_80x1000x1000", linear(80, 1000, 1000)});  // 65-96 tokens: the 96-token tile
  // K not a multiple of 8 in padded rows (TMA-legal pitches): the last 16-byte piece of a
  // row is partial - TMA zero-fills past K, and sm90-decode-ldg's cp.async copies only the
  // bytes before K and zero-fills the rest.
  {
    GemmDesc d = linear(9, 384, 1001);
    d.a.ld = d.b.ld = 1008;
    cases.push_back({"odd_k_padded_9x384x1001", d});
    GemmDesc wide = linear(40, 256, 515);
    wide.a.ld = wide.b.ld = 520;
    cases.push_back({"odd_k_padded_40x256x515", wide});
  }
  // Dtypes.
  cases.push_back({"fp16_24x512x1000", linear(24, 512, 1000, DataType::kF16, DataType::kF16)});
  cases.push_back({"bf16_to_fp32_40x512x1000", linear(40, 512, 1000, DataType::kBF16, DataType::kF32)});
  cases.push_back({"fp16_to_fp32_130x256x520", linear(130, 256, 520, DataType::kF16, DataType::kF32)});
  // Epilogues.
  cases.push_back({"bias_col_gelu_tanh_32x1024x512",
                   with_epilogue(linear(32, 1024, 512), Activation::kGeluTanh, BiasMode::kPerColumn)});
  cases.push_back({"bias_col_gelu_erf_200x512x512",
                   with_epilogue(linear(200, 512, 512), Activation::kGeluErf, BiasMode::kPerColumn)});
  cases.push_back({"bias_row_relu_7x512x704", with_epilogue(linear(7, 512, 704), Activation::kReLU, BiasMode::kPerRow)});
  cases.push_back({"silu_64x640x512", with_epilogue(linear(64, 640, 512), Activation::kSiLU, BiasMode::kNone)});
  cases.push_back({"swiglu_bias_20x768x1000",
                   with_epilogue(linear(20, 768, 1000), Activation::kSwiGLU, BiasMode::kPerColumn)});
  cases.push_back({"swiglu_256x1024x4096", with_epilogue(linear(256, 1024, 4096), Activation::kSwiGLU, BiasMode::kNone)});
  {
    GemmDesc d = linear(50, 512, 1000);
    d.alpha = 0.75f, d.beta = 1.0f;
    cases.push_back({"residual_c_is_d_50x512x1000", d, true});
    d.beta = -0.5f;
    cases.push_back({"alpha_beta_separate_c_50x512x1000", d});
    // Several token tiles, the last moved back to end at M: it recomputes rows of the one
    // before and must finish only its own, or C == D would be added twice.
    GemmDesc moved = linear(300, 512, 1000);
    moved.alpha = 0.75f, moved.beta = 1.0f;
    cases.push_back({"residual_c_is_d_moved_tile_300x512x1000", moved, true});
  }
  // An odd number of output columns in rows padded to a multiple of four: the unsplit
  // tiles' direct stores (two neighbouring columns each) end with a single column.
  {
    GemmDesc d = linear(24, 1001, 512);
    d.c.ld = d.d.ld = 1004;
    cases.push_back({"odd_n_padded_24x1001x512", d});
  }
  // Output layouts the four-wide store cannot take: an odd row pitch, column-major D.
  {
    GemmDesc d = linear(33, 500, 256);
    d.c.ld = d.d.ld = 501;
    cases.push_back({"odd_ldd_33x500x256", d});
    GemmDesc col = linear(33, 512, 256);
    col.c = col.d = anvil_test::layout(DataType::kBF16, Order::kColMajor, 40);
    cases.push_back({"col_major_d_33x512x256", col});
  }
  // Strided batch: each batch's own weight and tokens.
  cases.push_back({"batch3_10x256x320", strided_batch(linear(10, 256, 320), 3)});
  // Every case again on the load-path kernel (more than 16 tokens: several token tiles).
  const size_t tma_cases = cases.size();
  for (size_t i = 0; i < tma_cases; ++i) {
    DecodeCase ldg = cases[i];
    ldg.name = "ldg_" + ldg.name;
    ldg.desc.kernel = "sm90-decode-ldg";
    cases.push_back(ldg);
  }
  // And on the 64-row kernels, which take no SwiGLU: sm90-decode-r64 (four K boxes per
  // stage) and sm90-decode-ldg-r64 (four warpgroups along K up to 8 tokens, three for its
  // 16- and 32-token tiles; more than 32 tokens: several token tiles).
  const struct {
    const char* prefix;
    const char* kernel;
  } rows64_kernels[] = {{"r64_", "sm90-decode-r64"}, {"ldgr64_", "sm90-decode-ldg-r64"}};
  for (const auto& rows64_kernel : rows64_kernels) {
    for (size_t i = 0; i < tma_cases; ++i) {
      if (cases[i].desc.epilogue.activation == Activation::kSwiGLU) continue;
      DecodeCase rows64 = cases[i];
      rows64.name = rows64_kernel.prefix + rows64.name;
      rows64.desc.kernel = rows64_kernel.kernel;
      cases.push_back(rows64);
    }
  }
  // sm90-decode-r64 in the regime the dispatcher gives it: unsplit plans of 64-row tiles
  // that fill a wave (the cases above are small enough to be split). An odd number of
  // feature tiles, K tails, whole 64-wide K blocks ending in a partial 256-wide stage, the
  // 16-token tile with two CTAs per SM, fp16 with an epilogue, a batch whose tiles
  // together fill the wave.
  {
    const auto r64 = [](GemmDesc d) {
      d.kernel = "sm90-decode-r64";
      return d;
    };
    cases.push_back({"r64_unsplit_17x8000x520", r64(linear(17, 8000, 520))});
    cases.push_back({"r64_unsplit_64x8192x1000", r64(linear(64, 8192, 1000))});
    cases.push_back({"r64_unsplit_32x8192x2112", r64(linear(32, 8192, 2112))});
    cases.push_back({"r64_unsplit_fp16_bias_gelu_50x7744x512",
                     r64(with_epilogue(linear(50, 7744, 512, DataType::kF16, DataType::kF16), Activation::kGeluTanh,
                                       BiasMode::kPerColumn))});
    cases.push_back({"r64_unsplit_9x16320x264", r64(linear(9, 16320, 264))});
    GemmDesc batched = linear(33, 4096, 256);
    batched.batch = 2;
    batched.a.batch_stride = 33 * 256 + 64;
    batched.b.batch_stride = 4096 * 256 + 64;
    batched.c.batch_stride = batched.d.batch_stride = 33 * 4096 + 64;
    cases.push_back({"r64_unsplit_batch2_33x4096x256", r64(batched)});
  }
  // 65-128 tokens where the planner takes sm90-decode-r64's 64-row tiles over sm90-decode's
  // 128-row ones: one 96- or 128-token tile, K split across a cluster of 64-row CTAs (two
  // here, eight on the narrow long-K weight), with and without an epilogue.
  cases.push_back({"tile128_r64_split2_127x4096x4096", linear(127, 4096, 4096)});
  cases.push_back({"tile128_r64_fp16_bias_gelu_128x2880x2880",
                   with_epilogue(linear(128, 2880, 2880, DataType::kF16, DataType::kF16), Activation::kGeluTanh,
                                 BiasMode::kPerColumn)});
  cases.push_back({"tile128_r64_split8_100x512x49152", linear(100, 512, 49152)});
  cases.push_back({"tile96_r64_80x4096x11008", linear(80, 4096, 11008)});
  cases.push_back({"tile96_r64_fp16_relu_65x2880x2880",
                   with_epilogue(linear(65, 2880, 2880, DataType::kF16, DataType::kF16), Activation::kReLU,
                                 BiasMode::kNone)});
  return cases;
}

// Runs op's GEMM once on the default stream, checks D against the reference (computed
// first: C may alias D) and returns D's bytes - what the bitwise tests below hold later
// calls to, so that a GEMM writing nothing (identical poison every time) cannot pass them.
void run_checked(Operands& op, std::vector<unsigned char>& out) {
  CHECK_CUDA(verify::reference_gemm(op.desc, op.args, op.ref.as_float(), nullptr));
  CHECK_CUDA(cudaDeviceSynchronize());
  Diagnostic diag;
  ASSERT_EQ(anvil::gemm(op.desc, op.args, &diag), Status::kSuccess) << diag.message;
  CHECK_CUDA(cudaDeviceSynchronize());
  const auto cmp = verify::compare(op.desc, op.d.get(), op.ref.as_float(), verify::tolerance_for(op.desc), nullptr);
  ASSERT_GE(cmp.count, 0) << "the comparison itself failed (CUDA error)";
  EXPECT_TRUE(cmp.passed) << anvil_test::describe(op.desc) << ": " << anvil_test::describe(cmp);
  ASSERT_NO_FATAL_FAILURE(anvil_test::download(op.d, out));
}

class DecodeSweep : public ::testing::TestWithParam<DecodeCase> {};

TEST_P(DecodeSweep, MatchesReference) {
  REQUIRE_SM90();
  const DecodeCase& c = GetParam();
  Operands op;
  ASSERT_NO_FATAL_FAILURE(anvil_test::make_operands(op, c.desc, 7000 + c.desc.m, c.c_is_d));
  Diagnostic diag;
  ASSERT_EQ(anvil::can_implement(op.desc, &op.args, &diag), Status::kSuccess) << diag.message;
  std::vector<unsigned char> d;
  ASSERT_NO_FATAL_FAILURE(run_checked(op, d));
  if (!c.c_is_d) {
    ASSERT_NO_FATAL_FAILURE(anvil_test::expect_padding_untouched(op));
  }
}

INSTANTIATE_TEST_SUITE_P(Decode, DecodeSweep, ::testing::ValuesIn(decode_cases()),
                         [](const ::testing::TestParamInfo<DecodeCase>& info) { return info.param.name; });

// Runs desc on (a, b) into a fresh, poisoned D and returns D's bytes.
void run_into(const GemmDesc& desc, const void* a, const void* b, cudaStream_t stream, std::vector<unsigned char>& out) {
  anvil_test::DeviceBuffer d;
  const int64_t elements = verify::storage_elements(desc.d, desc.m, desc.n, desc.batch);
  CHECK_CUDA(d.allocate(size_t(elements) * verify::dtype_bytes(desc.d.dtype)));
  CHECK_CUDA(verify::poison(d.get(), desc.d.dtype, elements, stream));
  anvil::GemmArgs args;
  args.a = a, args.b = b, args.d = d.get(), args.stream = stream;
  Diagnostic diag;
  ASSERT_EQ(anvil::gemm(desc, args, &diag), Status::kSuccess) << diag.message;
  CHECK_CUDA(cudaStreamSynchronize(stream));
  ASSERT_NO_FATAL_FAILURE(anvil_test::download(d, out));
}

// With batch_invariant, the first rows of a 300-token call are bitwise the rows of calls
// with 1, 8, 64 or 100 tokens - through the dispatcher, which picks a different kernel as
// M changes but never a split of K (1024 features: few tiles, where a split would pay).
class DecodeBatchInvariance : public ::testing::TestWithParam<int64_t> {};

TEST_P(DecodeBatchInvariance, RowsDoNotDependOnM) {
  REQUIRE_SM90();
  const int64_t n = GetParam(), k = 4096, m_large = 300;
  GemmDesc large = anvil::linear_desc(m_large, n, k, DataType::kBF16, DataType::kBF16);
  large.batch_invariant = true;
  Operands op;
  ASSERT_NO_FATAL_FAILURE(anvil_test::make_operands(op, large, 4242));
  std::vector<unsigned char> reference;
  ASSERT_NO_FATAL_FAILURE(run_checked(op, reference));
  for (int64_t m : {1, 8, 64, 100}) {
    GemmDesc small = large;
    small.m = m;
    std::vector<unsigned char> rows;
    ASSERT_NO_FATAL_FAILURE(run_into(small, op.a.get(), op.b.get(), nullptr, rows));
    ASSERT_EQ(rows.size(), size_t(m * n * 2));
    EXPECT_EQ(std::memcmp(rows.data(), reference.data(), rows.size()), 0) << "rows of the " << m << "-token call differ";
  }
}

INSTANTIATE_TEST_SUITE_P(Weights, DecodeBatchInvariance, ::testing::Values(int64_t{1024}, int64_t{8192}));

// The cluster reduction adds partials in rank order: equal bits on every stream and run.
class DecodeDeterminism : public ::testing::TestWithParam<const char*> {};

TEST_P(DecodeDeterminism, BitwiseEqualAcrossStreamsAndRepeats) {
  REQUIRE_SM90();
  GemmDesc desc = linear(4, 1024, 8192);  // an 8-way split
  desc.kernel = GetParam();
  Operands op;
  ASSERT_NO_FATAL_FAILURE(anvil_test::make_operands(op, desc, 99));
  anvil_test::Stream streams[2];
  CHECK_CUDA(streams[0].create());
  CHECK_CUDA(streams[1].create());
  std::vector<unsigned char> first;
  ASSERT_NO_FATAL_FAILURE(run_checked(op, first));
  for (int repeat = 0; repeat < 10; ++repeat) {
    std::vector<unsigned char> again;
    ASSERT_NO_FATAL_FAILURE(run_into(desc, op.a.get(), op.b.get(), streams[repeat % 2].handle, again));
    ASSERT_EQ(again.size(), first.size());
    EXPECT_EQ(std::memcmp(again.data(), first.data(), first.size()), 0) << "repeat " << repeat;
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, DecodeDeterminism, ::testing::Values("sm90-decode", "sm90-decode-ldg"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param) == "sm90-decode" ? std::string("tma") : std::string("ldg");
                         });

}  // namespace

// Swap-AB (planner.cpp, plan_swapped_decode): a narrow output on many rows runs as the
// transposed problem on a decode kernel - B's columns its tokens, A its weight - through
// the public entry point. Every case must be one the planner swaps (checked), so the
// transposition of each layout and epilogue is what the reference judges: per-column bias
// becoming per-row, C with alpha/beta and C == D, column-major D, fp32 out, a strided batch,
// K tails.
std::vector<DecodeCase> swap_cases() {
  const auto plain = [](int64_t m, int64_t n, int64_t k, DataType in = DataType::kBF16, DataType out = DataType::kBF16) {
    return anvil::linear_desc(m, n, k, in, out);
  };
  std::vector<DecodeCase> cases;
  cases.push_back({"lora_down_2048x128x1000", plain(2048, 128, 1000)});
  cases.push_back({"tokens64_4096x64x520", plain(4096, 64, 520)});
  cases.push_back({"tokens16_fp16_to_fp32_3000x16x1000", plain(3000, 16, 1000, DataType::kF16, DataType::kF32)});
  cases.push_back({"tokens8_8192x8x264", plain(8192, 8, 264)});
  cases.push_back({"k_tail_1500x40x1001_padded", [&] {
                     GemmDesc d = plain(1500, 40, 1001);
                     d.a.ld = d.b.ld = 1008;
                     return d;
                   }()});
  {
    GemmDesc d = plain(2048, 96, 512);
    d.epilogue.activation = Activation::kGeluTanh;
    d.epilogue.bias = BiasMode::kPerColumn;
    d.epilogue.bias_dtype = DataType::kBF16;
    cases.push_back({"bias_col_gelu_2048x96x512", d});
    d.epilogue.activation = Activation::kReLU;
    d.epilogue.bias = BiasMode::kPerRow;
    cases.push_back({"bias_row_relu_2048x96x512", d});
  }
  {
    GemmDesc d = plain(1536, 32, 512);
    d.alpha = 0.75f, d.beta = 1.0f;
    cases.push_back({"residual_c_is_d_1536x32x512", d, true});
    d.beta = -0.5f;
    cases.push_back({"alpha_beta_separate_c_1536x32x512", d});
  }
  {
    GemmDesc col = plain(2000, 24, 256);
    col.c = col.d = anvil_test::layout(DataType::kBF16, Order::kColMajor, 2008);
    cases.push_back({"col_major_d_2000x24x256", col});
  }
  cases.push_back({"batch3_1024x20x320", strided_batch(plain(1024, 20, 320), 3)});
  return cases;
}

class SwapAb : public ::testing::TestWithParam<DecodeCase> {};

TEST_P(SwapAb, PlannerSwapsAndMatchesReference) {
  REQUIRE_SM90();
  const DecodeCase& c = GetParam();
  Operands op;
  ASSERT_NO_FATAL_FAILURE(anvil_test::make_operands(op, c.desc, 7300 + c.desc.n, c.c_is_d));
  anvil::detail::LaunchPlan plan;
  Diagnostic diag;
  ASSERT_EQ(anvil::detail::plan_for(op.desc, &op.args, nullptr, &plan, &diag), Status::kSuccess) << diag.message;
  EXPECT_TRUE(plan.swap_ab) << plan.family_reason;
  std::vector<unsigned char> d;
  ASSERT_NO_FATAL_FAILURE(run_checked(op, d));
  if (!c.c_is_d) {
    ASSERT_NO_FATAL_FAILURE(anvil_test::expect_padding_untouched(op));
  }
}

INSTANTIATE_TEST_SUITE_P(Narrow, SwapAb, ::testing::ValuesIn(swap_cases()),
                         [](const ::testing::TestParamInfo<DecodeCase>& info) { return info.param.name; });
