#!/usr/bin/env python3
"""What the Blackwell GEMM kernel shares with the Hopper one, and what differs.

    python3 scripts/diff_kernels.py           # the parts, shared and own
    python3 scripts/diff_kernels.py --diff    # ... and the plain `diff -u` of the two files

Reads src/kernels/sm90/gemm_kernel.cuh and src/kernels/sm100/gemm_kernel.cuh and prints:
  - the shared parts (tile scheduler, stage ring, TMA producer, staged epilogue, fused
    functors), each with where each kernel calls it;
  - every top-level definition of each kernel file, with the part it belongs to. On the
    Blackwell side these are what differs from Hopper: the MMA issue, the TMEM
    accumulator, the scheduling query (CLC), and the CTA pair's split of the operands.
Fails (exit 1) if a shared part is no longer called by both kernels, or if a kernel file
gains a definition this table does not classify: the claim "only the MMA, accumulator and
scheduling-query parts differ" is checked, not just stated (CTest kernel_parts, label cpu).
"""
import os
import re
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
HOPPER = "src/kernels/sm90/gemm_kernel.cuh"
BLACKWELL = "src/kernels/sm100/gemm_kernel.cuh"

# Shared part -> (header, symbol the Hopper kernel file uses, symbol the Blackwell kernel
# file uses). Hopper reaches some through a wrapper of its own header (run_producer calls
# load_tile; store_tile calls store_staged, which calls store_rows_staged).
SHARED = [
    ("tile order and L2 raster bands", "kernels/sm90/tile_scheduler.cuh", r"scheduler\.tile\(", r"scheduler\.tile\("),
    ("stage ring and its mbarriers", "kernels/sm90/pipeline.cuh", r"StageBarriers<|StageRing<",
     r"StageBarriers<|StageRing<"),
    ("TMA producer (load_tile)", "kernels/sm90/producer.cuh", r"run_producer<", r"load_tile<"),
    ("staged epilogue (store_rows_staged)", "kernels/sm90/epilogue_store.cuh", r"store_tile<", r"store_rows_staged<"),
    ("fused epilogue functors", "kernels/common/epilogue.cuh", r"store_tile<", r"visit_activation\("),
]

# Every top-level definition of each file, by part.
HOPPER_PARTS = {
    "SharedStorage": "shared-memory layout (ring, epilogue buffer, ping-pong barriers)",
    "BlockScaleRing": "shared-memory layout: each stage's A block scales (FP8 block scales, Hopper only)",
    "NoBlockScaleRing": "shared-memory layout: each stage's A block scales (FP8 block scales, Hopper only)",
    "run_stream_k_consumer": "scheduling: stream-K work units (Hopper only)",
    "sm90_gemm_kernel": "kernel body: roles (producer / wgmma consumer warpgroups, consumer.cuh)",
}
BLACKWELL_PARTS = {
    "WaitSite": "first-run aid: named barrier waits (hang check)",
    "wait_barrier": "first-run aid: named barrier waits (hang check)",
    "Sm100Shared": "shared-memory layout: the shared ring + TMEM accumulator and CLC barriers",
    "TileStream": "SCHEDULING QUERY: CLC response or static stride",
    "request_next_tile": "SCHEDULING QUERY: clusterlaunchcontrol.try_cancel",
    "CtaPairStageLoads": "MMA (2-CTA): the pair's split operands, the producer's hook",
    "run_sm100_producer": "producer outer loop: the tile stream around the shared load_tile",
    "operand_desc": "MMA ISSUE: shared-memory descriptors",
    "run_sm100_mma": "MMA ISSUE: tcgen05.mma, tcgen05.commit",
    "run_sm100_epilogue": "TMEM ACCUMULATOR: tcgen05.ld into the shared staged epilogue",
    "sm100_gemm_kernel": "kernel body: roles, TMEM allocation",
}

DEFINITION = re.compile(
    r"^(?:template <[^>]*>\s*)?(?:struct|enum class)\s+(\w+)|"
    r"^(?:__device__|__global__).*?\b(?!__launch_bounds__\b)(\w+)\s*\(", re.M)


def definitions(text):
    return [a or b for a, b in DEFINITION.findall(text)]


def main():
    show_diff = "--diff" in sys.argv[1:]
    texts = {}
    for path in (HOPPER, BLACKWELL):
        with open(os.path.join(ROOT, path)) as f:
            texts[path] = f.read()
    problems = []

    print(f"Hopper kernel:    {HOPPER}\nBlackwell kernel: {BLACKWELL}\n")
    print("Shared parts (the same code, called by both):")
    for part, header, hopper_use, blackwell_use in SHARED:
        uses = []
        for path, pattern in ((HOPPER, hopper_use), (BLACKWELL, blackwell_use)):
            lines = [i + 1 for i, line in enumerate(texts[path].splitlines()) if re.search(pattern, line)]
            included = f'#include "{header}"' in texts[path] or header == "kernels/common/epilogue.cuh"
            if not lines or not included:
                problems.append(f"{path} no longer uses the shared {part} ({header})")
            uses.append(",".join(map(str, lines)) or "-")
        print(f"  {part:38s} {header:35s} Hopper lines {uses[0]:10s} Blackwell lines {uses[1]}")

    for path, table, title in ((HOPPER, HOPPER_PARTS, "Hopper's own"), (BLACKWELL, BLACKWELL_PARTS, "Blackwell's own")):
        print(f"\n{title} definitions ({path}):")
        for name in definitions(texts[path]):
            part = table.get(name)
            if part is None:
                problems.append(f"{path}: definition '{name}' is not classified in scripts/diff_kernels.py")
                part = "UNCLASSIFIED"
            print(f"  {name:24s} {part}")

    shared_headers = {header for _, header, _, _ in SHARED}
    print("\nKernel parts included by one kernel only:")
    for path in (HOPPER, BLACKWELL):
        own = [h for h in re.findall(r'#include "(kernels/[^"]+)"', texts[path]) if h not in shared_headers]
        print(f"  {path}: {', '.join(own)}")
    print("  (kernels/sm90/consumer.cuh is Hopper's MMA issue and accumulator: wgmma into registers)")
    own_includes = sorted(set(re.findall(r'#include "(arch/sm100/[^"]+)"', texts[BLACKWELL])))
    print("\nBlackwell-only instructions (arch/sm100):", ", ".join(own_includes))

    if show_diff:
        print("\n" + "=" * 100)
        subprocess.run(["diff", "-u", HOPPER, BLACKWELL], cwd=ROOT)
    for p in problems:
        print("diff_kernels: FAIL", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
