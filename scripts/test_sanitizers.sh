#!/usr/bin/env bash
# The host-sanitizer part of the test command alone, in the same build tree
# (scripts/test.sh runs it as part of its CTest pass):
#  - AddressSanitizer + UndefinedBehaviorSanitizer over the CPU tier (anvil_cpu_tests_asan)
#    and the plan cache (anvil_plan_cache_tests_asan);
#  - ThreadSanitizer over the plan cache under eight threads (anvil_plan_cache_tests_tsan).
# The host sources and tests are compiled again, instrumented; the kernels' objects are
# the ordinary build's, so no CUDA file is compiled twice (tests/CMakeLists.txt).
#
# Environment: ANVIL_BUILD_DIR (default build), ANVIL_JOBS (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=${ANVIL_BUILD_DIR:-build}
jobs=${ANVIL_JOBS:-2}

if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi

cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DANVIL_SANITIZER_TESTS=ON
cmake --build "$build_dir" -j "$jobs" --target anvil_cpu_tests_asan anvil_plan_cache_tests_asan anvil_plan_cache_tests_tsan
ctest --test-dir "$build_dir" -L sanitize --output-on-failure
