#!/usr/bin/env python3
"""anvil against cuBLAS on every shape of the sweep, sorted, tuning and held-out halves apart.

    python3 scripts/plot_sweep.py RESULT.json [RESULT2.json ...]
    python3 scripts/plot_sweep.py tune.json heldout.json --sweep suites/sweep.json \\
        -o docs/img/sweep-h200-bf16.png

RESULT.json is anvil-bench's --json output over suites/sweep.json (or its halves, as
scripts/make_sweep.py --extract writes them; several files are merged, a shape measured
twice is an error). The ratio per shape is cuBLAS time / anvil time (us_median of each row,
so > 1 means anvil is faster), the same as anvil-bench's speedup_vs_cublas. suites/sweep.json
says which half each shape belongs to.

The chart (default docs/img/sweep-<gpu>-<dtype>.png) plots every shape's ratio in sorted
order on a log axis, the held-out half in its own marker (hollow where N or K is off the
16-byte grid), with a line at 1.0 and a dotted one at 0.9; the legend
gives geomean, 5th percentile and minimum per half. The Markdown summary printed on stdout
has the same statistics per half (also over the shapes whose rows sit on the 16-byte grid,
since cuBLAS falls back to much slower kernels off it and those ratios lift a geomean), the
shapes not measured, and the worst shapes. A row that failed verification is listed, and
its ratio counts (a wrong result is no speed-up, but hiding it would hide the failure).
"""

import argparse
import json
import math
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HALVES = ("tune", "heldout")
ALIGN_ELEMS = 8  # 16-byte rows in bf16/fp16


def percentile(values, q):
    """Linear interpolation between closest ranks (numpy's default)."""
    v = sorted(values)
    if not v:
        return math.nan
    pos = (len(v) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def geomean(values):
    return math.exp(sum(math.log(x) for x in values) / len(values)) if values else math.nan


def stats(values):
    return {"n": len(values), "geomean": geomean(values), "p5": percentile(values, 5),
            "min": min(values) if values else math.nan,
            "below_090": sum(1 for x in values if x < 0.90)}


def load_results(paths, kernel):
    info, rows = None, {}
    for path in paths:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        if info is None:
            info = doc
        elif (doc.get("gpu"), doc.get("dtype")) != (info.get("gpu"), info.get("dtype")):
            sys.exit(f"plot_sweep: {path} is {doc.get('gpu')} {doc.get('dtype')}, "
                     f"the first file {info.get('gpu')} {info.get('dtype')}")
        for r in doc.get("rows", []):
            if r.get("kernel") not in (kernel, "cublas"):
                continue
            key = (r["name"], r["kernel"])
            if key in rows:
                sys.exit(f"plot_sweep: {r['name']} ({r['kernel']}) appears twice")
            rows[key] = r
    if info is None:
        sys.exit("plot_sweep: no result files")
    return info, rows


def collect(sweep, rows, kernel):
    measured, missing = [], []
    for s in sweep["shapes"]:
        a, c = rows.get((s["name"], kernel)), rows.get((s["name"], "cublas"))
        if a is None and c is None:
            continue  # not in these results (e.g. only one half was run)
        bad = [r for r in (a, c) if r is None or r.get("status") != "ok" or r.get("us_median") is None]
        if bad:
            why = "; ".join(f"{r['kernel']}: {r.get('status')} {r.get('message') or ''}".strip()
                            for r in (a, c) if r is not None and r in bad)
            missing.append((s, why or "row missing"))
            continue
        measured.append({**s, "anvil_us": a["us_median"], "cublas_us": c["us_median"],
                         "ratio": c["us_median"] / a["us_median"],
                         "dispatched": a.get("dispatched") or kernel,
                         "wrong": [r["kernel"] for r in (a, c) if r.get("verified") is False],
                         "aligned": s["N"] % ALIGN_ELEMS == 0 and s["K"] % ALIGN_ELEMS == 0})
    names = {s["name"] for s in sweep["shapes"]}
    extra = sorted({n for (n, _) in rows} - names)
    if extra:
        sys.exit(f"plot_sweep: {len(extra)} result shapes not in the sweep, e.g. {extra[:3]}")
    return measured, missing


def fmt(x, digits=3):
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def markdown(info, measured, missing, worst, kernel):
    print(f"### {kernel} / cuBLAS on the sweep: {info.get('gpu')}, {info.get('dtype')}, "
          f"commit {info.get('commit')}, {info.get('date')}\n")
    print(f"Ratio = cuBLAS time / {kernel} time (> 1: {kernel} faster); "
          f"{info.get('repeats')} repeats, replays >= {info.get('min_replay_ms')} ms.\n")
    print("| half | shapes | geomean | p5 | min | below 0.90x |")
    print("|---|---|---|---|---|---|")
    for label, pick in [(h, lambda m, h=h: m["half"] == h) for h in HALVES] + [
            (f"{h}, 16-byte rows", lambda m, h=h: m["half"] == h and m["aligned"]) for h in HALVES] + [
            ("all", lambda m: True)]:
        st = stats([m["ratio"] for m in measured if pick(m)])
        print(f"| {label} | {st['n']} | {fmt(st['geomean'])} | {fmt(st['p5'])} | "
              f"{fmt(st['min'])} | {st['below_090']} |")
    wrong = [m for m in measured if m["wrong"]]
    if wrong:
        print(f"\n**Failed verification ({len(wrong)}):** " +
              ", ".join(f"{m['name']} ({'/'.join(m['wrong'])})" for m in wrong))
    if missing:
        print(f"\n**Not measured ({len(missing)}):**\n")
        for s, why in missing:
            print(f"- {s['name']} ({s['M']} x {s['N']} x {s['K']}): {why}")
    print(f"\n{min(worst, len(measured))} worst shapes:\n")
    print(f"| shape | family | half | M | N | K | {kernel} (us) | cuBLAS (us) | ratio | kernel |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for m in sorted(measured, key=lambda m: m["ratio"])[:worst]:
        print(f"| {m['name']} | {m['family']} | {m['half']} | {m['M']} | {m['N']} | {m['K']} | "
              f"{m['anvil_us']:.1f} | {m['cublas_us']:.1f} | {m['ratio']:.3f} | {m['dispatched']} |")


def gpu_slug(name):
    # "NVIDIA H200" -> "h200", "NVIDIA H100 80GB HBM3" -> "h100"
    words = [w for w in re.split(r"[^A-Za-z0-9]+", name or "gpu") if w and w.upper() != "NVIDIA"]
    return (words[0] if words else "gpu").lower()


def plot(info, measured, out, kernel):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator, NullFormatter, NullLocator

    order = sorted(measured, key=lambda m: m["ratio"])
    fig, ax = plt.subplots(figsize=(12, 5.5))
    style = {"tune": dict(marker="o", color="#1f77b4", s=14),
             "heldout": dict(marker="^", color="#d62728", s=20)}
    for h in HALVES:
        idx = [i for i, m in enumerate(order) if m["half"] == h]
        if not idx:
            continue
        st = stats([order[i]["ratio"] for i in idx])
        label = (f"{h} ({st['n']}): geomean {st['geomean']:.3f}, p5 {st['p5']:.3f}, "
                 f"min {st['min']:.3f}")
        on = [i for i in idx if order[i]["aligned"]]
        off = [i for i in idx if not order[i]["aligned"]]
        ax.scatter(on, [order[i]["ratio"] for i in on], label=label, zorder=3, linewidths=0,
                   **style[h])
        if off:
            # Hollow: N or K off the 16-byte grid, where cuBLAS runs its slower kernels.
            ax.scatter(off, [order[i]["ratio"] for i in off], zorder=3, facecolors="none",
                       edgecolors=style[h]["color"], marker=style[h]["marker"], s=style[h]["s"],
                       linewidths=0.8, label=f"{h}, N or K not a multiple of 8 ({len(off)})")
    ax.axhline(1.0, color="black", linewidth=1, zorder=2)
    ax.axhline(0.9, color="grey", linewidth=0.8, linestyle=":", zorder=2)
    ax.set_yscale("log")
    ratios = [m["ratio"] for m in order]
    ticks = [t for t in (0.25, 0.33, 0.5, 0.67, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2, 3, 4, 6, 8)
             if min(ratios) / 1.1 <= t <= max(ratios) * 1.1]
    ax.yaxis.set_major_locator(FixedLocator(ticks))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_yticklabels([f"{t:g}x" for t in ticks])
    ax.set_xlim(-1, len(order))
    ax.set_xlabel("shape, sorted by ratio")
    ax.set_ylabel(f"cuBLAS time / {kernel} time")
    ax.set_title(f"{kernel} against cuBLAS on {len(order)} sweep shapes: {info.get('gpu')}, "
                 f"{info.get('dtype')}, commit {info.get('commit')}")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(loc="upper left", fontsize=9)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    print(f"\nwrote {out}", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results", nargs="+", help="anvil-bench --json files")
    ap.add_argument("--sweep", default=str(ROOT / "suites" / "sweep.json"))
    ap.add_argument("--kernel", default="anvil", help="the row compared with cublas [anvil]")
    ap.add_argument("-o", "--out", help="chart path [docs/img/sweep-<gpu>-<dtype>.png]")
    ap.add_argument("--worst", type=int, default=15, help="worst shapes listed [15]")
    ap.add_argument("--no-plot", action="store_true", help="only print the summary")
    args = ap.parse_args()

    with open(args.sweep, encoding="utf-8") as f:
        sweep = json.load(f)
    info, rows = load_results(args.results, args.kernel)
    measured, missing = collect(sweep, rows, args.kernel)
    if not measured:
        sys.exit("plot_sweep: no shape has both rows measured")
    markdown(info, measured, missing, args.worst, args.kernel)
    if not args.no_plot:
        out = Path(args.out) if args.out else (
            ROOT / "docs" / "img" / f"sweep-{gpu_slug(info.get('gpu'))}-{info.get('dtype')}.png")
        plot(info, measured, out, args.kernel)


if __name__ == "__main__":
    main()
