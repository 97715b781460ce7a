#!/usr/bin/env python3
"""Decode results against the hardware floor.

    python3 scripts/plot_decode_sweep.py sweep.json -o docs/img/decode-sweep.png
    python3 scripts/plot_decode_sweep.py llm.json --max-m 256 --table

The floor of one GEMM on the H200 is max(bytes / 4.26 TB/s, FLOPs / 989 TFLOP/s): the
copy bandwidth measured in ../shared/anchors and the dense bf16 peak. bytes is anvil-bench's
min_bytes (A and W read once, D written once); FLOPs is 2 M N K.

The chart has one panel per weight (N x K): time per call against M on log-log axes for
every kernel in the file, and the floor. --table prints, per shape, each kernel's time,
its fraction of the floor (floor / time) and anvil's speedup over cuBLAS, as Markdown.
"""

import argparse
import json
import sys
from collections import OrderedDict

COPY_BANDWIDTH = 4.26e12  # bytes/s, measured copy bandwidth (shared/anchors)
PEAK_FLOPS = 989e12  # dense bf16/fp16 tensor-core peak


def floor_us(row):
    return max(row["min_bytes"] / COPY_BANDWIDTH, row["flops"] / PEAK_FLOPS) * 1e6


def load(paths, max_m):
    rows = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        rows += [r for r in doc.get("rows", []) if r.get("status") == "ok" and r["M"] <= max_m]
    if not rows:
        sys.exit("plot_decode_sweep: no successful rows")
    return rows


def table(rows):
    shapes = OrderedDict()
    for r in rows:
        shapes.setdefault((r["name"], r["M"], r["N"], r["K"]), {})[r["kernel"]] = r
    print("| shape | M | N x K | floor (us) | anvil (us) | anvil % floor | cuBLAS (us) | cuBLAS % floor | anvil vs cuBLAS |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (name, m, n, k), by_kernel in shapes.items():
        a, c = by_kernel.get("anvil"), by_kernel.get("cublas")
        fl = floor_us(a or c)
        cells = [name, str(m), f"{n} x {k}", f"{fl:.1f}"]
        for r in (a, c):
            cells += [f"{r['us_median']:.1f}", f"{100 * fl / r['us_median']:.0f}%"] if r else ["-", "-"]
        cells.append(f"{c['us_median'] / a['us_median']:.2f}x" if a and c else "-")
        print("| " + " | ".join(cells) + " |")


def plot(rows, out, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    weights = OrderedDict()
    for r in rows:
        weights.setdefault((r["N"], r["K"]), []).append(r)
    fig, axes = plt.subplots(1, len(weights), figsize=(6 * len(weights), 4.5), squeeze=False)
    for ax, ((n, k), group) in zip(axes[0], weights.items()):
        kernels = OrderedDict()
        floors = {}
        for r in group:
            kernels.setdefault(r["kernel"], []).append((r["M"], r["us_median"]))
            floors[r["M"]] = floor_us(r)
        for name, points in kernels.items():
            points.sort()
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=name)
        ms = sorted(floors)
        ax.plot(ms, [floors[m] for m in ms], linestyle="--", color="black", label="floor (4.26 TB/s, 989 TFLOP/s)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("M (tokens)")
        ax.set_ylabel("time per call (us)")
        ax.set_title(f"W = {n} x {k}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    print(f"wrote {out}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+")
    parser.add_argument("-o", "--output", help="PNG to write")
    parser.add_argument("--table", action="store_true", help="print the Markdown table")
    parser.add_argument("--max-m", type=int, default=1 << 30, help="only rows with M <= this")
    parser.add_argument("--title", default="anvil decode GEMM vs cuBLAS on the H200 (bf16)")
    args = parser.parse_args()
    rows = load(args.files, args.max_m)
    if args.table:
        table(rows)
    if args.output:
        plot(rows, args.output, args.title)


if __name__ == "__main__":
    main()
