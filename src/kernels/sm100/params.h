// The kernel parameter block of the Blackwell GEMM, filled on the host. Passed as a
// __grid_constant__ argument so that the tensor maps live in parameter space, where the
// TMA unit reads them.
#pragma once

#include <cuda.h>

#include "kernels/common/epilogue_params.h"
#include "kernels/sm90/tile_scheduler.cuh"

namespace anvil::detail {

struct Sm100Params {
  CUtensorMap map_a, map_b;
  int k_tiles;
  bool batched;          // operand maps are 3-D (k, rows, batch)
  int64_t gemm_columns;  // N of the GEMM (twice the output's for SwiGLU)
  TileScheduler scheduler;  // tiles of kBlockM x kBlockN; one "cluster tile" per pair
  EpilogueParams epilogue;
};

}  // namespace anvil::detail
