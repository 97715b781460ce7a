// cuBLASLt as the baseline anvil is measured against, set up for the same nn.Linear
// problem and the same buffers the anvil kernels use.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "anvil/gemm.h"

namespace bench {

class CublasLtGemm {
 public:
  static constexpr size_t kWorkspaceBytes = 32u << 20;

  // Creates the handle and workspace; exits with a message on failure.
  CublasLtGemm();
  ~CublasLtGemm();
  CublasLtGemm(const CublasLtGemm&) = delete;
  CublasLtGemm& operator=(const CublasLtGemm&) = delete;

  // Builds descriptors for Y[M,N] = X[M,K] W[N,K]^T in the given dtypes and asks the
  // heuristic for its first choice. Returns false (with why) when cuBLASLt offers no
  // algorithm, e.g. for a dtype combination it does not support. For e4m3 inputs `scales`
  // says how run()'s scale pointers are read (anvil's layouts, docs/fp8.md): per tensor
  // (with fast accumulation, as anvil's whole-K accumulator), outer vectors, or 1 x 128
  // blocks of X and 128 x 128 blocks of W.
  bool prepare(int64_t m, int64_t n, int64_t k, anvil::DataType in, anvil::DataType out,
               anvil::ScaleMode scales, std::string& why);

  // Enqueues one matmul on stream; scale_a (X's) and scale_b (W's) for e4m3 inputs.
  // Returns the cuBLAS status so the caller can tell a failure inside graph capture from
  // a real error.
  cublasStatus_t run(const void* a, const void* w, void* d, cudaStream_t stream,
                     const float* scale_a = nullptr, const float* scale_b = nullptr) const;

  // A short description of the chosen algorithm for the result rows.
  const std::string& algo_description() const { return algo_desc_; }

 private:
  void release_descriptors();

  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t w_layout_ = nullptr;
  cublasLtMatrixLayout_t a_layout_ = nullptr;
  cublasLtMatrixLayout_t d_layout_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  size_t algo_workspace_ = 0;
  anvil::ScaleMode scales_ = anvil::ScaleMode::kNone;
  std::string algo_desc_;
};

const char* cublas_status_text(cublasStatus_t s);

}  // namespace bench
