// The kernel families the planner chooses on a grid of shapes, recorded so that no rule
// change moves one unnoticed (test_planner_cpu.cpp checks plan(), test_plan_cpu.cpp the
// public dispatch_name()). A change that moves pins on purpose regenerates the rows with
// PlannerPins.DISABLED_PrintTable and says why in its commit.
#pragma once

#include <cstdint>

#include "anvil/gemm.h"

namespace anvil::pins {

// Each row: M, the problem variant (0 plain, 1 batch-invariant, 2 two batches, 3 SwiGLU,
// 4 bias + GELU) and one letter per (N, K) in the order of kPinN x kPinK: g sm90-gemm,
// d sm90-decode, l sm90-decode-ldg, r sm90-decode-r64, L sm90-decode-ldg-r64. Recorded
// through the planner on a machine without a GPU (132 SMs, one CTA per SM in whole
// clusters: DeviceInfo::fallback), first as the library chose before the planner existed,
// regenerated since where a rule moved pins on purpose.
inline constexpr int64_t kPinN[] = {1024, 2048, 3072, 4096, 6144, 7168, 8192, 10240, 11008, 14336, 28672};
inline constexpr int64_t kPinK[] = {4096, 8192, 16384, 28672};
struct Pin {
  int64_t m;
  int variant;
  const char* families;
};
inline constexpr Pin kPins[] = {
    {1, 0, "rrrrllllllllLLLlLLLrLLLlLLLlddddddddllllllll"},
    {3, 0, "rrrrllllllllLLLlLLLrLLLlLLLlddddddddllllllll"},
    {4, 0, "rrrrllllllllLLLlLLLrLLLlLLLlddddddddllllllll"},
    {8, 0, "rrrrllllllllLLLlLLLrLLLlLLLlddddddddllllllll"},
    {9, 0, "rrrrrrrrrrrrrrrrrrrrrrrrLLLrrrrrrrrrrrrrdddd"},
    {12, 0, "rrrrrrrrrrrrrrrrrrrrrrrrLLLrrrrrrrrrrrrrdddd"},
    {16, 0, "rrrrrrrrrrrrrrrrrrrrrrrrLLLrrrrrrrrrrrrrdddd"},
    {17, 0, "rrrrrrrrrrrrrrrrrrrrrrrrLLLrdddddddddddddddd"},
    {24, 0, "rrrrrrrrrrrrrrrrrrrrrrrrLLLrdddddddddddddddd"},
    {32, 0, "rrrrrrrrrrrrrrrrrrrrrrrrrrrrdddddddddddddddd"},
    {48, 0, "rrrrrrrrrrrrrrrrrrrrrrrrrrrrdddddddddddddddd"},
    {64, 0, "rrrrrrrrrrrrrrrrrrrrrrrrrrrrdddddddddddddddd"},
    {65, 0, "rrrrrdddddddddddddddddddddddddddddddddddgggg"},
    {80, 0, "rrrrrdddddddddddddddddddddddddddddddddddgggg"},
    {96, 0, "rrrrrdddddddddddddddddddddddddddddddddddgggg"},
    {112, 0, "rrrrrdddddddddddddddddddddddddddddddddddgggg"},
    {128, 0, "rrrrrdddddddddddddddddddddddddddddddddddgggg"},
    {129, 0, "ggggrdddrdddrdddgggggggggggggggggggggggggggg"},
    {192, 0, "ggggrdddrdddrdddgggggggggggggggggggggggggggg"},
    {256, 0, "ggggrdddrdddrdddgggggggggggggggggggggggggggg"},
    {257, 0, "rgggrggggggggggggggggggggggggggggggggggggggg"},
    {300, 0, "rgggrggggggggggggggggggggggggggggggggggggggg"},
    {320, 0, "rgggrggggggggggggggggggggggggggggggggggggggg"},
    {512, 0, "rgggrggggggggggggggggggggggggggggggggggggggg"},
    {640, 0, "rggggggggggggggggggggggggggggggggggggggggggg"},
    {768, 0, "rggggggggggggggggggggggggggggggggggggggggggg"},
    {1000, 0, "rggggggggggggggggggggggggggggggggggggggggggg"},
    {1024, 0, "rggggggggggggggggggggggggggggggggggggggggggg"},
    {1025, 0, "gggggggggggggggggggggggggggggggggggggggggggg"},
    {2049, 0, "gggggggggggggggggggggggggggggggggggggggggggg"},
    {4096, 0, "gggggggggggggggggggggggggggggggggggggggggggg"},
    {4097, 0, "gggggggggggggggggggggggggggggggggggggggggggg"},
    {4100, 0, "gggggggggggggggggggggggggggggggggggggggggggg"},
    {4160, 0, "gggggggggggggggggggggggggggggggggggggggggggg"},
    {8192, 0, "gggggggggggggggggggggggggggggggggggggggggggg"},
    {1, 1, "rrrrddddrrrrrrrrrrrrrrrrrrrrdddddddddddddddd"},
    {3, 1, "rrrrddddrrrrrrrrrrrrrrrrrrrrdddddddddddddddd"},
    {4, 1, "rrrrddddrrrrrrrrrrrrrrrrrrrrdddddddddddddddd"},
    {8, 1, "rrrrddddrrrrrrrrrrrrrrrrrrrrdddddddddddddddd"},
    {9, 1, "rrrrddddrrrrrrrrrrrrrrrrrrrrdddddddddddddddd"},
    {12, 1, "rrrrddddrrrrrrrrrrrrrrrrrrrrdddddddddddddddd"},
    {16, 1, "rrrrddddrrrrrrrrrrrrrrrrrrrrdddddddddddddddd"},
    {17, 1, "rrrrddddrrrrrrrrrrrrrrrrrrrrdddddddddddddddd"},
    {24, 1, "rrrrddddrrrrrrrrrrrrrrrrrrrrdddddddddddddddd"},
    {32, 1, "rrrrddddrrrrrrrrrrrrrrrrrrrrdddddddddddddddd"},
    {48, 1, "rrrrddddrrrrrrrrrrrrrrrrrrrrdddddddddddddddd"},
    {64, 1, "rrrrddddrrrrrrrrrrrrrrrrrrrrdddddddddddddddd"},
    {65, 1, "rrrrddddrrrrrrrrrrrrrrrrrrrrgggggggggggggggg"},
    {80, 1, "rrrrddddrrrrrrrrrrrrrrrrrrrrgggggggggggggggg"},
    {96, 1, "rrrrddddrrrrrrrrrrrrrrrrrrrrgggggggggggggggg"},
    {112, 1, "rrrrddddrrrrrrrrrrrrrrrrrrrrgggggggggggggggg"},
    {128, 1, "rrrrddddrrrrrrrrrrrrrrrrrrrrgggggggggggggggg"},
    {129, 1, "ggggddddrrrrrrrrgggggggggggggggggggggggggggg"},
    {192, 1, "dgggddddrrrrrrrrgggggggggggggggggggggggggggg"},
    {256, 1, "ddggddddrrrrrrrrgggggggggggggggggggggggggggg"},
    {257, 1, "dddgrrgggggggggggggggggggggggggggggggggggggg"},
    {300, 1, "dddgrrrggggggggggggggggggggggggggggggggggggg"},
    {320, 1, "dddgrrrggggggggggggggggggggggggggggggggggggg"},
    {512, 1, "ddddrrrrgggggggggggggggggggggggggggggggggggg"},
    {640, 1, "rrrggggggggggggggggggggggggggggggggggggggggg"},
    {768, 1, "rrrggggggggggggggggggggggggggggggggggggggggg"},
    {1000, 1, "rrrrgggggggggggggggggggggggggggggggggggggggg"},
    {1024, 1, "rrrrgggggggggggggggggggggggggggggggggggggggg"},
    {1025, 1, "gggggggggggggggggggggggggggggggggggggggggggg"},
    {2049, 1, "gggggggggggggggggggggggggggggggggggggggggggg"},
    {4096, 1, "gggggggggggggggggggggggggggggggggggggggggggg"},
    {4097, 1, "rrrrgggggggggggggggggggggggggggggggggggggggg"},
    {4100, 1, "rrrrgggggggggggggggggggggggggggggggggggggggg"},
    {4160, 1, "rrrrgggggggggggggggggggggggggggggggggggggggg"},
    {8192, 1, "gggggggggggggggggggggggggggggggggggggggggggg"},
    {1, 2, "llllLLLlLLLrLLLlddddllllllllddddddddllllllll"},
    {3, 2, "llllLLLlLLLrLLLlddddllllllllddddddddllllllll"},
    {4, 2, "llllLLLlLLLrLLLlddddllllllllddddddddllllllll"},
    {8, 2, "llllLLLlLLLrLLLlddddllllllllddddddddllllllll"},
    {9, 2, "rrrrrrrrrrrrLLLrrrrrrrrrrrrrdddddddddddddddd"},
    {12, 2, "rrrrrrrrrrrrLLLrrrrrrrrrrrrrdddddddddddddddd"},
    {16, 2, "rrrrrrrrrrrrLLLrrrrrrrrrrrrrdddddddddddddddd"},
    {17, 2, "rrrrrrrrrrrrLLLrdddddddddddddddddddddddddddd"},
    {24, 2, "rrrrrrrrrrrrLLLrdddddddddddddddddddddddddddd"},
    {32, 2, "rrrrrrrrrrrrrrrrdddddddddddddddddddddddddddd"},
    {48, 2, "rrrrrrrrrrrrrrrrdddddddddddddddddddddddddddd"},
    {64, 2, "rrrrrrrrrrrrrrrrdddddddddddddddddddddddddddd"},
    {65, 2, "rdddddddddddddddddddddddddddgggggggggggggggg"},
    {80, 2, "rdddddddddddddddddddddddddddgggggggggggggggg"},
    {96, 2, "rdddddddddddddddddddddddddddgggggggggggggggg"},
    {112, 2, "rdddddddddddddddddddddddddddgggggggggggggggg"},
    {128, 2, "rdddddddddddddddddddddddddddgggggggggggggggg"},
    {129, 2, "rdddrdddgggggggggggggggggggggggggggggggggggg"},
    {192, 2, "rdddrdddgggggggggggggggggggggggggggggggggggg"},
    {256, 2, "rdddrdddgggggggggggggggggggggggggggggggggggg"},
    {257, 2, "rggggggggggggggggggggggggggggggggggggggggggg"},
    {300, 2, "rggggggggggggggggggggggggggggggggggggggggggg"},
    {320, 2, "rggggggggggggggggggggggggggggggggggggggggggg"},
    {512, 2, "rggggggggggggggggggggggggggggggggggggggggggg"},
    {640, 2, "gggggggggggggggggggggggggggggggggggggggggggg"},
    {768, 2, "gggggggggggggggggggggggggggggggggggggggggggg"},
    {1000, 2, "gggggggggggggggggggggggggggggggggggggggggggg"},
    {1024, 2, "gggggggggggggggggggggggggggggggggggggggggggg"},
    {1025, 2, "gggggggggggggggggggggggggggggggggggggggggggg"},
    {2049, 2, "gggggggggggggggggggggggggggggggggggggggggggg"},
    {4096, 2, "gggggggggggggggggggggggggggggggggggggggggggg"},
    {4097, 2, "gggggggggggggggggggggggggggggggggggggggggggg"},
    {4100, 2, "gggggggggggggggggggggggggggggggggggggggggggg"},
    {4160, 2, "gggggggggggggggggggggggggggggggggggggggggggg"},
    {8192, 2, "gggggggggggggggggggggggggggggggggggggggggggg"},
    {1, 3, "ddddllllllllllllddddllllllllddddddddllllllll"},
    {3, 3, "ddddllllllllllllddddllllllllddddddddllllllll"},
    {4, 3, "ddddllllllllllllddddllllllllddddddddllllllll"},
    {8, 3, "ddddllllllllllllddddllllllllddddddddllllllll"},
    {9, 3, "dddddddddddddddddddddddddddddddddddddddddddd"},
    {12, 3, "dddddddddddddddddddddddddddddddddddddddddddd"},
    {16, 3, "dddddddddddddddddddddddddddddddddddddddddddd"},
    {17, 3, "dddddddddddddddddddddddddddddddddddddddddddd"},
    {24, 3, "dddddddddddddddddddddddddddddddddddddddddddd"},
    {32, 3, "dddddddddddddddddddddddddddddddddddddddddddd"},
    {48, 3, "dddddddddddddddddddddddddddddddddddddddddddd"},
    {64, 3, "dddddddddddddddddddddddddddddddddddddddddddd"},
    {65, 3, "ddddddddddddddddddddddddddddddddddddddddgggg"},
    {80, 3, "ddddddddddddddddddddddddddddddddddddddddgggg"},
    {96, 3, "ddddddddddddddddddddddddddddddddddddddddgggg"},
    {112, 3, "ddddddddddddddddddddddddddddddddddddddddgggg"},
    {128, 3, "ddddddddddddddddddddddddddddddddddddddddgggg"},
    {129, 3, "gggggdddgdddgdddgggggggggggggggggggggggggggg"},
    {192, 3, "gggggdddgdddgdddgggggggggggggggggggggggggggg"},
    {256, 3, "gggggdddgdddgdddgggggggggggggggggggggggggggg"},
    {257, 3, "gggggggggggggggggggggggggggggggggggggggggggg"},
    {300, 3, "gggggggggggggggggggggggggggggggggggggggggggg"},
    {320, 3, "gggggggggggggggggggggggggggggggggggggggggggg"},
    {512, 3, "gggggggggggggggggggggggggggggggggggggggggggg"},
    {640, 3, "gggggggggggggggggggggggggggggggggggggggggggg"},
    {768, 3, "gggggggggggggggggggggggggggggggggggggggggggg"},
    {1000, 3, "gggggggggggggggggggggggggggggggggggggggggggg"},
    {1024, 3, "gggggggggggggggggggggggggggggggggggggggggggg"},
    {1025, 3, "gggggggggggggggggggggggggggggggggggggggggggg"},
    {2049, 3, "gggggggggggggggggggggggggggggggggggggggggggg"},
    {4096, 3, "gggggggggggggggggggggggggggggggggggggggggggg"},
    {4097, 3, "gggggggggggggggggggggggggggggggggggggggggggg"},
    {4100, 3, "gggggggggggggggggggggggggggggggggggggggggggg"},
    {4160, 3, "gggggggggggggggggggggggggggggggggggggggggggg"},
    {8192, 3, "gggggggggggggggggggggggggggggggggggggggggggg"},
    {1, 4, "rrrrllllllllLLLlLLLrLLLlLLLlddddddddllllllll"},
    {3, 4, "rrrrllllllllLLLlLLLrLLLlLLLlddddddddllllllll"},
    {4, 4, "rrrrllllllllLLLlLLLrLLLlLLLlddddddddllllllll"},
    {8, 4, "rrrrllllllllLLLlLLLrLLLlLLLlddddddddllllllll"},
    {9, 4, "rrrrrrrrrrrrrrrrrrrrrrrrLLLrrrrrrrrrrrrrdddd"},
    {12, 4, "rrrrrrrrrrrrrrrrrrrrrrrrLLLrrrrrrrrrrrrrdddd"},
    {16, 4, "rrrrrrrrrrrrrrrrrrrrrrrrLLLrrrrrrrrrrrrrdddd"},
    {17, 4, "rrrrrrrrrrrrrrrrrrrrrrrrLLLrdddddddddddddddd"},
    {24, 4, "rrrrrrrrrrrrrrrrrrrrrrrrLLLrdddddddddddddddd"},
    {32, 4, "rrrrrrrrrrrrrrrrrrrrrrrrrrrrdddddddddddddddd"},
    {48, 4, "rrrrrrrrrrrrrrrrrrrrrrrrrrrrdddddddddddddddd"},
    {64, 4, "rrrrrrrrrrrrrrrrrrrrrrrrrrrrdddddddddddddddd"},
    {65, 4, "rrrrrdddddddddddddddddddddddddddddddddddgggg"},
    {80, 4, "rrrrrdddddddddddddddddddddddddddddddddddgggg"},
    {96, 4, "rrrrrdddddddddddddddddddddddddddddddddddgggg"},
    {112, 4, "rrrrrdddddddddddddddddddddddddddddddddddgggg"},
    {128, 4, "rrrrrdddddddddddddddddddddddddddddddddddgggg"},
    {129, 4, "ggggrdddrdddrdddgggggggggggggggggggggggggggg"},
    {192, 4, "ggggrdddrdddrdddgggggggggggggggggggggggggggg"},
    {256, 4, "ggggrdddrdddrdddgggggggggggggggggggggggggggg"},
    {257, 4, "rgggrggggggggggggggggggggggggggggggggggggggg"},
    {300, 4, "rgggrggggggggggggggggggggggggggggggggggggggg"},
    {320, 4, "rgggrggggggggggggggggggggggggggggggggggggggg"},
    {512, 4, "rgggrggggggggggggggggggggggggggggggggggggggg"},
    {640, 4, "rggggggggggggggggggggggggggggggggggggggggggg"},
    {768, 4, "rggggggggggggggggggggggggggggggggggggggggggg"},
    {1000, 4, "rggggggggggggggggggggggggggggggggggggggggggg"},
    {1024, 4, "rggggggggggggggggggggggggggggggggggggggggggg"},
    {1025, 4, "gggggggggggggggggggggggggggggggggggggggggggg"},
    {2049, 4, "gggggggggggggggggggggggggggggggggggggggggggg"},
    {4096, 4, "gggggggggggggggggggggggggggggggggggggggggggg"},
    {4097, 4, "gggggggggggggggggggggggggggggggggggggggggggg"},
    {4100, 4, "gggggggggggggggggggggggggggggggggggggggggggg"},
    {4160, 4, "gggggggggggggggggggggggggggggggggggggggggggg"},
    {8192, 4, "gggggggggggggggggggggggggggggggggggggggggggg"},
};

inline GemmDesc pin_desc(int64_t m, int64_t n, int64_t k, int variant) {
  GemmDesc d;
  d.m = m, d.n = n, d.k = k;
  d.a = MatrixLayout{DataType::kBF16, Order::kRowMajor, k, 0};
  d.b = MatrixLayout{DataType::kBF16, Order::kColMajor, k, 0};
  d.c = MatrixLayout{DataType::kBF16, Order::kRowMajor, n, 0};
  d.d = MatrixLayout{DataType::kBF16, Order::kRowMajor, n, 0};
  if (variant == 1) d.batch_invariant = true;
  if (variant == 2) {
    d.batch = 2;
    d.a.batch_stride = m * k, d.b.batch_stride = n * k, d.c.batch_stride = d.d.batch_stride = m * n;
  }
  if (variant == 3) d.epilogue.activation = Activation::kSwiGLU;
  if (variant == 4) d.epilogue.bias = BiasMode::kPerColumn, d.epilogue.activation = Activation::kGeluTanh;
  return d;
}


}  // namespace anvil::pins
