// The producer: one thread that keeps the stage ring full. It waits for a stage to be
// freed, announces the bytes it will bring, and issues TMA copies that complete on the
// stage's FullBarrier. With a cluster, each CTA fetches 1/kMulticastCtas of the shared
// tile (B for a cluster along M, A along N) and multicasts it to all, so that tile is read
// from L2 once per cluster instead of once per CTA.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "arch/sm90/tma.cuh"
#include "kernels/sm90/dead_rows.h"
#include "kernels/sm90/params.h"
#include "kernels/sm90/pipeline.cuh"
#include "kernels/sm90/stream_k.h"
#include "kernels/sm90/tile_scheduler.cuh"

namespace anvil::detail {

// One operand's box for one stage: multicast to the cluster when the CTAs share the
// operand's tile (kSlices > 1: this CTA's slice of it), else into this CTA alone.
template <int kSlices, uint16_t kClusterMask>
__device__ __forceinline__ void load_box(uint8_t* dst, const CUtensorMap& map, uint64_t* full, int k, int row,
                                         bool batched, int batch) {
  if (batched) {
    if constexpr (kSlices > 1) {
      sm90::tma_load_3d_multicast(dst, &map, full, k, row, batch, kClusterMask);
    } else {
      sm90::tma_load_3d(dst, &map, full, k, row, batch);
    }
  } else {
    if constexpr (kSlices > 1) {
      sm90::tma_load_2d_multicast(dst, &map, full, k, row, kClusterMask);
    } else {
      sm90::tma_load_2d(dst, &map, full, k, row);
    }
  }
}

// How a stage's boxes travel, the part of the producer that depends on how the CTAs of a
// cluster share a tile. Here the Hopper cluster's: every CTA's stage holds the whole
// tile, each CTA loads its slice of the shared operand into all of them (multicast), and
// each counts the whole stage's bytes on its own full barrier. The Blackwell CTA pair
// (kernels/sm100/gemm_kernel.cuh) splits the operands instead: its own policy.
template <class Config>
struct MulticastStageLoads {
  // Bytes that complete one stage's full barrier in this CTA, and whether this CTA (slice)
  // announces them.
  static constexpr uint32_t kExpectedBytes = Config::kStageBytesA + Config::kStageBytesB;
  __device__ static constexpr bool announces(uint32_t) { return true; }
  __device__ static __forceinline__ void wait_empty(uint64_t* bar, uint32_t parity) {
    sm90::mbarrier_wait(bar, parity);
  }
  // Rows past the operands' ends are not loaded (load_tile_at): every CTA of the cluster
  // can work out the bytes a stage then brings.
  static constexpr bool kSkipsDeadBoxes = true;
  // Where slice s of the shared operand lies in the stage: s times this many bytes.
  static constexpr uint32_t kSliceBytesA =
      Config::kSlicesA > 1 ? Config::kBlockM / Config::kSlicesA * Config::kRowBytes : 0;
  static constexpr uint32_t kSliceBytesB =
      Config::kSlicesB > 1 ? Config::kBlockN / Config::kSlicesB * Config::kRowBytes : 0;
  // One operand's box: kSlices CTAs share the operand tile, this CTA's slice of it has
  // kSliceRows rows (one box here).
  template <int kSlices, int kSliceRows>
  __device__ static __forceinline__ void load(uint8_t* dst, const CUtensorMap& map, uint64_t* full, int k, int row,
                                              bool batched, int batch) {
    constexpr uint16_t kClusterMask = (1u << Config::kMulticastCtas) - 1;
    load_box<kSlices, kClusterMask>(dst, map, full, k, row, batched, batch);
  }
};

// Whether a configuration's producer leaves out rows past M and N (KernelSpec::
// skip_dead_boxes); configurations without the field (Blackwell's) never do.
template <class Config>
constexpr bool skips_dead_boxes() {
  if constexpr (requires { Config::kSkipDeadBoxes; }) {
    return Config::kSkipDeadBoxes;
  } else {
    return false;
  }
}

// Whether a configuration's stages carry DeepSeek-V3 block scales (KernelSpec::
// block_scales); configurations without the field (Blackwell's) never do.
template <class Config>
constexpr bool stages_carry_block_scales() {
  if constexpr (requires { Config::kBlockScales; }) {
    return Config::kBlockScales;
  } else {
    return false;
  }
}

// Whether a configuration moves a last row of tiles' A box up to end at M (a_box_shift,
// dead_rows.h). Every sm90-gemm configuration but the block-scaled 128 x 192 tile, whose
// 192 sums a thread leave no register for the moved descriptor (it spills).
template <class Config>
constexpr bool moves_last_box_to_m() {
  return !(stages_carry_block_scales<Config>() && Config::kBlockN > 128);
}

// Where a stage's block scales of A go, and which they are.
struct StageScalesA {
  const CUtensorMap* map = nullptr;
  float* stages = nullptr;  // kStages slots of kScaleSlotFloats<kBlockM> floats
  ScaleLine line;
};

// Loads K tiles [k_begin, k_end) of one output tile into the ring. `slice` is this CTA's
// share of the operand tiles its cluster shares (0 without sharing); rows of A and B are
// the tile's, offset by the slice. The tile's A box starts at row first_row_a + m_tile x
// kBlockM, its B box at row n_tile x kBlockN; each operand's map is 3-D (batch coordinate
// tile.batch) where its batched flag says so.
//
// rows_a and rows_b (the rows of A and B that produce stored outputs: M and the GEMM's N)
// let the producer of a configuration with skip_dead_boxes leave out rows past them, and
// count only the bytes it loads: those rows would only feed outputs that are never stored,
// so the stage may keep whatever they held. A slice wholly past its operand's end is not
// loaded; a slice of A whose live rows fit in a short box (8 rows, or half the slice) is
// loaded as one box of map_a_short. Such rows are common (a last row of tiles a few rows
// deep, a cluster's padding CTA), and TMA's zero fill of them is not free: 181 x 5760 x
// 2880 in 128 x 96 tiles ran 27.1 us loading them, 19.6 us leaving the dead half-tiles out.
// Several 8-row boxes cost more than the fill they save (seven per stage: 35 us), so a
// slice with more live rows is loaded whole (H200, docs/notes/narrow-fitted-widths.md).
template <class Config, class Loads = MulticastStageLoads<Config>>
__device__ __forceinline__ void load_tile_at(const CUtensorMap& map_a, const CUtensorMap& map_b, bool batched_a,
                                             bool batched_b, const TileCoord& tile, int first_row_a, int k_begin,
                                             int k_end, uint32_t slice, StageRing<Config::kStages>& ring,
                                             uint8_t (*tiles_a)[Config::kStageBytesA],
                                             uint8_t (*tiles_b)[Config::kStageBytesB],
                                             StageBarriers<Config::kStages>& barriers,
                                             int64_t rows_a = INT64_MAX, int64_t rows_b = INT64_MAX,
                                             const CUtensorMap* map_a_short = nullptr,  // [8 rows, half]
                                             const StageScalesA& scales_a = StageScalesA{},
                                             bool end_last_box_at_m = false) {
  constexpr int kSliceRowsA = Config::kBlockM / Config::kSlicesA;
  constexpr int kSliceRowsB = Config::kBlockN / Config::kSlicesB;
  // The tile's first row, and where its A box starts (a_box_shift rows higher for a last
  // row of tiles whose box would run past M, where the caller asks for it).
  const int first_tile_row = first_row_a + tile.m_tile * Config::kBlockM;
  const int tile_row_a = first_tile_row - (end_last_box_at_m ? a_box_shift<Config::kBlockM>(first_tile_row, rows_a) : 0);
  const int tile_row_b = tile.n_tile * Config::kBlockN;
  const int row_a = tile_row_a + (Config::kSlicesA > 1 ? static_cast<int>(slice) * kSliceRowsA : 0);
  const int row_b = tile_row_b + (Config::kSlicesB > 1 ? static_cast<int>(slice) * kSliceRowsB : 0);
  constexpr bool kSkip = skips_dead_boxes<Config>() && requires { Loads::kSkipsDeadBoxes; };
  uint32_t expected = Loads::kExpectedBytes;
  bool load_a = true, load_b = true;
  const CUtensorMap* short_a = nullptr;  // the short box's map, where this CTA's A slice goes as one
  if constexpr (kSkip) {
    int rows = 0;
    for (int s = 0; s < Config::kSlicesA; ++s) rows += loaded_rows<kSliceRowsA>(tile_row_a + s * kSliceRowsA, rows_a);
    for (int s = 0; s < Config::kSlicesB; ++s) {
      rows += live_rows<kSliceRowsB>(tile_row_b + s * kSliceRowsB, rows_b) > 0 ? kSliceRowsB : 0;
    }
    expected = static_cast<uint32_t>(rows) * Config::kRowBytes;
    const int loaded_a = loaded_rows<kSliceRowsA>(row_a, rows_a);
    load_a = loaded_a > 0;
    if (loaded_a == kRowGroup) short_a = &map_a_short[0];
    if (kHasHalfBox<kSliceRowsA> && loaded_a == kSliceRowsA / 2) short_a = &map_a_short[1];
    load_b = row_b < rows_b;
  }
  // Block scales: each CTA brings its own copy of the tile's A scales with every stage,
  // one box of its kBlockM floats from the 16-byte boundary at or below the first
  // (params.h, kScaleBoxLead), counted on the stage's full barrier with the operands. The
  // consumers read them from shared memory beside the operands, so no load from global
  // memory stands between a K block's retirement and its promotion. A tile whose rows all
  // lie past M (a pair's second CTA when M <= 128) loads none: its consumers read none.
  constexpr uint32_t kScaleBytes = stages_carry_block_scales<Config>() ? (Config::kBlockM + kScaleBoxLead) * 4 : 0;
  const bool load_scales = kScaleBytes > 0 && first_tile_row < rows_a;
  if (load_scales) expected += kScaleBytes;
  for (int kt = k_begin; kt < k_end; ++kt) {
    // A fresh barrier counts as having completed the phase before phase 0, so the
    // first lap passes straight through.
    Loads::wait_empty(&barriers.empty[ring.stage], ring.phase ^ 1);
    uint64_t* full = &barriers.full[ring.stage];
    if (Loads::announces(slice)) sm90::mbarrier_arrive_expect_tx(full, expected);
    const int k = kt * Config::kBlockK;
    uint8_t* slice_a = tiles_a[ring.stage] + (Config::kSlicesA > 1 ? slice * Loads::kSliceBytesA : 0);
    uint8_t* slice_b = tiles_b[ring.stage] + (Config::kSlicesB > 1 ? slice * Loads::kSliceBytesB : 0);
    if constexpr (kScaleBytes > 0) {
      if (load_scales) {
        const int64_t first = scales_a.line.element(kt, first_tile_row) & ~int64_t{3};
        sm90::tma_load_2d(scales_a.stages + ring.stage * kScaleSlotFloats<Config::kBlockM>, scales_a.map, full,
                          static_cast<int32_t>(first), 0);
      }
    }
    if constexpr (kSkip) {
      if (short_a != nullptr) {
        // kSliceRows only places unswizzled boxes (Blackwell's ladder); a short box here
        // lands where the whole one would put its rows.
        Loads::template load<Config::kSlicesA, kSliceRowsA>(slice_a, *short_a, full, k, row_a, batched_a, tile.batch);
      } else if (load_a) {
        Loads::template load<Config::kSlicesA, kSliceRowsA>(slice_a, map_a, full, k, row_a, batched_a, tile.batch);
      }
      if (load_b) Loads::template load<Config::kSlicesB, kSliceRowsB>(slice_b, map_b, full, k, row_b, batched_b, tile.batch);
    } else {
      Loads::template load<Config::kSlicesA, kSliceRowsA>(slice_a, map_a, full, k, row_a, batched_a, tile.batch);
      Loads::template load<Config::kSlicesB, kSliceRowsB>(slice_b, map_b, full, k, row_b, batched_b, tile.batch);
    }
    ring.advance();
  }
}

// The same for a (strided-batched) GEMM: both maps 3-D or both 2-D, A from row 0.
template <class Config, class Loads = MulticastStageLoads<Config>>
__device__ __forceinline__ void load_tile(const CUtensorMap& map_a, const CUtensorMap& map_b, bool batched,
                                          const TileCoord& tile, int k_begin, int k_end, uint32_t slice,
                                          StageRing<Config::kStages>& ring, uint8_t (*tiles_a)[Config::kStageBytesA],
                                          uint8_t (*tiles_b)[Config::kStageBytesB],
                                          StageBarriers<Config::kStages>& barriers, int64_t rows_a = INT64_MAX,
                                          int64_t rows_b = INT64_MAX, const CUtensorMap* map_a_short = nullptr,
                                          const StageScalesA& scales_a = StageScalesA{},
                                          bool end_last_box_at_m = false) {
  load_tile_at<Config, Loads>(map_a, map_b, batched, batched, tile, 0, k_begin, k_end, slice, ring, tiles_a, tiles_b,
                              barriers, rows_a, rows_b, map_a_short, scales_a, end_last_box_at_m);
}

// The rows of A and of B whose products are stored: M, and the GEMM's N (twice the output
// columns for SwiGLU's gate/up pairs).
__device__ __forceinline__ int64_t stored_rows_a(const Sm90Params& params) { return params.epilogue.m; }
__device__ __forceinline__ int64_t stored_rows_b(const Sm90Params& params) {
  return params.epilogue.activation == Activation::kSwiGLU ? 2 * params.epilogue.n_out : params.epilogue.n_out;
}

// A dense tile's line of A scales (a split-K slice's blocks start at its batch index's).
__device__ __forceinline__ ScaleLine block_scale_line(const Sm90Params& params, const TileCoord& tile) {
  return ScaleLine{params.scales.rows, int64_t{tile.batch} * params.scales.k_blocks_per_batch,
                   params.scales.a_map_shift};
}

template <class Config>
__device__ void run_producer(const Sm90Params& params, uint32_t cta_rank, int cluster, int clusters,
                             uint8_t (*tiles_a)[Config::kStageBytesA], uint8_t (*tiles_b)[Config::kStageBytesB],
                             StageBarriers<Config::kStages>& barriers, float* stage_scales_a = nullptr) {
  const uint32_t slice = Config::kMulticastCtas > 1 ? cta_rank : 0;
  StageRing<Config::kStages> ring;
  if constexpr (Config::kStreamK) {
    StreamKCursor cursor(params.stream_k, cluster);
    WorkUnit unit;
    while (cursor.next(&unit)) {
      load_tile<Config>(params.map_a, params.map_b, params.batched, params.scheduler.tile(unit.linear, 0),
                        unit.k_begin, unit.k_end, slice, ring, tiles_a, tiles_b, barriers, stored_rows_a(params),
                        stored_rows_b(params), params.map_a_short, StageScalesA{}, moves_last_box_to_m<Config>());
    }
  } else {
    for (int linear = cluster; linear < params.scheduler.total_cluster_tiles(); linear += clusters) {
      const TileCoord tile = params.scheduler.tile(linear, cta_rank);
      StageScalesA scales_a;
      if constexpr (stages_carry_block_scales<Config>()) {
        scales_a = StageScalesA{&params.map_scales_a, stage_scales_a, block_scale_line(params, tile)};
      }
      load_tile<Config>(params.map_a, params.map_b, params.batched, tile, 0, params.k_tiles, slice, ring, tiles_a,
                        tiles_b, barriers, stored_rows_a(params), stored_rows_b(params), params.map_a_short, scales_a,
                        moves_last_box_to_m<Config>());
    }
  }
}

}  // namespace anvil::detail
