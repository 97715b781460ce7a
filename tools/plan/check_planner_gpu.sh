#!/bin/bash
# The planner's checks on an H200: the GPU tests it touches, anvil-fuzz through the
# dispatcher and through each forced plan, and anvil-bench against a build of the commit
# before the planner (BASE_BUILD, optional) in the same run.
#   tools/plan/check_planner_gpu.sh [tests|fuzz|bench|all]
# BUILD (default build-gpu) must hold a Release build of this tree; BASE_BUILD one of the
# commit to compare with (skipped when unset).
set -uo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build-gpu}
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
phase=${1:-all}
want() { [ "$phase" = "$1" ] || [ "$phase" = all ]; }
status=0

if want tests; then
  # Batch invariance (new), the decode and kernel sweeps through the planned launches, the
  # forced entries, reliability (plan cache, concurrency).
  "$BUILD/tests/anvil_gpu_tests" --gtest_brief=1 \
    --gtest_filter='Shapes/BatchInvariance.*:Small/ForcedRowSplit.*:*DecodeBatchInvariance.*:*DecodeDeterminism.*:Decode/DecodeSweep.*:AllKernels/*:FuzzSubset.*:Concurrency.*:LargeProblem.*:PlanCacheDeathTest.*' \
    >"$OUT/planner-gpu-tests.log" 2>&1 || status=1
  tail -5 "$OUT/planner-gpu-tests.log"
  "$BUILD/tests/anvil_cpu_tests" --gtest_brief=1 >"$OUT/planner-cpu-tests.log" 2>&1 || status=1
  tail -3 "$OUT/planner-cpu-tests.log"
fi

if want fuzz; then
  # The dispatcher (auto), then every family and former forced entry by name: each is a
  # plan with overrides now.
  for k in auto sm90-gemm sm90-decode sm90-decode-ldg sm90-decode-r64 sm90-decode-ldg-r64 \
           sm90-gemm-pingpong sm90-gemm-streamk sm90-gemm-fit sm90-gemm-pow2 sm90-gemm-pair-n; do
    timeout 300 "$BUILD/tools/fuzz/anvil-fuzz" --seed "${FUZZ_SEED:-20261202}" --problems "${FUZZ_PROBLEMS:-400}" \
      --kernel "$k" >"$OUT/planner-fuzz-$k.txt" 2>&1 || status=1
    echo "$k: $(grep -E '^anvil-fuzz' "$OUT/planner-fuzz-$k.txt" | tail -1)"
  done
fi

if want bench; then
  # The llm suite, ragged M and the decode sweep: anvil against cuBLAS, this build and the
  # base build in one run (the llm suite must be no slower than before).
  for suite in llm ragged_m decode_sweep streamk_choice; do
    for dtype in bf16 fp16; do
      "$BUILD/tools/anvil-bench" --shapes "suites/$suite.json" --dtype "$dtype" --kernels anvil,cublas \
        --json "$OUT/planner-$suite-$dtype.json" >"$OUT/planner-$suite-$dtype.txt" 2>&1 || status=1
      if [ -n "${BASE_BUILD:-}" ]; then
        "$BASE_BUILD/tools/anvil-bench" --shapes "suites/$suite.json" --dtype "$dtype" --kernels anvil,cublas \
          --json "$OUT/base-$suite-$dtype.json" >"$OUT/base-$suite-$dtype.txt" 2>&1 || status=1
      fi
    done
  done
  # Batch invariance at full speed: the invariant mode against cuBLAS's normal mode.
  for dtype in bf16 fp16; do
    "$BUILD/tools/anvil-bench" --shapes suites/llm.json --shapes suites/ragged_m.json --dtype "$dtype" \
      --batch-invariant --kernels anvil,cublas --json "$OUT/planner-invariant-$dtype.json" \
      >"$OUT/planner-invariant-$dtype.txt" 2>&1 || status=1
  done
  # The overrides that replaced the environment variables, with plans traced.
  "$BUILD/tools/anvil-bench" --m 1,16,128 --n 8192 --k 8192 --kernels anvil,sm90-decode,cublas --decode-splits 2 \
    --trace-plans --json "$OUT/planner-forced-split.json" >"$OUT/planner-forced-split.txt" 2>&1 || status=1
  "$BUILD/tools/anvil-bench" --m 4097,1025 --n 4096 --k 4096 --kernels anvil,cublas --row-split never \
    --json "$OUT/planner-row-split-never.json" >"$OUT/planner-row-split-never.txt" 2>&1 || status=1
fi
exit $status
