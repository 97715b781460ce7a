// What every kernel's epilogue needs to finish an output element, flattened from the
// public GemmDesc / GemmArgs on the host so kernels take one small struct by value.
#pragma once

#include <cstdint>

#include "anvil/gemm.h"

namespace anvil::detail {

// Element (batch b, row i, col j) lives at ptr + b * batch_stride + i * row_stride + j * col_stride.
struct MatrixRef {
  const void* ptr = nullptr;
  DataType dtype = DataType::kBF16;
  int64_t row_stride = 0, col_stride = 0, batch_stride = 0;
};

struct EpilogueParams {
  float alpha = 1.0f, beta = 0.0f;
  Activation activation = Activation::kIdentity;
  BiasMode bias_mode = BiasMode::kNone;
  DataType bias_dtype = DataType::kF32;
  const void* bias = nullptr;
  MatrixRef c;  // read only when beta != 0
  MatrixRef d;
  int64_t m = 0, n_out = 0;  // output extent (n_out = n/2 for SwiGLU)
  // D is row-major with rows, batches and base aligned to four elements: four neighbouring
  // outputs of a row can go out as one 8- or 16-byte store.
  bool four_wide = false;
  // D is row-major, and nothing but alpha, a column bias and the activation stands between
  // the accumulator and D (no C, no per-row bias): the staged epilogue's short path, with
  // one vector store per four outputs when four_wide, else one store per output.
  bool row_major_simple = false;
};

inline MatrixRef matrix_ref(const void* ptr, const MatrixLayout& layout) {
  MatrixRef r;
  r.ptr = ptr;
  r.dtype = layout.dtype;
  r.row_stride = layout.order == Order::kRowMajor ? layout.ld : 1;
  r.col_stride = layout.order == Order::kRowMajor ? 1 : layout.ld;
  r.batch_stride = layout.batch_stride;
  return r;
}

// D = A B exactly: nothing for an epilogue to compute.
inline bool plain_epilogue(const GemmDesc& desc) {
  return desc.alpha == 1.0f && desc.beta == 0.0f && desc.epilogue.bias == BiasMode::kNone &&
         desc.epilogue.activation == Activation::kIdentity;
}

inline EpilogueParams make_epilogue_params(const GemmDesc& desc, const GemmArgs& args) {
  EpilogueParams p;
  p.alpha = desc.alpha;
  p.beta = desc.beta;
  p.activation = desc.epilogue.activation;
  p.bias_mode = desc.epilogue.bias;
  p.bias_dtype = desc.epilogue.bias_dtype;
  p.bias = args.bias;
  p.c = matrix_ref(args.c, desc.c);
  p.d = matrix_ref(args.d, desc.d);
  p.m = desc.m;
  p.n_out = desc.epilogue.activation == Activation::kSwiGLU ? desc.n / 2 : desc.n;
  const uintptr_t out_bytes = desc.d.dtype == DataType::kF32 ? 4 : 2;
  p.four_wide = desc.d.order == Order::kRowMajor && desc.d.ld % 4 == 0 &&
                (desc.batch == 1 || desc.d.batch_stride % 4 == 0) &&
                reinterpret_cast<uintptr_t>(args.d) % (4 * out_bytes) == 0;
  p.row_major_simple = desc.d.order == Order::kRowMajor && p.beta == 0.0f && p.bias_mode != BiasMode::kPerRow;
  return p;
}

}  // namespace anvil::detail
