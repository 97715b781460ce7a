#!/usr/bin/env python3
"""Markdown tables from anvil-bench JSON files (stdlib only).

    python3 scripts/results_table.py bench/results/X.json [Y.json ...] [--by-kernel]

Default: one row per (shape, kernel) with time, TFLOP/s and the ratio to cuBLAS from the
same run. --by-kernel: one row per kernel, one column per shape, each cell
"us / TFLOP/s / x cuBLAS" (the ladder table).
"""
import argparse
import json


def load_rows(paths):
    rows = []
    for path in paths:
        with open(path) as f:
            doc = json.load(f)
        for r in doc["rows"]:
            r = dict(r)
            r["_file"] = path
            rows.append(r)
    return rows


def cublas_us(rows):
    ref = {}
    for r in rows:
        if r["kernel"] == "cublas" and r.get("us_median"):
            ref[(r["_file"], r["name"])] = r["us_median"]
    return ref


def cell(r, ref):
    if r.get("status") != "ok" or not r.get("us_median"):
        return r.get("status", "-")
    base = ref.get((r["_file"], r["name"]))
    ratio = f"{base / r['us_median']:.2f}x" if base else "-"
    ok = "" if r.get("verified", True) else " (FAILED)"
    return f"{r['us_median']:.1f} us / {r['tflops']:.0f} / {ratio}{ok}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+")
    ap.add_argument("--by-kernel", action="store_true")
    args = ap.parse_args()
    rows = load_rows(args.files)
    ref = cublas_us(rows)
    if args.by_kernel:
        shapes, kernels = [], []
        for r in rows:
            if r["name"] not in shapes:
                shapes.append(r["name"])
            if r["kernel"] not in kernels:
                kernels.append(r["kernel"])
        kernels = [k for k in kernels if k != "cublas"] + ["cublas"]
        print("| kernel | " + " | ".join(shapes) + " |")
        print("|---" * (len(shapes) + 1) + "|")
        for k in kernels:
            cells = []
            for s in shapes:
                match = [r for r in rows if r["kernel"] == k and r["name"] == s]
                cells.append(cell(match[0], ref) if match else "not run")
            print(f"| {k} | " + " | ".join(cells) + " |")
        print("\ncells: median time / TFLOP/s / speed relative to cuBLAS in the same run")
    else:
        print("| shape | M | N | K | kernel | us | TFLOP/s | vs cuBLAS | verified |")
        print("|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            if r.get("status") != "ok":
                continue
            base = ref.get((r["_file"], r["name"]))
            ratio = f"{base / r['us_median']:.2f}x" if base else "-"
            kernel = r["kernel"] if r["kernel"] != "anvil" else f"anvil ({r.get('dispatched')})"
            print(f"| {r['name']} | {r['M']} | {r['N']} | {r['K']} | {kernel} | {r['us_median']:.1f} | "
                  f"{r['tflops']:.0f} | {ratio} | {'yes' if r.get('verified') else 'NO'} |")


if __name__ == "__main__":
    main()
