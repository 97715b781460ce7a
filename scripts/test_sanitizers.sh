#!/usr/bin/env bash
# Host sanitizers over the CPU tier (the last step of scripts/test.sh, the test command):
#  - AddressSanitizer + UndefinedBehaviorSanitizer: anvil_cpu_tests and anvil_plan_cache_tests,
#    built in build-asan with -DANVIL_SANITIZE=address,undefined (cmake/sanitize.cmake);
#  - ThreadSanitizer: anvil_plan_cache_tests (eight threads on the launch-plan cache), in
#    build-tsan. It compiles no kernels, so it costs seconds.
# Only these test targets are built: the ASan build recompiles the kernels' host code,
# about as long as the plain build; the tools are left out.
#
# Environment: ANVIL_JOBS (default 2), ANVIL_ASAN_BUILD_DIR, ANVIL_TSAN_BUILD_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."

jobs=${ANVIL_JOBS:-2}
asan_dir=${ANVIL_ASAN_BUILD_DIR:-build-asan}
tsan_dir=${ANVIL_TSAN_BUILD_DIR:-build-tsan}

if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi

# protect_shadow_gap=0: the CUDA driver maps memory where ASan keeps its shadow gap, so on
# a GPU machine the first CUDA call would crash without it (harmless elsewhere).
# The CPU tier's tests do reach the CUDA runtime (can_implement asks for the device).
export ASAN_OPTIONS="protect_shadow_gap=0:${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}"
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}

echo "== AddressSanitizer + UndefinedBehaviorSanitizer: CPU tier =="
cmake -S . -B "$asan_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DANVIL_SANITIZE=address,undefined -DANVIL_BUILD_TOOLS=OFF
cmake --build "$asan_dir" -j "$jobs" --target anvil_cpu_tests anvil_plan_cache_tests
"$asan_dir/tests/anvil_cpu_tests" --gtest_brief=1
"$asan_dir/tests/anvil_plan_cache_tests" --gtest_brief=1

echo "== ThreadSanitizer: the plan cache under eight threads =="
cmake -S . -B "$tsan_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DANVIL_SANITIZE=thread -DANVIL_BUILD_TOOLS=OFF
cmake --build "$tsan_dir" -j "$jobs" --target anvil_plan_cache_tests
"$tsan_dir/tests/anvil_plan_cache_tests" --gtest_brief=1

echo "sanitizer builds: all tests passed"
