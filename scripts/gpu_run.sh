#!/usr/bin/env bash
# The one command for the GPU machine, writing logs and JSON under $OUT (default ./out).
#
#   scripts/gpu_run.sh               anvil against cuBLAS on the LLM suite: builds the library
#                                    and anvil-bench only, runs the suite, prints its table
#                                    (scripts/results_table.py) and draws its chart
#                                    (scripts/plot_results.py, when matplotlib is there).
#                                    A few minutes on an H200.
#   scripts/gpu_run.sh full          every developer phase below, in this order (`all` too).
#   scripts/gpu_run.sh phase ...     only these phases: build tests fuzz sanitize probe llm
#                                    decode splits streamk fit anchors ablations epilogue
#                                    unaligned square ladder moe moe-fp8 fp8 sweep fp8-sweep
#                                    torch.
#                                    (torch needs the Python package installed:
#                                    pip install --no-build-isolation .; moe-fp8's
#                                    anvil-vs-torch rows need it too, and are skipped
#                                    without it)
#
# Environment: OUT (results folder), ANVIL_BUILD_DIR (default build-gpu), DTYPE (bf16),
# FUZZ_SEED (default: today's date as a number), FUZZ_PROBLEMS (2000).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out}
BUILD=${ANVIL_BUILD_DIR:-build-gpu}
DTYPE=${DTYPE:-bf16}
mkdir -p "$OUT"
phases=("$@")
quick=0
if [ ${#phases[@]} -eq 0 ]; then
  quick=1
  phases=(quick)
fi
want() { for p in "${phases[@]}"; do [ "$p" = "$1" ] || [ "$p" = all ] || [ "$p" = full ] && return 0; done; return 1; }
status=0
export ANVIL_COMMIT=${ANVIL_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
# As scripts/test.sh: a toolkit installed in its default place but not on PATH.
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
bench="$BUILD/tools/anvil-bench"
stamp=$(date -u +%Y-%m-%d)

# Built when asked for, and whenever a binary a phase needs is missing (a quick run builds
# anvil-bench alone).
needs_build=0
[ -x "$bench" ] || needs_build=1
if [ $quick = 0 ]; then
  for binary in tests/anvil_gpu_tests tests/anvil_cpu_tests tools/fuzz/anvil-fuzz tools/anvil-stream-probe; do
    [ -x "$BUILD/$binary" ] || needs_build=1
  done
fi
if [ $quick = 1 ] || want build || [ $needs_build = 1 ]; then
  scripts/install_deps.sh >"$OUT/install.log" 2>&1
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv >"$OUT/gpu.txt" 2>&1
  # The quick run needs anvil-bench alone (the library, the lab, the verification code);
  # every other phase needs the test binaries and the other tools too.
  targets=()
  [ $quick = 1 ] && targets=(--target anvil-bench)
  echo "== build (${targets[*]:-everything}) =="
  { cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build "$BUILD" "${targets[@]}"; } >"$OUT/build.log" 2>&1 \
    || { tail -50 "$OUT/build.log"; echo "BUILD FAILED"; exit 1; }
  grep -E "warning|spill|C75" "$OUT/build.log" | head -20
fi

if [ $quick = 1 ]; then
  # anvil (the dispatcher's choice) against cuBLAS on the LLM suite, each result checked
  # against the reference before it is timed.
  echo "== anvil vs cuBLAS: suites/llm.json ($DTYPE) =="
  "$bench" --shapes suites/llm.json --dtype "$DTYPE" --kernels anvil,cublas --json "$OUT/llm.json" \
    2>"$OUT/llm.err" >"$OUT/llm.txt" || { status=1; tail -20 "$OUT/llm.err"; }
  if [ -s "$OUT/llm.json" ]; then
    python3 scripts/results_table.py "$OUT/llm.json" | tee "$OUT/llm-table.md"
    if python3 -c "import matplotlib" 2>/dev/null; then
      python3 scripts/plot_results.py "$OUT/llm.json" -o "$OUT/llm.png" --title "anvil vs cuBLAS, LLM shapes ($DTYPE)" \
        && echo "chart: $OUT/llm.png" || status=1
    else
      echo "no chart: matplotlib is not installed (pip install matplotlib, then: python3 scripts/plot_results.py $OUT/llm.json)"
    fi
    echo "results: $OUT/llm.json; every developer phase: scripts/gpu_run.sh full"
  fi
fi

if want tests; then
  # The gtest binaries directly, one process each: ctest would start a process (and a CUDA
  # context) per test case, minutes of device time for nothing.
  # Fp8ColumnMajorInPlace holds the FP8 problems that once hung
  # (docs/notes/no-rows-phase-lap.md): each of its tests runs alone under a timeout, so a
  # hang names its test and stops nothing else.
  for t in anvil_cpu_tests anvil_plan_cache_tests anvil_gpu_tests; do
    "$BUILD/tests/$t" --gtest_brief=1 --gtest_filter='-Fp8ColumnMajorInPlace.*' >"$OUT/$t.log" 2>&1 || status=1
    tail -5 "$OUT/$t.log"
  done
  for case in $("$BUILD/tests/anvil_gpu_tests" --gtest_list_tests --gtest_filter='Fp8ColumnMajorInPlace.*' | sed -n 's/^  //p'); do
    timeout 60 "$BUILD/tests/anvil_gpu_tests" --gtest_brief=1 --gtest_filter="Fp8ColumnMajorInPlace.$case" \
      >"$OUT/fp8-in-place-$case.log" 2>&1
    rc=$?
    [ $rc = 0 ] || status=1
    echo "Fp8ColumnMajorInPlace.$case: $([ $rc = 124 ] && echo "did not finish in 60 s" || tail -1 "$OUT/fp8-in-place-$case.log")"
  done
fi

if want fuzz; then
  # Random valid problems through the dispatcher, each against the reference (tools/fuzz).
  # A new seed every day explores new problems; each FAIL line says how to rerun it alone.
  # The timeout catches a kernel that hangs on some shape (under the device's 600 s per call).
  timeout ${FUZZ_TIMEOUT:-480} "$BUILD/tools/fuzz/anvil-fuzz" --seed "${FUZZ_SEED:-$(date -u +%Y%m%d)}" --problems "${FUZZ_PROBLEMS:-2000}" \
    --json "$OUT/fuzz-$stamp.json" >"$OUT/fuzz.txt" 2>&1 || status=1
  grep -E "^FAIL|^anvil-fuzz" "$OUT/fuzz.txt" | tail -20
  # Grouped (mixture-of-experts) GEMMs: both layouts, empty and one-row experts, every epilogue.
  timeout ${FUZZ_TIMEOUT:-480} "$BUILD/tools/fuzz/anvil-fuzz" --grouped --seed "${FUZZ_SEED:-$(date -u +%Y%m%d)}" \
    --problems "${FUZZ_GROUPED_PROBLEMS:-1000}" --json "$OUT/fuzz-grouped-$stamp.json" >"$OUT/fuzz-grouped.txt" 2>&1 || status=1
  grep -E "^FAIL|^anvil-fuzz" "$OUT/fuzz-grouped.txt" | tail -20
  # FP8: every scale mode and input pair (docs/fp8.md).
  timeout ${FUZZ_TIMEOUT:-480} "$BUILD/tools/fuzz/anvil-fuzz" --fp8 --seed "${FUZZ_SEED:-$(date -u +%Y%m%d)}" \
    --problems "${FUZZ_FP8_PROBLEMS:-1000}" --json "$OUT/fuzz-fp8-$stamp.json" >"$OUT/fuzz-fp8.txt" 2>&1 || status=1
  grep -E "^FAIL|^anvil-fuzz" "$OUT/fuzz-fp8.txt" | tail -20
  # Batch-invariant problems on weights the mode splits (docs/planner.md#batch-invariance).
  timeout ${FUZZ_TIMEOUT:-480} "$BUILD/tools/fuzz/anvil-fuzz" --invariant-split --seed "${FUZZ_SEED:-$(date -u +%Y%m%d)}" \
    --problems "${FUZZ_INVARIANT_PROBLEMS:-300}" --json "$OUT/fuzz-invariant-$stamp.json" >"$OUT/fuzz-invariant.txt" 2>&1 || status=1
  grep -E "^FAIL|^anvil-fuzz" "$OUT/fuzz-invariant.txt" | tail -20
fi

if want sanitize; then
  # compute-sanitizer over every kernel family at small shapes (tile multiples and ragged
  # edges, plain and fused epilogues), and the dispatcher on odd leading dimensions (row
  # repack, odd-ld D in ping-pong tiles; over every kernel it would outlast racecheck's
  # limit). The row split forced on small problems (ForcedRowSplit: sm90-gemm on 256 rows +
  # a decode kernel on the rest; the sweep's own split cases, 2049 rows, take racecheck
  # 150 s each). The folded-slice configurations on a small split weight (FoldedSlices).
  # Racecheck, the slowest tool, needs
  # more than 150 s for these cases since the fitted widths. Load-path decode cases whose K
  # steps do not divide evenly over the warpgroups (the barrier padding in
  # decode_ldg_kernel.cuh), on each of sm90-decode-ldg-r64's token tiles (8, 16, 32). Each
  # tool's summary line lands in sanitize.txt.
  filter='AllKernels/KernelSweep.*lin_256x512x256:AllKernels/KernelSweep.*lin_129x257x65:AllKernels/KernelSweep.*swiglu_300x768x1000:AllKernels/KernelSweep.*batch3_256x512x256:AllKernels/KernelSweep.*/auto__odd_ld_batch2_333x1001x777:AllKernels/KernelSweep.*/auto__*300x520x1000*:Decode/DecodeSweep.*/ldgr64_fp16_to_fp32_130x256x520:Decode/DecodeSweep.*/ldgr64_odd_k_padded_40x256x515:Decode/DecodeSweep.*/ldgr64_fp16_24x512x1000:Decode/DecodeSweep.*/ldgr64_odd_k_padded_9x384x1001:Decode/DecodeSweep.*/ldg_split_uneven_1x128x640:Small/ForcedRowSplit.*:FoldedSlices.*:Grouped/GroupedSweep.*/contig_mixed_narrow_bf16:Grouped/GroupedSweep.*/masked_mixed_fp16:Grouped/GroupedSweep.*/contig_swiglu_wide:Grouped/GroupedSweep.*/contig_odd_width_plain:GroupedBounds.*'
  for tool in memcheck racecheck synccheck initcheck; do
    limit=150
    [ "$tool" = racecheck ] && limit=330
    timeout $limit compute-sanitizer --tool "$tool" --error-exitcode 9 "$BUILD/tests/anvil_gpu_tests" --gtest_filter="$filter" \
      >"$OUT/sanitize-$tool.log" 2>&1
    rc=$?
    echo "$tool: exit $rc; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|tests? ran|PASSED|FAILED' "$OUT/sanitize-$tool.log" | tr '\n' ' ')" | tee -a "$OUT/sanitize.txt"
    [ $rc -eq 0 ] || status=1
  done
fi

if want probe; then
  # Weight-streaming bandwidth by CTA cut, no math (lab/probes/stream_probe.cu).
  "$BUILD/tools/anvil-stream-probe" --json "$OUT/stream-probe-$stamp.json" 2>"$OUT/probe.err" | tee "$OUT/probe.txt" || status=1
fi

if want llm; then
  "$bench" --shapes suites/llm.json --dtype "$DTYPE" --kernels anvil,cublas \
    --check-anchors suites/anchors-h200-cublas.json --json "$OUT/llm-$DTYPE-$stamp.json" 2>"$OUT/llm.err" | tee "$OUT/llm.txt" || status=1
fi

if want decode; then
  # The decode kernel: the M sweep over two weights (plotted against the floor by
  # scripts/plot_decode_sweep.py), and the suite's decode shapes in fp16.
  "$bench" --shapes suites/decode_sweep.json --dtype "$DTYPE" --kernels anvil,cublas \
    --json "$OUT/decode-sweep-$DTYPE-$stamp.json" 2>"$OUT/decode.err" | tee "$OUT/decode.txt" || status=1
  "$bench" --shapes suites/llm.json --only llama70b-decode256-attn_out,llama70b-decode256-qkv,llama70b-decode256-mlp_up,llama70b-decode256-mlp_down,llama70b-decode64-attn_out,llama70b-decode16-qkv,llama70b-decode1-attn_out,llama70b-decode1-mlp_up,llama70b-decode1-mlp_down \
    --dtype fp16 --kernels anvil,cublas --json "$OUT/decode-llm-fp16-$stamp.json" 2>>"$OUT/decode.err" | tee -a "$OUT/decode.txt" || status=1
  # The decode kernels side by side where the dispatcher chooses between them (up to 24
  # tokens; prefers_decode_ldg, prefers_decode_ldg_r64 and prefers_decode_r64 in
  # decode_plan.h).
  "$bench" --shapes suites/llm.json --only llama70b-decode16-qkv,llama70b-decode1-attn_out,llama70b-decode1-mlp_up,llama70b-decode1-mlp_down \
    --dtype "$DTYPE" --kernels anvil,sm90-decode,sm90-decode-ldg,sm90-decode-ldg-r64,cublas \
    --json "$OUT/decode-kernels-llm-$DTYPE-$stamp.json" 2>>"$OUT/decode.err" | tee -a "$OUT/decode.txt" || status=1
  "$bench" --m 2,4,8,12,16,24 --n 8192 --k 8192 --dtype "$DTYPE" --kernels anvil,sm90-decode,sm90-decode-ldg,sm90-decode-ldg-r64,sm90-decode-r64,cublas \
    --json "$OUT/decode-kernels-sweep-$DTYPE-$stamp.json" 2>>"$OUT/decode.err" | tee -a "$OUT/decode.txt" || status=1
fi

if want splits; then
  # The decode planner's K split (decode_plan.h) against every alternative where it plans
  # for the wide token tiles (96 and 128), next to sm90-gemm and cuBLAS: the dispatcher's
  # pick with each plan traced (--trace-plans), then one process per forced split
  # (--decode-splits), cuBLAS in each as the reference
  # for the ratios. SPLIT_N / SPLIT_M narrow the sweep.
  sweep=(--m "${SPLIT_M:-80,96,112,128}" --n "${SPLIT_N:-6144,8192,9216,10240,12288,14336}" --k 8192 --dtype "$DTYPE")
  runs=()
  "$bench" "${sweep[@]}" --trace-plans --kernels anvil,sm90-decode,sm90-gemm,cublas \
    --json "$OUT/splits-planner.json" 2>"$OUT/splits-plans.err" | tee "$OUT/splits.txt" || status=1
  runs+=(planner="$OUT/splits-planner.json")
  for s in 1 2 3 4 5 6 7 8; do
    "$bench" "${sweep[@]}" --decode-splits "$s" --kernels sm90-decode,cublas --no-verify \
      --json "$OUT/splits-s$s.json" 2>>"$OUT/splits.err" | tee -a "$OUT/splits.txt" || status=1
    runs+=(split$s="$OUT/splits-s$s.json")
  done
  grep -E '^plan |^  (kernel|K split): ' "$OUT/splits-plans.err" >"$OUT/splits-plans.txt"
  python3 scripts/merge_runs.py "$OUT/decode-splits-$DTYPE-$stamp.json" "${runs[@]}" --text plans="$OUT/splits-plans.txt" \
    --note "gpu_run.sh splits at $ANVIL_COMMIT: the dispatcher (plans traced) and sm90-decode forced to each K split" \
    && rm -f "$OUT"/splits-planner.json "$OUT"/splits-s?.json \
    && python3 scripts/split_table.py "$OUT/decode-splits-$DTYPE-$stamp.json"
fi

if want streamk; then
  # Stream-K against the dispatcher's choice and cuBLAS: the M = 256 shapes it is chosen
  # for, and shapes it is not (its forced configuration shows what the cost model avoided).
  "$bench" --shapes suites/llm.json --only llama70b-decode256-attn_out,llama70b-decode256-qkv,llama70b-decode256-mlp_up,llama70b-decode256-mlp_down,gemma3-27b-512x8192x5376,square-4096 \
    --dtype "$DTYPE" --kernels anvil,sm90-gemm-streamk,cublas --json "$OUT/streamk-$DTYPE-$stamp.json" 2>"$OUT/streamk.err" | tee "$OUT/streamk.txt" || status=1
  # Where the cost model's choice is close: the dispatcher against each of the candidates
  # it weighs (ping-pong 128x128 whole tiles, stream-K) on shapes it decides by a few percent.
  "$bench" --shapes suites/streamk_choice.json --dtype "$DTYPE" --kernels anvil,sm90-gemm-pingpong,sm90-gemm-streamk,cublas \
    --json "$OUT/streamk-choice-$DTYPE-$stamp.json" 2>>"$OUT/streamk.err" | tee -a "$OUT/streamk.txt" || status=1
fi

if want fit; then
  # The fitted tile widths (160, 192, 224 wide; pairs or single CTAs) where the dispatcher takes them,
  # against the choice without them (sm90-gemm-pow2), forced everywhere (sm90-gemm-fit) and
  # cuBLAS, in one process; then the odd-stride shapes they also take.
  "$bench" --shapes suites/fit_widths.json --dtype "$DTYPE" --kernels anvil,sm90-gemm-pow2,sm90-gemm-fit,cublas \
    --json "$OUT/fit-$DTYPE-$stamp.json" 2>"$OUT/fit.err" | tee "$OUT/fit.txt" || status=1
  # M = 128 against the wide weights, which the fitted widths now keep on sm90-gemm
  # (prefers_decode in decode_plan.h), against the decode kernel.
  "$bench" --m 128 --n 18432,28672 --k 8192 --dtype "$DTYPE" --kernels anvil,sm90-gemm-pow2,sm90-decode,cublas \
    --json "$OUT/fit-m128-$DTYPE-$stamp.json" 2>>"$OUT/fit.err" | tee -a "$OUT/fit.txt" || status=1
  "$bench" --m 4096 --n 4097 --k 4096,4095 --dtype "$DTYPE" --kernels anvil,sm90-gemm-pow2,cublas \
    --json "$OUT/fit-unaligned-$DTYPE-$stamp.json" 2>>"$OUT/fit.err" | tee -a "$OUT/fit.txt" || status=1
  "$bench" --m 4097 --n 4097 --k 4097 --dtype "$DTYPE" --kernels anvil,sm90-gemm-pow2,cublas \
    --json "$OUT/fit-unaligned-odd-$DTYPE-$stamp.json" 2>>"$OUT/fit.err" | tee -a "$OUT/fit.txt" || status=1
fi

if want anchors; then
  # cuBLAS alone, as the anchors were measured (no other kernel's power draw in between).
  # Short replays (one pass over the input sets, like the anchors' method) keep the GPU at
  # its boost clock; the suites' 20 ms replays measure sustained, power-capped speed.
  "$bench" --shapes suites/llm.json --dtype bf16 --kernels cublas --no-verify --min-replay-ms 0.001 \
    --check-anchors suites/anchors-h200-cublas.json --json "$OUT/anchors-cublas-bf16-$stamp.json" 2>"$OUT/anchors.err" | tee "$OUT/anchors.txt" || status=1
fi

if want ablations; then
  # The flat or negative ladder steps against their one-change ablations (docs/ladder.md).
  "$bench" --shapes suites/ladder.json --only square-4096,square-8192 --dtype "$DTYPE" \
    --kernels ladder-04-swizzle,ladder-05-pipeline,ablation-05-two-stages,ladder-07-two-consumers,ladder-08-tma-store,ladder-09-cluster-multicast,ablation-09-no-multicast,ablation-09-cross-release,ablation-09-four-stages,ladder-10-persistent,sm90-gemm,cublas \
    --json "$OUT/ablations-$DTYPE-$stamp.json" 2>"$OUT/ablations.err" | tee "$OUT/ablations.txt" || status=1
  # The production pairs against one-change variants of their configuration (stages,
  # tile shape, epilogue path) on the prefill shapes (lab/kernels/ablations/tile_shape_ablations.cu).
  "$bench" --shapes suites/llm.json --only square-4096,square-8192,llama70b-prefill-qkv,llama70b-prefill-mlp_up,llama70b-prefill-mlp_down,gemma3-27b-512x8192x5376 \
    --dtype "$DTYPE" --kernels sm90-gemm,ablation-10-wide-4stage,ablation-10-tall-4stage,ablation-10-tall-3stage,ablation-10-tall-4stage-tma2,ladder-10-persistent,cublas \
    --json "$OUT/ablations-prefill-$DTYPE-$stamp.json" 2>>"$OUT/ablations.err" | tee -a "$OUT/ablations.txt" || status=1
fi

if want epilogue; then
  # Fused epilogues against the same GEMM unfused (anvil-plain) and cuBLAS's plain GEMM.
  for epi in bias-gelu swiglu; do
    "$bench" --shapes suites/llm.json --only square-8192,llama70b-prefill-qkv,llama70b-prefill-mlp_up --dtype "$DTYPE" \
      --kernels anvil,anvil-plain,cublas --epilogue $epi --json "$OUT/epilogue-$epi-$DTYPE-$stamp.json" \
      2>"$OUT/epilogue-$epi.err" | tee "$OUT/epilogue-$epi.txt" || status=1
  done
fi

if want unaligned; then
  # Strides TMA cannot read (K or N not a multiple of 8) against the aligned neighbours.
  "$bench" --m 4096 --n 4096,4097 --k 4096,4095 --dtype "$DTYPE" --kernels anvil,cublas \
    --json "$OUT/unaligned-$DTYPE-$stamp.json" 2>"$OUT/unaligned.err" | tee "$OUT/unaligned.txt" || status=1
  "$bench" --m 4097 --n 4097 --k 4097 --dtype "$DTYPE" --kernels anvil,cublas \
    --json "$OUT/unaligned-odd-$DTYPE-$stamp.json" 2>>"$OUT/unaligned.err" | tee -a "$OUT/unaligned.txt" || status=1
fi

if want square; then
  "$bench" --shapes suites/square.json --dtype "$DTYPE" --kernels anvil,cublas \
    --json "$OUT/square-$DTYPE-$stamp.json" 2>"$OUT/square.err" | tee "$OUT/square.txt" || status=1
fi

if want ladder; then
  # Every step on the five ladder shapes, except the naive kernel: at ~0.5 TFLOP/s it
  # would take minutes per large shape, so it runs on the two smallest only.
  steps=ladder-02-smem-tiling,ladder-03-tma-wgmma,ladder-04-swizzle,ladder-05-pipeline,ladder-06-warp-specialized
  steps=$steps,ladder-07-two-consumers,ladder-08-tma-store,ladder-09-cluster-multicast,ladder-10-persistent,ladder-11-deeper-ring
  "$bench" --shapes suites/ladder.json ${LADDER_ONLY:+--only $LADDER_ONLY} --dtype "$DTYPE" \
    --kernels "$steps,sm90-gemm,cublas" --json "$OUT/ladder-$DTYPE-$stamp.json" 2>"$OUT/ladder.err" | tee "$OUT/ladder.txt" || status=1
  "$bench" --shapes suites/ladder.json --only square-4096,llama70b-decode256-attn_out --dtype "$DTYPE" \
    --kernels ladder-01-naive,cublas --repeats 3 --json "$OUT/ladder-naive-$DTYPE-$stamp.json" 2>>"$OUT/ladder.err" | tee -a "$OUT/ladder.txt" || status=1
fi
if want moe; then
  # The grouped GEMM on the MoE suite against a loop of cuBLASLt matmuls and
  # cublasGemmGroupedBatchedEx (anvil-bench --grouped), then torch._grouped_mm on the same
  # shapes and routings. MOE_ONLY narrows both to some shape names (comma list).
  "$bench" --grouped suites/moe.json ${MOE_ONLY:+--only $MOE_ONLY} --dtype "$DTYPE" \
    --json "$OUT/moe-$DTYPE-$stamp.json" 2>"$OUT/moe.err" | tee "$OUT/moe.txt" || status=1
  tail -3 "$OUT/moe.err"
  python3 scripts/bench_moe_torch.py ${MOE_ONLY:+--only ${MOE_ONLY//,/ }} --json "$OUT/moe-torch-bf16-$stamp.json" \
    2>"$OUT/moe-torch.err" || status=1
  tail -3 "$OUT/moe-torch.err"
fi

if want moe-fp8; then
  # The grouped GEMM with e4m3 inputs and row-wise scales on the MoE suite against a loop of
  # cuBLASLt FP8 matmuls, the same with block scales, then torch._scaled_grouped_mm (use_fast_accum off and on) and
  # anvil.scaled_grouped_mm on the same inputs (the latter when the package is installed).
  "$bench" --grouped suites/moe.json ${MOE_ONLY:+--only $MOE_ONLY} --dtype e4m3 --kernels anvil,anvil-masked,cublas-loop \
    --json "$OUT/moe-e4m3-$stamp.json" 2>"$OUT/moe-fp8.err" | tee "$OUT/moe-fp8.txt" || status=1
  tail -3 "$OUT/moe-fp8.err"
  # DeepSeek-V3 block scales against a loop of cuBLASLt's block-scaled FP8 matmuls.
  "$bench" --grouped suites/moe.json ${MOE_ONLY:+--only $MOE_ONLY} --dtype e4m3 --scales block \
    --kernels anvil,anvil-masked,cublas-loop --json "$OUT/moe-e4m3-block-$stamp.json" 2>"$OUT/moe-fp8-block.err" \
    | tee "$OUT/moe-fp8-block.txt" || status=1
  tail -3 "$OUT/moe-fp8-block.err"
  with_anvil=()
  python3 -c "import anvil" 2>/dev/null && with_anvil=(--anvil)
  python3 scripts/bench_moe_torch.py --fp8 ${with_anvil[@]+"${with_anvil[@]}"} ${MOE_ONLY:+--only ${MOE_ONLY//,/ }} \
    --json "$OUT/moe-torch-e4m3-$stamp.json" 2>"$OUT/moe-torch-fp8.err" || status=1
  tail -3 "$OUT/moe-torch-fp8.err"
fi

if want fp8; then
  # sm90-fp8 against cuBLASLt's FP8 matmul on suites/fp8.json, per-tensor and block scales;
  # then anvil on whole tiles only (--split-k 1), for what split-K gains where it is taken
  # (the first run's JSON names the split in each row's "algo").
  for scales in tensor block; do
    "$bench" --shapes suites/fp8.json --dtype e4m3 --scales $scales --json "$OUT/fp8-$scales-$stamp.json" \
      2>"$OUT/fp8-$scales.err" | tee "$OUT/fp8-$scales.txt" || status=1
    "$bench" --shapes suites/fp8.json --dtype e4m3 --scales $scales --kernels anvil,cublas --split-k 1 \
      --json "$OUT/fp8-$scales-whole-tiles-$stamp.json" 2>"$OUT/fp8-$scales-whole-tiles.err" \
      | tee "$OUT/fp8-$scales-whole-tiles.txt" || status=1
  done
  # sm90-fp8-decode (docs/fp8.md "Decode") on the suite's shapes of at most 128 tokens:
  # forced, against sm90-fp8 forced, the planner's pick and cuBLASLt, per-tensor and
  # row/column scales (block scales stay on sm90-fp8).
  decode_shapes=llama70b-decode64-attn_out,llama70b-decode16-qkv,llama70b-decode1-attn_out,llama70b-decode1-mlp_up,llama70b-decode1-mlp_down,dsv3-m64-q_a
  decode_shapes+=,dsv3-m64-q_b,dsv3-m64-kv_a,dsv3-m64-kv_b,dsv3-m64-o,dsv3-m64-mlp_gate_up,dsv3-m64-mlp_down,dsv3-m128-q_a,dsv3-m128-q_b,dsv3-m128-kv_a,dsv3-m128-kv_b,dsv3-m128-o,dsv3-m128-mlp_gate_up,dsv3-m128-mlp_down
  for scales in tensor rowcol; do
    "$bench" --shapes suites/fp8.json --only "$decode_shapes" --dtype e4m3 --scales $scales \
      --kernels anvil,sm90-fp8,sm90-fp8-decode,cublas --json "$OUT/fp8-decode-$scales-$stamp.json" \
      2>"$OUT/fp8-decode-$scales.err" | tee "$OUT/fp8-decode-$scales.txt" || status=1
  done
fi

if want sweep; then
  # The sweep's held-out half (suites/sweep.json; no rule is fitted to it) in DTYPE, then in
  # batch-invariant mode; anvil against cuBLAS in its normal mode.
  python3 scripts/make_sweep.py --extract heldout -o "$OUT/sweep-heldout.json" || status=1
  "$bench" --shapes "$OUT/sweep-heldout.json" --dtype "$DTYPE" --json "$OUT/sweep-heldout-$DTYPE-$stamp.json" \
    2>"$OUT/sweep.err" >"$OUT/sweep.txt" || status=1
  "$bench" --shapes "$OUT/sweep-heldout.json" --dtype "$DTYPE" --batch-invariant \
    --json "$OUT/sweep-heldout-batch-invariant-$DTYPE-$stamp.json" 2>"$OUT/sweep-bi.err" >"$OUT/sweep-bi.txt" || status=1
  rm -f "$OUT/sweep-heldout.json"
fi

if want fp8-sweep; then
  # The same held-out half in e4m3 against cuBLASLt's FP8 matmul, per-tensor and block
  # scales (docs/fp8.md, "Beyond the suite"). Shapes FP8 cannot take (K or N off the
  # 16-element grid) are reported unsupported, not timed.
  python3 scripts/make_sweep.py --extract heldout -o "$OUT/sweep-heldout.json" || status=1
  for scales in tensor block; do
    "$bench" --shapes "$OUT/sweep-heldout.json" --dtype e4m3 --scales $scales --kernels anvil,cublas \
      --json "$OUT/sweep-heldout-e4m3-$scales-$stamp.json" 2>"$OUT/fp8-sweep-$scales.err" \
      >"$OUT/fp8-sweep-$scales.txt" || status=1
  done
  rm -f "$OUT/sweep-heldout.json"
fi

if want torch; then
  # PyTorch: one decode layer on cuBLAS, anvil and torch.compile max-autotune; the grouped
  # GEMM against torch._grouped_mm is in the moe phase; then the whole-model table
  # (the max-autotune compiles take minutes per workload).
  if (cd /tmp && python3 -c "import anvil") >/dev/null 2>&1; then
    python3 scripts/bench_tokens_torch.py --json "$OUT/tokens-torch-$stamp.json" 2>"$OUT/tokens-torch.err" || status=1
    python3 scripts/bench_model.py --json "$OUT/bench-model-$stamp.json" 2>"$OUT/bench-model.err" || status=1
  else
    echo "torch phase skipped: the anvil Python package is not installed (pip install --no-build-isolation .)"
  fi
fi

# The device tool returns at most 8 files: JSON results stay loose, logs go in one archive.
# (ls fails when one of the patterns matches nothing; its list of the others still counts.)
( cd "$OUT" && logs=$(ls *.log *.err *.txt 2>/dev/null || true) && [ -n "$logs" ] && tar czf logs.tgz $logs && rm -f $logs )
exit $status
