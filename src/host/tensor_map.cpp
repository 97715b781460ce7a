#include "host/tensor_map.h"

#include <cuda_runtime.h>
#include <cudaTypedefs.h>

#include <mutex>

#include "host/registry.h"
#include "common/dtype.h"

namespace anvil::detail {
namespace {

PFN_cuTensorMapEncodeTiled_v12000 resolve_encoder(cudaError_t* error) {
  static PFN_cuTensorMapEncodeTiled_v12000 encoder = nullptr;
  static cudaError_t status = cudaSuccess;
  static std::once_flag once;
  std::call_once(once, [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    status = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found);
    if (status == cudaSuccess && found == cudaDriverEntryPointSuccess) {
      encoder = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
    } else if (status == cudaSuccess) {
      status = cudaErrorSymbolNotFound;
    }
  });
  *error = status;
  return encoder;
}

CUtensorMapDataType to_cu(DataType dtype) {
  switch (dtype) {
    case DataType::kBF16: return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    case DataType::kF16: return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    case DataType::kF32: return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    // TMA moves bytes: 8-bit floats travel as unsigned bytes.
    case DataType::kE4M3:
    case DataType::kE5M2: return CU_TENSOR_MAP_DATA_TYPE_UINT8;
  }
  return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
}

}  // namespace

Status encode_tensor_map(CUtensorMap* out, const TensorMapRequest& r, Diagnostic* diag) {
  cudaError_t error = cudaSuccess;
  auto encode = resolve_encoder(&error);
  if (encode == nullptr) {
    return fail(diag, Status::kCudaError, "cuTensorMapEncodeTiled unavailable: %s", cudaGetErrorName(error));
  }
  const uint64_t elem = dtype_size(r.dtype);
  const cuuint64_t dims[3] = {r.inner, r.outer, r.batches};
  const cuuint64_t strides[2] = {r.line_stride * elem, r.batch_stride * elem};  // bytes
  const cuuint32_t box[3] = {r.box_inner, r.box_outer, r.box_batches};
  const cuuint32_t unit[3] = {1, 1, 1};
  const cuuint32_t rank = r.batches > 1 ? 3 : 2;
  const CUresult result =
      encode(out, to_cu(r.dtype), rank, const_cast<void*>(r.base), dims, strides, box, unit,
             CU_TENSOR_MAP_INTERLEAVE_NONE, r.swizzle, r.l2_promotion,
             CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (result != CUDA_SUCCESS) {
    return fail(diag, Status::kInternalError,
                "cuTensorMapEncodeTiled failed (%d) for %llux%llu stride %llu box %ux%u", static_cast<int>(result),
                static_cast<unsigned long long>(r.inner), static_cast<unsigned long long>(r.outer),
                static_cast<unsigned long long>(r.line_stride), r.box_inner, r.box_outer);
  }
  return Status::kSuccess;
}

}  // namespace anvil::detail
