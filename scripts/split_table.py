#!/usr/bin/env python3
"""The table of a `gpu_run.sh splits` result: per shape, the dispatcher's pick, the split
its plan chose (from the traced plans), sm90-decode at every forced split, sm90-gemm and
cuBLAS. Times in us; cuBLAS's spread over the processes shows how far the forced rows'
clocks may differ from the planner's process.

    scripts/split_table.py decode-splits-bf16-DATE.json [--markdown]
"""
import argparse
import json
import re
import sys

PLAN = re.compile(r"decode plan: m (\d+) n (\d+) k (\d+) batch (\d+) rows (\d+) tile (\d+) -> splits (\d+)")


def rows_by(run, kernel):
    return {(r["M"], r["N"], r["K"]): r for r in run["rows"] if r["kernel"] == kernel and r["status"] == "ok"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    data = json.load(open(args.file))
    runs = data["runs"]
    planner = runs["planner"]
    plans = {}
    for line in data.get("texts", {}).get("plans", []):
        m = PLAN.search(line)
        if m and int(m.group(5)) == 128:  # sm90-decode's 128-row tiles
            plans[(int(m.group(1)), int(m.group(2)), int(m.group(3)))] = int(m.group(7))
    forced = sorted(((int(name[5:]), run) for name, run in runs.items() if name.startswith("split")),
                    key=lambda item: item[0])
    anvil, gemm, cublas = (rows_by(planner, k) for k in ("anvil", "sm90-gemm", "cublas"))
    head = ["M", "N", "anvil", "kernel", "plan s"] + [f"s={s}" for s, _ in forced] + ["best s", "sm90-gemm", "cuBLAS",
                                                                                        "cuBLAS spread"]
    def emit(cells):
        print("| " + " | ".join(cells) + " |" if args.markdown else "  ".join(cells))

    emit(head)
    if args.markdown:
        print("|" + "---|" * len(head))
    for key in sorted(anvil):
        times = []
        cublas_times = [cublas[key]["us_median"]] if key in cublas else []
        for s, run in forced:
            decode_row = rows_by(run, "sm90-decode").get(key)
            times.append(decode_row["us_median"] if decode_row else None)
            c = rows_by(run, "cublas").get(key)
            if c:
                cublas_times.append(c["us_median"])
        valid = [(t, s) for t, (s, _) in zip(times, forced) if t is not None]
        best = min(valid)[1] if valid else "-"
        spread = f"{min(cublas_times):.1f}-{max(cublas_times):.1f}" if cublas_times else "-"
        cells = [str(key[0]), str(key[1]), f"{anvil[key]['us_median']:.1f}", anvil[key]["dispatched"],
                 str(plans.get(key, "-"))]
        cells += [f"{t:.1f}" if t is not None else "-" for t in times]
        cells += [str(best), f"{gemm[key]['us_median']:.1f}" if key in gemm else "-",
                  f"{cublas[key]['us_median']:.1f}" if key in cublas else "-", spread]
        emit(cells)
    return 0


if __name__ == "__main__":
    sys.exit(main())
