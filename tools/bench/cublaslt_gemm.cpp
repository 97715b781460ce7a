#include "cublaslt_gemm.h"

#include <cstdio>

#include "check.h"

namespace bench {

const char* cublas_status_text(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR:
      return "CUBLAS_STATUS_LICENSE_ERROR";
    default:
      return "unknown cuBLAS status";
  }
}

#define BENCH_CUBLAS(expr)                                                \
  do {                                                                    \
    cublasStatus_t bench_status_ = (expr);                                \
    if (bench_status_ != CUBLAS_STATUS_SUCCESS)                           \
      ::bench::fatal("%s failed at %s:%d: %s", #expr, __FILE__, __LINE__, \
                     cublas_status_text(bench_status_));                  \
  } while (0)

namespace {
cudaDataType_t to_cuda(anvil::DataType t) {
  switch (t) {
    case anvil::DataType::kBF16:
      return CUDA_R_16BF;
    case anvil::DataType::kF16:
      return CUDA_R_16F;
    case anvil::DataType::kF32:
      return CUDA_R_32F;
    case anvil::DataType::kE4M3:
      return CUDA_R_8F_E4M3;
    case anvil::DataType::kE5M2:
      return CUDA_R_8F_E5M2;
  }
  return CUDA_R_32F;
}
}  // namespace

CublasLtGemm::CublasLtGemm() {
  BENCH_CUBLAS(cublasLtCreate(&handle_));
  BENCH_CUDA(cudaMalloc(&workspace_, kWorkspaceBytes));
}

CublasLtGemm::~CublasLtGemm() {
  release_descriptors();
  // Teardown errors are ignored: the process is ending and the results are written.
  if (workspace_) (void)cudaFree(workspace_);
  if (handle_) (void)cublasLtDestroy(handle_);
}

void CublasLtGemm::release_descriptors() {
  if (op_) cublasLtMatmulDescDestroy(op_);
  if (w_layout_) cublasLtMatrixLayoutDestroy(w_layout_);
  if (a_layout_) cublasLtMatrixLayoutDestroy(a_layout_);
  if (d_layout_) cublasLtMatrixLayoutDestroy(d_layout_);
  op_ = nullptr;
  w_layout_ = a_layout_ = d_layout_ = nullptr;
  algo_desc_.clear();
}

bool CublasLtGemm::prepare(int64_t m, int64_t n, int64_t k, anvil::DataType in, anvil::DataType out,
                           anvil::ScaleMode scales, std::string& why) {
  release_descriptors();
  scales_ = in == anvil::DataType::kE4M3 ? scales : anvil::ScaleMode::kNone;
  // cuBLASLt is column-major. Row-major D[M,N] is column-major D^T[N,M], and
  // D^T = W[N,K] A[M,K]^T; row-major W[N,K] read column-major is W^T (K x N, ld K), so
  // op(W) = T, and row-major A[M,K] read column-major is already A^T (K x M, ld K).
  BENCH_CUBLAS(cublasLtMatmulDescCreate(&op_, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t trans_w = CUBLAS_OP_T, trans_a = CUBLAS_OP_N;
  BENCH_CUBLAS(
      cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &trans_w, sizeof(trans_w)));
  BENCH_CUBLAS(
      cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSB, &trans_a, sizeof(trans_a)));
  if (scales_ != anvil::ScaleMode::kNone) {
    // cuBLASLt's A is W and its B is X (the swap above): W's scales go to A, X's to B.
    int32_t mode_w = CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F, mode_x = CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
    if (scales_ == anvil::ScaleMode::kRowColumn) {
      mode_w = mode_x = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
    } else if (scales_ == anvil::ScaleMode::kBlock128) {
      mode_w = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
      mode_x = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
    }
    if (cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &mode_w, sizeof(mode_w)) !=
            CUBLAS_STATUS_SUCCESS ||
        cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mode_x, sizeof(mode_x)) !=
            CUBLAS_STATUS_SUCCESS) {
      why = "this cuBLASLt has no scale mode for these scales";
      return false;
    }
    // Per tensor and per row/column, anvil keeps the whole K in the tensor cores'
    // accumulator; cuBLASLt's fast-accumulation mode is the same arithmetic.
    const int8_t fast = scales_ == anvil::ScaleMode::kBlock128 ? 0 : 1;
    BENCH_CUBLAS(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof(fast)));
    // The heuristic must see scale pointers of the right kind; run() sets the real ones.
    const void* placeholder = workspace_;
    BENCH_CUBLAS(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &placeholder,
                                                sizeof(placeholder)));
    BENCH_CUBLAS(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &placeholder,
                                                sizeof(placeholder)));
  }
  BENCH_CUBLAS(cublasLtMatrixLayoutCreate(&w_layout_, to_cuda(in), static_cast<uint64_t>(k),
                                          static_cast<uint64_t>(n), k));
  BENCH_CUBLAS(cublasLtMatrixLayoutCreate(&a_layout_, to_cuda(in), static_cast<uint64_t>(k),
                                          static_cast<uint64_t>(m), k));
  BENCH_CUBLAS(cublasLtMatrixLayoutCreate(&d_layout_, to_cuda(out), static_cast<uint64_t>(n),
                                          static_cast<uint64_t>(m), n));

  cublasLtMatmulPreference_t pref = nullptr;
  BENCH_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
  size_t ws = kWorkspaceBytes;
  BENCH_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                    &ws, sizeof(ws)));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(handle_, op_, w_layout_, a_layout_, d_layout_,
                                                     d_layout_, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (st == CUBLAS_STATUS_NOT_SUPPORTED || (st == CUBLAS_STATUS_SUCCESS && found == 0)) {
    why = "cuBLASLt heuristic offers no algorithm for this problem and dtype combination";
    return false;
  }
  BENCH_CUBLAS(st);
  algo_ = result.algo;
  algo_workspace_ = result.workspaceSize;

  // Reading the chosen configuration back is only for the record; failures are harmless.
  int algo_id = -1, tile = -1, stages = -1, split_k = -1;
  size_t written = 0;
  cublasLtMatmulAlgoConfigGetAttribute(&algo_, CUBLASLT_ALGO_CONFIG_ID, &algo_id, sizeof(algo_id),
                                       &written);
  cublasLtMatmulAlgoConfigGetAttribute(&algo_, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof(tile),
                                       &written);
  cublasLtMatmulAlgoConfigGetAttribute(&algo_, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages,
                                       sizeof(stages), &written);
  cublasLtMatmulAlgoConfigGetAttribute(&algo_, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &split_k,
                                       sizeof(split_k), &written);
  char buf[160];
  std::snprintf(buf, sizeof(buf), "cublasLt algo %d tile %d stages %d splitK %d workspace %zu",
                algo_id, tile, stages, split_k, algo_workspace_);
  algo_desc_ = buf;
  return true;
}

cublasStatus_t CublasLtGemm::run(const void* a, const void* w, void* d, cudaStream_t stream, const float* scale_a,
                                 const float* scale_b) const {
  const float alpha = 1.0f, beta = 0.0f;
  if (scales_ != anvil::ScaleMode::kNone) {
    cublasStatus_t st = cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scale_b,
                                                       sizeof(scale_b));
    if (st == CUBLAS_STATUS_SUCCESS) {
      st = cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &scale_a, sizeof(scale_a));
    }
    if (st != CUBLAS_STATUS_SUCCESS) return st;
  }
  return cublasLtMatmul(handle_, op_, &alpha, w, w_layout_, a, a_layout_, &beta, d, d_layout_, d,
                        d_layout_, &algo_, workspace_, kWorkspaceBytes, stream);
}

}  // namespace bench
