// The grouped GEMM's reference, expert by expert (grouped_reference.h).
#include "verify/grouped_reference.h"

#include <cmath>
#include <cstdio>

namespace anvil::verify {
namespace {

int64_t out_cols(const GroupedGemmDesc& d) {
  return d.epilogue.activation == Activation::kSwiGLU ? d.n / 2 : d.n;
}

const void* advance(const void* p, int64_t elements, DataType dtype) {
  return p == nullptr ? p : static_cast<const unsigned char*>(p) + elements * static_cast<int64_t>(dtype_bytes(dtype));
}

}  // namespace

std::vector<ExpertRows> expert_rows(const GroupedGemmDesc& desc, const std::vector<int64_t>& bounds) {
  std::vector<ExpertRows> out(static_cast<size_t>(desc.experts));
  for (int64_t e = 0; e < desc.experts; ++e) {
    if (desc.layout == GroupedLayout::kMasked) {
      out[e] = {e * desc.rows, bounds[e]};
    } else if (desc.offsets_are_ends) {
      const int64_t begin = e == 0 ? 0 : bounds[e - 1];
      out[e] = {begin, bounds[e] - begin};
    } else {
      out[e] = {bounds[e], bounds[e + 1] - bounds[e]};
    }
  }
  return out;
}

GemmDesc expert_desc(const GroupedGemmDesc& desc, int64_t rows) {
  GemmDesc g;
  g.m = rows;
  g.n = desc.n;
  g.k = desc.k;
  g.a = MatrixLayout{desc.input, Order::kRowMajor, desc.k, 0};
  g.b = MatrixLayout{desc.input, Order::kColMajor, desc.k, 0};
  g.c = MatrixLayout{desc.output, Order::kRowMajor, out_cols(desc), 0};
  g.d = MatrixLayout{desc.output, Order::kRowMajor, out_cols(desc), 0};
  g.alpha = desc.alpha;
  g.epilogue = desc.epilogue;
  g.scales = desc.scales;
  return g;
}

GemmArgs expert_args(const GroupedGemmDesc& desc, const GroupedGemmArgs& args, int64_t expert, const ExpertRows& r,
                     void* d) {
  GemmArgs g;
  g.a = advance(args.a, r.first * desc.k, desc.input);
  g.b = advance(args.w, expert * desc.n * desc.k, desc.input);
  g.d = const_cast<void*>(advance(d, r.first * out_cols(desc), desc.output));
  g.bias = advance(args.bias, expert * desc.n, desc.epilogue.bias_dtype);
  g.stream = args.stream;
  // The expert's scales as a dense GEMM's: A's rows from the expert's first storage row
  // (kRowColumn; kBlock128's are strided by the storage rows, which a dense GEMM's are not:
  // reference_grouped gathers them), B's from the expert's block (or the one shared block).
  const bool row_column = desc.scales == ScaleMode::kRowColumn;
  const int64_t b_floats = desc.scales == ScaleMode::kBlock128 ? (desc.n + 127) / 128 * ((desc.k + 127) / 128)
                           : row_column                        ? desc.n
                                                               : 1;
  if (desc.scales != ScaleMode::kNone && args.scale_a != nullptr) {
    g.scale_a = args.scale_a + (desc.scales != ScaleMode::kTensor ? r.first : 0);
    g.scale_b = args.scale_b + (desc.scale_b_per_expert ? expert * b_floats : 0);
  }
  return g;
}

cudaError_t reference_grouped(const GroupedGemmDesc& desc, const GroupedGemmArgs& args,
                              const std::vector<int64_t>& bounds, float* ref, cudaStream_t stream) {
  const std::vector<ExpertRows> rows = expert_rows(desc, bounds);
  // Block scales: each expert's [k_blocks, rows_e] block of A's scales, gathered from the
  // grouped [k_blocks, storage rows] array into `gathered`, as a dense GEMM reads them.
  const bool block = desc.scales == ScaleMode::kBlock128 && args.scale_a != nullptr;
  const int64_t k_blocks = (desc.k + 127) / 128;
  const int64_t storage_rows = desc.layout == GroupedLayout::kMasked ? desc.experts * desc.rows : desc.rows;
  float* gathered = nullptr;
  if (block) {
    int64_t most = 1;
    for (const ExpertRows& r : rows) most = r.rows > most ? r.rows : most;
    const cudaError_t err = cudaMallocAsync(reinterpret_cast<void**>(&gathered), static_cast<size_t>(k_blocks * most) * sizeof(float), stream);
    if (err != cudaSuccess) return err;
  }
  cudaError_t err = cudaSuccess;
  for (int64_t e = 0; e < desc.experts && err == cudaSuccess; ++e) {
    if (rows[e].rows <= 0) continue;
    const GemmDesc g = expert_desc(desc, rows[e].rows);
    GemmArgs a = expert_args(desc, args, e, rows[e], nullptr);
    a.d = nullptr;
    if (block) {
      const size_t row_bytes = static_cast<size_t>(rows[e].rows) * sizeof(float);
      err = cudaMemcpy2DAsync(gathered, row_bytes, a.scale_a, static_cast<size_t>(storage_rows) * sizeof(float), row_bytes,
                              static_cast<size_t>(k_blocks), cudaMemcpyDeviceToDevice, stream);
      a.scale_a = gathered;
    }
    if (err == cudaSuccess) err = reference_gemm(g, a, ref + rows[e].first * out_cols(desc), stream);
  }
  if (gathered != nullptr) {
    const cudaError_t freed = cudaFreeAsync(gathered, stream);
    if (err == cudaSuccess) err = freed;
  }
  return err;
}

// Every element is held to the element bound expert by expert; the Frobenius bound applies
// to the output as a whole, as for a dense GEMM. Per expert it would be ill-conditioned: an
// expert of one row and one column whose sum cancels to nearly zero (or a GELU tail that
// flushes to zero) has a relative error near 1 with every element within its bound.
GroupedComparison compare_grouped(const GroupedGemmDesc& desc, const void* d, const float* ref,
                                  const std::vector<int64_t>& bounds, cudaStream_t stream) {
  GroupedComparison out;
  const std::vector<ExpertRows> rows = expert_rows(desc, bounds);
  GroupedGemmArgs none;
  double sum_sq_diff = 0, sum_sq_ref = 0;
  Tolerance frobenius_tol{};  // the same for every expert: one dtype, one K
  int64_t count = 0;
  bool elements_ok = true;
  for (int64_t e = 0; e < desc.experts; ++e) {
    if (rows[e].rows <= 0) continue;
    const GemmDesc g = expert_desc(desc, rows[e].rows);
    const GemmArgs a = expert_args(desc, none, e, rows[e], const_cast<void*>(d));
    const Tolerance tol = tolerance_for(g);
    frobenius_tol = tol;
    const Comparison c = compare(g, a.d, ref + rows[e].first * out_cols(desc), tol, stream);
    const bool expert_ok = c.count >= 0 && c.nonfinite == 0 && c.out_of_tolerance == 0;
    sum_sq_diff += c.sum_sq_diff;
    sum_sq_ref += c.sum_sq_ref;
    count += c.count > 0 ? c.count : 0;
    const bool worse = out.worst_expert < 0 || (!expert_ok && elements_ok) ||
                       (expert_ok == elements_ok && c.rel_frobenius > out.worst.rel_frobenius);
    if (worse) {
      out.worst = c;
      out.worst_expert = e;
    }
    elements_ok = elements_ok && expert_ok;
  }
  out.rel_frobenius = sum_sq_ref > 0 ? std::sqrt(sum_sq_diff / sum_sq_ref) : (sum_sq_diff == 0 ? 0.0 : INFINITY);
  out.passed = elements_ok && within_frobenius(sum_sq_diff, sum_sq_ref, count, frobenius_tol);
  return out;
}

std::string describe(const GroupedComparison& c) {
  char head[96];
  std::snprintf(head, sizeof(head), "rel_frobenius %.3g over all experts; worst expert %lld: ", c.rel_frobenius,
                static_cast<long long>(c.worst_expert));
  return std::string(head) + (c.worst_expert >= 0 ? describe(c.worst) : std::string("no expert had rows"));
}

}  // namespace anvil::verify
