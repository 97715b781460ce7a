#include <cuda_runtime.h>

#include <cstdarg>
#include <cstdio>

#include "anvil/gemm.h"
#include "host/registry.h"

namespace anvil {

const char* to_string(Status status) {
  switch (status) {
    case Status::kSuccess: return "success";
    case Status::kInvalidArgument: return "invalid argument";
    case Status::kMisalignedOperand: return "misaligned operand";
    case Status::kNotSupported: return "not supported";
    case Status::kWorkspaceTooSmall: return "workspace too small";
    case Status::kArchMismatch: return "architecture mismatch";
    case Status::kCudaError: return "CUDA error";
    case Status::kInternalError: return "internal error";
    case Status::kDriverUnavailable: return "CUDA driver unavailable";
  }
  return "unknown status";
}

const char* to_string(DataType dtype) {
  switch (dtype) {
    case DataType::kBF16: return "bf16";
    case DataType::kF16: return "fp16";
    case DataType::kF32: return "fp32";
    case DataType::kE4M3: return "e4m3";
    case DataType::kE5M2: return "e5m2";
  }
  return "unknown dtype";
}

const char* to_string(ScaleMode scales) {
  switch (scales) {
    case ScaleMode::kNone: return "none";
    case ScaleMode::kTensor: return "tensor";
    case ScaleMode::kRowColumn: return "row-column";
    case ScaleMode::kBlock128: return "block128";
  }
  return "unknown scale mode";
}

namespace detail {

Status fail(Diagnostic* diag, Status status, const char* fmt, ...) {
  if (diag != nullptr) {
    diag->status = status;
    va_list args;
    va_start(args, fmt);
    std::vsnprintf(diag->message, sizeof(diag->message), fmt, args);
    va_end(args);
  }
  return status;
}

Status check_launch(Diagnostic* diag, const char* kernel_name) {
  const cudaError_t error = cudaGetLastError();
  if (error != cudaSuccess) {
    return fail(diag, Status::kCudaError, "%s: launch failed: %s (%s)", kernel_name, cudaGetErrorName(error),
                cudaGetErrorString(error));
  }
  return Status::kSuccess;
}

}  // namespace detail
}  // namespace anvil
