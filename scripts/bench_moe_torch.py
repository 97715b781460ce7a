#!/usr/bin/env python3
"""Times torch._grouped_mm (bf16, offsets layout) on the MoE suite's shapes.

The anchor for anvil's grouped GEMM (docs/grouped.md): the same shapes and the same per-
expert row counts as anvil-bench --grouped (suites/moe.json, scripts/make_moe_suite.py),
measured the same way - random inputs in rotating sets larger than 3x L2, launches
captured back to back in a CUDA graph (timed with events around each replay; a batch of
direct launches where capture fails), the median of `--repeats` replays of at least
`--min-replay-ms`. Each shape's output is checked once against an fp32 matmul per expert.

  D[offs[e-1]:offs[e]] = A[offs[e-1]:offs[e]] @ W[e].T      A [rows, K], W [E, N, K], bf16

Usage: python3 scripts/bench_moe_torch.py [--suite suites/moe.json] [--only NAME ...]
                                          [--json OUT.json] [--repeats 7] [--min-replay-ms 20]
"""

import argparse
import datetime
import json
import math
import os
import statistics
import sys


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--suite", default=os.path.join(here, "..", "suites", "moe.json"))
    p.add_argument("--only", nargs="*", default=None, help="shape names (substrings) to keep")
    p.add_argument("--json", default=None)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--min-replay-ms", type=float, default=20.0)
    p.add_argument("--max-iters", type=int, default=2000)
    p.add_argument("--mem-cap-gb", type=float, default=40.0)
    p.add_argument("--seed", type=int, default=20261129)
    args = p.parse_args()

    import torch

    if not torch.cuda.is_available():
        print("bench_moe_torch: no CUDA device", file=sys.stderr)
        return 2
    if not hasattr(torch, "_grouped_mm"):
        print(f"bench_moe_torch: torch {torch.__version__} has no torch._grouped_mm", file=sys.stderr)
        return 2
    suite = json.load(open(args.suite))
    shapes = suite["shapes"]
    if args.only:
        shapes = [s for s in shapes if any(o in s["name"] for o in args.only)]
    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(dev)
    l2 = getattr(props, "L2_cache_size", 50 * 1024 * 1024)
    gen = torch.Generator(device=dev)
    rows_out = []
    info = {
        "gpu": props.name,
        "sm_count": props.multi_processor_count,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "suite": os.path.relpath(args.suite),
        "method": ("torch._grouped_mm(A, W.transpose(-2, -1), offs=int32 end offsets), bf16 in and out; "
                   "R rotating input sets (A, W; D allocated by the op) with R x bytes > 3x L2 (at least 2, memory permitting); "
                   "iters launches (a multiple of R, replay >= min-replay-ms) captured in one CUDA graph, "
                   "replayed `repeats` times with events; per-call time = replay / iters; median reported."),
        "repeats": args.repeats,
        "min_replay_ms": args.min_replay_ms,
    }

    for index, shape in enumerate(shapes):
        counts = suite["routings"][shape["routing"]]
        e, n, k = shape["experts"], shape["N"], shape["K"]
        rows = sum(counts)
        row = {"kernel": "torch._grouped_mm", "name": shape["name"], "experts": e, "N": n, "K": k, "rows": rows,
               "status": "ok"}
        flops = 2.0 * rows * n * k
        set_bytes = 2 * (rows * k + e * n * k + rows * n)
        sets = max(2, math.ceil(3 * l2 / max(set_bytes, 1)))
        sets = min(sets, 64, max(1, int(args.mem_cap_gb * 2**30 // max(set_bytes, 1))))
        print(f"[{index + 1}/{len(shapes)}] {shape['name']}: E={e} N={n} K={k} rows={rows}, {sets} sets",
              file=sys.stderr)
        try:
            torch.manual_seed(args.seed + index)
            offs = torch.tensor(counts, dtype=torch.int32, device=dev).cumsum(0, dtype=torch.int32)
            a_sets = [(torch.rand(rows, k, device=dev) * 2 - 1).to(torch.bfloat16) for _ in range(sets)]
            w_sets = [torch.empty(e, n, k, device=dev, dtype=torch.bfloat16).uniform_(-1, 1) for _ in range(sets)]

            def launch(s):
                torch._grouped_mm(a_sets[s], w_sets[s].transpose(-2, -1), offs=offs, out_dtype=torch.bfloat16)

            # Check set 0 against an fp32 matmul per expert.
            out = torch._grouped_mm(a_sets[0], w_sets[0].transpose(-2, -1), offs=offs)
            worst = 0.0
            start = 0
            for ex, c in enumerate(counts):
                if c:
                    ref = a_sets[0][start:start + c].float() @ w_sets[0][ex].float().T
                    err = (out[start:start + c].float() - ref).norm() / max(ref.norm().item(), 1e-30)
                    worst = max(worst, float(err))
                start += c
            row["rel_error"] = worst
            row["verified"] = worst < 1e-2
            # Warm-up and estimate.
            torch.cuda.synchronize()
            n_est = sets
            while True:
                t0 = torch.cuda.Event(enable_timing=True)
                t1 = torch.cuda.Event(enable_timing=True)
                t0.record()
                for i in range(n_est):
                    launch(i % sets)
                t1.record()
                t1.synchronize()
                ms = t0.elapsed_time(t1)
                if ms >= 5.0 or n_est >= args.max_iters:
                    break
                n_est = min(args.max_iters, n_est * 2)
            est_us = ms * 1000.0 / n_est
            iters = max(sets, min(args.max_iters, math.ceil(args.min_replay_ms * 1000.0 / max(est_us, 1e-3))))
            iters = (iters + sets - 1) // sets * sets
            graph = None
            try:
                stream = torch.cuda.Stream()
                stream.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(stream):
                    launch(0)
                torch.cuda.current_stream().wait_stream(stream)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    for i in range(iters):
                        launch(i % sets)
                row["method"] = "graph"
            except Exception as ex:  # capture refused: time direct launches instead
                graph = None
                row["method"] = f"events-batch (graph capture failed: {ex})"
            samples = []
            for _ in range(args.repeats + 1):
                t0 = torch.cuda.Event(enable_timing=True)
                t1 = torch.cuda.Event(enable_timing=True)
                t0.record()
                if graph is not None:
                    graph.replay()
                else:
                    for i in range(iters):
                        launch(i % sets)
                t1.record()
                t1.synchronize()
                samples.append(t0.elapsed_time(t1) * 1000.0 / iters)
            samples = samples[1:]  # the first replay is the warm-up
            row.update({
                "iters": iters,
                "input_sets": sets,
                "samples_us": samples,
                "us_median": statistics.median(samples),
                "us_min": min(samples),
                "us_max": max(samples),
            })
            row["tflops"] = flops / row["us_median"] / 1e6
            print(f"    {row['us_median']:10.2f} us  {row['tflops']:7.1f} TFLOP/s  rel err {worst:.2e}", file=sys.stderr)
            del graph, a_sets, w_sets
        except Exception as ex:
            row["status"] = "error"
            row["message"] = str(ex)
            print(f"    error: {ex}", file=sys.stderr)
        torch.cuda.empty_cache()
        rows_out.append(row)

    text = json.dumps({"info": info, "rows": rows_out}, indent=1)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
