#!/usr/bin/env bash
# The test command (README; CI's .ci/run is exactly this). Phases, each timed:
#   deps       install what is missing (scripts/install_deps.sh)
#   configure  build/ (Release, Ninja), with the sanitized CPU tier (ANVIL_SANITIZER_TESTS)
#   build      everything: library, lab, tools, tests; the sanitized tier recompiles only
#              host code and links the kernels' objects as built
#   ctest      every test: the cpu-labelled ones run anywhere, the sanitize-labelled ones
#              are the CPU tier under ASan + UBSan and the plan cache under TSan, the
#              gpu-labelled ones need an sm_90 GPU and report themselves skipped elsewhere
#   install    cmake --install into a temporary prefix, then examples/gemm_example
#              configured and built against that copy with find_package(anvil), and run
#              (it says so and counts as not run where there is no sm_90 GPU)
# A failing phase stops the script with its exit status. (Inside a phase, errexit does not
# apply: the functions below return on each failure themselves.)
#
# Environment: ANVIL_BUILD_DIR (default build), ANVIL_JOBS (default 2),
# ANVIL_SANITIZERS=0 to leave the sanitized CPU tier out, ANVIL_PYTHON=0 to leave the
# Python package's CPU tests out (by default torch is installed for them when missing; see
# the python phase).
set -euo pipefail
cd "$(dirname "$0")/.."
export ANVIL_PYTHON=${ANVIL_PYTHON:-1}

build_dir=${ANVIL_BUILD_DIR:-build}
jobs=${ANVIL_JOBS:-2}
sanitizers=$([ "${ANVIL_SANITIZERS:-1}" != 0 ] && echo ON || echo OFF)

if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi

timings=()
start_all=$SECONDS
# phase NAME COMMAND...: runs COMMAND, prints and records how long it took; a failure
# ends the script with the command's status.
phase() {
  local name=$1 start=$SECONDS rc=0
  shift
  echo "== $name =="
  "$@" || rc=$?
  local took=$((SECONDS - start))
  timings+=("$(printf '%-10s %4d s' "$name" "$took")")
  echo "== $name: ${took} s$([ $rc = 0 ] || echo ", FAILED (exit $rc)") =="
  if [ $rc != 0 ]; then
    print_timings
    exit $rc
  fi
}
print_timings() {
  echo "== phase times =="
  printf '  %s\n' "${timings[@]}"
  echo "  total      $((SECONDS - start_all)) s"
}

gpu_tier_note() {
  # CTest hides the output of skipped tests, so show once whether the GPU tier will run.
  "$build_dir/tests/anvil_gpu_tests" --gtest_filter='GpuTier.*' 2>&1 |
    grep -E 'no sm_90 GPU|GPU tier running on|FAILED' || true
}

# The installed copy and the example's build live in a temporary folder, removed on exit.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

install_and_build_example() {
  cmake --install "$build_dir" --prefix "$tmp/prefix" >"$tmp/install.log" || { cat "$tmp/install.log"; return 1; }
  echo "installed into $tmp/prefix: $(cd "$tmp/prefix" && find . -type f | wc -l) files"
  cmake -S examples/gemm_example -B "$tmp/example" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$tmp/prefix" >"$tmp/configure.log" || { cat "$tmp/configure.log"; return 1; }
  cmake --build "$tmp/example" -j "$jobs" || return 1
  local rc=0
  "$tmp/example/gemm_example" || rc=$?
  case $rc in
    0) echo "gemm_example: built against the installed copy and passed" ;;
    2) echo "gemm_example: built against the installed copy and linked; not run (no sm_90 GPU)" ;;
    *) echo "gemm_example: FAILED (exit $rc)"; return "$rc" ;;
  esac
}

# The Python package's CPU tests (schemas, fake kernels, argument errors, patch: python/tests)
# need a CUDA 13 build of torch. Where one is importable, the extension is built in the same
# build tree against the library already built there (only ops.cpp compiles), staged with
# the package's Python files, and tested; elsewhere the phase says why it is skipped.
# With ANVIL_PYTHON=1 (the default here) install_deps.sh installs torch from PyPI when it is
# missing (about 3 GB with its CUDA wheels); ANVIL_PYTHON=0 leaves the phase out.
torch_matches_toolkit() {
  [ "${ANVIL_PYTHON:-auto}" != 0 ] || return 1
  local torch_cuda nvcc_major
  torch_cuda=$(python3 -c 'import torch; print((torch.version.cuda or "").split(".")[0])' 2>/dev/null) || return 1
  nvcc_major=$(nvcc --version | sed -n 's/.*release \([0-9]*\)\..*/\1/p')
  [ -n "$torch_cuda" ] && [ "$torch_cuda" = "$nvcc_major" ]
}
python_cpu_tests() {
  if [ "$python" != ON ]; then
    echo "skipped: no importable torch built for this CUDA toolkit's major version (or ANVIL_PYTHON=0)"
    return 0
  fi
  rm -rf "$tmp/py" && mkdir -p "$tmp/py" && cp -r python/anvil "$tmp/py/" || return 1
  cmake --install "$build_dir" --component python --prefix "$tmp/py" >/dev/null || return 1
  (cd python/tests && PYTHONPATH="$tmp/py" python3 -m pytest -q -m 'not gpu' -p no:cacheprovider .)
}

phase deps scripts/install_deps.sh
python=OFF
torch_matches_toolkit && python=ON
phase configure cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DANVIL_SANITIZER_TESTS="$sanitizers" \
  -DANVIL_BUILD_PYTHON="$python"
phase build cmake --build "$build_dir" -j "$jobs"
gpu_tier_note
phase ctest ctest --test-dir "$build_dir" --output-on-failure -j "$jobs"
phase install install_and_build_example
phase python python_cpu_tests
print_timings
