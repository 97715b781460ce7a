// The consumer warpgroups' epilogue: accumulators -> fused math -> global memory.
// Three paths, chosen per launch on the host:
//   TMA store  - plain GEMM (no bias, activation, alpha or C) with a half output: each
//                warpgroup writes its slabs as bf16/fp16 into a 128-byte-swizzled shared
//                buffer, then one thread issues 64x64 TMA stores, which clip the edges
//                (a tile whose width is not a multiple of 64 sends its last 16-48 columns as pair
//                stores);
//   pair store - plain GEMM, row-major half output: two neighbouring columns per 32-bit
//                store, straight from the registers;
//   staged     - everything else (fused epilogues, SwiGLU, fp32 or column-major output,
//                odd leading dimensions): each warp parks 16 x 32 fp32 chunks of its own
//                accumulator rows in shared memory and finishes them in a rolled loop,
//                four neighbouring outputs per thread and step.
// Why the staged path: an epilogue unrolled over all 128 accumulators of a thread is
// tens of KiB of straight-line machine code per activation, executed once per tile - the
// instruction cache misses on nearly every line of it. The rolled loop is a few hundred
// bytes; only the register-to-shared copies stay unrolled (they must: registers cannot
// be indexed at run time).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "arch/sm90/fence.cuh"
#include "arch/sm90/ld_st_shared.cuh"
#include "arch/sm90/mbarrier.cuh"
#include "arch/sm90/named_barrier.cuh"
#include "arch/sm90/stmatrix.cuh"
#include "arch/sm90/tma.cuh"
#include "kernels/sm90/fragment_epilogue.cuh"
#include "kernels/sm90/kernel_config.h"
#include "kernels/sm90/params.h"
#include "kernels/sm90/tile_scheduler.cuh"

namespace anvil::detail {

template <class Pair>
__device__ __forceinline__ uint32_t pack_pair(float lo, float hi) {
  if constexpr (std::is_same_v<Pair, __nv_bfloat162>) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&v);
  } else {
    const __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&v);
  }
}

// The same with the output type known only at run time (bf16 or fp16).
__device__ __forceinline__ uint32_t pack_half2(float lo, float hi, DataType dtype) {
  return dtype == DataType::kBF16 ? pack_pair<__nv_bfloat162>(lo, hi) : pack_pair<__half2>(lo, hi);
}

// The TMA-store buffer: per 64-row slab, one 64 x 64 box of halves per 64 columns, each
// row 128 bytes with its 16-byte chunks XOR-swizzled by row (CU_TENSOR_MAP_SWIZZLE_128B).
inline constexpr int kStoreBoxBytes = 64 * 128;

// Writes a warpgroup's accumulators for boxes [kFirstBox, kFirstBox + kBoxes) of its
// slabs (box b: slab b / (kBlockN / 64), columns 64 (b % (kBlockN / 64)) ..) into the
// TMA-store buffer, 16 columns of the warp's 16 rows per stmatrix. Lane l addresses row
// (l % 8) + 8 ((l / 8) % 2) of its warp's rows, in column group g + l / 16 of the pair
// g, g + 1 that one instruction covers (stmatrix_x4's tiles: rows 0-7 and 8-15 of group
// g, then of group g + 1, which are the fragment's registers 4g .. 4g + 7 in order). Rows
// and columns past the edge of D hold zeros (TMA filled the operands' out-of-bounds parts
// with zeros) and the TMA store clips them, so no element is masked here.
template <class Config, class Pair, int kFirstBox, int kBoxes>
__device__ __forceinline__ void stage_boxes_for_tma_store(uint8_t* buffer,
                                                          const float (&acc)[Config::kSlabs][Config::kBlockN / 2], int t) {
  constexpr int kBoxesPerSlab = Config::kBlockN / 64;
  const int warp = t / 32, lane = t % 32;
  const int row = warp * 16 + (lane % 8) + ((lane / 8) % 2) * 8;
  const uint32_t row_addr = sm90::smem_addr(buffer) + static_cast<uint32_t>(row) * 128;
  // The swizzled chunk of column group 2m + lane / 16 in this lane's row, m = 0..3; every
  // 64-column box repeats the pattern.
  uint32_t chunk[4];
#pragma unroll
  for (int m = 0; m < 4; ++m) chunk[m] = static_cast<uint32_t>(((2 * m + lane / 16) ^ (lane % 8)) * 16);
#pragma unroll
  for (int box = kFirstBox; box < kFirstBox + kBoxes; ++box) {
    const float(&slab)[Config::kBlockN / 2] = acc[box / kBoxesPerSlab];
#pragma unroll
    for (int g = (box % kBoxesPerSlab) * 8; g < (box % kBoxesPerSlab) * 8 + 8; g += 2) {
      const float* r = &slab[4 * g];
      const uint32_t offset = static_cast<uint32_t>((box - kFirstBox) * kStoreBoxBytes) + chunk[(g % 8) / 2];
      sm90::stmatrix_x4(row_addr + offset, pack_pair<Pair>(r[0], r[1]), pack_pair<Pair>(r[2], r[3]),
                        pack_pair<Pair>(r[4], r[5]), pack_pair<Pair>(r[6], r[7]));
    }
  }
}

// Sends boxes [kFirstBox, kFirstBox + kBoxes) through the warpgroup's buffer: waits until
// the previous round's stores have read it, lets stage() fill it, makes the writes visible
// to the TMA engine's async-proxy reads, and issues the copies from one thread (coord(box):
// the box's coordinates in map_d, inner dimension first).
template <int kFirstBox, int kBoxes, int kBoxBytes, class Stage, class Coord>
__device__ __forceinline__ void send_store_boxes(const Sm90Params& params, const TileCoord& tile, int consumer,
                                                 uint8_t* buffer, int t, Stage stage, Coord coord) {
  if (t == 0) sm90::tma_store_wait_read<0>();
  sm90::warpgroup_sync(consumer);
  stage();
  sm90::fence_proxy_async_shared();
  sm90::warpgroup_sync(consumer);
  if (t == 0) {
#pragma unroll
    for (int box = kFirstBox; box < kFirstBox + kBoxes; ++box) {
      const uint8_t* src = buffer + (box - kFirstBox) * kBoxBytes;
      const int2 at = coord(box);
      if (params.batched) {
        sm90::tma_store_3d(&params.map_d, src, at.x, at.y, tile.batch);
      } else {
        sm90::tma_store_2d(&params.map_d, src, at.x, at.y);
      }
    }
    sm90::tma_store_commit_group();
  }
}

// One round of the TMA-store epilogue: the round's 64 x 64 boxes, then the next round.
template <class Config, int kRound>
__device__ __forceinline__ void tma_store_round(const Sm90Params& params, const TileCoord& tile, int consumer,
                                                const float (&acc)[Config::kSlabs][Config::kBlockN / 2],
                                                uint8_t* buffer, int64_t row0, int64_t col0, int t) {
  constexpr int kBoxesPerSlab = Config::kBlockN / 64;
  constexpr int kBoxes = Config::kSlabs * kBoxesPerSlab / Config::kStoreRounds;
  constexpr int kFirstBox = kRound * kBoxes;
  send_store_boxes<kFirstBox, kBoxes, kStoreBoxBytes>(
      params, tile, consumer, buffer, t,
      [&] {
        if (params.epilogue.d.dtype == DataType::kBF16) {
          stage_boxes_for_tma_store<Config, __nv_bfloat162, kFirstBox, kBoxes>(buffer, acc, t);
        } else {
          stage_boxes_for_tma_store<Config, __half2, kFirstBox, kBoxes>(buffer, acc, t);
        }
      },
      [&](int box) {
        return make_int2(static_cast<int>(col0) + (box % kBoxesPerSlab) * 64,
                         static_cast<int>(row0) + (box / kBoxesPerSlab) * 64);
      });
  if constexpr (kRound + 1 < Config::kStoreRounds) {
    tma_store_round<Config, kRound + 1>(params, tile, consumer, acc, buffer, row0, col0, t);
  }
}

// A column-major D (a transposed launch, D^T = B^T A^T: the rows are the weight's
// features, the columns the tokens) leaves through TMA boxes of 64 rows x 32 columns. In
// shared memory a box is the tile's transpose: 32 lines, one per column, of 128 bytes (the
// slab's 64 rows), 16-byte chunks XOR-swizzled by line as the 64 x 64 boxes are. stmatrix's
// transposing form writes it from the same fragment registers as the row-major boxes: of
// an instruction's four 8 x 8 tiles (rows 0-7 and 8-15 of the warp's 16, column groups g
// and g + 1), tile i lands as 8 lines (its columns) of one 16-byte chunk (its rows). Tiles
// whose width is a multiple of 32 leave whole through TMA; the widths between (80, 112,
// 144, ...) store a column-major D through the staged path (launch.cuh), and the planner
// never runs them transposed.
inline constexpr int kColumnStoreBoxColumns = 32;
inline constexpr int kColumnStoreBoxBytes = kColumnStoreBoxColumns * 128;

// Writes a warpgroup's accumulators for column boxes [kFirstBox, kFirstBox + kBoxes) of its
// slabs (box b: slab b / (kBlockN / 32), columns 32 (b % (kBlockN / 32)) ..) into the buffer.
template <class Config, class Pair, int kFirstBox, int kBoxes>
__device__ __forceinline__ void stage_column_boxes(uint8_t* buffer, const float (&acc)[Config::kSlabs][Config::kBlockN / 2],
                                                   int t) {
  constexpr int kBoxesPerSlab = Config::kBlockN / kColumnStoreBoxColumns;
  const int warp = t / 32, lane = t % 32;
  const int tile = lane / 8, line = lane % 8;
  // This lane's line: column 8 (tile / 2) + line of the instruction's 16; its chunk holds
  // rows 8 (tile % 2) .. + 8 of the warp's 16, i.e. slab rows 16 warp + 8 (tile % 2) ...
  const uint32_t lane_addr = sm90::smem_addr(buffer) + static_cast<uint32_t>((8 * (tile / 2) + line) * 128) +
                             static_cast<uint32_t>(((2 * warp + tile % 2) ^ line) * 16);
#pragma unroll
  for (int box = kFirstBox; box < kFirstBox + kBoxes; ++box) {
    const float(&slab)[Config::kBlockN / 2] = acc[box / kBoxesPerSlab];
    constexpr int kGroupsPerBox = kColumnStoreBoxColumns / 8;
#pragma unroll
    for (int h = 0; h < kGroupsPerBox; h += 2) {
      const int g = (box % kBoxesPerSlab) * kGroupsPerBox + h;
      const float* r = &slab[4 * g];
      const uint32_t offset = static_cast<uint32_t>((box - kFirstBox) * kColumnStoreBoxBytes + h * 8 * 128);
      sm90::stmatrix_x4_trans(lane_addr + offset, pack_pair<Pair>(r[0], r[1]), pack_pair<Pair>(r[2], r[3]),
                              pack_pair<Pair>(r[4], r[5]), pack_pair<Pair>(r[6], r[7]));
    }
  }
}

// One round of the column-major TMA store: as many column boxes as the warpgroup's buffer
// holds, then the next round.
template <class Config, int kRound>
__device__ __forceinline__ void tma_store_column_round(const Sm90Params& params, const TileCoord& tile, int consumer,
                                                       const float (&acc)[Config::kSlabs][Config::kBlockN / 2],
                                                       uint8_t* buffer, int64_t row0, int64_t col0, int t) {
  constexpr int kBufferBytes = Config::kSlabs * (Config::kBlockN / 64) / Config::kStoreRounds * kStoreBoxBytes;
  constexpr int kPerRound = kBufferBytes / kColumnStoreBoxBytes;
  constexpr int kBoxesPerSlab = Config::kBlockN / kColumnStoreBoxColumns;
  constexpr int kTotal = Config::kSlabs * kBoxesPerSlab;
  constexpr int kFirstBox = kRound * kPerRound;
  constexpr int kBoxes = kTotal - kFirstBox < kPerRound ? kTotal - kFirstBox : kPerRound;
  static_assert(kPerRound >= 1 && Config::kBlockN % kColumnStoreBoxColumns == 0, "whole column boxes in the buffer");
  send_store_boxes<kFirstBox, kBoxes, kColumnStoreBoxBytes>(
      params, tile, consumer, buffer, t,
      [&] {
        if (params.epilogue.d.dtype == DataType::kBF16) {
          stage_column_boxes<Config, __nv_bfloat162, kFirstBox, kBoxes>(buffer, acc, t);
        } else {
          stage_column_boxes<Config, __half2, kFirstBox, kBoxes>(buffer, acc, t);
        }
      },
      // map_d's inner dimension is D's rows here.
      [&](int box) {
        return make_int2(static_cast<int>(row0) + (box / kBoxesPerSlab) * 64,
                         static_cast<int>(col0) + (box % kBoxesPerSlab) * kColumnStoreBoxColumns);
      });
  if constexpr (kFirstBox + kBoxes < kTotal) {
    tma_store_column_round<Config, kRound + 1>(params, tile, consumer, acc, buffer, row0, col0, t);
  }
}

// Pair stores: two neighbouring columns per 32-bit store, straight from the registers,
// for fragment registers [kFirst, kBlockN / 2) of every slab (columns 2 kFirst onwards).
template <class Config, int kFirst>
__device__ __forceinline__ void store_pairs(const EpilogueParams& p, int64_t batch, int64_t row0, int64_t col0,
                                            const float (&acc)[Config::kSlabs][Config::kBlockN / 2], int t) {
  void* d = const_cast<void*>(p.d.ptr);
#pragma unroll
  for (int slab = 0; slab < Config::kSlabs; ++slab) {
#pragma unroll
    for (int i = kFirst; i < Config::kBlockN / 2; i += 2) {
      const FragmentCoord c = fragment_coord(i, t);
      const int64_t row = row0 + slab * 64 + c.row, col = col0 + c.col;
      if (row >= p.m || col >= p.n_out) continue;
      const float y0 = acc[slab][i];
      const int64_t offset = element_offset(p.d, batch, row, col);
      if (col + 1 < p.n_out) {
        const float y1 = acc[slab][i + 1];
        // offset is even: the host checked ld, batch stride and base alignment.
        reinterpret_cast<uint32_t*>(d)[offset / 2] = pack_half2(y0, y1, p.d.dtype);
      } else {
        store_float(d, p.d.dtype, offset, y0);
      }
    }
  }
}

// The plain GEMM (D = acc) with a half output, straight from the registers.
template <class Config>
__device__ __forceinline__ void store_plain(const Sm90Params& params, const TileCoord& tile, int consumer,
                                              float (&acc)[Config::kSlabs][Config::kBlockN / 2], uint8_t* epilogue_smem) {
  const EpilogueParams& p = params.epilogue;
  const int64_t row0 = int64_t{tile.m_tile} * Config::kBlockM + consumer_row_offset<Config>(consumer);
  const int64_t col0 = int64_t{tile.n_tile} * Config::kBlockN;
  const int t = threadIdx.x % 128;
  if (row0 >= p.m || col0 >= p.n_out) return;  // a cluster peer's tile past the bottom or right edge

  if constexpr (Config::kTmaStore) {
    if (params.tma_store) {
      constexpr int kBufferBoxes = Config::kSlabs * (Config::kBlockN / 64) / Config::kStoreRounds;
      uint8_t* buffer = epilogue_smem + consumer * kBufferBoxes * kStoreBoxBytes;
      if constexpr (Config::kElementBytes == 2 && Config::kBlockN % kColumnStoreBoxColumns == 0) {
        if (params.tma_store_columns) {
          tma_store_column_round<Config, 0>(params, tile, consumer, acc, buffer, row0, col0, t);
          return;
        }
      }
      tma_store_round<Config, 0>(params, tile, consumer, acc, buffer, row0, col0, t);
      // TMA-storable implies pair-storable (16-byte rows and base).
      if constexpr (Config::kTmaStoreColumns < Config::kBlockN) {
        store_pairs<Config, Config::kTmaStoreColumns / 2>(p, tile.batch, row0, col0, acc, t);
      }
      return;
    }
  }
  if (params.pair_store) store_pairs<Config, 0>(p, tile.batch, row0, col0, acc, t);
}

// ---- the staged path ----

// A warp's chunk: 16 rows (the warp's share of a 64-row slab) x 32 fp32 columns. The
// pitch of 40 floats (8 mod 32 banks) makes the fragment's 64-bit stores conflict-free:
// a half-warp writes rows r..r+3 at 8-bank offsets, columns 0..7 within each.
inline constexpr int kStagePitch = 40;
inline constexpr int kStageChunkBytes = 16 * kStagePitch * 4;

// The chunks of one slab: plain, 32 consecutive GEMM columns, the last one 16 where the
// tile width is an odd multiple of 16 (80, 112, ...); SwiGLU, 16 gate columns in stage
// columns 0-15 and their up columns (64 further right) in 16-31.
template <int kBlockN>
inline constexpr int kPlainChunks = (kBlockN + 31) / 32;
template <int kBlockN>
constexpr int plain_chunk_columns(int chunk) {
  return kBlockN - 32 * chunk < 32 ? kBlockN - 32 * chunk : 32;
}
template <int kBlockN>
inline constexpr int kSwiGLUChunks = kBlockN / 128 * 4;

// Copies fragment registers [first, first + count) to the stage at stage column
// `col - col_shift` (fragment layout: fragment_epilogue.cuh); rows are the warp's 16.
template <int kFirst, int kCount, int kN>
__device__ __forceinline__ void park_registers(uint32_t stage, const float (&acc)[kN], int col_shift, int lane) {
#pragma unroll
  for (int i = kFirst; i < kFirst + kCount; i += 2) {
    const int row = lane / 4 + ((i & 2) ? 8 : 0);
    const int col = (i / 4) * 8 + (lane % 4) * 2 - col_shift;
    sm90::st_shared_v2(stage + static_cast<uint32_t>(row * kStagePitch + col) * 4, acc[i], acc[i + 1]);
  }
}

// Parks chunk `chunk` of a slab. The chunk index is a run-time value (the finishing loop
// around it is rolled); each branch indexes the registers with constants.
template <int kBlockN, bool kSwiGLU, int kChunk = 0>
__device__ __forceinline__ void park_chunk(uint32_t stage, const float (&acc)[kBlockN / 2], int chunk, int lane) {
  constexpr int kChunks = kSwiGLU ? kSwiGLUChunks<kBlockN> : kPlainChunks<kBlockN>;
  if constexpr (kChunk < kChunks) {
    if (chunk == kChunk) {
      if constexpr (kSwiGLU) {
        // Gate columns 128b + 16h .. +16 are registers 64b + 8h .. +8; up is 32 later.
        constexpr int kFirst = (kChunk / 4) * 64 + (kChunk % 4) * 8;
        constexpr int kShift = (kChunk / 4) * 128 + (kChunk % 4) * 16;
        park_registers<kFirst, 8>(stage, acc, kShift, lane);
        park_registers<kFirst + 32, 8>(stage, acc, kShift + 64 - 16, lane);
      } else {
        park_registers<kChunk * 16, plain_chunk_columns<kBlockN>(kChunk) / 2>(stage, acc, kChunk * 32, lane);
      }
      return;
    }
    park_chunk<kBlockN, kSwiGLU, kChunk + 1>(stage, acc, chunk, lane);
  }
}

// The common case of finish_chunk: D row-major, no C and no per-row bias, four columns
// inside D. kVector: rows four-aligned, one vector store per four outputs; else (an odd
// leading dimension such as N = 4097) one store per output, still in the warp's 64-byte
// row segments. Only the activation, alpha, the column bias and a pointer bump per step
// remain; the dtype is a template argument. Few instructions per output matter here
// beyond their own time: in the ping-pong schedule this loop shares each SM sub-partition
// with the other warpgroup's wgmma issue, and its length showed up as tensor-pipe idle
// time (H200, 2026-11-29: bias-only +7%, bias+GELU +12% over the plain GEMM at 8192^3
// with ~37 instructions per output).
template <Activation kAct, class Out, bool kVector>
__device__ __forceinline__ void finish_rows(const EpilogueParams& p, uint32_t stage, int64_t batch, int64_t row0,
                                            int64_t out_col, const ColumnBias& bias, int first_row, int rows_per_step,
                                            int lane_col) {
  constexpr bool kSwiGLU = kAct == Activation::kSwiGLU;
  const int rows = static_cast<int>(p.m - row0 < 16 ? p.m - row0 : 16);
  Out* out = static_cast<Out*>(const_cast<void*>(p.d.ptr)) + batch * p.d.batch_stride +
             (row0 + first_row) * p.d.row_stride + out_col;
  const int64_t out_step = int64_t{rows_per_step} * p.d.row_stride;
  uint32_t in = stage + static_cast<uint32_t>(first_row * kStagePitch + lane_col) * 4;
  const uint32_t in_step = static_cast<uint32_t>(rows_per_step * kStagePitch) * 4;
#pragma unroll 1
  for (int r = first_row; r < rows; r += rows_per_step, out += out_step, in += in_step) {
    const float4 gate = sm90::ld_shared_v4(in);
    float4 up = gate;
    if constexpr (kSwiGLU) up = sm90::ld_shared_v4(in + 16 * 4);
    float y[4];
    activate_four<kAct>(p, bias, gate, up, y);
    store_four_as<Out, kVector>(out, y);
  }
}

// finish_rows for D's dtype; false (nothing stored) for an fp32 D whose rows are not
// four-aligned, which is rare enough for finish_chunk's general loop.
template <Activation kAct, bool kVector>
__device__ __forceinline__ bool finish_rows_of_dtype(const EpilogueParams& p, uint32_t stage, int64_t batch,
                                                     int64_t row0, int64_t out_col, const ColumnBias& bias,
                                                     int first_row, int rows_per_step, int lane_col) {
  switch (p.d.dtype) {
    case DataType::kBF16:
      finish_rows<kAct, __nv_bfloat16, kVector>(p, stage, batch, row0, out_col, bias, first_row, rows_per_step,
                                                lane_col);
      return true;
    case DataType::kF16:
      finish_rows<kAct, __half, kVector>(p, stage, batch, row0, out_col, bias, first_row, rows_per_step, lane_col);
      return true;
    default:
      if constexpr (kVector) {
        finish_rows<kAct, float, true>(p, stage, batch, row0, out_col, bias, first_row, rows_per_step, lane_col);
        return true;
      }
      return false;
  }
}

// Finishes a parked chunk: 16 rows from `row0`; output columns from `out_col0`, GEMM
// (bias) columns from `gemm_col0`, the chunk `chunk_cols` wide (32, or a tile's last 16).
// Lane l takes four neighbouring columns, eight (plain) or four (SwiGLU) groups per row,
// so a warp step covers whole 64- or 32-byte row segments; the lane's columns are the
// same on every step, so their bias is loaded once. The step loop stays rolled:
// unrolled, ptxas interleaves the steps' activation math and runs out of registers next
// to the live accumulators. kShortChunks: some chunk is narrower than 32 columns (tile
// widths that are odd multiples of 16); otherwise chunk_cols is not read.
template <Activation kAct, bool kShortChunks>
__device__ __forceinline__ void finish_chunk(const EpilogueParams& p, uint32_t stage, int64_t batch, int64_t row0,
                                             int64_t out_col0, int64_t gemm_col0, int64_t gemm_cols, int chunk_cols,
                                             int lane) {
  constexpr bool kSwiGLU = kAct == Activation::kSwiGLU;
  constexpr int kGroupsPerRow = kSwiGLU ? 4 : 8;
  constexpr int kRowsPerStep = 32 / kGroupsPerRow;
  const int c = (lane % kGroupsPerRow) * 4;
  if ((kShortChunks && c >= chunk_cols) || out_col0 + c >= p.n_out) return;
  const ColumnBias bias = load_column_bias(p, kSwiGLU, gemm_col0 + c, gemm_cols);
  if (p.row_major_simple && out_col0 + c + 4 <= p.n_out) {
    const int first_row = lane / kGroupsPerRow;
    const bool done = p.four_wide
                          ? finish_rows_of_dtype<kAct, true>(p, stage, batch, row0, out_col0 + c, bias, first_row,
                                                             kRowsPerStep, c)
                          : finish_rows_of_dtype<kAct, false>(p, stage, batch, row0, out_col0 + c, bias, first_row,
                                                              kRowsPerStep, c);
    if (done) return;
  }
#pragma unroll 1
  for (int step = 0; step < 16 / kRowsPerStep; ++step) {
    const int r = lane / kGroupsPerRow + step * kRowsPerStep;
    const int64_t row = row0 + r;
    if (row >= p.m) break;
    const uint32_t in = stage + static_cast<uint32_t>(r * kStagePitch + c) * 4;
    const float4 gate = sm90::ld_shared_v4(in);
    const float4 up = kSwiGLU ? sm90::ld_shared_v4(in + 16 * 4) : gate;
    finish_four<kAct>(p, batch, row, out_col0 + c, bias, gate, up);
  }
}

// One warp's 16 accumulator rows in the fragment layout (fragment_epilogue.cuh): the m64
// wgmma fragment's rows of this warp, or a Blackwell tcgen05.ld of shape 16x256b, which
// hands out the same layout. Parked chunk by chunk in the warp's `stage` and finished from
// there: rows from `row0`, GEMM columns from `gemm_tile_col`.
template <int kBlockN, Activation kAct>
__device__ __forceinline__ void store_rows_staged(const EpilogueParams& p, uint32_t stage,
                                                  const float (&acc)[kBlockN / 2], int64_t batch, int64_t row0,
                                                  int64_t gemm_tile_col, int64_t gemm_cols, int lane) {
  constexpr bool kSwiGLU = kAct == Activation::kSwiGLU;
  constexpr int kChunks = kSwiGLU ? kSwiGLUChunks<kBlockN> : kPlainChunks<kBlockN>;
#pragma unroll 1
  for (int chunk = 0; chunk < kChunks; ++chunk) {
    __syncwarp();  // the previous chunk's reads are done before it is overwritten
    park_chunk<kBlockN, kSwiGLU>(stage, acc, chunk, lane);
    __syncwarp();
    // Plain: columns 32 c ..; SwiGLU: gate columns 128 (c / 4) + 16 (c % 4) .., whose
    // outputs are 64 (c / 4) + 16 (c % 4) ...
    const int64_t gemm_col0 = gemm_tile_col + (kSwiGLU ? (chunk / 4) * 128 + (chunk % 4) * 16 : chunk * 32);
    const int64_t out_col0 = kSwiGLU ? gemm_tile_col / 2 + (chunk / 4) * 64 + (chunk % 4) * 16 : gemm_col0;
    constexpr bool kShortChunks = !kSwiGLU && kBlockN % 32 != 0;
    const int chunk_cols = kShortChunks ? plain_chunk_columns<kBlockN>(chunk) : 32;
    finish_chunk<kAct, kShortChunks>(p, stage, batch, row0, out_col0, gemm_col0, gemm_cols, chunk_cols, lane);
  }
}

template <class Config, Activation kAct>
__device__ __forceinline__ void store_staged(const EpilogueParams& p, const TileCoord& tile, int consumer,
                                             float (&acc)[Config::kSlabs][Config::kBlockN / 2], uint8_t* epilogue_smem) {
  constexpr bool kSwiGLU = kAct == Activation::kSwiGLU;
  static_assert(Config::kEpilogueBytes >= Config::kConsumers * 4 * kStageChunkBytes, "a chunk per consumer warp");
  const int warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
  const uint32_t stage = sm90::smem_addr(epilogue_smem + (consumer * 4 + warp) * kStageChunkBytes);
  const int64_t gemm_tile_col = int64_t{tile.n_tile} * Config::kBlockN;
  const int64_t gemm_cols = kSwiGLU ? 2 * p.n_out : p.n_out;
  if (gemm_tile_col >= gemm_cols) return;  // a cluster peer's tile past the right edge
#pragma unroll
  for (int slab = 0; slab < Config::kSlabs; ++slab) {
    const int64_t row0 =
        int64_t{tile.m_tile} * Config::kBlockM + consumer_row_offset<Config>(consumer) + slab * 64 + warp * 16;
    if (row0 >= p.m) continue;
    store_rows_staged<Config::kBlockN, kAct>(p, stage, acc[slab], tile.batch, row0, gemm_tile_col, gemm_cols, lane);
  }
}

// The plain GEMM with a half output takes the direct paths; everything else is staged,
// with one instantiation per activation chosen once per tile.
template <class Config>
__device__ __forceinline__ void store_tile(const Sm90Params& params, const TileCoord& tile, int consumer,
                                           float (&acc)[Config::kSlabs][Config::kBlockN / 2], uint8_t* epilogue_smem) {
  const EpilogueParams& p = params.epilogue;
  if (params.tma_store || params.pair_store) return store_plain<Config>(params, tile, consumer, acc, epilogue_smem);
  visit_activation(p.activation, [&](auto act) {
    constexpr Activation kAct = decltype(act)::value;
    // SwiGLU needs 128-column gate/up pairs; the host refuses it for other tile widths.
    if constexpr (kAct != Activation::kSwiGLU || Config::kBlockN % 128 == 0) {
      store_staged<Config, kAct>(p, tile, consumer, acc, epilogue_smem);
    }
  });
}

// A tile whose rows must stop at p.m exactly, with no tensor map that knows where: a
// grouped GEMM's expert ends at a row its next expert's output starts on (p.d points at the
// expert's first row, p.m is its row count, p.bias its column bias). The register paths
// test every row against p.m: pair stores for the plain GEMM, else the staged epilogue.
template <class Config>
__device__ __forceinline__ void store_tile_clipped(const EpilogueParams& p, bool pair_store, const TileCoord& tile,
                                                   int consumer, float (&acc)[Config::kSlabs][Config::kBlockN / 2],
                                                   uint8_t* epilogue_smem) {
  if (pair_store) {
    const int64_t row0 = int64_t{tile.m_tile} * Config::kBlockM + consumer_row_offset<Config>(consumer);
    const int64_t col0 = int64_t{tile.n_tile} * Config::kBlockN;
    if (row0 >= p.m || col0 >= p.n_out) return;
    store_pairs<Config, 0>(p, tile.batch, row0, col0, acc, threadIdx.x % 128);
    return;
  }
  visit_activation(p.activation, [&](auto act) {
    constexpr Activation kAct = decltype(act)::value;
    if constexpr (kAct != Activation::kSwiGLU || Config::kBlockN % 128 == 0) {
      store_staged<Config, kAct>(p, tile, consumer, acc, epilogue_smem);
    }
  });
}

// Outstanding TMA stores must complete before the CTA's shared memory goes away.
template <class Config>
__device__ __forceinline__ void finish_epilogue(const Sm90Params& params) {
  if constexpr (Config::kTmaStore) {
    if (params.tma_store && threadIdx.x % 128 == 0) sm90::tma_store_wait_all<0>();
  }
}

}  // namespace anvil::detail
