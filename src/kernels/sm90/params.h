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
  // Block scales: floats from the 16-byte aligned start of the A scale map to a
  // (tma_operands.h, encode_block_scales_a).
  int a_map_shift = 0;
};

// Where the block scales of A lie (ScaleMode::kBlock128): one line of k_blocks x rows floats
// behind a tensor map (tma_operands.h, encode_block_scales_a); the scale of storage row r
// for the launch's K block kt is element (first_block + kt) x rows + first_row + r.
struct ScaleLine {
  int64_t rows = 0;         // the line's stride between K blocks: M, or the grouped A's storage rows
  int64_t first_block = 0;  // the launch's first K block (a split-K slice's)
  int64_t first_row = 0;    // the map's shift to the array, plus a masked expert's first storage row
  __host__ __device__ int64_t element(int kt, int64_t row) const { return (first_block + kt) * rows + first_row + row; }
};

// TMA starts a box on a 16-byte boundary of the line (a box at another element faulted
// with an illegal instruction on the H200), so a stage's box of A scales starts at the
// tile's first element rounded down to 4 floats and holds kScaleBoxLead floats more than
// the tile's rows; the consumers skip the element's remainder mod 4 (its lead). TMA also
// writes shared memory at 128-byte aligned addresses only (misaligned address otherwise),
// so each stage's slot is rounded up to whole 128 bytes.
inline constexpr int kScaleBoxLead = 4;
template <int kRows>
inline constexpr int kScaleSlotFloats = (kRows + kScaleBoxLead + 31) / 32 * 32;

struct Sm90Params {
  CUtensorMap map_a, map_b, map_d;
  int k_tiles;
  bool batched;     // operand maps are 3-D (k, rows, batch)
  bool tma_store;   // plain GEMM: through shared memory and TMA stores (map_d valid)
  // ... into a column-major D: map_d's boxes are 64 rows x 32 columns, staged transposed
  // (epilogue_store.cuh, tma_store_column_round). 16-bit configurations only.
  bool tma_store_columns;
  bool pair_store;  // plain GEMM: two adjacent outputs per 32-bit store; neither: staged
  TileScheduler scheduler;
  EpilogueParams epilogue;
  // Stream-K configurations only (Config::kStreamK).
  StreamKPlan stream_k;
  StreamKWorkspace stream_k_workspace;
  // 8-bit configurations only (Config::kElementBytes == 1).
  Fp8Scales scales;
  // KernelSpec::fold_k_slices: slice r of k_slices sums the k-tiles [r k_tiles / k_slices,
  // (r + 1) k_tiles / k_slices), sm90-decode's cut (decode_kernel.cuh, split_k_range).
  int k_slices;
  // A fourth map, by configuration (no configuration has both):
  union {
    // KernelSpec::skip_dead_boxes: A in short boxes, for a slice of A whose rows before M
    // fit in one (producer.cuh, load_tile_at): 8 rows, and half a slice of more than 64.
    CUtensorMap map_a_short[2];
    // KernelSpec::block_scales: A's scales (Fp8Scales::a, k_blocks x rows floats) as one
    // line, so that one box of kBlockM of them - a tile's rows for one K block - travels
    // with each stage (producer.cuh).
    CUtensorMap map_scales_a;
  };
};

}  // namespace anvil::detail
