// The kernel parameter block of the warp-specialized Hopper GEMM, filled on the host.
// Tensor maps must live in parameter (constant) space for the TMA unit: the whole
// struct is passed as a __grid_constant__ argument.
#pragma once

#include <cuda.h>

#include "kernels/common/epilogue_params.h"
#include "kernels/sm90/stream_k.h"
#include "kernels/sm90/tile_scheduler.cuh"

namespace anvil::detail {

struct Sm90Params {
  CUtensorMap map_a, map_b, map_d;
  int k_tiles;
  bool batched;     // operand maps are 3-D (k, rows, batch)
  bool tma_store;   // plain GEMM: through shared memory and TMA stores (map_d valid)
  bool pair_store;  // plain GEMM: two adjacent outputs per 32-bit store; neither: staged
  TileScheduler scheduler;
  EpilogueParams epilogue;
  // EXPERIMENT (session 19): rows per A box (Config::kBoxRowsA unless ANVIL_EXP_A_BOX), and
  // stages freed as soon as their wgmma retired (ANVIL_EXP_EARLY_RELEASE=1).
  int a_box_rows;
  bool exp_early_release;
  int exp_prefetch;        // ANVIL_EXP_PREFETCH=P: B boxes prefetched into L2 P K steps ahead
  bool exp_hint;           // ANVIL_EXP_HINT=1: B loaded with an L2 evict_first policy
  bool exp_split_issue;    // ANVIL_EXP_SPLIT=1: a second producer thread issues B
  bool exp_spin_producer;  // ANVIL_EXP_SPIN_P=1: the producer spins on test_wait
  bool exp_spin_consumer;  // ANVIL_EXP_SPIN_C=1: the consumers spin on test_wait
  // Stream-K configurations only (Config::kStreamK).
  StreamKPlan stream_k;
  StreamKWorkspace stream_k_workspace;
};

}  // namespace anvil::detail
