// Device half of the verification toolkit: random fill, poison, the reference GEMM and
// the device-side comparison. The host-only pieces (CPU reference, tolerances, host
// comparison, sizes) live in cpu_reference.cpp.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>

#include "anvil/swiglu.h"
#include "verify/verify.h"

namespace anvil::verify {
namespace {

// ---------------------------------------------------------------------------------------
// Element access shared by the kernels. Branching on the dtype per element is uniform
// across a warp, and keeps one kernel for every dtype combination, which is what a
// reference should be: easy to read, not fast.

__device__ __forceinline__ float load_as_float(const void* base, DataType dtype, int64_t index) {
  switch (dtype) {
    case DataType::kBF16: return __bfloat162float(static_cast<const __nv_bfloat16*>(base)[index]);
    case DataType::kF16: return __half2float(static_cast<const __half*>(base)[index]);
    case DataType::kF32: return static_cast<const float*>(base)[index];
    case DataType::kE4M3: return float(static_cast<const __nv_fp8_e4m3*>(base)[index]);
    case DataType::kE5M2: return float(static_cast<const __nv_fp8_e5m2*>(base)[index]);
  }
  return 0.0f;
}

__device__ __forceinline__ int64_t element_offset(const MatrixLayout& layout, int64_t row,
                                                  int64_t col, int64_t batch) {
  const int64_t in_matrix = layout.order == Order::kRowMajor ? row * layout.ld + col
                                                             : col * layout.ld + row;
  return batch * layout.batch_stride + in_matrix;
}

// ---------------------------------------------------------------------------------------
// Random fill. A counter-based hash makes every element independent of launch shape, so
// the same seed gives the same matrix whatever grid or stream produced it.

__device__ __forceinline__ uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The two fills' distributions, from one 64-bit hash per element.
enum class Fill { kUniform, kNormal, kScale };

template <Fill kFill>
__device__ __forceinline__ float fill_value(uint64_t h) {
  if constexpr (kFill == Fill::kScale) {
    // FP8 scales: 1 + uniform (-0.5, 0.5), never zero or negative.
    return 1.0f + 0.5f * (float(int64_t((h >> 40) * 2 + 1) - (int64_t(1) << 24)) * 0x1p-24f);
  } else if constexpr (kFill == Fill::kUniform) {
    // Odd numerators over 2^24 are symmetric about zero and never exactly zero, so a
    // kernel that forgets to read an operand cannot pass by multiplying zeros.
    return float(int64_t((h >> 40) * 2 + 1) - (int64_t(1) << 24)) * 0x1p-24f;
  } else {
    // Box-Muller on two 24-bit uniforms: the shape of torch.randn's data and of real
    // weights and activations. Both are odd numerators over 2^25, so the radius is finite
    // and the angle never lands on a zero of the cosine; only rounding can make an
    // element zero (fp16 flushes |x| < 2^-25: a few elements in 10^8), never an operand.
    const float u1 = float((h >> 40) * 2 + 1) * 0x1p-25f;              // (0, 1)
    const float u2 = float(((h >> 16) & 0xFFFFFF) * 2 + 1) * 0x1p-25f;  // (0, 1)
    return sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2);
  }
}

template <Fill kFill>
__global__ void fill_kernel(void* ptr, DataType dtype, int64_t count, uint64_t stream_key, float scale) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    const float value = fill_value<kFill>(splitmix64(stream_key + uint64_t(i))) * scale;
    switch (dtype) {
      case DataType::kBF16: static_cast<__nv_bfloat16*>(ptr)[i] = __float2bfloat16_rn(value); break;
      case DataType::kF16: static_cast<__half*>(ptr)[i] = __float2half_rn(value); break;
      case DataType::kF32: static_cast<float*>(ptr)[i] = value; break;
      // The CUDA conversions round to nearest (even) and saturate to the largest finite
      // value (e4m3: 448, e5m2: 57344).
      case DataType::kE4M3: static_cast<__nv_fp8_e4m3*>(ptr)[i] = __nv_fp8_e4m3(value); break;
      case DataType::kE5M2: static_cast<__nv_fp8_e5m2*>(ptr)[i] = __nv_fp8_e5m2(value); break;
    }
  }
}

// A grid-stride loop over a capped grid: the cap keeps the launch legal for any count,
// and 4096 blocks already fill every SM of an H200 many times over.
unsigned elementwise_blocks(int64_t count, int threads) {
  const int64_t wanted = (count + threads - 1) / threads;
  return unsigned(std::clamp<int64_t>(wanted, 1, 4096));
}

bool is_valid_dtype(DataType dtype) {
  return dtype == DataType::kBF16 || dtype == DataType::kF16 || dtype == DataType::kF32;
}
bool is_valid_input(DataType dtype) {
  return is_valid_dtype(dtype) || dtype == DataType::kE4M3 || dtype == DataType::kE5M2;
}

// ---------------------------------------------------------------------------------------
// Reference GEMM. Each thread owns one logical output element and accumulates its dot
// product in k order in fp32; shared-memory staging only changes where the operands are
// read from, not the order or precision of the arithmetic.

constexpr int kRefTile = 16;

struct ReferenceParams {
  const void* a;
  const void* b;
  const void* c;
  const void* bias;
  float* ref;
  MatrixLayout la, lb, lc;
  int64_t m, n, k, n_out, batch;
  float alpha, beta;
  Activation activation;
  BiasMode bias_mode;
  DataType bias_dtype;
  bool read_c;
  // FP8 scales (anvil::ScaleMode): each operand element is dequantized, x * scale, before
  // the fp32 dot product.
  ScaleMode scales;
  const float* scale_a;
  const float* scale_b;
};

__device__ __forceinline__ float scale_of_a(const ReferenceParams& p, int64_t i, int64_t k) {
  switch (p.scales) {
    case ScaleMode::kTensor: return p.scale_a[0];
    case ScaleMode::kRowColumn: return p.scale_a[i];
    case ScaleMode::kBlock128: return p.scale_a[(k / 128) * p.m + i];
    default: return 1.0f;
  }
}

__device__ __forceinline__ float scale_of_b(const ReferenceParams& p, int64_t k, int64_t j) {
  switch (p.scales) {
    case ScaleMode::kTensor: return p.scale_b[0];
    case ScaleMode::kRowColumn: return p.scale_b[j];
    case ScaleMode::kBlock128: return p.scale_b[(j / 128) * ((p.k + 127) / 128) + k / 128];
    default: return 1.0f;
  }
}

__device__ __forceinline__ float activate(Activation act, float z) {
  switch (act) {
    case Activation::kIdentity: return z;
    case Activation::kReLU: return z > 0.0f ? z : 0.0f;
    case Activation::kGeluErf: return 0.5f * z * (1.0f + erff(z * 0.70710678118654752f));
    case Activation::kGeluTanh: {
      // 0.5 z (1 + tanh(u)) written as z / (1 + e^(-2u)), in double: the same function
      // without the cancellation of 1 + tanh(u) for z << 0, where fp32 keeps almost no
      // digits (z = -4.5: ~1% relative error, which failed a one-element fuzz problem
      // whose kernel result was the accurate one).
      const double zd = z;
      const double u = 0.79788456080286536 * (zd + 0.044715 * zd * zd * zd);
      return static_cast<float>(zd / (1.0 + exp(-2.0 * u)));
    }
    case Activation::kSiLU:
    case Activation::kSwiGLU: return z / (1.0f + expf(-z));
  }
  return z;
}

__global__ void reference_kernel(ReferenceParams p) {
  // +1 column of padding: the transposed-layout loads below write down a column.
  __shared__ float a_tile[kRefTile][kRefTile + 1];       // [row][k]
  __shared__ float b_tile[2][kRefTile][kRefTile + 1];    // [gate/up][k][output column]

  const bool swiglu = p.activation == Activation::kSwiGLU;
  const int tx = threadIdx.x;
  const int ty = threadIdx.y;
  const int64_t col_base = int64_t(blockIdx.x) * kRefTile;
  const int64_t j = col_base + tx;

  for (int64_t row_tile = blockIdx.y; row_tile * kRefTile < p.m; row_tile += gridDim.y) {
    for (int64_t batch = blockIdx.z; batch < p.batch; batch += gridDim.z) {
      const int64_t i = row_tile * kRefTile + ty;
      float acc[2] = {0.0f, 0.0f};

      for (int64_t k0 = 0; k0 < p.k; k0 += kRefTile) {
        {
          // Let threadIdx.x walk the contiguous dimension so the global loads coalesce.
          const bool row_major = p.la.order == Order::kRowMajor;
          const int r = row_major ? ty : tx;
          const int q = row_major ? tx : ty;
          const int64_t gi = row_tile * kRefTile + r;
          const int64_t gk = k0 + q;
          a_tile[r][q] = (gi < p.m && gk < p.k)
                             ? load_as_float(p.a, p.la.dtype, element_offset(p.la, gi, gk, batch)) *
                                   scale_of_a(p, gi, gk)
                             : 0.0f;
        }
        for (int w = 0; w < (swiglu ? 2 : 1); ++w) {
          const bool row_major = p.lb.order == Order::kRowMajor;
          const int q = row_major ? ty : tx;
          const int c = row_major ? tx : ty;
          const int64_t out_col = col_base + c;
          const int64_t gk = k0 + q;
          const int64_t gemm_col =
              swiglu ? (w == 0 ? swiglu_gate_column(out_col) : swiglu_up_column(out_col)) : out_col;
          b_tile[w][q][c] =
              (out_col < p.n_out && gk < p.k)
                  ? load_as_float(p.b, p.lb.dtype, element_offset(p.lb, gk, gemm_col, batch)) *
                        scale_of_b(p, gk, gemm_col)
                  : 0.0f;
        }
        __syncthreads();
        const int k_in_tile = int(p.k - k0 < kRefTile ? p.k - k0 : kRefTile);
        for (int kk = 0; kk < k_in_tile; ++kk) {
          acc[0] = fmaf(a_tile[ty][kk], b_tile[0][kk][tx], acc[0]);
          if (swiglu) acc[1] = fmaf(a_tile[ty][kk], b_tile[1][kk][tx], acc[1]);
        }
        __syncthreads();
      }

      if (i < p.m && j < p.n_out) {
        auto pre_activation = [&](float dot, int64_t gemm_col) {
          float z = p.alpha * dot;
          if (p.bias_mode == BiasMode::kPerColumn) z += load_as_float(p.bias, p.bias_dtype, gemm_col);
          if (p.bias_mode == BiasMode::kPerRow) z += load_as_float(p.bias, p.bias_dtype, i);
          return z;
        };
        float out;
        if (swiglu) {
          const float gate = pre_activation(acc[0], swiglu_gate_column(j));
          const float up = pre_activation(acc[1], swiglu_up_column(j));
          out = activate(Activation::kSiLU, gate) * up;
        } else {
          out = activate(p.activation, pre_activation(acc[0], j));
        }
        if (p.read_c) out += p.beta * load_as_float(p.c, p.lc.dtype, element_offset(p.lc, i, j, batch));
        p.ref[(batch * p.m + i) * p.n_out + j] = out;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------
// Device comparison: each block reduces its share into one Partial; the host folds the
// partials. A fixed grid makes the result independent of timing, although nothing needs
// that.

constexpr int kCompareThreads = 256;
constexpr int kCompareBlocks = 512;

struct Partial {
  double sum_sq_diff;
  double sum_sq_ref;
  double max_err;
  long long max_index;
  long long nonfinite;
  long long out_of_tolerance;
};

struct CompareParams {
  const void* d;
  const float* ref;
  MatrixLayout ld;
  int64_t m, n_out, batch;
  double max_abs, max_rel, overflow;
};

// Non-finite errors count as infinitely large so that the worst index points at them.
__device__ __forceinline__ void keep_worst(double& max_err, long long& max_index, double err,
                                           long long index) {
  if (err > max_err || (err == max_err && index < max_index)) {
    max_err = err;
    max_index = index;
  }
}

__global__ void __launch_bounds__(kCompareThreads) compare_kernel(CompareParams p, Partial* partials) {
  Partial mine{0.0, 0.0, -1.0, -1, 0, 0};
  const int64_t per_batch = p.m * p.n_out;
  const int64_t total = per_batch * p.batch;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const double inf = __longlong_as_double(0x7FF0000000000000ll);

  for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < total; t += stride) {
    const int64_t batch = t / per_batch;
    const int64_t rem = t - batch * per_batch;
    const int64_t i = rem / p.n_out;
    const int64_t j = rem - i * p.n_out;
    const double dv = load_as_float(p.d, p.ld.dtype, element_offset(p.ld, i, j, batch));
    const double rv = p.ref[t];
    const bool d_finite = isfinite(dv);
    const bool r_finite = isfinite(rv);
    if (!d_finite) {
      // A reference that overflowed the same way leaves nothing to blame on the kernel.
      const bool alike = (!r_finite && ((isnan(dv) && isnan(rv)) || dv == rv)) ||
                         rounds_to_infinity(dv, rv, p.overflow, p.max_abs, p.max_rel);
      if (!alike) {
        ++mine.nonfinite;
        keep_worst(mine.max_err, mine.max_index, inf, t);
      }
      continue;
    }
    if (!r_finite) {
      ++mine.out_of_tolerance;
      keep_worst(mine.max_err, mine.max_index, inf, t);
      continue;
    }
    const double diff = dv - rv;
    const double err = fabs(diff);
    mine.sum_sq_diff += diff * diff;
    mine.sum_sq_ref += rv * rv;
    if (err > p.max_abs + p.max_rel * fabs(rv)) ++mine.out_of_tolerance;
    keep_worst(mine.max_err, mine.max_index, err, t);
  }

  __shared__ Partial shared[kCompareThreads];
  shared[threadIdx.x] = mine;
  __syncthreads();
  for (int half = kCompareThreads / 2; half > 0; half /= 2) {
    if (int(threadIdx.x) < half) {
      Partial& x = shared[threadIdx.x];
      const Partial& y = shared[threadIdx.x + half];
      x.sum_sq_diff += y.sum_sq_diff;
      x.sum_sq_ref += y.sum_sq_ref;
      x.nonfinite += y.nonfinite;
      x.out_of_tolerance += y.out_of_tolerance;
      if (y.max_index >= 0) keep_worst(x.max_err, x.max_index, y.max_err, y.max_index);
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) partials[blockIdx.x] = shared[0];
}

Comparison failed_comparison() {
  Comparison result;
  result.passed = false;
  result.count = -1;
  return result;
}

// scale: the uniform fill's half-width, or the normal fill's standard deviation.
template <Fill kFill>
cudaError_t launch_fill(void* ptr, DataType dtype, int64_t count, uint64_t seed, float scale, cudaStream_t stream) {
  if (count < 0 || !is_valid_input(dtype) || !(scale > 0.0f) || !std::isfinite(scale)) {
    return cudaErrorInvalidValue;
  }
  if (count == 0) return cudaSuccess;
  if (ptr == nullptr) return cudaErrorInvalidValue;
  constexpr int kThreads = 256;
  // Hashing the seed first separates the streams of nearby seeds: with plain seed ^ index,
  // seeds 1 and 2 would produce the same values at shuffled positions.
  const uint64_t stream_key = seed * 0xD1B54A32D192ED03ull + 0x8CB92BA72F3D8DD7ull;
  fill_kernel<kFill><<<elementwise_blocks(count, kThreads), kThreads, 0, stream>>>(ptr, dtype, count, stream_key,
                                                                                    scale);
  return cudaGetLastError();
}

}  // namespace

cudaError_t fill_random(void* ptr, DataType dtype, int64_t count, uint64_t seed, float scale,
                        cudaStream_t stream) {
  return launch_fill<Fill::kUniform>(ptr, dtype, count, seed, scale, stream);
}

cudaError_t fill_random_normal(void* ptr, DataType dtype, int64_t count, uint64_t seed, float stddev,
                               cudaStream_t stream) {
  return launch_fill<Fill::kNormal>(ptr, dtype, count, seed, stddev, stream);
}

cudaError_t fill_scales(float* ptr, int64_t count, uint64_t seed, cudaStream_t stream) {
  return launch_fill<Fill::kScale>(ptr, DataType::kF32, count, seed, 1.0f, stream);
}

cudaError_t poison(void* ptr, DataType dtype, int64_t count, cudaStream_t stream) {
  if (count < 0 || !is_valid_input(dtype)) return cudaErrorInvalidValue;
  if (count == 0) return cudaSuccess;
  if (ptr == nullptr) return cudaErrorInvalidValue;
  // All-ones bytes are a NaN in every supported dtype (0xFFFF in bf16 and fp16,
  // 0xFFFFFFFF in fp32, 0xFF in e4m3 and e5m2), so one memset covers them all.
  return cudaMemsetAsync(ptr, 0xFF, size_t(count) * dtype_bytes(dtype), stream);
}

cudaError_t reference_gemm(const GemmDesc& desc, const GemmArgs& args, float* ref,
                           cudaStream_t stream) {
  if (desc.m < 0 || desc.n < 0 || desc.k < 0 || desc.batch < 0) return cudaErrorInvalidValue;
  const bool swiglu = desc.epilogue.activation == Activation::kSwiGLU;
  if (swiglu && desc.n % (2 * kSwiGLUBlock) != 0) return cudaErrorInvalidValue;
  const int64_t n_out = output_cols(desc);
  if (desc.m == 0 || n_out == 0 || desc.batch == 0) return cudaSuccess;

  const bool read_c = desc.beta != 0.0f;
  if (ref == nullptr) return cudaErrorInvalidValue;
  if (desc.k > 0 && (args.a == nullptr || args.b == nullptr)) return cudaErrorInvalidValue;
  if (read_c && args.c == nullptr) return cudaErrorInvalidValue;
  if (desc.epilogue.bias != BiasMode::kNone && args.bias == nullptr) return cudaErrorInvalidValue;
  if (!is_valid_input(desc.a.dtype) || !is_valid_input(desc.b.dtype) ||
      !is_valid_dtype(desc.c.dtype) || !is_valid_dtype(desc.epilogue.bias_dtype)) {
    return cudaErrorInvalidValue;
  }
  if (desc.scales != ScaleMode::kNone && desc.k > 0 && (args.scale_a == nullptr || args.scale_b == nullptr)) {
    return cudaErrorInvalidValue;
  }

  ReferenceParams p{};
  p.a = args.a;
  p.b = args.b;
  p.c = read_c ? args.c : nullptr;
  p.bias = args.bias;
  p.ref = ref;
  p.la = desc.a;
  p.lb = desc.b;
  p.lc = desc.c;
  p.m = desc.m;
  p.n = desc.n;
  p.k = desc.k;
  p.n_out = n_out;
  p.batch = desc.batch;
  p.alpha = desc.alpha;
  p.beta = desc.beta;
  p.activation = desc.epilogue.activation;
  p.bias_mode = desc.epilogue.bias;
  p.bias_dtype = desc.epilogue.bias_dtype;
  p.read_c = read_c;
  p.scales = desc.scales;
  p.scale_a = args.scale_a;
  p.scale_b = args.scale_b;

  const int64_t col_tiles = (n_out + kRefTile - 1) / kRefTile;
  const int64_t row_tiles = (desc.m + kRefTile - 1) / kRefTile;
  if (col_tiles > std::numeric_limits<int32_t>::max()) return cudaErrorInvalidValue;
  // Rows and batches beyond the grid limits are covered by the kernel's stride loops.
  const dim3 grid(unsigned(col_tiles), unsigned(std::min<int64_t>(row_tiles, 65535)),
                  unsigned(std::min<int64_t>(desc.batch, 65535)));
  reference_kernel<<<grid, dim3(kRefTile, kRefTile), 0, stream>>>(p);
  return cudaGetLastError();
}

Comparison compare(const GemmDesc& desc, const void* d, const float* ref, const Tolerance& tol,
                   cudaStream_t stream) {
  if (desc.m < 0 || desc.n < 0 || desc.batch < 0 || !is_valid_dtype(desc.d.dtype)) {
    return failed_comparison();
  }
  const int64_t n_out = output_cols(desc);
  const int64_t total = desc.m * n_out * desc.batch;
  if (total == 0) {
    Comparison empty;
    empty.count = 0;
    empty.passed = true;
    return empty;
  }
  if (d == nullptr || ref == nullptr) return failed_comparison();

  CompareParams p{};
  p.d = d;
  p.ref = ref;
  p.ld = desc.d;
  p.m = desc.m;
  p.n_out = n_out;
  p.batch = desc.batch;
  p.max_abs = tol.max_abs;
  p.max_rel = tol.max_rel;
  p.overflow = tol.overflow;

  Partial* scratch = nullptr;
  if (cudaMalloc(&scratch, sizeof(Partial) * kCompareBlocks) != cudaSuccess) return failed_comparison();
  std::array<Partial, kCompareBlocks> partials{};
  compare_kernel<<<kCompareBlocks, kCompareThreads, 0, stream>>>(p, scratch);
  cudaError_t err = cudaGetLastError();
  if (err == cudaSuccess) {
    err = cudaMemcpyAsync(partials.data(), scratch, sizeof(Partial) * kCompareBlocks,
                          cudaMemcpyDeviceToHost, stream);
  }
  if (err == cudaSuccess) err = cudaStreamSynchronize(stream);
  const cudaError_t free_err = cudaFree(scratch);
  if (err != cudaSuccess || free_err != cudaSuccess) return failed_comparison();

  Partial sum{0.0, 0.0, -1.0, -1, 0, 0};
  for (const Partial& x : partials) {
    sum.sum_sq_diff += x.sum_sq_diff;
    sum.sum_sq_ref += x.sum_sq_ref;
    sum.nonfinite += x.nonfinite;
    sum.out_of_tolerance += x.out_of_tolerance;
    if (x.max_index >= 0 &&
        (x.max_err > sum.max_err || (x.max_err == sum.max_err && x.max_index < sum.max_index))) {
      sum.max_err = x.max_err;
      sum.max_index = x.max_index;
    }
  }

  Comparison result;
  result.count = total;
  result.nonfinite = sum.nonfinite;
  result.out_of_tolerance = sum.out_of_tolerance;
  result.worst_index = sum.max_index;
  result.max_abs_err = sum.max_index >= 0 ? sum.max_err : 0.0;
  result.sum_sq_diff = sum.sum_sq_diff;
  result.sum_sq_ref = sum.sum_sq_ref;
  if (sum.sum_sq_ref > 0.0) {
    result.rel_frobenius = std::sqrt(sum.sum_sq_diff / sum.sum_sq_ref);
  } else {
    result.rel_frobenius = sum.sum_sq_diff == 0.0 ? 0.0 : std::numeric_limits<double>::infinity();
  }
  result.passed = result.nonfinite == 0 && result.out_of_tolerance == 0 &&
                  within_frobenius(sum.sum_sq_diff, sum.sum_sq_ref, total, tol);
  return result;
}

}  // namespace anvil::verify
