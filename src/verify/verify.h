// Verification toolkit shared by the tests and anvil-bench: random inputs, poisoned
// outputs, a reference GEMM that is simple and obviously right, and the comparison.
//
// Reference semantics are exactly the public API's (anvil/gemm.h):
//   z = alpha * sum_k op(A)[i,k] * op(B)[k,j]  (+ bias[j] or bias[i])
//   D[i,j] = act(z) + beta * C[i,j]
// and for SwiGLU (GEMM width n, output width n/2, block kSwiGLUBlock, see anvil/swiglu.h):
//   D[i,j] = silu(z[i, gate_col(j)]) * z[i, up_col(j)] + beta * C[i,j]
#pragma once

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "anvil/gemm.h"

namespace anvil::verify {

// Elements of one operand's storage for a batch (covers batch_stride and ld).
int64_t storage_elements(const MatrixLayout& layout, int64_t rows, int64_t cols, int64_t batch);
size_t dtype_bytes(DataType dtype);

// Uniform random values in [-scale, scale], rounded to dtype; deterministic per seed.
cudaError_t fill_random(void* ptr, DataType dtype, int64_t count, uint64_t seed, float scale,
                        cudaStream_t stream);
// Normal random values with standard deviation `stddev`, rounded to dtype; deterministic
// per seed. With stddev = 1/sqrt(3) they have fill_random(scale 1)'s
// variance, so the same tolerances apply (tolerance_for).
cudaError_t fill_random_normal(void* ptr, DataType dtype, int64_t count, uint64_t seed, float stddev,
                               cudaStream_t stream);
// FP8 scales: uniform random fp32 values in [0.5, 1.5], deterministic per seed.
cudaError_t fill_scales(float* ptr, int64_t count, uint64_t seed, cudaStream_t stream);
// How many fp32 scales GemmArgs::scale_a and scale_b hold for desc.scales (anvil/gemm.h):
// 0 for kNone; 1 each for kTensor; M and N for kRowColumn; ceil(K/128) x M and
// ceil(N/128) x ceil(K/128) for kBlock128.
int64_t scale_elements_a(const GemmDesc& desc);
int64_t scale_elements_b(const GemmDesc& desc);
// Writes a NaN pattern so that any element a kernel fails to write is caught.
cudaError_t poison(void* ptr, DataType dtype, int64_t count, cudaStream_t stream);

// GPU reference: one thread per output, fp32 accumulation in k order. FP8 operands are
// dequantized first (each element times its scale, args.scale_a / scale_b as desc.scales
// lays them out), so the reference is the fp32 product of the dequantized operands. Writes the
// logical M x N_out result of every batch into ref (row-major, fp32, batch-major).
cudaError_t reference_gemm(const GemmDesc& desc, const GemmArgs& args, float* ref,
                           cudaStream_t stream);

// CPU fp64 reference over host copies (same storage as on the device), for small problems.
// Inputs are raw bytes in the desc's dtypes; output is M x N_out x batch row-major double.
// FP8 operands are dequantized with the host copies of the scales (null for kNone).
void cpu_reference(const GemmDesc& desc, const void* a, const void* b, const void* c,
                   const void* bias, std::vector<double>& out, const float* scale_a = nullptr,
                   const float* scale_b = nullptr);

// Host decoders of the 8-bit floats (OCP e4m3 without infinities, e5m2 with them).
double decode_e4m3(uint8_t bits);
double decode_e5m2(uint8_t bits);

struct Tolerance {
  double rel_frobenius;  // ||D - ref||_F / ||ref||_F must be below this
  double max_abs;        // and every |D - ref| <= max_abs + max_rel * |ref|
  double max_rel;
  // Where the exact result lies at or past the output type's overflow threshold (its
  // largest finite value plus half an ulp), less the element bound, an infinite D of the
  // same sign is the correct rounding: a sum the kernel rounded a little higher overflowed
  // there. Infinity for fp32 outputs, whose reference (fp32 as well) overflows alike.
  double overflow = std::numeric_limits<double>::infinity();
  // The Frobenius bound takes ||ref||_F as at least frobenius_floor x sqrt(count). Where an
  // output's terms cancel (alpha A B against beta C, a one-element output above all), its
  // rounding and accumulation errors are those of the terms, not of the small result - the
  // reason for max_abs in the element bound. A sixteenth of the typical magnitude: outputs
  // of more than a few random elements never have an RMS that small.
  double frobenius_floor = 0.0;
};

// Whether ||D - ref||_F <= rel_frobenius x max(||ref||_F, frobenius_floor x sqrt(count)),
// from the sums of squares the comparisons keep.
inline bool within_frobenius(double sum_sq_diff, double sum_sq_ref, int64_t count, const Tolerance& tol) {
  const double floor_sq = tol.frobenius_floor * tol.frobenius_floor * static_cast<double>(count);
  const double norm_sq = sum_sq_ref > floor_sq ? sum_sq_ref : floor_sq;
  if (!(norm_sq > 0.0)) return sum_sq_diff == 0.0;
  return std::sqrt(sum_sq_diff / norm_sq) <= tol.rel_frobenius;
}

// Documented per output dtype and K (docs/verification.md).
Tolerance tolerance_for(const GemmDesc& desc);

// Whether an infinite d is the output type's rounding of the finite exact value ref
// (Tolerance::overflow). Host and device (verify.cu's comparison) share it.
#if defined(__CUDACC__)
__host__ __device__
#endif
inline bool rounds_to_infinity(double d, double ref, double overflow, double max_abs, double max_rel) {
  return std::isinf(d) && std::isfinite(ref) && std::signbit(d) == std::signbit(ref) &&
         std::fabs(ref) >= overflow - (max_abs + max_rel * std::fabs(ref));
}

struct Comparison {
  double rel_frobenius = 0;
  double max_abs_err = 0;
  int64_t worst_index = -1;      // flat index into the logical output (batch-major)
  int64_t nonfinite = 0;         // NaN/Inf in D (unwritten poison lands here)
  int64_t out_of_tolerance = 0;  // elements breaking the element bound
  int64_t count = 0;
  // The sums behind rel_frobenius, so that comparisons of parts of one output (a grouped
  // GEMM's experts) can be pooled.
  double sum_sq_diff = 0, sum_sq_ref = 0;
  bool passed = false;
};

// Compares device D (in desc.d's storage) with the device fp32 reference.
Comparison compare(const GemmDesc& desc, const void* d, const float* ref, const Tolerance& tol,
                   cudaStream_t stream);
// One line for a failure message: the error measures and where the worst element is.
std::string describe(const Comparison& c);

// Host version: D already copied into logical fp64 values.
Comparison compare_host(const std::vector<double>& d, const std::vector<double>& ref,
                        const Tolerance& tol);

// Rows and columns of the logical output (n/2 for SwiGLU).
int64_t output_cols(const GemmDesc& desc);

}  // namespace anvil::verify
