#include "verify/fuzz_problem.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <span>

namespace anvil::verify {
namespace {

// splitmix64: small, fast, and good enough to pick test cases.
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t x = (state_ += 0x9E3779B97F4A7C15ull);
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
  }
  // Uniform in [0, bound).
  int64_t below(int64_t bound) { return bound <= 1 ? 0 : static_cast<int64_t>(next() % static_cast<uint64_t>(bound)); }
  int64_t between(int64_t lo, int64_t hi) { return lo + below(hi - lo + 1); }
  bool percent(int p) { return below(100) < p; }
  template <class T>
  T pick(std::initializer_list<T> values) {
    return *(values.begin() + below(static_cast<int64_t>(values.size())));
  }
  // Log-uniform in [1, hi]: as many sizes in 1..10 as in 100..1000.
  int64_t log_uniform(int64_t hi) {
    const double unit = static_cast<double>(next() >> 11) * 0x1p-53;
    return std::clamp<int64_t>(static_cast<int64_t>(std::exp(unit * std::log(static_cast<double>(hi) + 1.0))), 1, hi);
  }

 private:
  uint64_t state_;
};

// Where tiled kernels have their edges: every tile size in use is a power of two or a
// small multiple of 64.
constexpr int64_t kTileEdges[] = {8, 16, 32, 64, 128, 192, 256, 384, 512, 640, 1024, 2048, 4096, 8192};
constexpr int64_t kPrimes[] = {2,   3,   5,   7,    11,   13,   17,   31,   37,   61,   67,   97,   101, 127,
                               131, 251, 257, 509,  521,  1021, 1031, 2039, 2053, 4093, 4099, 8191, 8209};

int64_t pick_at_most(Random& rng, std::span<const int64_t> sorted, int64_t max) {
  const auto usable = std::upper_bound(sorted.begin(), sorted.end(), max) - sorted.begin();
  return usable > 0 ? sorted[static_cast<size_t>(rng.below(usable))] : max;
}

int64_t draw_extent(Random& rng, int64_t max) {
  const int64_t kind = rng.below(100);
  int64_t v;
  if (kind < 30) {
    v = pick_at_most(rng, kTileEdges, max) + rng.between(-1, 1);
  } else if (kind < 45) {
    v = pick_at_most(rng, kPrimes, max);
  } else if (kind < 60) {
    v = rng.between(1, 16);
  } else {
    v = rng.log_uniform(max);
  }
  return std::clamp<int64_t>(v, 1, max);
}

// Extra elements per line: mostly none, sometimes odd (not TMA-readable), sometimes whole
// 16-byte units, sometimes a lot.
int64_t draw_padding(Random& rng) {
  const int64_t kind = rng.below(100);
  if (kind < 55) return 0;
  if (kind < 75) return rng.between(1, 7);
  if (kind < 90) return 8 * rng.between(1, 8);
  return rng.between(1, 200);
}

// Elements between one batch's matrix and the next beyond the matrix itself.
int64_t draw_batch_gap(Random& rng) {
  const int64_t kind = rng.below(100);
  if (kind < 50) return 0;
  if (kind < 75) return rng.between(1, 15);
  return 8 * rng.between(1, 32);
}

// Base pointers offset by whole elements: aligned to the element, often not to 16 bytes.
int64_t draw_offset(Random& rng) { return rng.percent(60) ? 0 : rng.between(1, 7); }

DataType draw_dtype(Random& rng) { return rng.pick({DataType::kBF16, DataType::kF16, DataType::kF32}); }

MatrixLayout draw_layout(Random& rng, DataType dtype, int64_t rows, int64_t cols, int64_t batch,
                         bool may_broadcast) {
  MatrixLayout l;
  l.dtype = dtype;
  l.order = rng.percent(50) ? Order::kRowMajor : Order::kColMajor;
  const int64_t line = l.order == Order::kRowMajor ? cols : rows;
  const int64_t lines = l.order == Order::kRowMajor ? rows : cols;
  l.ld = std::max<int64_t>(line, 1) + draw_padding(rng);
  if (batch > 1) {
    l.batch_stride = may_broadcast && rng.percent(8) ? 0 : lines * l.ld + draw_batch_gap(rng);
  }
  return l;
}

int64_t& largest_extent(GemmDesc& d) {
  if (d.m >= d.n && d.m >= d.k) return d.m;
  return d.n >= d.k ? d.n : d.k;
}

}  // namespace

namespace {

// The problems drawn in the transposed plan's shapes (planner.cpp, plan_transposed_sm90):
// indices kTransposedShapeSlot mod kTransposedShapeEvery, from a stream of their own.
constexpr int64_t kTransposedShapeEvery = 7;
constexpr int64_t kTransposedShapeSlot = 5;

// A plain GEMM of a few hundred to a thousand tokens on a weight of 2048-6144 rows, K-major
// operands and a 16-bit row-major D in whole 16-byte lines: the shapes sm90-gemm may run
// transposed, storing D^T through the column TMA store. The dtypes are the draw's inputs.
// Only where the limits take such a problem (large ones drawn, 2048 columns, the MAC cap
// at 129 x 2048 x 64); p stays the draw's otherwise.
void make_transposed_shape(FuzzProblem& p, const FuzzLimits& limits) {
  if (limits.large_percent == 0 || limits.max_extent < 2048 || limits.max_large_macs < int64_t{129} * 2048 * 64) {
    return;
  }
  Random rng(Random(p.data_seed ^ 0x7A5570EDull).next());
  GemmDesc& d = p.desc;
  d.batch = 1;
  d.batch_invariant = false;
  d.m = rng.between(129, std::min<int64_t>(1100, limits.max_extent));
  d.n = 256 * rng.between(8, std::min<int64_t>(24, limits.max_extent / 256));
  d.k = 8 * rng.between(8, std::min<int64_t>(128, limits.max_extent / 8));
  while (fuzz_macs(d) > limits.max_large_macs && d.k > 64) d.k = std::max<int64_t>(64, d.k / 16 * 8);
  while (fuzz_macs(d) > limits.max_large_macs && d.m > 129) d.m = std::max<int64_t>(129, d.m / 2);
  while (fuzz_macs(d) > limits.max_large_macs && d.n > 2048) d.n = std::max<int64_t>(2048, d.n / 512 * 256);
  d.epilogue = EpilogueDesc{};
  d.alpha = 1.0f;
  d.beta = 0.0f;
  const auto line = [&](DataType t, Order order, int64_t ld) {
    MatrixLayout l;
    l.dtype = t;
    l.order = order;
    l.ld = ld + 8 * (rng.percent(70) ? 0 : rng.between(1, 4));
    return l;
  };
  const DataType in = d.a.dtype;
  d.a = line(in, Order::kRowMajor, d.k);
  d.b = line(in, Order::kColMajor, d.k);
  d.d = line(rng.percent(50) ? DataType::kBF16 : DataType::kF16, Order::kRowMajor, d.n);
  d.c = d.d;
  p.c_is_d = false;
  p.unread_c = false;
  p.a_offset = p.b_offset = p.d_offset = 0;
}

}  // namespace

FuzzLimits default_fuzz_limits() {
  // About 5 TFLOP of reference GEMM over 2000 problems, most of it in the large ones.
  return FuzzLimits{9000, 2100, 10, int64_t{1} << 32, int64_t{1} << 36, 4};
}

FuzzLimits small_fuzz_limits() { return FuzzLimits{700, 300, 5, int64_t{1} << 24, int64_t{1} << 27, 3}; }

int64_t fuzz_macs(const GemmDesc& desc) { return desc.m * desc.n * desc.k * desc.batch; }

namespace {

// The general draw: make_fuzz_problem's, before the fixed slots below reshape some of
// them, and the FP8 and invariant-split generators' base, which stays what it was.
FuzzProblem draw_problem(uint64_t seed, int64_t index, const FuzzLimits& limits) {
  // Hash (seed, index) first so that neighbouring problems share nothing.
  Random rng(Random(seed ^ (0xD1B54A32D192ED03ull * static_cast<uint64_t>(index + 1))).next());
  FuzzProblem p;
  p.seed = seed;
  p.index = index;
  GemmDesc& d = p.desc;

  const bool large = rng.percent(limits.large_percent);
  const int64_t max_extent = large ? limits.max_extent : limits.max_small_extent;
  // A large problem has each extent big half the time; small draws keep it lopsided too.
  auto extent = [&] {
    return large && rng.percent(50) ? rng.between(max_extent / 8, max_extent) : draw_extent(rng, max_extent);
  };
  d.m = extent();
  d.n = extent();
  d.k = extent();
  d.batch = rng.percent(60) ? 1 : rng.between(2, limits.max_batch);

  d.epilogue.activation = rng.pick({Activation::kIdentity, Activation::kIdentity, Activation::kIdentity,
                                    Activation::kReLU, Activation::kGeluErf, Activation::kGeluTanh,
                                    Activation::kSiLU, Activation::kSwiGLU, Activation::kSwiGLU});
  const bool swiglu = d.epilogue.activation == Activation::kSwiGLU;

  // Halving keeps powers of two and tile edges +-1 close to what they were.
  const int64_t cap = large ? limits.max_large_macs : limits.max_macs;
  while (fuzz_macs(d) > cap) {
    int64_t& biggest = largest_extent(d);
    if (biggest > 1) {
      biggest = (biggest + 1) / 2;
    } else {
      d.batch = 1;
    }
  }
  // SwiGLU pairs 64-column gate and up blocks.
  if (swiglu) d.n = std::max<int64_t>(128, d.n / 128 * 128);

  const DataType in = rng.percent(50) ? DataType::kBF16 : DataType::kF16;
  const DataType out = draw_dtype(rng);
  const int64_t n_out = swiglu ? d.n / 2 : d.n;
  d.a = draw_layout(rng, in, d.m, d.k, d.batch, true);
  d.b = draw_layout(rng, in, d.k, d.n, d.batch, true);
  d.d = draw_layout(rng, out, d.m, n_out, d.batch, false);

  d.epilogue.bias = rng.pick({BiasMode::kNone, BiasMode::kNone, BiasMode::kPerColumn, BiasMode::kPerRow});
  d.epilogue.bias_dtype = draw_dtype(rng);

  // fp16 tops out at 65504: SwiGLU squares the typical magnitude, alpha * sqrt(K) / 3, so a
  // large alpha would overflow a correct result. |alpha| <= 1 keeps K = 9000 below 2^15.
  const bool fp16_square = out == DataType::kF16 && swiglu;
  d.alpha = rng.percent(60) ? 1.0f
            : fp16_square  ? rng.pick({-1.0f, 0.5f, -0.375f})
                           : rng.pick({-1.0f, 0.5f, 2.0f, -0.375f, 1.25f, 0.0f});
  const int64_t beta_kind = rng.below(4);
  d.beta = beta_kind < 2 ? 0.0f : beta_kind == 2 ? 1.0f : rng.pick({0.5f, -1.0f, 2.0f, -0.25f});

  if (d.beta != 0.0f) {
    p.c_is_d = rng.percent(35);
    d.c = d.d;
    if (!p.c_is_d && d.batch > 1) {
      // C may be laid out apart from D between batches, even broadcast.
      const int64_t lines = d.d.order == Order::kRowMajor ? d.m : n_out;
      d.c.batch_stride = rng.percent(10) ? 0 : lines * d.d.ld + draw_batch_gap(rng);
    }
  } else {
    p.unread_c = rng.percent(25);
    d.c = d.d;
  }

  d.batch_invariant = rng.percent(10);

  p.a_offset = draw_offset(rng);
  p.b_offset = draw_offset(rng);
  p.c_offset = draw_offset(rng);
  p.d_offset = draw_offset(rng);
  p.bias_offset = draw_offset(rng);
  p.data_seed = rng.next();
  return p;
}

// Problems drawn in the shapes sm90-gemm's widths between the 32-column steps take
// (plan.h, step16_width_or: plain GEMMs of a few hundred to a few thousand rows on 2-12k
// columns): indices kStep16ShapeSlot mod kStep16ShapeEvery. General draws reach them
// about once in a thousand problems.
constexpr int64_t kStep16ShapeEvery = 11;
constexpr int64_t kStep16ShapeSlot = 4;

void reshape_for_step16_widths(FuzzProblem& p, const FuzzLimits& limits) {
  Random rng(Random(p.data_seed ^ 0x1616161616161616ull).next());
  GemmDesc& d = p.desc;
  // Within the large problems' caps where there are any (K shrinks to keep the MACs).
  const bool large = limits.large_percent > 0;
  const int64_t max_extent = large ? limits.max_extent : limits.max_small_extent;
  const int64_t max_macs = large ? limits.max_large_macs : limits.max_macs;
  d.batch = 1;
  d.m = rng.between(std::min<int64_t>(200, max_extent), std::min<int64_t>(1600, max_extent));
  d.n = rng.between(std::min<int64_t>(2000, max_extent), std::min<int64_t>(12000, max_extent));
  d.n = std::max<int64_t>(1, std::min(d.n, max_macs / d.m));
  d.m = std::max<int64_t>(1, std::min(d.m, max_macs / d.n));
  d.k = std::max<int64_t>(1, std::min({draw_extent(rng, 1024), max_extent, max_macs / (d.m * d.n)}));
  // The plain GEMM: no bias, activation, alpha or C (any of them keeps the 32-column widths).
  d.epilogue.activation = Activation::kIdentity;
  d.epilogue.bias = BiasMode::kNone;
  d.alpha = 1.0f;
  d.beta = 0.0f;
  p.c_is_d = false;
  d.a = draw_layout(rng, d.a.dtype, d.m, d.k, 1, true);
  d.b = draw_layout(rng, d.b.dtype, d.k, d.n, 1, true);
  d.d = draw_layout(rng, d.d.dtype, d.m, d.n, 1, false);
  d.c = d.d;
}

}  // namespace

FuzzProblem make_fuzz_problem(uint64_t seed, int64_t index, const FuzzLimits& limits) {
  FuzzProblem p = draw_problem(seed, index, limits);
  if (index % kStep16ShapeEvery == kStep16ShapeSlot) {
    reshape_for_step16_widths(p, limits);
  } else if (index % kTransposedShapeEvery == kTransposedShapeSlot) {
    make_transposed_shape(p, limits);
  }
  return p;
}

// The FP8 problems drawn in split-K's shapes: indices kFp8SplitShapeSlot mod
// kFp8SplitShapeEvery.
constexpr int64_t kFp8SplitShapeEvery = 5;
constexpr int64_t kFp8SplitShapeSlot = 3;

FuzzProblem make_fp8_fuzz_problem(uint64_t seed, int64_t index, const FuzzLimits& limits) {
  FuzzProblem p = draw_problem(seed, index, limits);
  // A stream of its own, so the 16-bit draw above stays what it is for this (seed, index).
  Random rng(Random(p.data_seed ^ 0xF8F8F8F8F8F8F8F8ull).next());
  GemmDesc& d = p.desc;
  const int64_t pair = rng.below(10);
  const DataType a = pair == 8 ? DataType::kE5M2 : DataType::kE4M3;
  const DataType b = pair == 9 ? DataType::kE5M2 : DataType::kE4M3;
  // Split-K's shapes (fp8_plan.h): one matrix of few output tiles, M <= 256 and N <= 2048,
  // and a K of at least 8 whole 128-wide blocks, which the planner cuts into slices. Only
  // where the limits allow such a K; D keeps its order and padding, C is D's layout. In
  // fixed slots (every fifth index) and from a stream of their own, so the problems at every
  // other index stay what they were (docs/fp8.md and the GPU tests name some by index).
  if (index % kFp8SplitShapeEvery == kFp8SplitShapeSlot && limits.max_extent >= 8 * 128) {
    Random split_rng(Random(p.data_seed ^ 0x5A11CE5A11CE5A11ull).next());
    const bool swiglu = d.epilogue.activation == Activation::kSwiGLU;
    const int64_t d_pad = d.d.ld - (d.d.order == Order::kRowMajor ? (swiglu ? d.n / 2 : d.n) : d.m);
    d.batch = 1;
    d.m = split_rng.log_uniform(std::min<int64_t>(256, limits.max_extent));
    d.n = draw_extent(split_rng, std::min<int64_t>(2048, limits.max_extent));
    if (swiglu) d.n = std::max<int64_t>(128, d.n / 128 * 128);
    d.k = 128 * split_rng.between(8, limits.max_extent / 128);
    while (fuzz_macs(d) > limits.max_large_macs && d.k >= 2 * 8 * 128) d.k = d.k / 256 * 128;
    d.d.ld = (d.d.order == Order::kRowMajor ? (swiglu ? d.n / 2 : d.n) : d.m) + d_pad;
    d.d.batch_stride = 0;
    d.c = d.d;
  }
  d.k = std::max<int64_t>(16, (d.k + 15) / 16 * 16);
  const auto kmajor = [&](DataType t, Order order, int64_t rows) {
    MatrixLayout l;
    l.dtype = t;
    l.order = order;
    l.ld = d.k + 16 * (rng.percent(70) ? 0 : rng.between(1, 8));
    if (d.batch > 1) l.batch_stride = rows * l.ld + 16 * (rng.percent(60) ? 0 : rng.between(1, 4));
    return l;
  };
  d.a = kmajor(a, Order::kRowMajor, d.m);
  d.b = kmajor(b, Order::kColMajor, d.n);
  const bool mixed = a != DataType::kE4M3 || b != DataType::kE4M3;
  if (d.batch > 1) {
    d.scales = rng.percent(30) ? ScaleMode::kNone : ScaleMode::kTensor;
  } else {
    d.scales = mixed ? rng.pick({ScaleMode::kNone, ScaleMode::kTensor, ScaleMode::kRowColumn})
                     : rng.pick({ScaleMode::kNone, ScaleMode::kTensor, ScaleMode::kRowColumn, ScaleMode::kBlock128,
                                 ScaleMode::kBlock128});
  }
  d.batch_invariant = false;
  p.a_offset = 16 * (rng.percent(70) ? 0 : rng.between(1, 4));
  p.b_offset = 16 * (rng.percent(70) ? 0 : rng.between(1, 4));
  if (d.scales == ScaleMode::kBlock128) p.scale_a_offset = rng.below(4);
  return p;
}

FuzzProblem make_invariant_split_fuzz_problem(uint64_t seed, int64_t index, const FuzzLimits& limits) {
  FuzzProblem p = draw_problem(seed, index, limits);
  Random rng(Random(p.data_seed ^ 0xB1B1B1B1B1B1B1B1ull).next());
  GemmDesc& d = p.desc;
  const bool swiglu = d.epilogue.activation == Activation::kSwiGLU;
  d.batch = 1;
  d.batch_invariant = true;
  // Half long K on up to 600 rows; half a K of 1024-16384 (any multiple of 8: uneven
  // slices, a partial last k-tile) on up to 4096 rows, where the folded slices run.
  const bool long_k = rng.percent(50);
  d.m = rng.log_uniform(long_k ? 600 : 4096);
  d.n = draw_extent(rng, 2048);
  if (swiglu) d.n = std::max<int64_t>(128, d.n / 128 * 128);
  d.k = long_k ? 128 * rng.between(128, 1024) : 8 * rng.between(128, 2048);
  // Keep to the cap: shorter K first (never under 16384), then fewer rows.
  while (fuzz_macs(d) > limits.max_large_macs && d.k >= 2 * 16384) d.k = d.k / 256 * 128;
  while (fuzz_macs(d) > limits.max_large_macs && d.m > 1) d.m = (d.m + 1) / 2;
  const auto kmajor = [&](Order order) {
    MatrixLayout l;
    l.dtype = d.a.dtype;
    l.order = order;
    l.ld = d.k + 8 * (rng.percent(70) ? 0 : rng.between(1, 8));
    return l;
  };
  d.a = kmajor(Order::kRowMajor);
  d.b = kmajor(Order::kColMajor);
  d.d = draw_layout(rng, d.d.dtype, d.m, swiglu ? d.n / 2 : d.n, 1, false);
  d.c = d.d;
  d.c.batch_stride = 0;
  p.a_offset = 8 * (rng.percent(70) ? 0 : rng.between(1, 4));
  p.b_offset = 8 * (rng.percent(70) ? 0 : rng.between(1, 4));
  return p;
}

namespace {

const char* order_name(Order o) { return o == Order::kRowMajor ? "row" : "col"; }

const char* activation_name(Activation a) {
  switch (a) {
    case Activation::kIdentity: return "identity";
    case Activation::kReLU: return "relu";
    case Activation::kGeluErf: return "gelu-erf";
    case Activation::kGeluTanh: return "gelu-tanh";
    case Activation::kSiLU: return "silu";
    case Activation::kSwiGLU: return "swiglu";
  }
  return "?";
}

const char* bias_name(BiasMode b) {
  switch (b) {
    case BiasMode::kNone: return "none";
    case BiasMode::kPerColumn: return "per-column";
    case BiasMode::kPerRow: return "per-row";
  }
  return "?";
}

std::string operand_text(const char* name, const MatrixLayout& l, int64_t offset) {
  char buf[160];
  std::snprintf(buf, sizeof(buf), "%s %s %s ld=%lld bstride=%lld off=%lld", name, to_string(l.dtype), order_name(l.order),
                static_cast<long long>(l.ld), static_cast<long long>(l.batch_stride), static_cast<long long>(offset));
  return buf;
}

}  // namespace

std::string describe(const FuzzProblem& p) {
  const GemmDesc& d = p.desc;
  char head[160];
  std::snprintf(head, sizeof(head), "#%lld (seed %llu): m=%lld n=%lld k=%lld batch=%lld", static_cast<long long>(p.index),
                static_cast<unsigned long long>(p.seed), static_cast<long long>(d.m), static_cast<long long>(d.n),
                static_cast<long long>(d.k), static_cast<long long>(d.batch));
  const std::string c_text = p.c_is_d           ? std::string("C = D")
                             : p.unread_c       ? operand_text("C (NaN, must not be read)", d.c, p.c_offset)
                             : d.beta != 0.0f ? operand_text("C", d.c, p.c_offset)
                                              : std::string("C none");
  const std::string scale_shift =
      p.scale_a_offset > 0 ? " (scale_a +" + std::to_string(p.scale_a_offset) + " floats)" : std::string();
  char tail[280];
  std::snprintf(tail, sizeof(tail), "alpha=%g beta=%g | act=%s bias=%s/%s off=%lld%s%s%s%s", static_cast<double>(d.alpha),
                static_cast<double>(d.beta), activation_name(d.epilogue.activation), bias_name(d.epilogue.bias),
                to_string(d.epilogue.bias_dtype), static_cast<long long>(p.bias_offset),
                d.batch_invariant ? " | batch-invariant" : "", d.scales != ScaleMode::kNone ? " | scales " : "",
                d.scales != ScaleMode::kNone ? to_string(d.scales) : "", scale_shift.c_str());
  return std::string(head) + " | " + operand_text("A", d.a, p.a_offset) + " | " + operand_text("B", d.b, p.b_offset) +
         " | " + operand_text("D", d.d, p.d_offset) + " | " + c_text + " | " + tail;
}

}  // namespace anvil::verify
