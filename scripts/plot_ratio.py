#!/usr/bin/env python3
"""Speed of anvil relative to cuBLAS, one bar per shape, from an anvil-bench JSON file.

    python3 scripts/plot_ratio.py bench/results/X.json -o docs/img/llm-vs-cublas.png

A bar is cuBLAS's median time over anvil's, both from the same run (so above 1.0 anvil is
faster). Each bar is labelled with the ratio and the kernel the dispatcher chose. Rows that
failed verification are hatched and labelled so. Needs only matplotlib.
"""

import argparse
import json

import matplotlib

matplotlib.use("Agg")  # no display on the machines this runs on
import matplotlib.pyplot as plt  # noqa: E402


def ratios(doc):
    """(shape label, ratio, dispatched kernel, verified) per shape, in file order."""
    cublas, anvil, order = {}, {}, []
    for r in doc["rows"]:
        if r.get("status") != "ok" or not r.get("us_median"):
            continue
        name = r["name"]
        if name not in order:
            order.append(name)
        if r["kernel"] == "cublas":
            cublas[name] = r
        elif r["kernel"] == "anvil":
            anvil[name] = r
    out = []
    for name in order:
        if name in cublas and name in anvil:
            a = anvil[name]
            label = f"{name}\n{a['M']} x {a['N']} x {a['K']}"
            out.append((label, cublas[name]["us_median"] / a["us_median"], a.get("dispatched", "anvil"),
                        a.get("verified", True)))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("result", help="anvil-bench --json output with anvil and cublas rows")
    ap.add_argument("-o", "--out", required=True, help="PNG to write")
    ap.add_argument("--title", help="chart title (default: GPU, dtype, commit, date from the file)")
    ap.add_argument("--dpi", type=int, default=150)
    args = ap.parse_args()

    with open(args.result, encoding="utf-8") as f:
        doc = json.load(f)
    rows = ratios(doc)
    if not rows:
        raise SystemExit("no shape has both an anvil and a cublas row")

    fig, ax = plt.subplots(figsize=(9, 0.42 * len(rows) + 1.4))
    y = list(range(len(rows)))[::-1]
    colors = ["#2b7bba" if r >= 1.0 else "#d9822b" for _, r, _, _ in rows]
    bars = ax.barh(y, [r for _, r, _, _ in rows], color=colors, height=0.65)
    for bar, (_, r, kernel, ok) in zip(bars, rows):
        if not ok:
            bar.set_hatch("//")
        note = f"{r:.2f}x  {kernel}" + ("" if ok else "  FAILED")
        ax.text(max(r, 0.0) + 0.005, bar.get_y() + bar.get_height() / 2, note, va="center", fontsize=8)
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_yticks(y)
    ax.set_yticklabels([label for label, _, _, _ in rows], fontsize=8)
    lo = min(r for _, r, _, _ in rows)
    hi = max(r for _, r, _, _ in rows)
    ax.set_xlim(min(0.8, lo - 0.02), max(1.2, hi + 0.12))
    ax.set_xlabel("speed relative to cuBLAS in the same run (cuBLAS time / anvil time)")
    title = args.title or "anvil vs cuBLAS, {} {}, commit {}, {}".format(
        doc.get("gpu", "?"), doc.get("dtype", "?"), doc.get("commit", "?"), str(doc.get("date", "?"))[:10])
    ax.set_title(title, fontsize=10)
    ax.grid(axis="x", linewidth=0.3)
    fig.tight_layout()
    fig.savefig(args.out, dpi=args.dpi)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
