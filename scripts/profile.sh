#!/usr/bin/env bash
# ncu profiles of named kernels on one shape (GPU machine). Clocks are left alone
# (--clock-control none). Usage: scripts/profile.sh SHAPE KERNEL [KERNEL ...]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out}
BUILD=${ANVIL_BUILD_DIR:-build-gpu}
shape=$1; shift
for kernel in "$@"; do
  ncu --clock-control none --launch-skip 3 --launch-count 1 -k regex:'sm90_gemm_kernel|swizzled_kernel|pipelined_kernel|tma_wgmma_kernel|smem_tiled|naive_gemm' \
    --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis --section Occupancy \
    --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,smsp__average_warp_latency_issue_stalled_barrier,lts__t_sector_hit_rate.pct \
    "$BUILD/tools/anvil-bench" --shapes suites/ladder.json --only "$shape" --kernels "$kernel" --no-verify \
    --repeats 1 --max-iters 4 --min-replay-ms 1 >"$OUT/ncu-$kernel-$shape.txt" 2>&1
  grep -E "Duration|Tensor|tensor_op|Memory Throughput|DRAM Throughput|L2 Cache Throughput|bank_conflicts|Stall|hit_rate|Achieved Occupancy|Registers" "$OUT/ncu-$kernel-$shape.txt" | head -30
done
