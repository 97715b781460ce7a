// Every kernel anvil carries, by name and through the dispatcher, against the reference:
// correctness over tile-multiple and ragged shapes, layouts, dtypes and epilogues; bitwise
// determinism; and CUDA graph capture.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ostream>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "gpu/gpu_support.h"
#include "gpu/kernel_promises.h"
#include "kernels/common/epilogue_params.h"
#include "kernels/sm90/plan.h"
#include "kernels/sm90/row_split.h"

namespace {

using anvil::Activation;
using anvil::BiasMode;
using anvil::DataType;
using anvil::Diagnostic;
using anvil::GemmDesc;
using anvil::Order;
using anvil::Status;
using anvil_test::DeviceBuffer;
using anvil_test::Operands;
namespace verify = anvil::verify;

struct Case {
  std::string name;
  GemmDesc desc;
  bool c_is_d = false;
  uint64_t seed = 0;
};
// Names the case in test listings instead of dumping its bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

// Lines padded by `pad` elements; batches spaced by a matrix plus 64 elements, which keeps
// 16-byte alignment for every dtype so that TMA kernels are not refused for the stride.
GemmDesc make_desc(int64_t m, int64_t n, int64_t k, DataType in, Order ao, Order bo, DataType out,
                   int64_t pad = 0, int64_t batch = 1, Activation act = Activation::kIdentity) {
  GemmDesc d;
  d.m = m;
  d.n = n;
  d.k = k;
  d.batch = batch;
  d.epilogue.activation = act;
  const int64_t n_out = act == Activation::kSwiGLU ? n / 2 : n;
  constexpr int64_t kBatchGap = 64;
  d.a = anvil_test::padded_layout(in, ao, m, k, pad, batch, kBatchGap);
  d.b = anvil_test::padded_layout(in, bo, k, n, pad, batch, kBatchGap);
  d.d = anvil_test::padded_layout(out, Order::kRowMajor, m, n_out, pad, batch, kBatchGap);
  d.c = d.d;
  return d;
}

GemmDesc linear(int64_t m, int64_t n, int64_t k, DataType in = DataType::kBF16, DataType out = DataType::kBF16) {
  return make_desc(m, n, k, in, Order::kRowMajor, Order::kColMajor, out);
}

GemmDesc with_epilogue(GemmDesc d, Activation act, BiasMode bias, DataType bias_dtype = DataType::kBF16) {
  d.epilogue.activation = act;
  d.epilogue.bias = bias;
  d.epilogue.bias_dtype = bias_dtype;
  return d;
}

std::vector<Case> sweep_cases() {
  const Order R = Order::kRowMajor, C = Order::kColMajor;
  const DataType bf = DataType::kBF16, hf = DataType::kF16, f32 = DataType::kF32;
  std::vector<Case> cases = {
      // Multiples of the 128x256x64 tiles.
      {"lin_256x512x256", linear(256, 512, 256)},
      {"lin_512x1024x512", linear(512, 1024, 512)},
      // Ragged shapes: every edge predicate, and strides TMA cannot take.
      {"lin_1x1x1", linear(1, 1, 1)},
      {"lin_7x13x17", linear(7, 13, 17)},
      {"lin_129x257x65", linear(129, 257, 65)},
      {"lin_300x520x1000", linear(300, 520, 1000)},
      {"lin_1000x1000x1000", linear(1000, 1000, 1000)},
      // Two tiles or more per persistent CTA with an odd number of K steps (3).
      {"lin_4224x1024x136", linear(4224, 1024, 136)},
      // Other dtypes.
      {"fp16_512x1024x512", linear(512, 1024, 512, hf, hf)},
      {"fp16_129x257x65", linear(129, 257, 65, hf, hf)},
      {"bf16_to_fp32_512x1024x512", linear(512, 1024, 512, bf, f32)},
      {"bf16_to_fp16_300x520x1000", linear(300, 520, 1000, bf, hf)},
      // The other three layouts.
      {"rowrow_256x512x256", make_desc(256, 512, 256, bf, R, R, bf)},
      {"colcol_256x512x256", make_desc(256, 512, 256, bf, C, C, bf)},
      {"colrow_256x512x256", make_desc(256, 512, 256, bf, C, R, bf)},
      {"rowrow_129x257x65", make_desc(129, 257, 65, bf, R, R, bf)},
      {"colcol_129x257x65", make_desc(129, 257, 65, bf, C, C, bf)},
      {"colrow_129x257x65", make_desc(129, 257, 65, bf, C, R, bf)},
      // Epilogues.
      {"bias_col_gelu_tanh", with_epilogue(linear(512, 1024, 512), Activation::kGeluTanh, BiasMode::kPerColumn)},
      {"bias_col_gelu_erf_fp32_bias",
       with_epilogue(linear(300, 520, 1000), Activation::kGeluErf, BiasMode::kPerColumn, f32)},
      {"bias_row_relu", with_epilogue(linear(512, 1024, 512), Activation::kReLU, BiasMode::kPerRow, f32)},
      {"silu", with_epilogue(linear(512, 1024, 512), Activation::kSiLU, BiasMode::kNone)},
      {"swiglu_bias_512x1024x512",
       with_epilogue(make_desc(512, 1024, 512, bf, R, C, bf, 0, 1, Activation::kSwiGLU), Activation::kSwiGLU,
                     BiasMode::kPerColumn)},
      {"swiglu_300x768x1000", make_desc(300, 768, 1000, bf, R, C, bf, 0, 1, Activation::kSwiGLU)},
      // Layout of memory: padded lines, strided batches.
      {"padded_ld_512x1024x512", make_desc(512, 1024, 512, bf, R, C, bf, 8)},
      // Rows of 1002 halves padded to 1008: a TMA store would clip only at 16-byte granules
      // and write the padding (expect_padding_untouched); such D takes the register stores.
      {"padded_ragged_n_512x1002x256", make_desc(512, 1002, 256, bf, R, C, bf, 6)},
      {"batch3_256x512x256", make_desc(256, 512, 256, bf, R, C, bf, 8, 3)},
      // Odd leading dimensions (779 for A and B, 1003 for D) in an odd batch stride: rows of
      // A and B start at every offset mod 8 and are repacked in several 256-element chunks;
      // D's pairs are not 4-byte aligned (16-bit stores), and its padding must stay untouched.
      {"odd_ld_batch2_333x1001x777", make_desc(333, 1001, 777, bf, R, C, bf, 2, 2)},
  };
  GemmDesc residual = linear(512, 1024, 512);
  residual.beta = 1.0f;
  cases.push_back({"residual_c_is_d_512x1024x512", residual, true});
  // A last row of tiles a few rows deep: its A box is moved up to end at M (a_box_shift,
  // dead_rows.h), so the tile reads its rows further into the stage; with C == D the rows
  // it shares with the tile above must not be added twice.
  GemmDesc moved = with_epilogue(linear(268, 520, 1000), Activation::kGeluTanh, BiasMode::kPerColumn);
  moved.beta = 1.0f;
  cases.push_back({"moved_last_box_residual_268x520x1000", moved, true});
  cases.push_back({"moved_last_box_777x1000x384", linear(777, 1000, 384)});
  cases.push_back({"moved_last_box_fp32_out_1033x264x520", linear(1033, 264, 520, bf, f32)});
  // A column-major D: with 16-bit output, rows a multiple of 8 and 16-byte lines, the plain
  // GEMM leaves through TMA boxes of 64 rows x 32 columns staged transposed
  // (epilogue_store.cuh, tma_store_column_round); other rows take the staged store.
  const auto column_d = [&](GemmDesc d, int64_t pad) {
    d.d = anvil_test::padded_layout(d.d.dtype, C, d.m, d.n, pad, d.batch, 64);
    d.c = d.d;
    return d;
  };
  cases.push_back({"col_d_296x520x1000", column_d(linear(296, 520, 1000), 0)});
  cases.push_back({"col_d_padded_fp16_264x1000x512", column_d(linear(264, 1000, 512, hf, hf), 8)});
  cases.push_back({"col_d_batch3_256x520x256", column_d(make_desc(256, 520, 256, bf, R, C, bf, 8, 3), 8)});
  cases.push_back({"col_d_ragged_rows_300x520x1000", column_d(linear(300, 520, 1000), 0)});
  // Plans the dispatcher runs transposed (planner.cpp, plan_transposed_sm90): the 300 tokens
  // on the tiles' N side of 3072 weight rows, D^T stored through column boxes.
  cases.push_back({"transposed_300x3072x512", linear(300, 3072, 512)});
  cases.push_back({"transposed_fp16_777x2048x1024", linear(777, 2048, 1024, hf, hf)});
  GemmDesc scaled = linear(300, 520, 1000, bf, f32);
  scaled.alpha = 0.5f;
  scaled.beta = -0.75f;
  cases.push_back({"alpha_beta_separate_c_300x520x1000", scaled});
  // sm90-gemm gives the rows past 2048 to a decode kernel (row_split.h; the CPU test
  // RowSplit.SweepShapesSplit keeps these shapes splitting): A, C, D and the per-row bias
  // advanced by 2048 rows in each batch, then odd leading dimensions (repacked operands,
  // a D row offset that is not 16-byte aligned).
  GemmDesc split_bias = with_epilogue(make_desc(2049, 1024, 2048, bf, R, C, bf, 0, 2), Activation::kReLU,
                                      BiasMode::kPerRow, f32);
  split_bias.beta = 0.5f;
  cases.push_back({"row_split_bias_row_beta_batch2_2049x1024x2048", split_bias});
  cases.push_back({"row_split_odd_ld_batch2_2049x1024x2048", make_desc(2049, 1024, 2048, bf, R, C, bf, 2, 2)});
  for (size_t i = 0; i < cases.size(); ++i) cases[i].seed = 1000 + i;
  return cases;
}

// The Blackwell kernels (sm100-*) run on an sm_100 device only; their own binary tests them
// (tests/sm100, docs/blackwell.md). These sweeps are the Hopper kernels'.
bool hopper_kernel(int index) { return std::strncmp(anvil::kernel_name(index), "sm100-", 6) != 0; }

// -1 is the dispatcher; the rest index the kernel table.
std::vector<int> kernel_indices() {
  std::vector<int> indices = {-1};
  for (int i = 0; i < anvil::kernel_count(); ++i) {
    if (hopper_kernel(i)) indices.push_back(i);
  }
  return indices;
}

const char* kernel_label(int index) { return index < 0 ? "auto" : anvil::kernel_name(index); }

std::string test_name_part(const std::string& s) {
  std::string out = s;
  for (char& ch : out) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return out;
}

// Checks can_implement for this desc and kernel. A named kernel may refuse cleanly a case
// it never promised (kernel_promises.h); refusing one it did promise fails, so a kernel
// that stopped taking cases cannot lose its coverage to skips. The dispatcher must take
// every case. Sets *refused.
void check_supported(const Operands& op, int kernel_index, bool* refused) {
  Diagnostic diag;
  const Status s = anvil::can_implement(op.desc, &op.args, &diag);
  *refused = kernel_index >= 0 && (s == Status::kNotSupported || s == Status::kMisalignedOperand);
  if (*refused) {
    std::string why;
    ASSERT_FALSE(anvil_test::kernel_promises(kernel_label(kernel_index), op.desc, &why))
        << kernel_label(kernel_index) << " refuses a case it promises to take (" << anvil_test::describe(op.desc)
        << "): " << anvil::to_string(s) << ": " << diag.message;
    return;
  }
  ASSERT_EQ(s, Status::kSuccess) << kernel_label(kernel_index) << " on " << anvil_test::describe(op.desc) << ": "
                                 << anvil::to_string(s) << ": " << diag.message;
}

void run_gemm(const Operands& op, cudaStream_t stream) {
  anvil::GemmArgs args = op.args;
  args.stream = stream;
  Diagnostic diag;
  const Status s = anvil::gemm(op.desc, args, &diag);
  ASSERT_EQ(s, Status::kSuccess) << anvil::to_string(s) << ": " << diag.message;
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaStreamSynchronize(stream));
}

// The reference result into op.ref. Before the GEMM: with C aliasing D, the GEMM
// overwrites the C the reference reads.
void compute_reference(Operands& op) {
  CHECK_CUDA(verify::reference_gemm(op.desc, op.args, op.ref.as_float(), nullptr));
  CHECK_CUDA(cudaDeviceSynchronize());
}

// D against the reference computed beforehand, within the dtype's tolerance.
void expect_matches_reference(const Operands& op, const std::string& what) {
  const auto cmp = verify::compare(op.desc, op.d.get(), op.ref.as_float(), verify::tolerance_for(op.desc), nullptr);
  ASSERT_GE(cmp.count, 0) << "the comparison itself failed (CUDA error)";
  EXPECT_TRUE(cmp.passed) << what << " on " << anvil_test::describe(op.desc) << ": " << anvil_test::describe(cmp);
}

class KernelSweep : public ::testing::TestWithParam<std::tuple<int, Case>> {};

TEST_P(KernelSweep, MatchesReference) {
  REQUIRE_SM90();
  const int kernel_index = std::get<0>(GetParam());
  const Case& c = std::get<1>(GetParam());
  GemmDesc desc = c.desc;
  desc.kernel = kernel_index < 0 ? nullptr : anvil::kernel_name(kernel_index);

  Operands op;
  ASSERT_NO_FATAL_FAILURE(anvil_test::make_operands(op, desc, c.seed, c.c_is_d));
  bool refused = false;
  ASSERT_NO_FATAL_FAILURE(check_supported(op, kernel_index, &refused));
  if (refused) {
    Diagnostic diag;
    anvil::can_implement(op.desc, &op.args, &diag);
    GTEST_SKIP() << kernel_label(kernel_index) << " refuses cleanly: " << diag.message;
  }

  ASSERT_NO_FATAL_FAILURE(compute_reference(op));
  ASSERT_NO_FATAL_FAILURE(run_gemm(op, nullptr));
  ASSERT_NO_FATAL_FAILURE(expect_matches_reference(op, kernel_label(kernel_index)));
  if (!c.c_is_d) {
    ASSERT_NO_FATAL_FAILURE(anvil_test::expect_padding_untouched(op));
  }
}

std::string sweep_name(const ::testing::TestParamInfo<std::tuple<int, Case>>& info) {
  return test_name_part(kernel_label(std::get<0>(info.param))) + "__" + std::get<1>(info.param).name;
}

INSTANTIATE_TEST_SUITE_P(AllKernels, KernelSweep,
                         ::testing::Combine(::testing::ValuesIn(kernel_indices()), ::testing::ValuesIn(sweep_cases())),
                         sweep_name);

// ---- determinism and graph capture, on a few representative cases ----

// One case for every path the dispatcher can take, so that each is run ten times: the
// production kernel in each of its configurations (narrow, wide, pairs along M and along
// N, ping-pong, stream-K, the fitted widths), with operands repacked into the
// workspace and with its last rows split off to a decode kernel; the decode kernel; the
// naive kernel (K = 0).
// KernelRepeatCoverage checks that the list still reaches them all.
std::vector<Case> repeat_cases() {
  GemmDesc repacked = make_desc(300, 520, 65, DataType::kBF16, Order::kRowMajor, Order::kRowMajor, DataType::kBF16);
  // K = 0: D = act(bias) + beta C. A line of no elements still needs a leading dimension of 1.
  GemmDesc k_zero = with_epilogue(linear(64, 96, 1), Activation::kGeluErf, BiasMode::kPerColumn, DataType::kF32);
  k_zero.k = 0;
  k_zero.beta = 1.0f;
  std::vector<Case> cases = {
      {"lin_512x1024x512", linear(512, 1024, 512), false, 7},
      {"lin_300x520x1000", linear(300, 520, 1000), false, 8},
      {"bias_gelu_1000x1000x1000", with_epilogue(linear(1000, 1000, 1000), Activation::kGeluTanh, BiasMode::kPerColumn),
       false, 9},
      {"wide_pair_2048x2048x256", linear(2048, 2048, 256), false, 10},
      // One row of tiles, 116 wide ones: pairs along N (an odd number of 128-row tiles).
      {"pair_n_65x29632x64", linear(65, 29632, 64), false, 14},
      // 15 x 17 tiles: lone wide CTAs fill 2 waves, pairs along N (15 x 18) would take 3.
      {"wide_single_1857x4352x64", linear(1857, 4352, 64), false, 24},
      {"pingpong_bias_relu_2048x2048x256", with_epilogue(linear(2048, 2048, 256), Activation::kReLU, BiasMode::kPerColumn),
       false, 15},
      {"repacked_rowrow_300x520x65", repacked, false, 11},
      // Few tokens on odd K: the repack, then a decode kernel on the copies.
      {"repacked_decode_13x1021x4093", linear(13, 1021, 4093), false, 29},
      {"fit160_256x10240x8192", linear(256, 10240, 8192), false, 16},
      {"fit192_768x4096x256", linear(768, 4096, 256), false, 18},
      {"fit224_256x14336x128", linear(256, 14336, 128), false, 19},
      // 384 x 6144 goes to 128 x 144 singles (step16_width_or); 257 rows are one live row
      // past two rows of tiles.
      {"fit_single160_257x6528x128", linear(257, 6528, 128), false, 20},
      {"fit_single176_384x7168x128", linear(384, 7168, 128), false, 21},
      {"fit_single224_128x28672x64", linear(128, 28672, 64), false, 22},
      // A last row of tiles one row deep: the single's producer leaves the dead rows out.
      {"fit_single192_dead_rows_257x8192x256", linear(257, 8192, 256), false, 30},
      {"stream_k_bias_silu_256x18432x8192", with_epilogue(linear(256, 18432, 8192), Activation::kSiLU, BiasMode::kPerColumn),
       false, 17},
      {"decode_64x9216x1024", linear(64, 9216, 1024), false, 12},
      {"k_zero_bias_gelu_residual_64x96x0", k_zero, false, 13},
      // sm90-gemm on 2048 rows and a decode kernel on the last one (row_split.h).
      {"row_split_2049x2048x2048", linear(2049, 2048, 2048), false, 23},
      // The narrow fitted widths: one wave of 128 x 64 (128 tiles) and of 128 x 96 (128 tiles).
      {"narrow64_255x4096x512", linear(255, 4096, 512), false, 25},
      {"narrow96_512x3072x256", linear(512, 3072, 256), false, 26},
      // 12 x 8 ping-pong tiles in one wave, where 128 x 64 ones would take two.
      {"pingpong_1536x1024x512", linear(1536, 1024, 512), false, 27},
      // A fused epilogue on three rows of tiles: lone 128 x 128 CTAs.
      {"narrow_bias_relu_300x520x1000", with_epilogue(linear(300, 520, 1000), Activation::kReLU, BiasMode::kPerColumn),
       false, 28},
      // The widths in steps of 16 (step16_width_or), each N leaving a partial last tile: one
      // wave of 128 x 80 (110 tiles) and of 128 x 112 (117), single CTAs 144, 208 and 240
      // wide (176: 384 x 7168 above).
      {"narrow80_255x4352x256", linear(255, 4352, 256), false, 31},
      {"narrow112_300x4352x256", linear(300, 4352, 256), false, 32},
      {"fit_single144_255x8704x256", linear(255, 8704, 256), false, 33},
      {"fit_single208_300x8704x256", linear(300, 8704, 256), false, 35},
      {"fit_single240_300x19968x256", linear(300, 19968, 256), false, 36},
      // An fp32 D goes through the staged epilogue, whose last chunk is 16 columns here.
      {"narrow80_f32_255x4352x256", linear(255, 4352, 256, DataType::kBF16, DataType::kF32), false, 37},
      // sm90-gemm on D^T = B^T A^T (plan_transposed_sm90): D leaves through column boxes.
      {"transposed_300x3072x512", linear(300, 3072, 512), false, 38},
  };
  return cases;
}

std::string repeat_name(const ::testing::TestParamInfo<std::tuple<int, Case>>& info) { return sweep_name(info); }

class KernelRepeat : public ::testing::TestWithParam<std::tuple<int, Case>> {
 protected:
  // Sets up the operands and says whether the named kernel refuses the case.
  void prepare(Operands& op, bool* refused) {
    const int kernel_index = std::get<0>(GetParam());
    GemmDesc desc = std::get<1>(GetParam()).desc;
    desc.kernel = kernel_index < 0 ? nullptr : anvil::kernel_name(kernel_index);
    ASSERT_NO_FATAL_FAILURE(anvil_test::make_operands(op, desc, std::get<1>(GetParam()).seed));
    ASSERT_NO_FATAL_FAILURE(check_supported(op, kernel_index, refused));
  }
};

TEST_P(KernelRepeat, IsBitwiseDeterministicOverTenRunsOnFourStreams) {
  REQUIRE_SM90();
  Operands op;
  bool refused = false;
  ASSERT_NO_FATAL_FAILURE(prepare(op, &refused));
  if (refused) GTEST_SKIP() << kernel_label(std::get<0>(GetParam())) << " refuses this case";

  // The legacy and per-thread default streams and two created ones: a result must not
  // depend on where, or how many times, it was enqueued.
  anvil_test::Stream blocking, non_blocking;
  CHECK_CUDA(blocking.create(cudaStreamDefault));
  CHECK_CUDA(non_blocking.create());
  const cudaStream_t streams[] = {nullptr, cudaStreamPerThread, blocking.handle, non_blocking.handle};
  // Identical results must also be right ones: a GEMM that wrote nothing would repeat the
  // poison bitwise.
  ASSERT_NO_FATAL_FAILURE(compute_reference(op));
  std::vector<unsigned char> first;
  for (int run = 0; run < 10; ++run) {
    const cudaStream_t stream = streams[run % 4];
    CHECK_CUDA(verify::poison(op.d.get(), op.desc.d.dtype, op.d_elements(), stream));
    ASSERT_NO_FATAL_FAILURE(run_gemm(op, stream));
    std::vector<unsigned char> bytes;
    ASSERT_NO_FATAL_FAILURE(anvil_test::download(op.d, bytes));
    if (run == 0) {
      ASSERT_NO_FATAL_FAILURE(expect_matches_reference(op, kernel_label(std::get<0>(GetParam()))));
      first = std::move(bytes);
      continue;
    }
    ASSERT_EQ(bytes.size(), first.size());
    EXPECT_EQ(std::memcmp(bytes.data(), first.data(), first.size()), 0) << "run " << run << " differs from the first";
  }
}

// Owns the stream, graph and executable graph so an early test exit releases them.
struct GraphResources {
  cudaStream_t stream = nullptr;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ~GraphResources() {
    if (exec != nullptr) cudaGraphExecDestroy(exec);
    if (graph != nullptr) cudaGraphDestroy(graph);
    if (stream != nullptr) cudaStreamDestroy(stream);
  }
};

TEST_P(KernelRepeat, ReplaysFromACudaGraphLikeTheEagerCall) {
  REQUIRE_SM90();
  Operands op;
  bool refused = false;
  ASSERT_NO_FATAL_FAILURE(prepare(op, &refused));
  if (refused) GTEST_SKIP() << kernel_label(std::get<0>(GetParam())) << " refuses this case";

  GraphResources g;
  CHECK_CUDA(cudaStreamCreateWithFlags(&g.stream, cudaStreamNonBlocking));
  std::vector<unsigned char> eager;
  ASSERT_NO_FATAL_FAILURE(compute_reference(op));
  CHECK_CUDA(verify::poison(op.d.get(), op.desc.d.dtype, op.d_elements(), g.stream));
  ASSERT_NO_FATAL_FAILURE(run_gemm(op, g.stream));
  ASSERT_NO_FATAL_FAILURE(expect_matches_reference(op, kernel_label(std::get<0>(GetParam()))));
  ASSERT_NO_FATAL_FAILURE(anvil_test::download(op.d, eager));

  // Global mode makes any allocation or synchronisation inside gemm() fail the capture.
  anvil::GemmArgs args = op.args;
  args.stream = g.stream;
  Diagnostic diag;
  CHECK_CUDA(cudaStreamBeginCapture(g.stream, cudaStreamCaptureModeGlobal));
  const Status s = anvil::gemm(op.desc, args, &diag);
  const cudaError_t end = cudaStreamEndCapture(g.stream, &g.graph);
  ASSERT_EQ(s, Status::kSuccess) << "gemm() during capture: " << anvil::to_string(s) << ": " << diag.message;
  CHECK_CUDA(end);
  CHECK_CUDA(cudaGraphInstantiate(&g.exec, g.graph, 0));

  for (int replay = 0; replay < 2; ++replay) {
    CHECK_CUDA(verify::poison(op.d.get(), op.desc.d.dtype, op.d_elements(), g.stream));
    CHECK_CUDA(cudaGraphLaunch(g.exec, g.stream));
    CHECK_CUDA(cudaStreamSynchronize(g.stream));
    std::vector<unsigned char> replayed;
    ASSERT_NO_FATAL_FAILURE(anvil_test::download(op.d, replayed));
    ASSERT_EQ(replayed.size(), eager.size());
    EXPECT_EQ(std::memcmp(replayed.data(), eager.data(), eager.size()), 0) << "replay " << replay;
  }
}

INSTANTIATE_TEST_SUITE_P(AllKernels, KernelRepeat,
                         ::testing::Combine(::testing::ValuesIn(kernel_indices()), ::testing::ValuesIn(repeat_cases())),
                         repeat_name);

// Needs no GPU: the dispatcher's choice is made from the description alone, and the
// tile-shape choice assumes the 132 SMs of an H100 or H200.
TEST(KernelRepeatCoverage, CasesReachEveryPathTheDispatcherTakes) {
  std::set<std::string> kernels;
  std::set<int> sm90_variants;
  bool repacked = false, row_split = false;
  for (const Case& c : repeat_cases()) {
    const char* name = anvil::dispatch_name(c.desc);
    ASSERT_NE(name, nullptr) << c.name;
    kernels.insert(name);
    if (std::string(name) != "sm90-gemm") continue;
    anvil::detail::Sm90Problem problem{c.desc.m, c.desc.n, c.desc.k, c.desc.batch,
                                       !anvil::detail::plain_epilogue(c.desc), true};
    // With a row split, the configuration that runs is the one for the main rows.
    const int64_t main_rows = anvil::detail::row_split_main_rows(problem, !c.desc.batch_invariant, 132);
    row_split = row_split || main_rows < c.desc.m;
    problem.m = main_rows;
    const auto variant =
        anvil::detail::step16_width_or(anvil::detail::choose_sm90_variant(problem, 132), problem, 132);
    sm90_variants.insert(int(variant));
    repacked = repacked || (variant != anvil::detail::Sm90Variant::kTallStreamK && anvil::workspace_size(c.desc) > 0);
  }
  for (const char* expected : {"sm90-gemm", "sm90-decode", "ladder-01-naive"}) {
    EXPECT_EQ(kernels.count(expected), 1u) << "no repeat case goes to " << expected;
  }
  // Every configuration but the folded-slice ones, which only batch-invariant mode's split
  // weights take: test_batch_invariance_gpu.cpp runs those at every M, bitwise against
  // each other and the decode kernels' cluster.
  int whole_k_variants = 0;
  for (int v = 0; v < anvil::detail::kSm90Variants; ++v) {
    whole_k_variants += !anvil::detail::folds_k_slices(static_cast<anvil::detail::Sm90Variant>(v));
  }
  EXPECT_EQ(sm90_variants.size(), static_cast<size_t>(whole_k_variants))
      << "the cases should take every sm90-gemm configuration";
  EXPECT_TRUE(repacked) << "no repeat case repacks an operand";
  EXPECT_TRUE(row_split) << "no repeat case splits its last rows off to a decode kernel";
}

// Needs no GPU: every kernel's check() runs on the host. Each named kernel takes exactly
// the sweep and repeat cases kernel_promises.h says it does, so the table the GPU sweeps
// trust stays true to the checks, and a kernel that starts refusing cases fails here
// without a GPU as well as there.
TEST(KernelPromises, EachKernelTakesExactlyTheCasesItPromises) {
  std::vector<Case> cases = sweep_cases();
  for (const Case& c : repeat_cases()) cases.push_back(c);
  // FP8 problems (test_fp8_gpu.cpp runs them): sm90-fp8's alone.
  for (const anvil::ScaleMode scales : {anvil::ScaleMode::kNone, anvil::ScaleMode::kTensor,
                                        anvil::ScaleMode::kRowColumn, anvil::ScaleMode::kBlock128}) {
    Case c;
    c.name = std::string("fp8-") + anvil::to_string(scales);
    c.desc = anvil::linear_desc(200, 300, 272, DataType::kBF16, DataType::kBF16);
    c.desc.a.dtype = c.desc.b.dtype = DataType::kE4M3;
    c.desc.scales = scales;
    cases.push_back(c);
  }
  for (int index = 0; index < anvil::kernel_count(); ++index) {
    if (!hopper_kernel(index)) continue;
    const char* kernel = anvil::kernel_name(index);
    EXPECT_NE(anvil_test::kernel_family(kernel), anvil_test::KernelFamily::kUnknown)
        << kernel << " has no entry in tests/gpu/kernel_promises.h";
    int promised = 0;
    for (const Case& c : cases) {
      GemmDesc desc = c.desc;
      desc.kernel = kernel;
      // Distinct 16-byte aligned stand-ins, as cudaMalloc would give; never dereferenced.
      auto fake = [](uintptr_t slot) { return reinterpret_cast<void*>(slot << 40); };
      anvil::GemmArgs args;
      args.a = fake(1);
      args.b = fake(2);
      args.d = fake(4);
      args.c = c.c_is_d ? args.d : desc.beta != 0.0f ? fake(3) : nullptr;
      args.bias = desc.epilogue.bias != BiasMode::kNone ? fake(5) : nullptr;
      args.workspace = fake(6);
      args.scale_a = desc.scales != anvil::ScaleMode::kNone ? static_cast<const float*>(fake(7)) : nullptr;
      args.scale_b = desc.scales != anvil::ScaleMode::kNone ? static_cast<const float*>(fake(8)) : nullptr;
      args.workspace_bytes = anvil::workspace_size(desc, args);
      Diagnostic diag;
      const Status s = anvil::can_implement(desc, &args, &diag);
      const bool refused = s == Status::kNotSupported || s == Status::kMisalignedOperand;
      std::string why;
      const bool promises = anvil_test::kernel_promises(kernel, desc, &why);
      promised += promises ? 1 : 0;
      if (promises) {
        EXPECT_FALSE(refused) << kernel << " refuses " << c.name << ", which it promises: " << diag.message;
        EXPECT_TRUE(s == Status::kSuccess || s == Status::kDriverUnavailable || s == Status::kArchMismatch)
            << kernel << " on " << c.name << ": " << anvil::to_string(s) << ": " << diag.message;
      } else {
        EXPECT_TRUE(refused) << kernel << " takes " << c.name << ", which the table leaves out (" << why << ")";
      }
    }
    EXPECT_GT(promised, 0) << kernel << " promises none of the cases";
  }
}

// The probe scripts/test.sh prints: says which GPU the tier ran on, or why it skipped.
TEST(GpuTier, Sm90DeviceAvailable) {
  REQUIRE_SM90();
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("GPU tier running on %s (sm_%d%d, %d SMs)\n", prop.name, prop.major, prop.minor,
              prop.multiProcessorCount);
}

}  // namespace
