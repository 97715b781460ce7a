// Bytes per element of an anvil dtype; shared by the library and the verification code.
#pragma once

#include <cstddef>

#include "anvil/gemm.h"

namespace anvil {

constexpr size_t dtype_size(DataType dtype) {
  return dtype == DataType::kF32 ? 4 : dtype == DataType::kE4M3 || dtype == DataType::kE5M2 ? 1 : 2;
}

constexpr bool is_fp8(DataType dtype) { return dtype == DataType::kE4M3 || dtype == DataType::kE5M2; }

}  // namespace anvil
