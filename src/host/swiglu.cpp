#include "anvil/swiglu.h"

#include <cuda_runtime.h>

#include "common/dtype.h"
#include "host/registry.h"

namespace anvil {

Status build_swiglu_weight(const void* w_gate, const void* w_up, void* w_fused, int64_t f, int64_t k, DataType dtype,
                           cudaStream_t stream, Diagnostic* diag) {
  if (w_gate == nullptr || w_up == nullptr || w_fused == nullptr) {
    return detail::fail(diag, Status::kInvalidArgument, "build_swiglu_weight: null pointer");
  }
  if (f <= 0 || k <= 0 || f % kSwiGLUBlock != 0) {
    return detail::fail(diag, Status::kInvalidArgument, "build_swiglu_weight: F (%lld) must be a positive multiple of %lld",
                        static_cast<long long>(f), static_cast<long long>(kSwiGLUBlock));
  }
  if (dtype != DataType::kBF16 && dtype != DataType::kF16) {
    return detail::fail(diag, Status::kNotSupported, "build_swiglu_weight: weights must be bf16 or fp16");
  }
  // Each 64-row block of a source weight is one contiguous run; the fused weight takes
  // them alternately, so two strided 2-D copies (gate blocks, then up blocks) suffice.
  const size_t block_bytes = static_cast<size_t>(kSwiGLUBlock * k) * dtype_size(dtype);
  const size_t blocks = static_cast<size_t>(f / kSwiGLUBlock);
  auto* fused = static_cast<char*>(w_fused);
  cudaError_t e = cudaMemcpy2DAsync(fused, 2 * block_bytes, w_gate, block_bytes, block_bytes, blocks,
                                    cudaMemcpyDeviceToDevice, stream);
  if (e == cudaSuccess) {
    e = cudaMemcpy2DAsync(fused + block_bytes, 2 * block_bytes, w_up, block_bytes, block_bytes, blocks,
                          cudaMemcpyDeviceToDevice, stream);
  }
  if (e != cudaSuccess) {
    return detail::fail(diag, Status::kCudaError, "build_swiglu_weight: %s", cudaGetErrorName(e));
  }
  return Status::kSuccess;
}

}  // namespace anvil
