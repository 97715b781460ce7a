#!/usr/bin/env python3
"""Guards the tensor-core kernels' machine code without a GPU (CI, label cpu).

    python3 scripts/check_sass.py build/libanvil.a

Disassembles every kernel in the library with cuobjdump (from the CUDA toolkit, or the
PyPI packages nvidia-cuda-cuobjdump + nvidia-cuda-nvdisasm) and fails if a kernel of the
composed Hopper family (sm90_gemm_kernel: ladder steps 6-11, the ablations, sm90-gemm; sm90_grouped_kernel: the
grouped GEMM; sm90_decode_kernel: sm90-decode; sm90_decode_ldg_kernel: sm90-decode-ldg):
  - has no HGMMA instruction (it fell back to a slower path),
  - touches local memory (LDL/STL: spilled registers or a runtime-indexed array),
  - waits for every wgmma before issuing the next (as many WARPGROUP.DEPBAR as HGMMA:
    the serialized form ptxas produces when it cannot keep wgmma asynchronous, the
    C7510-family warnings).
Ladder steps 3-5 are reported but not failed: their simple epilogue calls an out-of-line
per-element function, and the call's register saves are their only local-memory traffic.

    python3 scripts/check_sass.py --sm100 OBJECT_FILE...

checks the Blackwell kernels (sm100_gemm_kernel, sm_100a machine code) instead. No
B200 runs them anywhere this is checked, so their machine code is the evidence that the
intended instructions survived compilation. Each kernel must:
  - contain the tcgen05 MMA (UTCHMMA); the CTA-pair configurations its 2-CTA form
    (UTCHMMA.2CTA) and the pair's multicast commit (UTCBAR.2CTA.MULTICAST);
  - read its accumulators from tensor memory (LDTM);
  - with CLC scheduling, issue the cancellation request (UGETNEXTWORKID);
  - touch no local memory (LDL/STL), use no stack, and at most SM100_MAX_REGISTERS
    registers (cuobjdump --dump-resource-usage).
Exit 77 (CTest skip) when no disassembler is available.
"""
import os
import re
import shutil
import subprocess
import sys

WGMMA_KERNELS = re.compile(
    r"sm90_gemm_kernel|sm90_grouped_kernel|sm90_decode_kernel|sm90_decode_ldg_kernel|tma_wgmma_kernel|swizzled_kernel|pipelined_kernel")
STRICT_KERNELS = re.compile(r"sm90_gemm_kernel|sm90_grouped_kernel|sm90_decode_kernel|sm90_decode_ldg_kernel")


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
    # HGMMA for 16-bit inputs, QGMMA for 8-bit ones (e4m3/e5m2).
    hgmma = len(re.findall(r"\b[HQ]GMMA\.", text))
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


SM100_KERNELS = re.compile(r"sm100_gemm_kernel")
# The epilogue warps hold 16 accumulator rows of 256 fp32 columns in the wgmma fragment
# layout (128 registers), as a Hopper consumer warpgroup does, plus the staged epilogue's
# addresses: the Hopper consumers' 232 is the limit; past it means a second copy of the
# accumulators, and spills follow.
SM100_MAX_REGISTERS = 232


def sm100_traits(name):
    """(pair, clc, swizzled) of a Blackwell kernel, from the Sm100Config<Sm100Spec{cta_group,
    stages, schedule, accumulator_buffers, band, epilogue_per_activation, swizzle_128b}>
    template argument in its mangled name (Sm100Schedule::kClc = 0)."""
    m = re.search(r"Sm100Config\w*?Sm100SpecELi(\d+)ELi\d+ELN\w*?Sm100ScheduleE(\d+)ELi\d+ELi\d+ELb[01]ELb([01])E",
                  name)
    if not m:
        return None
    return m.group(1) == "2", m.group(2) == "0", m.group(3) == "1"


# TMA loads of one operand per stage: one 64-element box with the 128-byte swizzle, eight
# 8-element boxes (one per core-matrix column) without it.
SM100_BOXES_PER_OPERAND = {True: 1, False: 8}


def sm100_problems(name, body, registers, stack):
    """The rule violations of one Blackwell kernel's SASS and resource usage."""
    text = "\n".join(body)
    short = name[:110]
    traits = sm100_traits(name)
    if traits is None:
        return [f"{short}: not an Sm100Config instance (cannot tell its form)"]
    pair, clc, swizzled = traits
    found = []
    loads = len(re.findall(r"\bUTMALDG\.2D\b", text))
    expected = 2 * SM100_BOXES_PER_OPERAND[swizzled]
    if loads != expected:
        found.append(f"{short}: {loads} 2-D TMA loads (UTMALDG.2D), expected {expected} "
                     f"({'swizzled' if swizzled else 'unswizzled'} operands)")
    if not re.search(r"\bUTCHMMA\b", text):
        found.append(f"{short}: no tcgen05 MMA (UTCHMMA)")
    if pair and not re.search(r"\bUTCHMMA\.2CTA\b", text):
        found.append(f"{short}: CTA-pair configuration without the 2-CTA MMA (UTCHMMA.2CTA)")
    if pair and not re.search(r"\bUTCBAR\.2CTA\.MULTICAST\b", text):
        found.append(f"{short}: CTA-pair configuration without the multicast commit (UTCBAR.2CTA.MULTICAST)")
    if not re.search(r"\bLDTM\.", text):
        found.append(f"{short}: no tensor-memory load (LDTM)")
    if clc and not re.search(r"\bUGETNEXTWORKID\b", text):
        found.append(f"{short}: CLC configuration without the cancellation request (UGETNEXTWORKID)")
    local = len(re.findall(r"\b(LDL|STL)(\.\S+)?\s", text))
    if local:
        found.append(f"{short}: {local} local-memory instructions (LDL/STL)")
    if registers is None:
        found.append(f"{short}: no resource usage reported")
    else:
        if registers > SM100_MAX_REGISTERS:
            found.append(f"{short}: {registers} registers (limit {SM100_MAX_REGISTERS})")
        if stack:
            found.append(f"{short}: {stack} bytes of stack")
    return found


def resource_usage(listing):
    """{mangled name: (registers, stack bytes)} from cuobjdump --dump-resource-usage."""
    usage, name = {}, None
    for line in listing.splitlines():
        m = re.search(r"Function (\S+?):?$", line.strip())
        if m:
            name = m.group(1)
            continue
        m = re.search(r"REG:(\d+) STACK:(\d+)", line)
        if m and name:
            usage[name] = (int(m.group(1)), int(m.group(2)))
            name = None
    return usage


def check_sm100(path, cuobjdump, env):
    result = subprocess.run([cuobjdump, "--dump-sass", path], capture_output=True, text=True, env=env)
    usage = subprocess.run([cuobjdump, "--dump-resource-usage", path], capture_output=True, text=True, env=env)
    if result.returncode != 0 or usage.returncode != 0:
        print("check_sass: cuobjdump failed:", (result.stderr + usage.stderr).strip()[:500])
        return 1
    if "sm_100a" not in result.stdout:
        print("check_sass: no sm_100a machine code in", path)
        return 1
    resources = resource_usage(usage.stdout)
    checked, failures = 0, []
    for name, body in functions(result.stdout):
        if not SM100_KERNELS.search(name):
            continue
        checked += 1
        registers, stack = resources.get(name, (None, 0))
        problems = sm100_problems(name, body, registers, stack)
        failures.extend(problems)
        pair, clc, swizzled = sm100_traits(name) or (False, False, True)
        counts = {k: len(re.findall(p, "\n".join(body))) for k, p in
                  (("UTCHMMA", r"\bUTCHMMA\b"), ("LDTM", r"\bLDTM\."), ("UGETNEXTWORKID", r"\bUGETNEXTWORKID\b"),
                   ("UTMALDG.2D", r"\bUTMALDG\.2D\b"))}
        print(f"check_sass: {'pair' if pair else '1cta'} {'clc' if clc else 'static'} "
              f"{'sw128' if swizzled else 'unswizzled'} {registers} regs {counts} {'ok' if not problems else 'FAIL'}")
    if checked == 0:
        print("check_sass: no sm100_gemm_kernel found in", path)
        return 1
    for p in failures:
        print("check_sass: FAIL", p)
    print(f"check_sass: {checked} sm100 kernels checked, {len(failures)} problems")
    return 1 if failures else 0


def self_test_sm100():
    """The sm_100a rules on hand-written listings (mnemonics as nvdisasm prints them for
    the kernels in src/kernels/sm100)."""
    pair_clc = ("_ZN5anvil6detail17sm100_gemm_kernelINS0_11Sm100ConfigIXtlNS0_9Sm100SpecELi2ELi6ELNS0_13Sm100Schedule"
                "E0ELi2ELi8ELb1ELb1EEEEELNS_5sm1008MmaInputE1EEEvNS0_11Sm100ParamsE")
    one_static = ("_ZN5anvil6detail17sm100_gemm_kernelINS0_11Sm100ConfigIXtlNS0_9Sm100SpecELi1ELi4ELNS0_13Sm100Schedule"
                  "E1ELi2ELi8ELb1ELb1EEEEELNS_5sm1008MmaInputE1EEEvNS0_11Sm100ParamsE")
    one_unswizzled = one_static.replace("ELb1ELb1E", "ELb0ELb0E")
    assert sm100_traits(pair_clc) == (True, True, True) and sm100_traits(one_static) == (False, False, True)
    assert sm100_traits(one_unswizzled) == (False, False, False)
    loads = ["UTMALDG.2D [UR8], [UR4] ;", "UTMALDG.2D [UR16], [UR4] ;"]
    good = ["UTCHMMA.2CTA gdesc[UR4], gdesc[UR6], tmem[UR8], tmem[UR10], idesc[UR11], UPT ;",
            "UTCBAR.2CTA.MULTICAST [UR4], URZ, UR5 ;", "LDTM.16dp256bit.x8 R4, tmem[UR4] ;",
            "UGETNEXTWORKID.BROADCAST [UR4], [UR5] ;"] + loads
    assert sm100_problems(pair_clc, good, 100, 0) == [], sm100_problems(pair_clc, good, 100, 0)
    single = ["UTCHMMA gdesc[UR4], gdesc[UR6], tmem[UR8], tmem[UR10], idesc[UR11], UPT ;",
              "LDTM.16dp256bit.x8 R4, tmem[UR4] ;"] + loads
    assert sm100_problems(one_static, single, 100, 0) == []
    assert any("TMA loads" in p for p in sm100_problems(one_unswizzled, single, 100, 0))
    assert sm100_problems(one_unswizzled, single[:2] + loads * 8, 100, 0) == []
    assert any("2-CTA MMA" in p for p in sm100_problems(pair_clc, single + good[1:], 100, 0))
    assert any("UGETNEXTWORKID" in p for p in sm100_problems(pair_clc, good[:3], 100, 0))
    assert any("LDTM" in p for p in sm100_problems(one_static, single[:1], 100, 0))
    assert any("local-memory" in p for p in sm100_problems(pair_clc, good + ["STL [R1+0x10], R4 ;"], 100, 0))
    assert any("registers" in p for p in sm100_problems(pair_clc, good, 240, 0))
    assert any("stack" in p for p in sm100_problems(pair_clc, good, 100, 16))
    listing = "Function _Zk1:\n  REG:94 STACK:0 SHARED:1024 LOCAL:0\n Function _Zk2:\n  REG:101 STACK:8 SHARED:0"
    assert resource_usage(listing) == {"_Zk1": (94, 0), "_Zk2": (101, 8)}, resource_usage(listing)


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
    self_test_sm100()
    print("check_sass: self-test passed")
    return 0


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "--self-test":
        return self_test()
    sm100 = len(sys.argv) >= 3 and sys.argv[1] == "--sm100"
    if len(sys.argv) != 2 and not sm100:
        print(__doc__)
        return 2
    cuobjdump, nvdisasm, path = find_tools()
    if not cuobjdump or not nvdisasm:
        print("check_sass: SKIPPED - cuobjdump/nvdisasm not found (pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm)")
        return 77
    if sm100:
        results = [check_sm100(p, cuobjdump, dict(os.environ, PATH=path)) for p in sys.argv[2:]]
        return max(results)
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
