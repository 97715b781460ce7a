#!/usr/bin/env bash
# The test command (README; CI's .ci/run is exactly this): install what is missing
# (scripts/install_deps.sh), configure and build into build/ (Release, Ninja), run every
# test through CTest, then the CPU tier again under host sanitizers
# (scripts/test_sanitizers.sh: ASan + UBSan, TSan for the plan cache). The cpu-labelled
# tests run anywhere; the gpu-labelled ones need an sm_90 GPU and report themselves
# skipped elsewhere, with the reason printed below.
#
# Environment: ANVIL_BUILD_DIR (default build), ANVIL_JOBS (default 2),
# ANVIL_SANITIZERS=0 to skip the sanitizer builds.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install_deps.sh

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

ctest --test-dir "$build_dir" --output-on-failure

if [ "${ANVIL_SANITIZERS:-1}" != 0 ]; then
  scripts/test_sanitizers.sh
fi
