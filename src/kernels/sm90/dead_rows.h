// Which rows of an operand slice the producer loads when it leaves out rows past the
// operand's end (KernelSpec::skip_dead_boxes; producer.cuh, load_tile_at): plain
// arithmetic that the CPU tests exercise.
#pragma once

#include <cuda_runtime.h>  // __host__ __device__ when a host compiler reads this (the CPU tests)

#include <cstdint>

namespace anvil::detail {

// The short boxes of A (Sm90Params::map_a_short) that a partly live slice of A is loaded
// with when its live rows fit: one 128-byte swizzle atom (8 rows), or, for a slice of
// more than 64 rows (a lone CTA's 128-row tile), its first half. Either lands where the
// whole box would put its rows.
inline constexpr int kRowGroup = 8;
template <int kSliceRows>
inline constexpr bool kHasHalfBox = kSliceRows > 64;

// The rows of a slice that starts at first_row and holds kSliceRows, before `rows` (the
// operand's end).
template <int kSliceRows>
__host__ __device__ __forceinline__ int live_rows(int first_row, int64_t rows) {
  const int64_t live = rows - first_row;
  return live <= 0 ? 0 : live >= kSliceRows ? kSliceRows : static_cast<int>(live);
}

// The rows a slice of kSliceRows rows loads when its rows past the operand's end are left
// out: none, the shortest box that holds all its live rows, else the whole box.
template <int kSliceRows>
__host__ __device__ __forceinline__ int loaded_rows(int first_row, int64_t rows) {
  static_assert(kSliceRows > kRowGroup, "a slice of several 8-row groups");
  const int live = live_rows<kSliceRows>(first_row, rows);
  if (live == 0) return 0;
  if (live <= kRowGroup) return kRowGroup;
  if (kHasHalfBox<kSliceRows> && live <= kSliceRows / 2) return kSliceRows / 2;
  return kSliceRows;
}

// How many rows a tile's A box moves up so that it ends at the operand's end: a last row
// of tiles with fewer than kBlockM live rows loads the rows above it instead of rows past
// M, which TMA would fill with zeros at a cost (a row it fills takes longer than a row it
// reads: 181 x 5760 x 2880 in 128 x 96 tiles, 27.1 us with a dead 64-row half box against
// 19.6 us without it, docs/notes/narrow-fitted-widths.md). The move is whole 8-row
// swizzle atoms, so the wgmma descriptors of the moved tile stay atom-aligned: at most 7
// rows past M remain. The consumers read the tile's rows that many rows further into the
// stage (their rows past M then hold whatever follows in shared memory: never stored).
// No move for a tile with no live rows, a whole one, or no rows above it.
template <int kBlockM>
__host__ __device__ __forceinline__ int a_box_shift(int tile_row, int64_t rows) {
  const int64_t live = rows - tile_row;
  if (live <= 0 || live >= kBlockM) return 0;
  const int dead = (kBlockM - static_cast<int>(live)) / kRowGroup * kRowGroup;
  const int above = tile_row / kRowGroup * kRowGroup;
  return dead < above ? dead : above;
}

}  // namespace anvil::detail
