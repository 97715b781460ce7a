// The kernel parameter block of the warp-specialized Hopper GEMM, filled on the host.
// Tensor maps must live in parameter (constant) space for the TMA unit: the whole
// struct is passed as a __grid_constant__ argument.
#pragma once

#include <cuda.h>

#include "kernels/common/epilogue_params.h"
#include "kernels/sm90/stream_k.h"
#include "kernels/sm90/tile_scheduler.cuh"

namespace anvil::detail {

// FP8 scales (anvil::ScaleMode): fp32 arrays in device memory. rows = M (also the stride
// of A's M-major block scales), cols = N (the GEMM width).
// Block scales only: k_blocks is ceil(K / 128) of the whole problem, the length of one
// 128-column block's row of B scales. Under split-K (split_k.h) the launch's batch index
// is a slice of K, not a matrix: slice s starts at K block s x k_blocks_per_batch, and its
// scale reads are offset by that; 0 for a launch whose batches are matrices (block scales
// take one matrix, so its only batch starts at block 0).
struct Fp8Scales {
  const float* a = nullptr;
  const float* b = nullptr;
  ScaleMode mode = ScaleMode::kNone;
  int64_t rows = 0, cols = 0;
  int64_t k_blocks = 0;
  int k_blocks_per_batch = 0;
};

struct Sm90Params {
  CUtensorMap map_a, map_b, map_d;
  int k_tiles;
  bool batched;     // operand maps are 3-D (k, rows, batch)
  bool tma_store;   // plain GEMM: through shared memory and TMA stores (map_d valid)
  bool pair_store;  // plain GEMM: two adjacent outputs per 32-bit store; neither: staged
  TileScheduler scheduler;
  EpilogueParams epilogue;
  // Stream-K configurations only (Config::kStreamK).
  StreamKPlan stream_k;
  StreamKWorkspace stream_k_workspace;
  // 8-bit configurations only (Config::kElementBytes == 1).
  Fp8Scales scales;
  // Only for configurations with KernelSpec::skip_dead_boxes: A in boxes of 8 rows, for a
  // slice of A with at most 8 rows before M (producer.cuh, load_tile_at).
  CUtensorMap map_a_rows8;
};

}  // namespace anvil::detail
