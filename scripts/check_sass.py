#!/usr/bin/env python3
"""Guards the tensor-core kernels' machine code without a GPU (CI, label cpu).

    python3 scripts/check_sass.py build/libanvil.a

Disassembles every kernel in the library with cuobjdump (from the CUDA toolkit, or the
PyPI packages nvidia-cuda-cuobjdump + nvidia-cuda-nvdisasm) and fails if a kernel of the
composed Hopper family (sm90_gemm_kernel: ladder steps 6-11, the ablations, sm90-gemm;
sm90_decode_kernel: sm90-decode; sm90_decode_ldg_kernel: sm90-decode-ldg):
  - has no HGMMA instruction (it fell back to a slower path),
  - touches local memory (LDL/STL: spilled registers or a runtime-indexed array),
  - waits for every wgmma before issuing the next (as many WARPGROUP.DEPBAR as HGMMA:
    the serialized form ptxas produces when it cannot keep wgmma asynchronous, the
    C7510-family warnings).
Ladder steps 3-5 are reported but not failed: their simple epilogue calls an out-of-line
per-element function, and the call's register saves are their only local-memory traffic.
Exit 77 (CTest skip) when no disassembler is available.
"""
import os
import re
import shutil
import subprocess
import sys

WGMMA_KERNELS = re.compile(
    r"sm90_gemm_kernel|sm90_decode_kernel|sm90_decode_ldg_kernel|tma_wgmma_kernel|swizzled_kernel|pipelined_kernel")
STRICT_KERNELS = re.compile(r"sm90_gemm_kernel|sm90_decode_kernel|sm90_decode_ldg_kernel")


def find_tools():
    """cuobjdump and nvdisasm on PATH, else from the nvidia-cuda-* wheels."""
    path = os.environ.get("PATH", "")
    try:
        import nvidia  # namespace package of the NVIDIA wheels

        for root in nvidia.__path__:
            for sub in ("cu13/bin", "cuda_cuobjdump/bin", "cuda_nvdisasm/bin"):
                candidate = os.path.join(root, sub)
                if os.path.isdir(candidate):
                    path = candidate + os.pathsep + path
    except ImportError:
        pass
    for extra in ("/usr/local/cuda/bin",):
        path = path + os.pathsep + extra
    cuobjdump = shutil.which("cuobjdump", path=path)
    nvdisasm = shutil.which("nvdisasm", path=path)
    return cuobjdump, nvdisasm, path


def functions(sass):
    """Yields (mangled name, body lines) for each function in a cuobjdump listing."""
    name, body = None, []
    for line in sass.splitlines():
        m = re.search(r"Function : (\S+)", line)
        if m:
            if name:
                yield name, body
            name, body = m.group(1), []
        elif name:
            body.append(line)
    if name:
        yield name, body


def problems_in(name, body):
    """The rule violations of one kernel's SASS."""
    text = "\n".join(body)
    hgmma = len(re.findall(r"\bHGMMA\.", text))
    local = len(re.findall(r"\b(LDL|STL)(\.\S+)?\s", text))
    depbar = len(re.findall(r"WARPGROUP\.DEPBAR", text))
    short = name[:110]
    found = []
    if hgmma == 0:
        found.append(f"{short}: no HGMMA")
    if local:
        found.append(f"{short}: {local} local-memory instructions (LDL/STL)")
    if hgmma > 1 and depbar >= hgmma:
        found.append(f"{short}: {depbar} WARPGROUP.DEPBAR for {hgmma} HGMMA (wgmma serialized)")
    return found


def failures_or_notes(name, body, failures, notes):
    """Files one kernel's violations: failures for the strict family, decided on the full
    mangled name (the messages carry a shortened one), notes for ladder steps 3-5."""
    (failures if STRICT_KERNELS.search(name) else notes).extend(problems_in(name, body))


def self_test():
    """The rules catch what they claim to, on hand-written listings."""
    good = ["WARPGROUP.ARRIVE ;", "HGMMA.64x256x16.F32.BF16 R24, gdesc[UR4], R24 ;",
            "HGMMA.64x256x16.F32.BF16 R24, gdesc[UR8], R24, gsb0 ;", "WARPGROUP.DEPBAR.LE gsb0, 0x1 ;"]
    assert problems_in("sm90_gemm_kernel", good) == [], problems_in("sm90_gemm_kernel", good)
    spill = good + ["STL [R1+0x10], R4 ;"]
    assert any("local-memory" in p for p in problems_in("sm90_gemm_kernel", spill))
    serial = ["HGMMA.64x256x16.F32.BF16 R24, gdesc[UR4], R24, gsb0 ;", "WARPGROUP.DEPBAR.LE gsb0, 0x0 ;"] * 2
    assert any("serialized" in p for p in problems_in("sm90_gemm_kernel", serial))
    assert any("no HGMMA" in p for p in problems_in("sm90_gemm_kernel", ["HMMA.16816.F32.BF16 R4, R8, R12, R4 ;"]))
    listing = "\n".join(["Function : k1", *good, "Function : k2", *spill])
    assert [n for n, _ in functions(listing)] == ["k1", "k2"]
    # Strictness comes from the whole name, even where the message's shortened one has lost it.
    long_name = "_Z" + "x" * 200 + "sm90_gemm_kernel"
    failures, notes = [], []
    failures_or_notes(long_name, spill, failures, notes)
    assert len(failures) == 1 and not notes, (failures, notes)
    failures_or_notes("_Z17swizzled_kernel", spill, failures, notes)
    assert len(failures) == 1 and len(notes) == 1, (failures, notes)
    print("check_sass: self-test passed")
    return 0


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "--self-test":
        return self_test()
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    cuobjdump, nvdisasm, path = find_tools()
    if not cuobjdump or not nvdisasm:
        print("check_sass: SKIPPED - cuobjdump/nvdisasm not found (pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm)")
        return 77
    result = subprocess.run([cuobjdump, "--dump-sass", sys.argv[1]], capture_output=True, text=True,
                            env=dict(os.environ, PATH=path))
    if result.returncode != 0:
        print("check_sass: cuobjdump failed:", result.stderr.strip()[:500])
        return 1
    checked, failures, notes = 0, [], []
    for name, body in functions(result.stdout):
        if not WGMMA_KERNELS.search(name):
            continue
        checked += 1
        failures_or_notes(name, body, failures, notes)
    if checked == 0:
        print("check_sass: no wgmma kernel found in", sys.argv[1])
        return 1
    for p in notes:
        print("check_sass: note (ladder 3-5)", p)
    for p in failures:
        print("check_sass: FAIL", p)
    print(f"check_sass: {checked} wgmma kernels checked, {len(failures)} problems")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
