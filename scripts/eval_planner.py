#!/usr/bin/env python3
"""How close a planner's choices come to the best measured plan, offline.

    python3 scripts/eval_planner.py TUNE.json --plan build/tools/anvil-plan [--baseline OLD-anvil-plan]

TUNE.json is a record written by `anvil-tune --record FILE` (every candidate plan of every
shape with its measured time; bench/results/h200-2026-12-02-61e48f5-tune-verbose-bf16.json
is one, converted from `--verbose` output).
For each shape the script asks `anvil-plan M N K` which plan the planner picks, finds that
plan among the measured candidates and divides its time by the fastest candidate's. It
prints the geomean of that ratio (1.0: the planner always picks the best measured plan),
the shapes where the plan is not among the candidates, and the shapes furthest from their
best. With --baseline (an anvil-plan built from the commit the record was measured with),
shapes whose plan did not change keep the record's own planner time, which was measured
more precisely (longer replays), and the shapes a change moves are listed.

A rule fitted this way must be checked on shapes it was not fitted to (the sweep's
held-out half): this only says how a rule does on the record's shapes.
"""

import argparse
import json
import math
import re
import subprocess
import sys


def plan_label(anvil_plan, m, n, k, dtype_args=()):
    """The measured candidate's label for the plan anvil-plan picks ("sm90-gemm/wide-pair",
    "sm90-decode-r64/splits=2", "sm90-fp8/fp8-block-pair", ...)."""
    out = subprocess.run([anvil_plan, str(m), str(n), str(k), *dtype_args], capture_output=True, text=True,
                         check=True).stdout
    family = re.search(r"^plan .*?: (\S+)", out, re.M).group(1)
    if family in ("sm90-gemm", "sm90-fp8"):
        split_k = re.search(r"split-K: (\d+) slices", out)
        if split_k:
            return f"{family}/split-k={split_k.group(1)}"
        if re.search(r"^  tail:", out, re.M):
            return f"{family}/row-split=always"
        if "stream-K 256x128" in out:
            return f"{family}/tall-streamk"
        variant = re.search(r"^  tile: .*? - ([\w-]+?):", out, re.M)
        return f"{family}/{variant.group(1) if variant else '?'}"
    splits = re.search(r"K split (\d+) across", out)
    return f"{family}/splits={splits.group(1) if splits else 1}"


def candidate_time(cands, label):
    """A plan's measured time: a forced split equal to the kernel's own choice was measured
    once, under the label without the split."""
    if label in cands:
        return cands[label]
    return cands.get(label.split("/")[0]) if "/splits=" in label else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("record")
    ap.add_argument("--plan", required=True, help="the anvil-plan binary whose choices are evaluated")
    ap.add_argument("--baseline", help="anvil-plan of the commit the record was measured with")
    ap.add_argument("--worst", type=int, default=15)
    args = ap.parse_args()

    record = json.load(open(args.record))
    rows = record["rows"]
    # An FP8 record (anvil-tune --dtype e4m3) is planned with its scale mode.
    dtype_args = ()
    if record.get("dtype") == "e4m3":
        scales = {"row-column": "rowcol", "block128": "block"}.get(record.get("scales"), record.get("scales", "tensor"))
        dtype_args = ("--dtype", "e4m3", "--scales", scales)
    logs, moved, unmeasured, ratios = [], [], [], []
    for r in rows:
        cands = dict(r["candidates_search_us"])
        planner_key = next(k for k in cands if k.startswith("planner"))
        cands.setdefault(planner_key[len("planner ("):-1], cands[planner_key])
        best = min(cands.values())
        label = plan_label(args.plan, r["M"], r["N"], r["K"], dtype_args)
        same = args.baseline and plan_label(args.baseline, r["M"], r["N"], r["K"], dtype_args) == label
        t = cands[planner_key] if same else candidate_time(cands, label)
        if t is None:
            unmeasured.append((r["name"], label))
            t = cands[planner_key]
        if args.baseline and not same:
            moved.append((r["name"], label, t / cands[planner_key]))
        ratio = t / best
        ratios.append((ratio, r["name"], r["M"], r["N"], r["K"], label, min(cands, key=cands.get)))
        logs.append(math.log(ratio))

    print(f"{len(rows)} shapes: planner time / best measured time, geomean {math.exp(sum(logs) / len(logs)):.4f}")
    if moved:
        print(f"{len(moved)} shapes moved from the baseline's plan (new time / old):")
        for name, label, x in sorted(moved, key=lambda m: m[2]):
            print(f"  {x:.3f}  {name}: {label}")
    if unmeasured:
        print(f"{len(unmeasured)} plans not among the measured candidates (counted at the record's planner time):")
        for name, label in unmeasured:
            print(f"  {name}: {label}")
    print(f"furthest from the best:")
    for ratio, name, m, n, k, label, best in sorted(ratios, reverse=True)[: args.worst]:
        print(f"  {ratio:.3f}  {name} ({m} x {n} x {k}): {label}; best {best}")


if __name__ == "__main__":
    sys.exit(main())
