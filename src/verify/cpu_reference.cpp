// Host half of the verification toolkit: operand sizes, the fp64 CPU reference, the
// tolerances and the host comparison. Nothing here touches the GPU, so the CPU-only test
// tier exercises all of it.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

#include "anvil/swiglu.h"
#include "verify/verify.h"

namespace anvil::verify {
namespace {

// Bit-level decoders: the host has no native bf16/fp16, and going through the CUDA
// headers' host paths would tie this file to the CUDA compiler.
double decode_bf16(uint16_t bits) {
  const uint32_t widened = uint32_t(bits) << 16;
  float value;
  std::memcpy(&value, &widened, sizeof(value));
  return value;
}

double decode_f16(uint16_t bits) {
  const bool negative = (bits & 0x8000u) != 0;
  const int exponent = (bits >> 10) & 0x1F;
  const int mantissa = bits & 0x3FF;
  double magnitude;
  if (exponent == 0) {
    magnitude = std::ldexp(double(mantissa), -24);  // subnormal: mantissa * 2^-14 * 2^-10
  } else if (exponent == 0x1F) {
    magnitude = mantissa == 0 ? std::numeric_limits<double>::infinity()
                              : std::numeric_limits<double>::quiet_NaN();
  } else {
    magnitude = std::ldexp(double(mantissa | 0x400), exponent - 25);
  }
  return negative ? -magnitude : magnitude;
}

}  // namespace

double decode_e4m3(uint8_t bits) {
  const bool negative = (bits & 0x80u) != 0;
  const int exponent = (bits >> 3) & 0xF;
  const int mantissa = bits & 0x7;
  double magnitude;
  if (exponent == 0xF && mantissa == 0x7) {
    magnitude = std::numeric_limits<double>::quiet_NaN();  // e4m3 has no infinities
  } else if (exponent == 0) {
    magnitude = std::ldexp(double(mantissa), -9);  // subnormal: mantissa/8 * 2^-6
  } else {
    magnitude = std::ldexp(double(mantissa | 0x8), exponent - 10);  // 1.m * 2^(e - 7)
  }
  return negative ? -magnitude : magnitude;
}

double decode_e5m2(uint8_t bits) {
  // e5m2 is the upper byte of an fp16.
  return decode_f16(static_cast<uint16_t>(uint16_t(bits) << 8));
}

namespace {

std::array<double, 256> decode_table(double (*decode)(uint8_t)) {
  std::array<double, 256> table{};
  for (int code = 0; code < 256; ++code) table[size_t(code)] = decode(uint8_t(code));
  return table;
}

double load(const void* base, DataType dtype, int64_t index) {
  switch (dtype) {
    case DataType::kBF16: {
      uint16_t bits;
      std::memcpy(&bits, static_cast<const unsigned char*>(base) + index * 2, sizeof(bits));
      return decode_bf16(bits);
    }
    case DataType::kF16: {
      uint16_t bits;
      std::memcpy(&bits, static_cast<const unsigned char*>(base) + index * 2, sizeof(bits));
      return decode_f16(bits);
    }
    case DataType::kF32: {
      float value;
      std::memcpy(&value, static_cast<const unsigned char*>(base) + index * 4, sizeof(value));
      return value;
    }
    // 256 values each: decoded once (the reference reads every element K or N times).
    case DataType::kE4M3: {
      static const std::array<double, 256> table = decode_table(decode_e4m3);
      return table[static_cast<const unsigned char*>(base)[index]];
    }
    case DataType::kE5M2: {
      static const std::array<double, 256> table = decode_table(decode_e5m2);
      return table[static_cast<const unsigned char*>(base)[index]];
    }
  }
  return 0.0;
}

int64_t element_offset(const MatrixLayout& layout, int64_t row, int64_t col, int64_t batch) {
  const int64_t in_matrix = layout.order == Order::kRowMajor ? row * layout.ld + col
                                                             : col * layout.ld + row;
  return batch * layout.batch_stride + in_matrix;
}

double silu(double z) { return z / (1.0 + std::exp(-z)); }

double activate(Activation act, double z) {
  switch (act) {
    case Activation::kIdentity: return z;
    case Activation::kReLU: return z > 0.0 ? z : 0.0;
    case Activation::kGeluErf: return 0.5 * z * (1.0 + std::erf(z / std::sqrt(2.0)));
    case Activation::kGeluTanh: {
      const double sqrt_2_over_pi = 0.79788456080286535588;
      return 0.5 * z * (1.0 + std::tanh(sqrt_2_over_pi * (z + 0.044715 * z * z * z)));
    }
    case Activation::kSiLU:
    case Activation::kSwiGLU: return silu(z);
  }
  return z;
}

double unit_roundoff(DataType dtype) {
  switch (dtype) {
    case DataType::kBF16: return 0x1p-8;
    case DataType::kF16: return 0x1p-11;
    case DataType::kF32: return 0x1p-24;
    case DataType::kE4M3: return 0x1p-4;
    case DataType::kE5M2: return 0x1p-3;
  }
  return 0x1p-8;
}

bool worse(double err, int64_t index, double worst_err, int64_t worst_index) {
  return worst_index < 0 || err > worst_err || (err == worst_err && index < worst_index);
}

}  // namespace

size_t dtype_bytes(DataType dtype) {
  switch (dtype) {
    case DataType::kBF16:
    case DataType::kF16: return 2;
    case DataType::kF32: return 4;
    case DataType::kE4M3:
    case DataType::kE5M2: return 1;
  }
  return 0;
}

int64_t scale_elements_a(const GemmDesc& desc) {
  switch (desc.scales) {
    case ScaleMode::kTensor: return 1;
    case ScaleMode::kRowColumn: return desc.m;
    case ScaleMode::kBlock128: return (desc.k + 127) / 128 * desc.m;
    default: return 0;
  }
}

int64_t scale_elements_b(const GemmDesc& desc) {
  switch (desc.scales) {
    case ScaleMode::kTensor: return 1;
    case ScaleMode::kRowColumn: return desc.n;
    case ScaleMode::kBlock128: return (desc.n + 127) / 128 * ((desc.k + 127) / 128);
    default: return 0;
  }
}

int64_t storage_elements(const MatrixLayout& layout, int64_t rows, int64_t cols, int64_t batch) {
  if (rows <= 0 || cols <= 0 || batch <= 0) return 0;
  const bool row_major = layout.order == Order::kRowMajor;
  const int64_t outer = row_major ? rows : cols;
  const int64_t inner = row_major ? cols : rows;
  // Whole padded lines, so that a buffer sized from this can be read line by line with
  // the leading dimension even past the last logical element.
  const int64_t one_matrix = outer * std::max(layout.ld, inner);
  if (batch == 1) return one_matrix;
  return std::max(one_matrix, (batch - 1) * layout.batch_stride + one_matrix);
}

int64_t output_cols(const GemmDesc& desc) {
  return desc.epilogue.activation == Activation::kSwiGLU ? desc.n / 2 : desc.n;
}

void cpu_reference(const GemmDesc& desc, const void* a, const void* b, const void* c,
                   const void* bias, std::vector<double>& out, const float* scale_a, const float* scale_b) {
  out.clear();
  const bool swiglu = desc.epilogue.activation == Activation::kSwiGLU;
  if (desc.m < 0 || desc.n < 0 || desc.k < 0 || desc.batch < 0) return;
  if (swiglu && desc.n % (2 * kSwiGLUBlock) != 0) return;
  const int64_t n_out = output_cols(desc);
  const bool read_c = desc.beta != 0.0f;
  const bool work = desc.m > 0 && n_out > 0 && desc.batch > 0;
  // An empty result signals a request the reference cannot serve, as with bad sizes.
  if (work && desc.k > 0 && (a == nullptr || b == nullptr)) return;
  if (work && read_c && c == nullptr) return;
  if (work && desc.epilogue.bias != BiasMode::kNone && bias == nullptr) return;
  if (work && desc.k > 0 && desc.scales != ScaleMode::kNone && (scale_a == nullptr || scale_b == nullptr)) return;
  const int64_t k_blocks = (desc.k + 127) / 128;
  const auto scale_of_a = [&](int64_t i, int64_t kk) -> double {
    switch (desc.scales) {
      case ScaleMode::kTensor: return scale_a[0];
      case ScaleMode::kRowColumn: return scale_a[i];
      case ScaleMode::kBlock128: return scale_a[(kk / 128) * desc.m + i];
      default: return 1.0;
    }
  };
  const auto scale_of_b = [&](int64_t kk, int64_t j) -> double {
    switch (desc.scales) {
      case ScaleMode::kTensor: return scale_b[0];
      case ScaleMode::kRowColumn: return scale_b[j];
      case ScaleMode::kBlock128: return scale_b[(j / 128) * k_blocks + kk / 128];
      default: return 1.0;
    }
  };

  out.assign(size_t(desc.m * n_out * desc.batch), 0.0);
  if (!work) return;

  auto pre_activation = [&](int64_t batch, int64_t i, int64_t gemm_col) {
    double dot = 0.0;
    for (int64_t kk = 0; kk < desc.k; ++kk) {
      dot += load(a, desc.a.dtype, element_offset(desc.a, i, kk, batch)) * scale_of_a(i, kk) *
             load(b, desc.b.dtype, element_offset(desc.b, kk, gemm_col, batch)) * scale_of_b(kk, gemm_col);
    }
    double z = double(desc.alpha) * dot;
    if (desc.epilogue.bias == BiasMode::kPerColumn) z += load(bias, desc.epilogue.bias_dtype, gemm_col);
    if (desc.epilogue.bias == BiasMode::kPerRow) z += load(bias, desc.epilogue.bias_dtype, i);
    return z;
  };

  for (int64_t batch = 0; batch < desc.batch; ++batch) {
    for (int64_t i = 0; i < desc.m; ++i) {
      for (int64_t j = 0; j < n_out; ++j) {
        double value;
        if (swiglu) {
          value = silu(pre_activation(batch, i, swiglu_gate_column(j))) *
                  pre_activation(batch, i, swiglu_up_column(j));
        } else {
          value = activate(desc.epilogue.activation, pre_activation(batch, i, j));
        }
        if (read_c) value += double(desc.beta) * load(c, desc.c.dtype, element_offset(desc.c, i, j, batch));
        out[size_t((batch * desc.m + i) * n_out + j)] = value;
      }
    }
  }
}

// The element bound |D - ref| <= max_abs + max_rel * |ref| and the Frobenius bound are
// built from three sources of legitimate difference between a correct kernel and the
// fp32 reference (docs/verification.md has the derivation and the measurements):
//
//  * output rounding: u_out = 2^-8 (bf16), 2^-11 (fp16), 2^-24 (fp32) relative, allowed
//    twice because an epilogue may round once in between (e.g. act(z) before adding C);
//  * accumulation order: both sides sum K exact products in fp32, in different orders
//    and, on tensor cores, with truncating block additions. Simulating 4-product blocks
//    with round-toward-zero at K = 30000 gives a relative Frobenius difference of 1.1e-4
//    and a worst element of 5.7e-4 of the typical |z|; the budget eps_acc = 2^-24 (K + 64)
//    (1.8e-3 at K = 30000) keeps a margin of three or more over that at every K;
//  * transcendental functions: 2^-20 relative for fast exp/erf/tanh in the epilogue.
//
// max_abs scales those by T, the typical output magnitude for operands drawn by
// fill_random with scale 1 (|x| <= 1, variance 1/3): |z| ~ |alpha| sqrt(K) / 3 plus 1 for
// a bias, squared for SwiGLU, plus |beta| for C. It is what keeps elements near zero,
// whose relative error is unbounded, from failing on rounding alone.
Tolerance tolerance_for(const GemmDesc& desc) {
  const double u_out = unit_roundoff(desc.d.dtype);
  const double k = double(std::max<int64_t>(desc.k, 0));
  const Activation act = desc.epilogue.activation;
  const bool swiglu = act == Activation::kSwiGLU;
  const bool transcendental =
      act == Activation::kGeluErf || act == Activation::kGeluTanh || act == Activation::kSiLU || swiglu;

  // A gate/up product sees the accumulation error of both factors, each weighted by the
  // other's magnitude (up to about four typical magnitudes in the tails).
  const double propagation = swiglu ? 4.0 : 1.0;
  double eps_acc = 0x1p-24 * (k + 64.0) * propagation;
  const double eps_fn = transcendental ? 0x1p-20 * propagation : 0.0;
  // FP8 inputs (docs/fp8.md): the tensor cores add each k32 step's products into an
  // accumulator that keeps about 14 significant bits, truncating (2^-14 of its magnitude
  // per step, biased). Summed over a whole K in that accumulator (tensor, row/column or no
  // scales) the bound grows with the K/32 steps: 2^-12 of the typical magnitude per step,
  // four times the worst case; promoted to fp32 every 128-wide K block (block scales) it
  // stays at a few steps' worth whatever K is.
  const bool fp8 = desc.a.dtype == DataType::kE4M3 || desc.a.dtype == DataType::kE5M2;
  if (fp8) {
    eps_acc += desc.scales == ScaleMode::kBlock128 ? 0x1p-10 * propagation
                                                   : 0x1p-12 * (k / 32.0 + 8.0) * propagation;
  }
  // The test scales (fill_scales) lie in [0.5, 1.5]: a product of two up to 2.25.
  const double scale_product = fp8 && desc.scales != ScaleMode::kNone ? 2.25 : 1.0;

  const double z_scale = std::fabs(double(desc.alpha)) * scale_product * std::sqrt(k) / 3.0 +
                         (desc.epilogue.bias != BiasMode::kNone ? 1.0 : 0.0);
  const double typical = (swiglu ? z_scale * z_scale : z_scale) + std::fabs(double(desc.beta));

  Tolerance tol;
  tol.max_rel = 2.0 * u_out + eps_acc + eps_fn;
  tol.max_abs = typical * (u_out + eps_acc + eps_fn);
  tol.rel_frobenius = 2.0 * u_out + eps_acc + eps_fn;
  tol.frobenius_floor = typical / 16.0;
  if (desc.d.dtype == DataType::kF16) tol.overflow = 65520.0;        // 65504 + 2^4
  if (desc.d.dtype == DataType::kBF16) tol.overflow = 0x1.ffp127;   // (2 - 2^-7) 2^127 + 2^119
  return tol;
}

std::string describe(const Comparison& c) {
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "rel_frobenius %.3g, max_abs_err %.3g at %lld, nonfinite %lld, out_of_tolerance %lld of %lld",
                c.rel_frobenius, c.max_abs_err, static_cast<long long>(c.worst_index),
                static_cast<long long>(c.nonfinite), static_cast<long long>(c.out_of_tolerance),
                static_cast<long long>(c.count));
  return buf;
}

Comparison compare_host(const std::vector<double>& d, const std::vector<double>& ref,
                        const Tolerance& tol) {
  Comparison result;
  if (d.size() != ref.size()) {
    result.count = -1;
    result.passed = false;
    return result;
  }
  double sum_sq_diff = 0.0;
  double sum_sq_ref = 0.0;
  double worst_err = 0.0;
  int64_t worst_index = -1;
  const double inf = std::numeric_limits<double>::infinity();
  for (size_t t = 0; t < d.size(); ++t) {
    const int64_t index = int64_t(t);
    const double dv = d[t];
    const double rv = ref[t];
    const bool d_finite = std::isfinite(dv);
    const bool r_finite = std::isfinite(rv);
    if (!d_finite) {
      const bool alike = (!r_finite && ((std::isnan(dv) && std::isnan(rv)) || dv == rv)) ||
                         rounds_to_infinity(dv, rv, tol.overflow, tol.max_abs, tol.max_rel);
      if (!alike) {
        ++result.nonfinite;
        if (worse(inf, index, worst_err, worst_index)) worst_err = inf, worst_index = index;
      }
      continue;
    }
    if (!r_finite) {
      ++result.out_of_tolerance;
      if (worse(inf, index, worst_err, worst_index)) worst_err = inf, worst_index = index;
      continue;
    }
    const double diff = dv - rv;
    const double err = std::fabs(diff);
    sum_sq_diff += diff * diff;
    sum_sq_ref += rv * rv;
    if (err > tol.max_abs + tol.max_rel * std::fabs(rv)) ++result.out_of_tolerance;
    if (worse(err, index, worst_err, worst_index)) worst_err = err, worst_index = index;
  }
  result.count = int64_t(d.size());
  result.worst_index = worst_index;
  result.max_abs_err = worst_index >= 0 ? worst_err : 0.0;
  result.sum_sq_diff = sum_sq_diff;
  result.sum_sq_ref = sum_sq_ref;
  if (sum_sq_ref > 0.0) {
    result.rel_frobenius = std::sqrt(sum_sq_diff / sum_sq_ref);
  } else {
    result.rel_frobenius = sum_sq_diff == 0.0 ? 0.0 : inf;
  }
  result.passed = result.nonfinite == 0 && result.out_of_tolerance == 0 &&
                  within_frobenius(sum_sq_diff, sum_sq_ref, result.count, tol);
  return result;
}

}  // namespace anvil::verify
