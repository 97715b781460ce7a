#!/usr/bin/env bash
# The Python package on a GPU machine (sm_90, torch built for CUDA 13, transformers,
# scikit-build-core and pytest installed; no network needed):
#
#   scripts/python_gpu_tests.sh          install, then every pytest (CPU, GPU, models)
#   scripts/python_gpu_tests.sh bench [WORKLOADS]
#                                        install, then scripts/bench_model.py on WORKLOADS
#                                        (default: prefill, then decode1,decode8,decode64,
#                                        one process each; BENCH_ARGS adds arguments, e.g.
#                                        "--model qwen2-7b", and BENCH_TAG names the files). The
#                                        max-autotune compiles take minutes: under a
#                                        10-minute limit, run one group per command.
#
# Installs with `pip install --no-build-isolation --no-deps .` (the build compiles and links
# against the installed torch; an incremental build directory under build/ makes a second
# run quick). Logs and results go under $OUT/python (OUT defaults to out/).
set -uo pipefail
cd "$(dirname "$0")/.."

out="${OUT:-out}/python"
mkdir -p "$out"
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
py=${PYTHON:-python3}

"$py" -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda, "GPU", torch.cuda.get_device_name() if torch.cuda.is_available() else None)' |
  tee "$out/env.txt"
nvcc --version | tail -1 | tee -a "$out/env.txt"

echo "== pip install --no-build-isolation . (log: $out/pip_install.log) =="
start=$(date +%s)
if ! "$py" -m pip install --no-build-isolation --no-deps -v . >"$out/pip_install.log" 2>&1; then
  tail -40 "$out/pip_install.log"
  echo "python_gpu_tests: the install failed" >&2
  exit 1
fi
echo "installed in $(($(date +%s) - start)) s"
# Import from outside the source tree, as a user would.
if ! (cd /tmp && "$py" -c 'import anvil, anvil._build_info as b; print("anvil", anvil.__version__, "built for torch", b.torch_version, "CUDA", b.torch_cuda, "toolkit", b.cuda_toolkit)') >>"$out/env.txt"; then
  echo "python_gpu_tests: the installed anvil does not import" >&2
  exit 1
fi
tail -1 "$out/env.txt"

if [ "${1:-tests}" = bench ]; then
  rc=0
  groups=${2:-"prefill decode1,decode8,decode64"}
  for group in $groups; do
    name=${group%%,*}${BENCH_TAG:+_$BENCH_TAG}
    echo "== bench_model.py --workloads $group =="
    "$py" scripts/bench_model.py --workloads "$group" --json "$out/bench_$name.json" ${BENCH_ARGS:-} \
      2> >(tee "$out/bench_$name.log" >&2) | tee "$out/bench_$name.md" || rc=1
  done
  exit $rc
fi

echo "== pytest python/tests (log: $out/pytest.log) =="
"$py" -m pytest python/tests -v -rs -s --durations=15 --junitxml="$out/pytest.xml" 2>&1 | tee "$out/pytest.log"
exit "${PIPESTATUS[0]}"
