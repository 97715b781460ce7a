// The grouped GEMM's tile order: (expert, tile) pairs, numbered expert after expert, with
// each expert's tiles counted from its row count in device memory. The host never reads
// those counts (a grouped GEMM's routing is computed on the device, and a CUDA graph must
// replay whatever it is), so the grid is persistent and every warp that needs a tile finds
// it here, on the device.
//
// Numbering: expert e owns tiles [T_e, T_e + m_tiles(e) * tiles_n), T_e the tiles of the
// experts before it; inside an expert the M tiles of one N column come one after another,
// so the CTAs running at once share the expert's weight column panels (B, the larger
// operand when experts have few tokens) through L2. An expert with no rows owns no tile
// and costs only its share of the scan below.
//
// The walk: a warp scans the per-expert tile counts 32 experts at a time (one coalesced
// load of the bounds, a warp prefix sum of the counts) and keeps its position, because a
// CTA's tile numbers only grow (cta, cta + grid, ...). Finding a tile costs one ballot in
// the current chunk; a CTA moves through all E experts once over the whole launch, so a
// launch costs each warp E / 32 chunk loads in all, whatever the number of tiles. Every
// warp of a role walks the same way and gets the same answers: the producer's warp and
// the consumers' warps agree on every tile without talking to each other.
//
// Bounds that make no sense (a contiguous layout whose offsets decrease or leave
// [0, rows]; a masked count below 0 or above max_rows) are caught in the same scan: the
// expert is treated as empty, so nothing outside D's rows is ever written, and the error
// is recorded as a bit in the caller's error word (anvil/grouped.h, GroupedError).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace anvil::detail {

// Error bits, the same values as anvil::GroupedError (grouped.h).
inline constexpr int kGroupedErrorDecreasing = 1;  // offsets[e + 1] < offsets[e]
inline constexpr int kGroupedErrorOutOfRange = 2;  // an offset outside [0, rows]
inline constexpr int kGroupedErrorBadCount = 4;    // a masked count < 0 or > max_rows

// What the device needs to number the tiles; filled on the host from the descriptor.
struct GroupedSchedule {
  const void* bounds = nullptr;  // contiguous: experts + 1 row offsets; masked: experts row counts
  int* error_flags = nullptr;    // optional: the bits above are OR-ed in here
  int64_t rows = 0;              // contiguous: rows of A and D; masked: max rows per expert
  int experts = 0;
  int tiles_n = 0;
  int block_m = 128;
  bool masked = false;
  bool bounds_int64 = false;
  bool ends_only = false;        // contiguous: bounds are the E row ends (expert 0 starts at row 0)
};

// One tile of one expert: rows [row_begin + m_tile * block_m, ...) of A (contiguous; the
// expert's own rows, masked), clipped to rows [row_begin, row_begin + rows).
struct GroupedTile {
  int expert;
  int m_tile, n_tile;
  int64_t row_begin;  // the expert's first row in A and D (contiguous); 0 (masked)
  int64_t rows;       // the expert's rows
};

struct GroupedTileCursor {
  const GroupedSchedule* schedule;
  int chunk = -32;        // first expert of the warp's current chunk of 32
  int tiles_before = 0;   // tiles of the experts before the chunk
  int chunk_tiles = 0;    // tiles of the chunk's experts
  int inclusive = 0;      // this lane's expert: tiles of the chunk's experts up to and with it
  int64_t begin = 0, rows = 0;  // this lane's expert

  __device__ explicit GroupedTileCursor(const GroupedSchedule& s) : schedule(&s) {}

  __device__ __forceinline__ int64_t bound(int index) const {
    return schedule->bounds_int64 ? __ldg(static_cast<const long long*>(schedule->bounds) + index)
                                  : static_cast<int64_t>(__ldg(static_cast<const int*>(schedule->bounds) + index));
  }

  // Loads the next 32 experts' rows and their tile counts' prefix sum. false past the last.
  __device__ __forceinline__ bool next_chunk() {
    const int lane = threadIdx.x % 32;
    chunk += 32;
    tiles_before += chunk_tiles;
    chunk_tiles = 0;
    if (chunk >= schedule->experts) return false;
    const int e = chunk + lane;
    begin = 0, rows = 0;
    int error = 0;
    if (e < schedule->experts) {
      if (schedule->masked) {
        rows = bound(e);
        if (rows < 0 || rows > schedule->rows) error = kGroupedErrorBadCount;
      } else {
        // E + 1 offsets: expert e spans bounds[e] .. bounds[e + 1]; E ends: bounds[e - 1]
        // (0 for the first expert) .. bounds[e].
        const int first = schedule->ends_only ? e - 1 : e;
        begin = first < 0 ? 0 : bound(first);
        const int64_t end = bound(first + 1);
        rows = end - begin;
        if (rows < 0) error = kGroupedErrorDecreasing;
        if (begin < 0 || end > schedule->rows || begin > schedule->rows || end < 0) error |= kGroupedErrorOutOfRange;
      }
      if (error != 0) {
        rows = 0;
        begin = 0;
        if (schedule->error_flags != nullptr) atomicOr(schedule->error_flags, error);
      }
    }
    const int tiles = static_cast<int>((rows + schedule->block_m - 1) / schedule->block_m) * schedule->tiles_n;
    inclusive = tiles;
#pragma unroll
    for (int offset = 1; offset < 32; offset *= 2) {
      const int other = __shfl_up_sync(0xffffffffu, inclusive, offset);
      if (lane >= offset) inclusive += other;
    }
    chunk_tiles = __shfl_sync(0xffffffffu, inclusive, 31);
    return true;
  }

  // The tile numbered `linear` (not below any number asked before). false: there is none,
  // the launch's tiles are done. All 32 lanes of the warp must call it together.
  __device__ __forceinline__ bool find(int linear, GroupedTile* tile) {
    while (linear >= tiles_before + chunk_tiles) {
      if (!next_chunk()) return false;
    }
    const int local = linear - tiles_before;
    const unsigned past = __ballot_sync(0xffffffffu, inclusive > local);
    const int lane = __ffs(static_cast<int>(past)) - 1;
    const int owner_inclusive = __shfl_sync(0xffffffffu, inclusive, lane);
    const int owner_tiles_m =
        static_cast<int>((__shfl_sync(0xffffffffu, rows, lane) + schedule->block_m - 1) / schedule->block_m);
    tile->rows = __shfl_sync(0xffffffffu, rows, lane);
    tile->row_begin = __shfl_sync(0xffffffffu, begin, lane);
    tile->expert = chunk + lane;
    const int within = local - (owner_inclusive - owner_tiles_m * schedule->tiles_n);
    tile->m_tile = within % owner_tiles_m;
    tile->n_tile = within / owner_tiles_m;
    return true;
  }
};

}  // namespace anvil::detail
