// Random grouped GEMM problems (anvil/grouped.h) for anvil-fuzz --grouped and the GPU
// tier, and their judge. Problem i depends only on (seed, i).
//
// Every problem is valid: both layouts; 1 to 300 experts; rows per expert leaning to 0, 1,
// tile edges +-1 and a few hundred; segments at any row, with rows before the first and
// after the last that no expert owns; N from 1, K a multiple of 8; bf16/fp16 inputs, every
// output dtype, every activation (SwiGLU on widths of 128), bias, alpha, int32 and int64
// bounds, and a planning hint that reaches every tile configuration; about a third e4m3
// (K a multiple of 16) with no, per-tensor or row/column scales; contiguous problems whose
// first expert starts at row 0 often pass torch's E row ends (offsets_are_ends).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "anvil/grouped.h"
#include "verify/fuzz_runner.h"

namespace anvil::verify {

struct GroupedFuzzProblem {
  uint64_t seed = 0;
  int64_t index = 0;
  GroupedGemmDesc desc;
  std::vector<int64_t> rows;  // per expert
  int64_t lead = 0;           // contiguous: rows before offsets[0] (rows after offsets[E]: desc.rows - the rest)
  int64_t scale_a_offset = 0; // floats between scale_a's allocation and the array (block scales: 0-3)
  uint64_t data_seed = 0;
};

// small: the GPU tier's sizes (fewer experts and rows, K up to 512).
GroupedFuzzProblem make_grouped_fuzz_problem(uint64_t seed, int64_t index, bool small);
std::string describe(const GroupedFuzzProblem& problem);
// The bounds the kernel reads: E + 1 offsets (contiguous; E ends with offsets_are_ends) or
// E counts (masked).
std::vector<int64_t> grouped_bounds(const GroupedFuzzProblem& problem);

// Runs one problem on `stream`: random inputs, D (with guard rows after it) poisoned,
// grouped_gemm, then every expert against the reference, every row no expert owns and
// the guard rows against the poison, and the error word against 0.
FuzzOutcome run_grouped_fuzz_problem(const GroupedFuzzProblem& problem, cudaStream_t stream);

}  // namespace anvil::verify
