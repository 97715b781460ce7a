// Random GEMM problems for the fuzzer (tools/fuzz) and the GPU tier's fixed-seed subset.
// Problem i of a run depends only on (seed, i), so any failure is reproduced on its own
// with `anvil-fuzz --seed S --only i`.
//
// Every problem is valid: the dispatcher must accept it. Sizes lean towards the cases
// kernels get wrong (1, primes, tile edges +-1), with a few large ones; layouts, dtypes,
// epilogues, padding, base offsets, alpha/beta, C aliasing D and strided or broadcast
// batches are all drawn independently.
#pragma once

#include <cstdint>
#include <string>

#include "anvil/gemm.h"

namespace anvil::verify {

struct FuzzLimits {
  int64_t max_extent;       // largest M, N or K of a "large" problem
  int64_t max_small_extent; // largest of the others
  int large_percent;        // share of problems drawn up to max_extent
  int64_t max_macs;         // M * N * K * batch cap of the others ...
  int64_t max_large_macs;   // ... and of the large ones
  int64_t max_batch;
};

// anvil-fuzz's defaults: 2000 problems run in about a minute on an H200 (the fp32 reference
// GEMM dominates; see tools/fuzz/main.cpp).
FuzzLimits default_fuzz_limits();
// Small sizes only, for the GPU test tier.
FuzzLimits small_fuzz_limits();

struct FuzzProblem {
  uint64_t seed = 0;
  int64_t index = 0;
  GemmDesc desc;  // desc.kernel is left null: the caller picks the kernel
  // Elements between each buffer's aligned allocation and the operand's base pointer.
  int64_t a_offset = 0, b_offset = 0, c_offset = 0, d_offset = 0, bias_offset = 0;
  // FP8 block scales: floats between scale_a's allocation and the array (0-3: the scale
  // map starts at the 16-byte boundary below it).
  int64_t scale_a_offset = 0;
  bool c_is_d = false;   // args.c == args.d (beta != 0): the in-place residual add
  bool unread_c = false; // beta == 0 but a NaN-filled C is passed: it must not be read
  uint64_t data_seed = 0;
};

// Every seventh problem (index 5 mod 7), where the limits allow large problems of 2048
// columns, takes the shapes sm90-gemm may run transposed instead: one matrix of 129-1100
// tokens on a weight of 2048-6144 rows, K of 64-1024, K-major operands and a plain
// epilogue into a 16-bit row-major D (the column TMA store of D^T).
FuzzProblem make_fuzz_problem(uint64_t seed, int64_t index, const FuzzLimits& limits);

// The same draw made an FP8 problem that sm90-fp8 must take (docs/fp8.md): e4m3 x e4m3
// mostly, sometimes an e5m2 pair; K-major operands; K, leading dimensions, batch strides
// and base offsets in whole 16-byte units; a scale mode (block scales on e4m3 pairs and
// one matrix, row/column scales on one matrix); never batch-invariant. The epilogue, D,
// C and alpha/beta are the 16-bit draw's. Every fifth problem (index 3 mod 5), where the
// limits allow a K of 1024, takes split-K's shapes instead: one matrix, M <= 256,
// N <= 2048 and K of whole 128-wide blocks, at least 8.
FuzzProblem make_fp8_fuzz_problem(uint64_t seed, int64_t index, const FuzzLimits& limits);

// The same draw made a batch-invariant problem on a weight the mode splits
// (docs/planner.md#batch-invariance): one matrix, N <= 2048, and either K of 16384-131072
// in whole 128-wide steps on 1-600 rows or K of 1024-16384 in steps of 8 on 1-4096 rows;
// K-major operands with 16-byte aligned bases and leading
// dimensions (so that sm90-decode reads them in place). Its extents exceed the limits'
// max_extent; the MAC cap holds. The epilogue, D, C, alpha/beta and dtypes are the 16-bit
// draw's.
FuzzProblem make_invariant_split_fuzz_problem(uint64_t seed, int64_t index, const FuzzLimits& limits);

// One line with everything needed to rebuild the problem by hand.
std::string describe(const FuzzProblem& problem);

// Multiply-adds of the problem (M * N * K * batch), the measure the limits cap.
int64_t fuzz_macs(const GemmDesc& desc);

}  // namespace anvil::verify
