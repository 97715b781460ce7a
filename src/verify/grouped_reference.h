// The grouped GEMM's reference and comparison: each expert as the plain GEMM it is
// (anvil/grouped.h), checked by the verify library's reference GEMM and comparison. The
// routing is given on the host here (the tests and the benchmark make it there).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "anvil/grouped.h"
#include "verify/verify.h"

namespace anvil::verify {

// Expert e's rows: [first, first + rows) of A and D (masked: first = e * max_rows).
struct ExpertRows {
  int64_t first = 0, rows = 0;
};
// From offsets (E + 1, or E ends) or counts (E) as the kernel reads them; bounds must be valid.
std::vector<ExpertRows> expert_rows(const GroupedGemmDesc& desc, const std::vector<int64_t>& bounds);

// Expert e's problem as a GemmDesc / GemmArgs on the same buffers; FP8 scales point into
// the grouped arrays (scale_a at the expert's first row, scale_b at its block).
GemmDesc expert_desc(const GroupedGemmDesc& desc, int64_t rows);
GemmArgs expert_args(const GroupedGemmDesc& desc, const GroupedGemmArgs& args, int64_t expert, const ExpertRows& r,
                     void* d);

// Writes every expert's rows of the fp32 reference into ref ([storage rows, N_out]
// row-major: rows of A, or E x max_rows); rows no expert owns are left as they are.
cudaError_t reference_grouped(const GroupedGemmDesc& desc, const GroupedGemmArgs& args,
                              const std::vector<int64_t>& bounds, float* ref, cudaStream_t stream);

struct GroupedComparison {
  Comparison worst;         // the expert with the largest relative error (or a failing one)
  int64_t worst_expert = -1;
  double rel_frobenius = 0;  // over every expert's rows together
  bool passed = true;
};
// Compares every non-empty expert's rows of D with the reference at the dtype's tolerance:
// each element within the element bound, the output as a whole within the Frobenius bound.
GroupedComparison compare_grouped(const GroupedGemmDesc& desc, const void* d, const float* ref,
                                  const std::vector<int64_t>& bounds, cudaStream_t stream);
std::string describe(const GroupedComparison& c);

}  // namespace anvil::verify
