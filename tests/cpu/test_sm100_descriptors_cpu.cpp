// The tcgen05 descriptor encoders against values worked out by hand from the PTX ISA's
// field tables (arch/sm100/descriptors.h quotes them). No GPU: the encoders are constexpr.
#include <gtest/gtest.h>

#include <cstdint>

#include "arch/sm100/descriptors.h"
#include "kernels/sm100/budget.h"

namespace {

using namespace anvil::sm100;

// bf16 x bf16 -> f32, A and B K-major, M = 128, N = 256:
//   D format  F32 = 1  at bits 4-5    1 << 4        = 0x00000010
//   A format BF16 = 1  at bits 7-9    1 << 7        = 0x00000080
//   B format BF16 = 1  at bits 10-12  1 << 10       = 0x00000400
//   transpose A/B = 0  (K-major)                    = 0
//   N >> 3 = 32        at bits 17-22  32 << 17      = 0x00400000
//   M >> 4 = 8         at bits 24-28  8 << 24       = 0x08000000
//   sum                                             = 0x08400490
TEST(Sm100InstructionDescriptor, Bf16F32M128N256) {
  EXPECT_EQ(1u << 4, 0x10u);
  EXPECT_EQ(1u << 7, 0x80u);
  EXPECT_EQ(1u << 10, 0x400u);
  EXPECT_EQ(32u << 17, 0x00400000u);
  EXPECT_EQ(8u << 24, 0x08000000u);
  EXPECT_EQ(make_idesc_f16(MmaInput::kBF16, MmaInput::kBF16, MmaAccum::kF32, 128, 256), 0x08400490u);
}

// M = 64, N = 128: N >> 3 = 16 -> 16 << 17 = 0x00200000; M >> 4 = 4 -> 4 << 24 =
// 0x04000000; the type fields as above (0x490): 0x04200490.
TEST(Sm100InstructionDescriptor, Bf16F32M64N128) {
  EXPECT_EQ(16u << 17, 0x00200000u);
  EXPECT_EQ(4u << 24, 0x04000000u);
  EXPECT_EQ(make_idesc_f16(MmaInput::kBF16, MmaInput::kBF16, MmaAccum::kF32, 64, 128), 0x04200490u);
}

// The pair's instruction (cta_group::2, M = 256, N = 256): M >> 4 = 16 -> 0x10000000.
// fp16 inputs clear the two format fields (0x10 remains of 0x490).
TEST(Sm100InstructionDescriptor, PairShapeAndF16Inputs) {
  EXPECT_EQ(make_idesc_f16(MmaInput::kBF16, MmaInput::kBF16, MmaAccum::kF32, 256, 256), 0x10400490u);
  EXPECT_EQ(make_idesc_f16(MmaInput::kF16, MmaInput::kF16, MmaAccum::kF32, 128, 256), 0x08400010u);
  // An fp16 accumulator clears bit 4.
  EXPECT_EQ(make_idesc_f16(MmaInput::kF16, MmaInput::kF16, MmaAccum::kF16, 128, 256), 0x08400000u);
  // Transposed (MN-major) operands set bits 15 and 16.
  EXPECT_EQ(make_idesc_f16(MmaInput::kBF16, MmaInput::kBF16, MmaAccum::kF32, 128, 256, MajorOrder::kMN,
                           MajorOrder::kMN),
            0x08400490u | (1u << 15) | (1u << 16));
  // The fields do not overlap: the largest M and N stay inside bits 17-22 and 24-28.
  const uint32_t n_field = make_idesc_f16(MmaInput::kF16, MmaInput::kF16, MmaAccum::kF16, 0, 256 + 248);
  EXPECT_EQ(n_field, 63u << 17);
}

TEST(Sm100InstructionDescriptor, ValidShapes) {
  EXPECT_TRUE(valid_f16_shape(1, 128, 256));
  EXPECT_TRUE(valid_f16_shape(1, 64, 8));
  EXPECT_FALSE(valid_f16_shape(1, 128, 8));   // M = 128 needs N % 16 == 0
  EXPECT_FALSE(valid_f16_shape(1, 256, 256)); // M = 256 only as a pair
  EXPECT_TRUE(valid_f16_shape(2, 256, 256));
  EXPECT_TRUE(valid_f16_shape(2, 128, 32));
  EXPECT_FALSE(valid_f16_shape(2, 128, 16));  // the pair's M = 128 needs N % 32 == 0
  EXPECT_FALSE(valid_f16_shape(2, 256, 264));
}

// A 128-byte-swizzled K-major tile at shared address 0x1_0400 (1024-byte aligned):
//   start  0x10400 >> 4 = 0x1040           bits 0-13   0x0000000000001040
//   LBO    16 >> 4 = 1                     bits 16-29  0x0000000000010000
//   SBO    1024 >> 4 = 64 = 0x40           bits 32-45  0x0000004000000000
//   version 0b001                          bit 46      0x0000400000000000
//   base offset 0                          bits 49-51  0
//   LBO mode 0                             bit 52      0
//   swizzle 128B = 2                       bits 61-63  0x4000000000000000
//   sum                                                0x4000404000011040
TEST(Sm100SmemDescriptor, KMajorSwizzle128) {
  EXPECT_EQ(uint64_t{0x40} << 32, 0x0000004000000000ull);
  EXPECT_EQ(uint64_t{1} << 46, 0x0000400000000000ull);
  EXPECT_EQ(uint64_t{2} << 61, 0x4000000000000000ull);
  EXPECT_EQ(make_kmajor_sw128_desc(0x10400), 0x4000404000011040ull);
}

// Each K = 16 slice is 32 bytes further along the swizzle row: start field + 2.
TEST(Sm100SmemDescriptor, KSliceAdvance) {
  const uint64_t d0 = make_kmajor_sw128_desc(0x10400);
  EXPECT_EQ(advance_kmajor_sw128_desc(d0, 1), make_kmajor_sw128_desc(0x10400 + 32));
  EXPECT_EQ(advance_kmajor_sw128_desc(d0, 3), make_kmajor_sw128_desc(0x10400 + 96));
  // Four slices cover the 128-byte row without carrying out of the start field.
  EXPECT_EQ(advance_kmajor_sw128_desc(d0, 3) & 0x3FFF, (0x10400u + 96u) >> 4);
}

// The other swizzle codes land in bits 61-63 as the table numbers them; the fields are
// masked to their 14 bits; the base offset sits at bits 49-51.
TEST(Sm100SmemDescriptor, FieldsAndSwizzleCodes) {
  EXPECT_EQ(make_smem_desc(0, 0, 0, SmemSwizzle::kNone), uint64_t{1} << 46);
  EXPECT_EQ(make_smem_desc(0, 0, 0, SmemSwizzle::k128BAtom32B) >> 61, 1u);
  EXPECT_EQ(make_smem_desc(0, 0, 0, SmemSwizzle::k64B) >> 61, 4u);
  EXPECT_EQ(make_smem_desc(0, 0, 0, SmemSwizzle::k32B) >> 61, 6u);
  EXPECT_EQ(make_smem_desc(0, 0, 0, SmemSwizzle::kNone, 5), (uint64_t{1} << 46) | (uint64_t{5} << 49));
  // 256 KiB (0x40000) is past the 14-bit start field (18 address bits >> 4): masked off.
  EXPECT_EQ(make_smem_desc(0x40000, 0, 0, SmemSwizzle::kNone) & 0x3FFF, 0u);
  EXPECT_EQ(make_smem_desc(0x3FFF0, 0x3FFF0, 0x3FFF0, SmemSwizzle::kNone),
            0x3FFFull | (0x3FFFull << 16) | (0x3FFFull << 32) | (uint64_t{1} << 46));
}

// The unswizzled K-major layout (ladder configurations), worked by hand from the PTX ISA's
// canonical no-swizzle layout: core matrices of 8 rows x 16 bytes, 128 bytes apart along M
// (SBO), one TMA box (rows x 16 bytes) apart along K (LBO).
TEST(Sm100Descriptors, InterleavedKMajorTile) {
  // A 128-row tile at 0x1000: start 0x1000 >> 4 = 0x100; LBO 128 x 16 = 2048 -> 0x80 at
  // bit 16; SBO 128 -> 0x8 at bit 32; version bit 46; swizzle 0 (none) at bits 61-63.
  EXPECT_EQ(make_kmajor_interleaved_desc(0x1000, 128, 0), 0x0000400800800100ull);
  // K slice 1 (elements 16-31) starts two boxes (2 x 2048 bytes) further: 0x2000 >> 4.
  EXPECT_EQ(make_kmajor_interleaved_desc(0x1000, 128, 1), 0x0000400800800200ull);
  // The single CTA's B: 256 rows, LBO 4096 -> 0x100; slice 3 at 0x1000 + 6 x 4096.
  EXPECT_EQ(make_kmajor_interleaved_desc(0x1000, 256, 3), 0x0000400801000000ull | ((0x1000 + 6 * 4096) >> 4));
}

// The sm_100 budget the planner reads (seed 003's arithmetic), and the pair GEMM's use of it.
TEST(Sm100Budget, PairGemmFits) {
  using namespace anvil::sm100::budget;
  EXPECT_EQ(kTmemColumns, 512);
  EXPECT_EQ(kTmemLanes, 128);
  EXPECT_EQ(kSmemPerSmBytes, 228 * 1024);
  // 2 x 256 fp32 accumulator columns fill TMEM exactly.
  EXPECT_EQ(kAccumulatorBuffers * kAccumulatorColumns, kTmemColumns);
  // Seed 003's calculator: 256 x 256 pair tile, K tile 64, 3 stages, 2-byte inputs:
  // (128 * 64 + 64 * 128) * 2 = 32 KiB per stage and CTA, 96 KiB for three.
  EXPECT_EQ(pair_stage_bytes_per_cta(256, 256, 64, 2), 32 * 1024);
  EXPECT_EQ(3 * pair_stage_bytes_per_cta(256, 256, 64, 2), 96 * 1024);
  EXPECT_LE(pair_gemm_smem_bytes(kPairGemmStages), kSmemPerBlockBytes);
  EXPECT_GT(pair_gemm_smem_bytes(kPairGemmStages + 1), kSmemPerBlockBytes);
}

}  // namespace

#include "kernels/sm100/config.h"

namespace {

using anvil::detail::Sm100Config;
using anvil::detail::Sm100Schedule;
using anvil::detail::Sm100Spec;

// The pair configuration's bookkeeping: what each barrier must count.
TEST(Sm100Config, PairBarrierCounts) {
  using Pair = Sm100Config<Sm100Spec{.cta_group = 2, .stages = anvil::sm100::budget::kPairGemmStages,
                                     .schedule = Sm100Schedule::kClc}>;
  EXPECT_EQ(Pair::kBlockM, 256);
  EXPECT_EQ(Pair::kBRowsPerCta, 128);
  // Both CTAs' A (128 x 64) and B (128 x 64) halves land on the even CTA's full barrier.
  EXPECT_EQ(Pair::kStageTxBytes, 2 * (128 * 64 * 2 + 128 * 64 * 2));
  EXPECT_EQ(Pair::kStageTxBytes, 64 * 1024);
  // A CLC response is read by both producers, the MMA thread and eight epilogue warps.
  EXPECT_EQ(Pair::kClcConsumers, 2 + 1 + 8);
  EXPECT_EQ(Pair::kTmemColumns, 512);
  EXPECT_EQ(Pair::kThreads, 192);
  EXPECT_TRUE(valid_f16_shape(Pair::kCtaGroup, Pair::kBlockM, Pair::kBlockN));
}

TEST(Sm100Config, SingleCtaBarrierCounts) {
  using Single = Sm100Config<Sm100Spec{.cta_group = 1, .stages = 4, .schedule = Sm100Schedule::kClc}>;
  EXPECT_EQ(Single::kBlockM, 128);
  EXPECT_EQ(Single::kBRowsPerCta, 256);
  EXPECT_EQ(Single::kStageTxBytes, 128 * 64 * 2 + 256 * 64 * 2);
  EXPECT_EQ(Single::kClcConsumers, 1 + 1 + 4);
  EXPECT_TRUE(valid_f16_shape(Single::kCtaGroup, Single::kBlockM, Single::kBlockN));
  // Four 48 KiB stages fit one CTA next to the epilogue's staging; a fifth would not.
  using anvil::sm100::budget::kEpilogueStagingBytes;
  EXPECT_EQ(kEpilogueStagingBytes, Single::kEpilogueWarps * Single::kEpilogueChunkBytes);
  EXPECT_LE(4 * (Single::kStageBytesA + Single::kStageBytesB) + kEpilogueStagingBytes + 2048,
            anvil::sm100::budget::kSmemPerBlockBytes);
  EXPECT_GT(5 * (Single::kStageBytesA + Single::kStageBytesB) + kEpilogueStagingBytes + 2048,
            anvil::sm100::budget::kSmemPerBlockBytes);
}

}  // namespace
