#!/usr/bin/env bash
# The test command (README, CI): configure and build into build/ (Release, Ninja), then run
# every test through CTest. The cpu-labelled tests run anywhere; the gpu-labelled ones need
# an sm_90 GPU and report themselves skipped elsewhere, with the reason printed below.
#
# Environment: ANVIL_BUILD_DIR (default build), ANVIL_JOBS (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=${ANVIL_BUILD_DIR:-build}
jobs=${ANVIL_JOBS:-2}

if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi

cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$build_dir" -j "$jobs"

# CTest hides the output of skipped tests, so show once whether the GPU tier will run.
echo "== GPU tier =="
"$build_dir/tests/anvil_gpu_tests" --gtest_filter='GpuTier.*' 2>&1 |
  grep -E 'no sm_90 GPU|GPU tier running on|FAILED' || true

# ctest's closing summary is the last thing printed; its status is the script's.
ctest --test-dir "$build_dir" --output-on-failure
