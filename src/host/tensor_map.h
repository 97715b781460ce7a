// Tensor maps (TMA descriptors) built on the host. The driver's encoder is reached
// through the runtime's entry-point query, so anvil never links libcuda and its binaries
// start on machines without a driver.
#pragma once

#include <cuda.h>  // CUtensorMap and enums only: no driver symbol is linked

#include <cstdint>

#include "anvil/gemm.h"

namespace anvil::detail {

// A 2-D view of a matrix stored with its contiguous dimension first: `inner` elements per
// line, `outer` lines, `line_stride` elements between lines. The box is what one TMA copy
// moves; out-of-range boxes are zero-filled on load and clipped on store.
struct TensorMapRequest {
  const void* base = nullptr;
  DataType dtype = DataType::kBF16;
  uint64_t inner = 0, outer = 0, line_stride = 0;
  uint32_t box_inner = 0, box_outer = 0;
  // Strided batch as a third dimension (batches > 1 only; batch_stride in elements).
  uint64_t batches = 1, batch_stride = 0;
  uint32_t box_batches = 1;  // batches one box spans
  CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_128B;
  // How much L2 fetches from DRAM around each miss.
  CUtensorMapL2promotion l2_promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_256B;
};

Status encode_tensor_map(CUtensorMap* out, const TensorMapRequest& request, Diagnostic* diag);

}  // namespace anvil::detail
