// Host helpers shared by the CPU and GPU test tiers: bf16/fp16 bit conversions written
// independently of the library's own, and packing of logical matrices into the storage
// a MatrixLayout describes.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <vector>

#include "anvil/gemm.h"
#include "verify/verify.h"

namespace anvil_test {

inline uint16_t to_bf16_bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FC0;
  bits += 0x7FFFu + ((bits >> 16) & 1u);  // round to nearest, ties to even
  return uint16_t(bits >> 16);
}

inline double from_bf16_bits(uint16_t bits) {
  const uint32_t widened = uint32_t(bits) << 16;
  float value;
  std::memcpy(&value, &widened, sizeof(value));
  return value;
}

inline uint16_t to_f16_bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  const uint16_t sign = uint16_t((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u) return uint16_t(sign | 0x7E00u);
  if (magnitude >= 0x477FF000u) return uint16_t(sign | 0x7C00u);  // >= 65520 rounds to inf
  if (magnitude < 0x38800000u) {                                  // below 2^-14: subnormal
    float abs_value;
    std::memcpy(&abs_value, &magnitude, sizeof(abs_value));
    return uint16_t(sign | uint16_t(std::nearbyint(double(abs_value) * 0x1p24)));
  }
  const uint32_t exponent = (magnitude >> 23) - 127 + 15;
  const uint32_t mantissa = magnitude & 0x7FFFFFu;
  uint32_t half = (exponent << 10) | (mantissa >> 13);
  const uint32_t rest = mantissa & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;
  return uint16_t(sign | half);
}

inline double from_f16_bits(uint16_t bits) {
  const int exponent = (bits >> 10) & 0x1F;
  const int mantissa = bits & 0x3FF;
  double magnitude;
  if (exponent == 0) {
    magnitude = std::ldexp(double(mantissa), -24);
  } else if (exponent == 0x1F) {
    magnitude = mantissa ? std::numeric_limits<double>::quiet_NaN()
                         : std::numeric_limits<double>::infinity();
  } else {
    magnitude = std::ldexp(double(mantissa | 0x400), exponent - 25);
  }
  return (bits & 0x8000u) ? -magnitude : magnitude;
}

// Rounds to the dtype and back, as storing a value in that dtype would.
inline double round_to(anvil::DataType dtype, double value) {
  switch (dtype) {
    case anvil::DataType::kBF16: return from_bf16_bits(to_bf16_bits(float(value)));
    case anvil::DataType::kF16: return from_f16_bits(to_f16_bits(float(value)));
    case anvil::DataType::kF32: return float(value);
    default: return value;  // 8-bit floats are input-only; tests build them with anvil::verify
  }
  return value;
}

inline void store_element(std::vector<unsigned char>& bytes, anvil::DataType dtype, int64_t index,
                          double value) {
  switch (dtype) {
    case anvil::DataType::kBF16: {
      const uint16_t bits = to_bf16_bits(float(value));
      std::memcpy(bytes.data() + index * 2, &bits, 2);
      break;
    }
    case anvil::DataType::kF16: {
      const uint16_t bits = to_f16_bits(float(value));
      std::memcpy(bytes.data() + index * 2, &bits, 2);
      break;
    }
    case anvil::DataType::kF32: {
      const float f = float(value);
      std::memcpy(bytes.data() + index * 4, &f, 4);
      break;
    }
    default: break;  // 8-bit floats are input-only: nothing here writes them
  }
}

inline double load_element(const std::vector<unsigned char>& bytes, anvil::DataType dtype,
                           int64_t index) {
  switch (dtype) {
    case anvil::DataType::kBF16: {
      uint16_t bits;
      std::memcpy(&bits, bytes.data() + index * 2, 2);
      return from_bf16_bits(bits);
    }
    case anvil::DataType::kF16: {
      uint16_t bits;
      std::memcpy(&bits, bytes.data() + index * 2, 2);
      return from_f16_bits(bits);
    }
    case anvil::DataType::kF32: {
      float f;
      std::memcpy(&f, bytes.data() + index * 4, 4);
      return f;
    }
    case anvil::DataType::kE4M3: return anvil::verify::decode_e4m3(bytes[size_t(index)]);
    case anvil::DataType::kE5M2: return anvil::verify::decode_e5m2(bytes[size_t(index)]);
  }
  return 0.0;
}

inline int64_t offset_of(const anvil::MatrixLayout& layout, int64_t row, int64_t col, int64_t batch) {
  return batch * layout.batch_stride +
         (layout.order == anvil::Order::kRowMajor ? row * layout.ld + col : col * layout.ld + row);
}

// Storage for a rows x cols (x batch) matrix in `layout`, element (b, i, j) = value(b, i, j).
// Padding is filled with a NaN so that a reader that strays off the logical matrix shows.
inline std::vector<unsigned char> pack(const anvil::MatrixLayout& layout, int64_t rows, int64_t cols,
                                       int64_t batch,
                                       const std::function<double(int64_t, int64_t, int64_t)>& value) {
  const int64_t count = anvil::verify::storage_elements(layout, rows, cols, batch);
  std::vector<unsigned char> bytes(size_t(count) * anvil::verify::dtype_bytes(layout.dtype), 0xFF);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        store_element(bytes, layout.dtype, offset_of(layout, i, j, b), value(b, i, j));
  return bytes;
}

// The logical output (batch-major, row-major) read back out of D's storage.
inline std::vector<double> unpack(const anvil::MatrixLayout& layout, int64_t rows, int64_t cols,
                                  int64_t batch, const std::vector<unsigned char>& bytes) {
  std::vector<double> out(size_t(rows * cols * batch));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        out[size_t((b * rows + i) * cols + j)] = load_element(bytes, layout.dtype, offset_of(layout, i, j, b));
  return out;
}

inline anvil::MatrixLayout layout(anvil::DataType dtype, anvil::Order order, int64_t ld,
                                  int64_t batch_stride = 0) {
  anvil::MatrixLayout l;
  l.dtype = dtype;
  l.order = order;
  l.ld = ld;
  l.batch_stride = batch_stride;
  return l;
}

// Leading dimension of a rows x cols matrix in `order` with `pad` extra elements per line.
inline int64_t packed_ld(anvil::Order order, int64_t rows, int64_t cols, int64_t pad = 0) {
  return (order == anvil::Order::kRowMajor ? cols : rows) + pad;
}

// A rows x cols operand in `order`, every line padded by `pad` elements, batches spaced by
// the matrix plus `batch_gap` elements (batch stride 0 for a single matrix).
inline anvil::MatrixLayout padded_layout(anvil::DataType dtype, anvil::Order order, int64_t rows, int64_t cols,
                                         int64_t pad, int64_t batch, int64_t batch_gap) {
  const int64_t ld = packed_ld(order, rows, cols, pad);
  const int64_t lines = order == anvil::Order::kRowMajor ? rows : cols;
  return layout(dtype, order, ld, batch > 1 ? lines * ld + batch_gap : 0);
}

inline double rms(const std::vector<double>& values) {
  double sum = 0.0;
  for (double v : values) sum += v * v;
  return values.empty() ? 0.0 : std::sqrt(sum / double(values.size()));
}

}  // namespace anvil_test
