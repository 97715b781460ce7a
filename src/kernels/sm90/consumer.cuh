// A consumer warpgroup's mainloop for one tile: wait for a full stage, issue its wgmma
// instructions, and free the stage it finished with. One wgmma group stays in flight
// while the next stage is awaited, so the tensor core never drains between K steps;
// a stage is released only once the group that read it has retired.
#pragma once

#include "arch/sm90/ld_st_shared.cuh"
#include "arch/sm90/mbarrier.cuh"
#include "arch/sm90/named_barrier.cuh"
#include "arch/sm90/wgmma.cuh"
#include "kernels/sm90/kernel_config.h"
#include "kernels/sm90/params.h"
#include "kernels/sm90/pipeline.cuh"
#include "kernels/sm90/tile_scheduler.cuh"

namespace anvil::detail {

// Bytes per input element of a configuration: KernelConfig says (2 or 1); the decode
// kernels' configurations, which read bf16/fp16 only, do not.
template <class Config>
constexpr int input_bytes() {
  if constexpr (requires { Config::kElementBytes; }) {
    return Config::kElementBytes;
  } else {
    return 2;
  }
}

template <class Config>
__device__ __forceinline__ void release_stage(StageBarriers<Config::kStages>& barriers, int stage) {
  const int t = threadIdx.x % 128;
  if constexpr (Config::kReleaseCtas == 1) {
    if (t == 0) sm90::mbarrier_arrive(&barriers.empty[stage]);
  } else {
    // Thread r signals CTA r: the remote arrivals go out in parallel, not one after another.
    if (t < Config::kReleaseCtas) sm90::mbarrier_arrive_cluster(&barriers.empty[stage], t);
  }
}

// A warpgroup that multiplies nothing for a tile (its rows or columns all lie past the
// output) still takes each stage in turn and frees it. Its four warps pass a warpgroup
// barrier between the wait and the release: without wgmma, nothing else holds them level,
// and a warp left behind while warp 0 frees the stage could see the stage refilled a whole
// lap later and then wait for a phase parity that has already come round again, forever.
template <class Config>
__device__ __forceinline__ void pass_stages(StageBarriers<Config::kStages>& barriers, StageRing<Config::kStages>& ring,
                                            int consumer, int k_tiles) {
  for (int kt = 0; kt < k_tiles; ++kt) {
    sm90::mbarrier_wait(&barriers.full[ring.stage], ring.phase);
    sm90::warpgroup_sync(consumer);
    release_stage<Config>(barriers, ring.stage);
    ring.advance();
  }
}

// mainloop_done (ping-pong only, else null) is arrived on once the last stage has been
// waited for and its wgmma issued: the other warpgroup may then start its tile.
// no_rows (8-bit configurations only): every row of this warpgroup is past M, as for the
// second warpgroup of a tile when M <= 64. It then waits for and frees each stage like the
// others but multiplies nothing: the rows would be TMA's zeros, never stored, and the
// tensor cores are the bound of small-M FP8 tiles.
template <class Config, sm90::Input kInput>
__device__ __forceinline__ void run_consumer_mainloop(float (&acc)[Config::kSlabs][Config::kBlockN / 2], int consumer,
                                                      int k_tiles, StageRing<Config::kStages>& ring,
                                                      uint8_t (*tiles_a)[Config::kStageBytesA],
                                                      uint8_t (*tiles_b)[Config::kStageBytesB],
                                                      StageBarriers<Config::kStages>& barriers,
                                                      uint64_t* mainloop_done = nullptr, bool no_rows = false,
                                                      int a_shift_rows = 0) {
  using Mma = sm90::WgmmaSS<Config::kBlockN, kInput>;
  if constexpr (input_bytes<Config>() == 1) {
    if (no_rows) {
#pragma unroll
      for (int slab = 0; slab < Config::kSlabs; ++slab) {
#pragma unroll
        for (int i = 0; i < Config::kBlockN / 2; ++i) acc[slab][i] = 0.0f;
      }
      pass_stages<Config>(barriers, ring, consumer, k_tiles);
      if (mainloop_done != nullptr && threadIdx.x % 128 == 0) sm90::mbarrier_arrive(mainloop_done);
      return;
    }
  }
  // Every descriptor is stage 0's plus a byte offset in its 16-byte address field (bits
  // 0-13), which shared memory (under 256 KiB) never carries out of: built once here, so
  // that a K step issues little besides its wgmma instructions. Rebuilding each one from
  // its address (mask, shift, OR, per descriptor) kept a narrow tile's consumer warps
  // issuing while the tensor cores waited for their next group.
  // a_shift_rows: the producer moved this tile's A box up that many rows (a_box_shift), so
  // the tile's rows start that far into the stage.
  const uint64_t desc_a0 =
      sm90::make_kmajor_sw128_desc(tiles_a[0] + (consumer_row_offset<Config>(consumer) + a_shift_rows) * 128);
  const uint64_t desc_b0 = sm90::make_kmajor_sw128_desc(tiles_b[0]);
  int previous_stage = -1;
  for (int kt = 0; kt < k_tiles; ++kt) {
    sm90::mbarrier_wait(&barriers.full[ring.stage], ring.phase);
    sm90::wgmma_fence();
    const uint64_t desc_a = sm90::advance_desc(desc_a0, ring.stage * (Config::kStageBytesA / 16));
    const uint64_t desc_b = sm90::advance_desc(desc_b0, ring.stage * (Config::kStageBytesB / 16));
    // A stage wider than one swizzle row along K holds one 128-byte-swizzled box per row
    // width (64 bf16 or 128 fp8 values), box after box: kBlockM (A) or kBlockN (B) rows each.
    constexpr int kBoxBytesA = Config::kBlockM * 128, kBoxBytesB = Config::kBlockN * 128;
#pragma unroll
    for (int kk = 0; kk < Config::kBlockK * input_bytes<Config>() / 32; ++kk) {
      const int box = kk / 4, step = kk % 4;
#pragma unroll
      for (int slab = 0; slab < Config::kSlabs; ++slab) {
        // 64 rows x 128 bytes per slab; a K step (k16 of 16-bit or k32 of 8-bit values) is
        // 32 bytes along each swizzled row.
        const uint32_t a_units = (box * kBoxBytesA + slab * 64 * 128 + step * 32) / 16;
        const uint32_t b_units = (box * kBoxBytesB + step * 32) / 16;
        Mma::template mma<0, 0>(acc[slab], sm90::advance_desc(desc_a, a_units), sm90::advance_desc(desc_b, b_units),
                                kt > 0 || kk > 0);
      }
    }
    sm90::wgmma_commit_group();
    sm90::wgmma_wait_group<1>();
    if (previous_stage >= 0) release_stage<Config>(barriers, previous_stage);
    previous_stage = ring.stage;
    ring.advance();
  }
  if (mainloop_done != nullptr && threadIdx.x % 128 == 0) sm90::mbarrier_arrive(mainloop_done);
  sm90::wgmma_wait_group<0>();
#pragma unroll
  for (int slab = 0; slab < Config::kSlabs; ++slab) sm90::wgmma_fence_operands(acc[slab]);
  release_stage<Config>(barriers, previous_stage);
}

// Batch-invariant mode's K split inside one CTA (KernelSpec::fold_k_slices): each of
// `slices` slices of the tile's k-tiles is summed by the plain mainloop from zero, and the
// slices' sums are added in slice order into a running total - the same fp32 operations,
// in the same order, as sm90-decode's cluster of `slices` CTAs, whose rank r sums the same
// k-tiles and whose reduction adds the ranks' partials in rank order (split_k_reduce.cuh).
// So a row's bits do not depend on which of the two kernels ran it, and the split costs no
// memory: beyond the decode kernels' range every tile still runs its whole K in one CTA.
// Each slice ends with the wgmma pipeline drained (run_consumer_mainloop waits for its
// last group); the producer keeps the ring full meanwhile.
template <class Config, sm90::Input kInput>
__device__ __forceinline__ void run_sliced_mainloop(float (&acc)[Config::kSlabs][Config::kBlockN / 2], int consumer,
                                                    int k_tiles, int slices, StageRing<Config::kStages>& ring,
                                                    uint8_t (*tiles_a)[Config::kStageBytesA],
                                                    uint8_t (*tiles_b)[Config::kStageBytesB],
                                                    StageBarriers<Config::kStages>& barriers, int a_shift_rows = 0) {
  static_assert(Config::kFoldKSlices && Config::kSlabs == 1, "one slab: the total doubles its registers");
  constexpr int kAcc = Config::kBlockN / 2;
  const auto slice_end = [&](int slice) { return static_cast<int>(int64_t{slice} * k_tiles / slices); };
  run_consumer_mainloop<Config, kInput>(acc, consumer, slice_end(1), ring, tiles_a, tiles_b, barriers, nullptr, false,
                                        a_shift_rows);
  if (slices == 1) return;
  float total[kAcc];
#pragma unroll
  for (int i = 0; i < kAcc; ++i) total[i] = acc[0][i];
  for (int slice = 1; slice + 1 < slices; ++slice) {
    run_consumer_mainloop<Config, kInput>(acc, consumer, slice_end(slice + 1) - slice_end(slice), ring, tiles_a,
                                          tiles_b, barriers, nullptr, false, a_shift_rows);
#pragma unroll
    for (int i = 0; i < kAcc; ++i) total[i] += acc[0][i];
  }
  // The last slice's sum is added where the epilogue reads it: the total dies here.
  run_consumer_mainloop<Config, kInput>(acc, consumer, k_tiles - slice_end(slices - 1), ring, tiles_a, tiles_b,
                                        barriers, nullptr, false, a_shift_rows);
#pragma unroll
  for (int i = 0; i < kAcc; ++i) acc[0][i] = total[i] + acc[0][i];
}

// The mainloop with DeepSeek-V3 block scales (ScaleMode::kBlock128): every stage is one
// 128-wide K block, which wgmma sums into `part` from zero; once it has retired, the
// warpgroup adds part * sa(row, kb) * sb(n block, kb) to the fp32 total in acc. The tensor
// cores' FP8 accumulation keeps fewer mantissa bits than fp32 (docs/fp8.md measures the
// difference), so the running total never stays in it for more than one K block.
//
// The tensor core idles from the moment a block's wgmma group retires until the next
// block's group is issued, unless the other warpgroup's group fills the gap; so that gap
// holds only the promotion's FMAs and the next group's issue. Everything else is done
// while the group runs: the next stage's full-barrier wait, the reads of its A scales,
// which came into the stage with the operands (producer.cuh), the B scale loads (two
// blocks ahead: a block's wgmma takes a few hundred cycles, less than a first read from
// DRAM; a 192-wide tile's second scale block one ahead), and the descriptors, which are
// the first stage's plus a constant offset. A stage's scales are read into registers before the stage is freed, which is as soon as
// its group retires: the promotion needs only registers. K blocks past the last read the
// last one's B scale: those sums are never computed.
template <class Config, sm90::Input kInput>
__device__ __forceinline__ void run_block_scaled_mainloop(float (&acc)[Config::kSlabs][Config::kBlockN / 2],
                                                          int consumer, int k_tiles, const Fp8Scales& scales,
                                                          const TileCoord& tile, const ScaleLine& line,
                                                          int64_t tile_row, StageRing<Config::kStages>& ring,
                                                          uint8_t (*tiles_a)[Config::kStageBytesA],
                                                          uint8_t (*tiles_b)[Config::kStageBytesB],
                                                          const float (*stage_scales_a)[kScaleSlotFloats<Config::kBlockM>],
                                                          StageBarriers<Config::kStages>& barriers,
                                                          int a_shift_rows = 0) {
  static_assert(Config::kBlockScales && Config::kBlockK == 128, "one 128-wide scale block of K per stage");
  using Mma = sm90::WgmmaSS<Config::kBlockN, kInput>;
  constexpr int kAcc = Config::kBlockN / 2;
  float part[kAcc];
#pragma unroll
  for (int i = 0; i < kAcc; ++i) acc[0][i] = 0.0f;
  const int t = threadIdx.x % 128;
  // Every row of this warpgroup past M (the second warpgroup when M <= 64), or every column
  // of the tile past N (a pair along N's second CTA when the tile columns are odd): wait
  // for and free the stages, multiply nothing and read no scale (run_consumer_mainloop's
  // no_rows; such outputs are never stored).
  const bool no_rows = int64_t{tile.m_tile} * Config::kBlockM + consumer_row_offset<Config>(consumer) >= scales.rows;
  const bool no_cols = int64_t{tile.n_tile} * Config::kBlockN >= scales.cols;
  if (no_rows || no_cols) {
    pass_stages<Config>(barriers, ring, consumer, k_tiles);
    return;
  }
  if (k_tiles == 0) return;
  // This launch's K blocks [first, first + k_tiles) of the problem's k_blocks: all of
  // them, or one split-K slice's (the batch index is then the slice, Fp8Scales).
  const int64_t first = int64_t{tile.batch} * scales.k_blocks_per_batch;
  // The tile's columns [n0, n0 + kBlockN) lie in B's scale block n0 / 128 and, for a
  // 192-wide tile, the next one: its 64-column chunk c in the second where
  // n0 % 128 + 64 c >= 128 - never chunk 0, always chunk 2, chunk 1 where n0 % 128 is 64.
  // A second block past N is read as the last one: its columns are never stored.
  constexpr bool kTwoBlocks = Config::kBlockN > 128;
  const int block_lo = tile.n_tile * Config::kBlockN / 128;
  // An index, not a pointer: the base stays in the kernel's parameters (a register fewer).
  // B's scales are ceil(N/128) x ceil(K/128) floats, far below 2^31 for any weight that fits
  // in memory.
  const int scale_b_lo = static_cast<int>(int64_t{block_lo} * scales.k_blocks + first);
  // The second block's row, as an offset from the first's (one register, not a pointer's two).
  const int hi_offset = kTwoBlocks && block_lo + 1 < (scales.cols + 127) / 128 ? static_cast<int>(scales.k_blocks) : 0;
  const bool chunk1_hi = kTwoBlocks && tile.n_tile * Config::kBlockN % 128 != 0;
  struct ScalesB {
    float lo, hi;
  };
  const auto clamped = [&](int kt) { return kt < k_tiles ? kt : k_tiles - 1; };
  const auto load_scale_b_lo = [&](int kt) { return __ldg(scales.b + (scale_b_lo + clamped(kt))); };
  const auto load_scale_b_hi = [&](int kt) {
    return kTwoBlocks ? __ldg(scales.b + (scale_b_lo + clamped(kt) + hi_offset)) : 0.0f;
  };
  // The two rows of the tile this thread's fragment holds (fragment_epilogue.cuh): l / 4
  // and l / 4 + 8 of its warp's 16. Read with ld.shared: the ring's address went through
  // integer arithmetic (its alignment), so plain C++ reads would compile to generic loads.
  // A stage's box starts `lead` floats before the tile's first scale (params.h,
  // kScaleBoxLead); the lead steps by the line's stride mod 4 from one K block to the next.
  const int row = consumer_row_offset<Config>(consumer) + (t / 32) * 16 + (t % 32) / 4;
  const uint32_t scales_a0 = sm90::smem_addr(&stage_scales_a[0][row]);
  const int lead_step = static_cast<int>(line.rows & 3);
  int lead = static_cast<int>(line.element(0, tile_row) & 3);
  struct ScalesA {
    float a0, a1;
  };
  const auto read_scales_a = [&](int stage) {
    const uint32_t at = scales_a0 + static_cast<uint32_t>((stage * kScaleSlotFloats<Config::kBlockM> + lead) * 4);
    lead = (lead + lead_step) & 3;
    return ScalesA{sm90::ld_shared_f32(at), sm90::ld_shared_f32(at + 8 * 4)};
  };
  // Stage s's descriptors: stage 0's plus s stages' bytes in the 16-byte address field
  // (bits 0-13), which shared memory (under 256 KiB) never carries out of.
  const uint64_t desc_a0 =
      sm90::make_kmajor_sw128_desc(tiles_a[0] + (consumer_row_offset<Config>(consumer) + a_shift_rows) * 128);
  const uint64_t desc_b0 = sm90::make_kmajor_sw128_desc(tiles_b[0]);
  const auto issue_block = [&](int stage) {
    const uint64_t desc_a = desc_a0 + static_cast<uint64_t>(stage * (Config::kStageBytesA >> 4));
    const uint64_t desc_b = desc_b0 + static_cast<uint64_t>(stage * (Config::kStageBytesB >> 4));
    sm90::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < Config::kRowBytes / 32; ++kk) {
      // A K step of 32 8-bit values is 32 bytes along each swizzled row: 2 in the field.
      Mma::template mma<0, 0>(part, desc_a + 2 * kk, desc_b + 2 * kk, kk > 0);
    }
    sm90::wgmma_commit_group();
  };

  // Block kt's B scale, loaded at the top of iteration kt - 2 and only moved since.
  // The first block's scale two blocks ahead; the 192-wide tile's second one block ahead
  // (a register fewer: its 192 sums leave none to spare).
  ScalesB b_now{}, b_next{load_scale_b_lo(0), load_scale_b_hi(0)};
  float b_after_next = load_scale_b_lo(1);
  // Waits for the group reading `stage`, frees the stage and adds the block to the total.
  // Sum i holds row (i & 2 ? 8 : 0) + lane / 4 of its warp's 16 and column group i / 4 of
  // 8 (fragment_epilogue.cuh): chunk i / 32 of 64 columns.
  const auto retire_block = [&](int stage, const ScalesA& a) {
    sm90::wgmma_wait_group<0>();
    sm90::wgmma_fence_operands(part);
    release_stage<Config>(barriers, stage);
    const float lo0 = a.a0 * b_now.lo, lo1 = a.a1 * b_now.lo;
    float hi0 = lo0, hi1 = lo1;
    if constexpr (kTwoBlocks) hi0 = a.a0 * b_now.hi, hi1 = a.a1 * b_now.hi;
    const float mid0 = chunk1_hi ? hi0 : lo0, mid1 = chunk1_hi ? hi1 : lo1;
#pragma unroll
    for (int i = 0; i < kAcc; ++i) {
      const int chunk = i / 32;
      const float f = chunk == 0 ? ((i & 2) ? lo1 : lo0) : chunk == 1 ? ((i & 2) ? mid1 : mid0) : ((i & 2) ? hi1 : hi0);
      acc[0][i] = fmaf(part[i], f, acc[0][i]);
    }
  };
  sm90::mbarrier_wait(&barriers.full[ring.stage], ring.phase);
  ScalesA a_now = read_scales_a(ring.stage);
  issue_block(ring.stage);
  // Every block but the last issues its successor; no wgmma sits on a conditional path,
  // which would make ptxas serialize them.
  // Unrolled by the B scales' three-block rotation: rolled, the loop copies each loaded
  // value one place along at its end, which waits for the load issued at its top. The
  // 192-wide tile unrolls without spilling only with the register savings above
  // (docs/notes/fp8-block-promotion.md).
#pragma unroll 3
  for (int kt = 0; kt + 1 < k_tiles; ++kt) {
    b_now = b_next;
    b_next = ScalesB{b_after_next, load_scale_b_hi(kt + 1)};
    b_after_next = load_scale_b_lo(kt + 2);
    const int stage = ring.stage;
    ring.advance();
    sm90::mbarrier_wait(&barriers.full[ring.stage], ring.phase);
    const ScalesA a_next = read_scales_a(ring.stage);
    retire_block(stage, a_now);
    issue_block(ring.stage);
    a_now = a_next;
  }
  b_now = b_next;
  const int last_stage = ring.stage;
  ring.advance();
  retire_block(last_stage, a_now);
}

}  // namespace anvil::detail
