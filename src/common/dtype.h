// Bytes per element of an anvil dtype; shared by the library and the verification code.
#pragma once

#include <cstddef>

#include "anvil/gemm.h"

namespace anvil {

constexpr size_t dtype_size(DataType dtype) { return dtype == DataType::kF32 ? 4 : 2; }

}  // namespace anvil
