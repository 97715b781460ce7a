#!/usr/bin/env bash
# The test command (README; CI's .ci/run is exactly this): install what is missing
# (scripts/install_deps.sh), configure and build into build/ (Release, Ninja), run every
# test through CTest, then the CPU tier again under host sanitizers
# (scripts/test_sanitizers.sh: ASan + UBSan, TSan for the plan cache). The cpu-labelled
# tests run anywhere; the gpu-labelled ones need an sm_90 GPU and report themselves
# skipped elsewhere, with the reason printed below.
#
# Environment: ANVIL_BUILD_DIR (default build), ANVIL_JOBS (default 2),
# ANVIL_SANITIZERS=0 to skip the sanitizer builds, ANVIL_PYTHON (see the Python block).
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

# ---- Python package (python/, docs/python.md) ----
# The CPU tests of the PyTorch package (schemas, fake kernels, argument errors, patch on a
# meta-device model) need torch and a build of the extension against it. They run when
# torch is importable; ANVIL_PYTHON=1 first installs torch from PyPI (scripts/install_deps.sh:
# a 531 MB wheel plus about 2.5 GB of CUDA 13 wheels, about 2 minutes on a fast mirror), and
# ANVIL_PYTHON=0 skips them. The extension build compiles the library a second time
# (position-independent), which is why CI does not install torch by default.
if [ "${ANVIL_PYTHON:-auto}" != 0 ]; then
  if python3 -c 'import torch' >/dev/null 2>&1; then
    echo "== Python package: install and CPU tests =="
    python3 -m pip install -q --no-build-isolation --no-deps . ||
      python3 -m pip install -q --no-build-isolation --no-deps --break-system-packages .
    (cd /tmp && python3 -c 'import anvil')  # fails loudly where the tests would only skip
    (cd python/tests && python3 -m pytest -q -m 'not gpu' .)
  else
    echo "== Python package: skipped (torch is not importable; ANVIL_PYTHON=1 installs it) =="
  fi
fi
