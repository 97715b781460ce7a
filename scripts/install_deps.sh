#!/usr/bin/env bash
# What building and testing anvil needs beyond the CUDA toolkit, installed when missing:
# CMake, Ninja, a C++ compiler, GoogleTest and nlohmann-json (Debian packages), and cuobjdump + nvdisasm
# for the SASS check (PyPI; the CI image's toolkit ships neither). Installing needs root
# and a package mirror; where either is missing this says what is absent and carries on,
# so the build reports the real error. Called by scripts/test.sh and scripts/gpu_run.sh.
set -uo pipefail

have_gtest() {
  for d in /usr/include /usr/local/include; do [ -f "$d/gtest/gtest.h" ] && return 0; done
  return 1
}

need=()
command -v cmake >/dev/null 2>&1 || need+=(cmake)
command -v ninja >/dev/null 2>&1 || need+=(ninja-build)
command -v g++ >/dev/null 2>&1 || need+=(g++)
have_gtest || need+=(libgtest-dev)
[ -f /usr/include/nlohmann/json.hpp ] || need+=(nlohmann-json3-dev)
if [ ${#need[@]} -gt 0 ]; then
  echo "install_deps: installing ${need[*]}"
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    { apt-get update && apt-get install -y --no-install-recommends "${need[@]}"; } ||
      echo "install_deps: could not install ${need[*]}" >&2
  else
    echo "install_deps: missing ${need[*]} (install them, or run as root with apt-get)" >&2
  fi
fi

# The SASS check skips (CTest: skipped, not failed) when these are absent. Not asked for
# where the toolkit already has them (the GPU machine, which has no network); a Python
# that refuses user installs (Debian's own, PEP 668) is asked again with its override.
if ! { command -v cuobjdump && command -v nvdisasm; } >/dev/null 2>&1; then
  pip_install() { python3 -m pip install -q --retries 1 --timeout 20 "$@" nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm; }
  pip_install 2>/dev/null || pip_install --break-system-packages ||
    echo "install_deps: cuobjdump/nvdisasm not installed: the sass_check test will skip"
fi
# ---- Python package (python/): torch and the build/test tools, only with ANVIL_PYTHON=1 ----
if [ "${ANVIL_PYTHON:-}" = 1 ]; then
  py_install() { python3 -m pip install -q --retries 1 --timeout 60 "$@"; }
  py_need=()
  python3 -c 'import torch' >/dev/null 2>&1 || py_need+=("torch==2.11.0")
  python3 -c 'import scikit_build_core' >/dev/null 2>&1 || py_need+=(scikit-build-core)
  python3 -c 'import pytest' >/dev/null 2>&1 || py_need+=(pytest)
  if [ ${#py_need[@]} -gt 0 ]; then
    echo "install_deps: installing ${py_need[*]} (Python package tests)"
    py_install "${py_need[@]}" 2>/dev/null || py_install --break-system-packages "${py_need[@]}" ||
      echo "install_deps: could not install ${py_need[*]}: the Python tests will skip" >&2
  fi
fi
exit 0
