#!/bin/bash
# anvil-tune on an H200: 20 shapes of the sweep's tuning half within 5 minutes, and the
# cache it writes used by the library (anvil-bench's anvil rows with and without it, each
# row verified against the reference); then the same for FP8 (suites/fp8.json, e4m3 with
# DeepSeek-V3 block scales).
#   tools/tune/check_tune_gpu.sh [tune|bench|fp8|all]
# BUILD (default build-gpu) must hold a Release build of this tree (targets anvil-tune and
# anvil-bench); OUT (default ./out) receives the shapes, the cache and the logs.
set -uo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build-gpu}
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
phase=${1:-all}
want() { [ "$phase" = "$1" ] || [ "$phase" = all ]; }
status=0
SHAPES="$OUT/tune20.json"
CACHE="$OUT/tune20-cache-bf16.json"

# 20 shapes spread evenly over the tuning half (in its committed order).
[ -f scripts/make_sweep.py ] || { echo "scripts/make_sweep.py (the sweep) is missing from this tree"; exit 1; }
python3 scripts/make_sweep.py --extract tune -o "$OUT/sweep-tune.json" || exit 1
python3 - "$OUT/sweep-tune.json" "$SHAPES" <<'PY' || exit 1
import json, sys
doc = json.load(open(sys.argv[1]))
shapes = doc["shapes"]
pick = [shapes[round(i * (len(shapes) - 1) / 19)] for i in range(20)]
json.dump({"about": "20 shapes spread over the sweep's tuning half", "shapes": pick}, open(sys.argv[2], "w"), indent=1)
print(f"{len(pick)} of {len(shapes)} tuning shapes -> {sys.argv[2]}")
PY

if want tune; then
  start=$(date +%s)
  "$BUILD/tools/anvil-tune" --shapes "$SHAPES" --dtype bf16 --out "$CACHE" 2>&1 | tee "$OUT/tune20-bf16.txt"
  rc=${PIPESTATUS[0]}
  took=$(( $(date +%s) - start ))
  echo "anvil-tune: exit $rc, ${took} s for 20 shapes (limit 300 s)"
  [ "$rc" = 0 ] && [ "$took" -le 300 ] || status=1
fi

if want bench; then
  # The library with and without the cache: the tuned rows must verify and should be faster.
  "$BUILD/tools/anvil-bench" --shapes "$SHAPES" --dtype bf16 --kernels anvil,cublas \
    --json "$OUT/tune20-untuned.json" >"$OUT/tune20-untuned.txt" 2>&1 || status=1
  ANVIL_TUNING_CACHE="$CACHE" "$BUILD/tools/anvil-bench" --shapes "$SHAPES" --dtype bf16 --kernels anvil,cublas \
    --json "$OUT/tune20-tuned.json" >"$OUT/tune20-tuned.txt" 2>&1 || status=1
  # A warning or load error from the library means the cache was not used.
  grep -hE "anvil: tuning cache|ANVIL_TUNING_CACHE not loaded" "$OUT/tune20-tuned.txt" && status=1
  tail -3 "$OUT/tune20-untuned.txt" "$OUT/tune20-tuned.txt"
fi
if want fp8; then
  FP8_CACHE="$OUT/tune-fp8-block-cache.json"
  "$BUILD/tools/anvil-tune" --shapes suites/fp8.json --dtype e4m3 --scales block --out "$FP8_CACHE" \
    --record "$OUT/tune-fp8-block-record.json" 2>&1 | tee "$OUT/tune-fp8-block.txt"
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
  "$BUILD/tools/anvil-bench" --shapes suites/fp8.json --dtype e4m3 --scales block \
    --json "$OUT/fp8-block-untuned.json" >"$OUT/fp8-block-untuned.txt" 2>&1 || status=1
  ANVIL_TUNING_CACHE="$FP8_CACHE" "$BUILD/tools/anvil-bench" --shapes suites/fp8.json --dtype e4m3 --scales block \
    --json "$OUT/fp8-block-tuned.json" >"$OUT/fp8-block-tuned.txt" 2>&1 || status=1
  grep -hE "anvil: tuning cache|ANVIL_TUNING_CACHE not loaded" "$OUT/fp8-block-tuned.txt" && status=1
  tail -3 "$OUT/fp8-block-untuned.txt" "$OUT/fp8-block-tuned.txt"
fi
exit $status
