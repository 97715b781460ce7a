#!/usr/bin/env bash
# ncu profiles of named kernels on one shape (GPU machine). Clocks are left alone
# (--clock-control none). Usage: scripts/profile.sh SHAPE KERNEL [KERNEL ...]
# PROFILE_REGEX replaces the kernel-name filter (cuBLAS's kernels: 'nvjet|gemv|splitK|xmma');
# PROFILE_COUNT profiles that many launches (a library call may be two kernels).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out}
BUILD=${ANVIL_BUILD_DIR:-build-gpu}
shape=$1; shift
for kernel in "$@"; do
  ncu --clock-control none --launch-skip 3 --launch-count ${PROFILE_COUNT:-1} -k regex:"${PROFILE_REGEX:-sm90_gemm_kernel|sm90_decode_kernel|sm90_decode_ldg_kernel|swizzled_kernel|pipelined_kernel|tma_wgmma_kernel|smem_tiled|naive_gemm}" \
    --section SpeedOfLight --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis --section Occupancy \
    --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__warp_issue_stalled_barrier_per_warp_active.pct,smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct,smsp__warp_issue_stalled_wait_per_warp_active.pct,smsp__warp_issue_stalled_math_pipe_throttle_per_warp_active.pct,smsp__warp_issue_stalled_mio_throttle_per_warp_active.pct,smsp__warp_issue_stalled_lg_throttle_per_warp_active.pct,smsp__warp_issue_stalled_short_scoreboard_per_warp_active.pct,smsp__warp_issue_stalled_sleeping_per_warp_active.pct,smsp__warp_issue_stalled_membar_per_warp_active.pct,smsp__warp_issue_stalled_dispatch_stall_per_warp_active.pct,smsp__warp_issue_stalled_no_instruction_per_warp_active.pct,smsp__warp_issue_stalled_selected_per_warp_active.pct,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,smsp__average_warp_latency_issue_stalled_barrier,lts__t_sector_hit_rate.pct,smsp__inst_executed.sum,dram__bytes_read.sum.per_second \
    "$BUILD/tools/anvil-bench" --shapes ${PROFILE_SUITE:-suites/ladder.json} --only "$shape" --kernels "$kernel" --no-verify ${PROFILE_EPILOGUE:+--epilogue $PROFILE_EPILOGUE} \
    --repeats 1 --max-iters 4 --min-replay-ms 1 >"$OUT/ncu-$kernel${PROFILE_EPILOGUE:+-$PROFILE_EPILOGUE}-$shape.txt" 2>&1
  echo "== $kernel $shape"
  grep -E "Duration|tensor_op|DRAM Throughput|L2 Cache Throughput|bank_conflicts|Achieved Occupancy" "$OUT/ncu-$kernel${PROFILE_EPILOGUE:+-$PROFILE_EPILOGUE}-$shape.txt" | head -8
  # The largest warp-stall reason (percent of active warps' cycles).
  grep -E "warp_issue_stalled" "$OUT/ncu-$kernel${PROFILE_EPILOGUE:+-$PROFILE_EPILOGUE}-$shape.txt" | sort -k3 -t' ' -g | awk '{print $1, $NF}' | sort -k2 -g | tail -2
done
