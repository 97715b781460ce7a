#!/usr/bin/env python3
"""Bar chart of an anvil-bench result file: one group of bars per shape, one bar per kernel.

    python3 scripts/plot_results.py results.json -o chart.png
    python3 scripts/plot_results.py ladder.json --metric speedup --title "anvil ladder"

Shapes and kernels keep the order in which they first appear in the file, so a run with
--kernels all-ladder,cublas on suites/ladder.json gives the ladder chart directly. Rows
that are unsupported or failed get no bar but a mark; bars of results that failed
verification are hatched, so a fast wrong kernel cannot pass for a fast one.

Needs only matplotlib and the standard library.
"""

import argparse
import json
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")  # no display on the machines this runs on
import matplotlib.pyplot as plt  # noqa: E402

METRICS = {
    "tflops": ("tflops", "TFLOP/s", True),
    "us": ("us_median", "time per call (us)", False),
    "gbps": ("gbps", "GB/s (A + W read, D written once)", True),
    "speedup": ("speedup_vs_cublas", "speedup vs cuBLAS (x)", True),
}


def load_rows(paths):
    """Rows of all files in order, plus the first file's run description."""
    rows, info = [], None
    for path in paths:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        if not isinstance(doc, dict) or not isinstance(doc.get("rows"), list):
            sys.exit(f"plot_results: {path}: not an anvil-bench result (no 'rows' list)")
        if info is None:
            info = doc
        rows.extend(doc["rows"])
    return rows, info or {}


def split_list(text):
    return [s.strip() for s in text.split(",") if s.strip()] if text else None


def ordered_unique(values):
    seen, out = set(), []
    for v in values:
        if v not in seen:
            seen.add(v)
            out.append(v)
    return out


def kernel_colors(kernels):
    """cuBLAS in neutral grey; anvil's kernels along a colormap, in their given order, so
    the ladder's steps read as a progression."""
    cmap = plt.get_cmap("viridis")
    ours = [k for k in kernels if k != "cublas"]
    colors = {}
    for i, k in enumerate(ours):
        colors[k] = cmap(0.1 + 0.8 * (i / max(len(ours) - 1, 1)))
    colors["cublas"] = (0.35, 0.35, 0.35, 1.0)
    return colors


def number(v):
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def label_text(v):
    if v >= 100:
        return f"{v:.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results", nargs="+", help="anvil-bench --json output(s)")
    ap.add_argument("-o", "--out", help="PNG to write (default: first input with .png)")
    ap.add_argument("--metric", choices=sorted(METRICS), default="tflops")
    ap.add_argument("--kernels", help="comma list: only these kernels, in this order")
    ap.add_argument("--shapes", help="comma list: only these shapes, in this order")
    ap.add_argument("--title", help="chart title")
    ap.add_argument("--log", action="store_true", help="logarithmic value axis")
    ap.add_argument("--no-values", action="store_true", help="no numbers above the bars")
    ap.add_argument("--dpi", type=int, default=150)
    args = ap.parse_args(argv)

    rows, info = load_rows(args.results)
    field, ylabel, _ = METRICS[args.metric]

    shapes = split_list(args.shapes) or ordered_unique(r.get("name") for r in rows)
    kernels = split_list(args.kernels) or ordered_unique(r.get("kernel") for r in rows)
    if args.metric == "speedup":
        kernels = [k for k in kernels if k != "cublas"]  # cuBLAS is the 1.0 line instead
    if not shapes or not kernels:
        sys.exit("plot_results: nothing to plot")

    # First row wins when several files hold the same (shape, kernel).
    table = {}
    for r in rows:
        table.setdefault((r.get("name"), r.get("kernel")), r)

    colors = kernel_colors(kernels)
    n_k = len(kernels)
    group_width = 0.85
    bar_w = group_width / n_k
    fig_w = min(max(6.0, 1.6 + len(shapes) * (0.3 + 0.22 * n_k)), 40.0)
    fig, ax = plt.subplots(figsize=(fig_w, 5.2))

    top = 0.0
    marks = []  # (x, text) for rows without a bar
    any_wrong = False
    for ki, kernel in enumerate(kernels):
        xs, hs, wrong = [], [], []
        for si, shape in enumerate(shapes):
            x = si - group_width / 2 + (ki + 0.5) * bar_w
            r = table.get((shape, kernel))
            if r is None:
                continue
            v = number(r.get(field))
            if r.get("status") != "ok" or v is None:
                marks.append((x, "n/s" if r.get("status") == "unsupported" else "err"))
                continue
            xs.append(x)
            hs.append(v)
            wrong.append(r.get("verified") is False)
        if not xs:
            # Keep the kernel in the legend even when it has no bar at all.
            ax.bar([], [], bar_w, color=colors[kernel], label=kernel)
            continue
        bars = ax.bar(xs, hs, bar_w * 0.95, color=colors[kernel], label=kernel,
                      edgecolor="black", linewidth=0.3)
        for bar, bad in zip(bars, wrong):
            if bad:
                bar.set_hatch("xx")
                bar.set_edgecolor("red")
                any_wrong = True
        top = max(top, max(hs))
        if not args.no_values:
            for x, h in zip(xs, hs):
                ax.text(x, h, " " + label_text(h), ha="center", va="bottom", rotation=90,
                        fontsize=6.5 if n_k > 6 else 8)

    for x, text in marks:
        ax.text(x, 0, text, ha="center", va="bottom", rotation=90, fontsize=6.5, color="0.4")

    if args.metric == "speedup":
        ax.axhline(1.0, color="0.35", linewidth=1.0, linestyle="--", label="cuBLAS = 1")

    ax.set_xticks(range(len(shapes)))
    slant = len(shapes) > 3
    ax.set_xticklabels(shapes, rotation=20 if slant else 0, ha="right" if slant else "center",
                       fontsize=8)
    ax.set_xlim(-0.6, len(shapes) - 0.4)
    ax.set_ylabel(ylabel)
    if args.log:
        ax.set_yscale("log")
    elif top > 0:
        ax.set_ylim(0, top * 1.18)  # room for the rotated value labels
    ax.grid(axis="y", linewidth=0.4, alpha=0.6)
    ax.set_axisbelow(True)

    title = args.title or f"anvil-bench: {ylabel} per shape"
    sub = ", ".join(str(s) for s in (
        info.get("gpu"),
        info.get("dtype") and f"{info.get('dtype')} -> {info.get('out_dtype', info.get('dtype'))}",
        info.get("commit") and f"commit {info.get('commit')}",
        info.get("date"),
    ) if s)
    ax.set_title(title + ("\n" + sub if sub else ""), fontsize=10)
    handles, labels = ax.get_legend_handles_labels()
    if any_wrong:
        from matplotlib.patches import Patch
        handles.append(Patch(facecolor="white", edgecolor="red", hatch="xx"))
        labels.append("failed verification")
    # Outside on the right: below the axis it collides with the slanted shape names.
    ax.legend(handles, labels, fontsize=7, loc="upper left", bbox_to_anchor=(1.005, 1.0),
              frameon=False)
    fig.tight_layout()

    out = args.out or os.path.splitext(args.results[0])[0] + ".png"
    fig.savefig(out, dpi=args.dpi, bbox_inches="tight")
    print(f"plot_results: wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
