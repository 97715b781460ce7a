#!/usr/bin/env python3
"""Times torch._grouped_mm (bf16) or torch._scaled_grouped_mm (--fp8) on the MoE suite's shapes.

The anchor for anvil's grouped GEMM (docs/grouped.md): the same shapes and the same per-
expert row counts as anvil-bench --grouped (suites/moe.json, scripts/make_moe_suite.py),
measured the same way - random inputs in rotating sets larger than 3x L2, launches
captured back to back in a CUDA graph (timed with events around each replay; a batch of
direct launches where capture fails), the median of `--repeats` replays of at least
`--min-replay-ms`. Each shape's output is checked once against an fp32 matmul per expert.

  D[offs[e-1]:offs[e]] = A[offs[e-1]:offs[e]] @ W[e].T      A [rows, K], W [E, N, K], bf16

--fp8: A and W float8_e4m3fn with torch._scaled_grouped_mm's row-wise scales (scale_a [rows],
scale_b [E, N], random in [0.5, 1.5]), D bf16, checked against an fp32 matmul of the
dequantized operands. torch runs with use_fast_accum=False (its default) and, as a second
row, True (the arithmetic anvil's kernel does: the whole K in the tensor cores'
accumulator). --anvil adds a row for anvil.scaled_grouped_mm (or anvil.grouped_mm) on the
same inputs, timed the same way.

Usage: python3 scripts/bench_moe_torch.py [--suite suites/moe.json] [--only NAME ...] [--fp8] [--anvil]
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
    p.add_argument("--fp8", action="store_true", help="torch._scaled_grouped_mm, e4m3 with row-wise scales")
    p.add_argument("--anvil", action="store_true", help="also time anvil's op on the same inputs")
    args = p.parse_args()

    import torch

    if not torch.cuda.is_available():
        print("bench_moe_torch: no CUDA device", file=sys.stderr)
        return 2
    needed = "_scaled_grouped_mm" if args.fp8 else "_grouped_mm"
    if not hasattr(torch, needed):
        print(f"bench_moe_torch: torch {torch.__version__} has no torch.{needed}", file=sys.stderr)
        return 2
    anvil = None
    if args.anvil:
        import anvil  # noqa: F811  (the built package: pip install --no-build-isolation .)
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
        "dtype": "e4m3" if args.fp8 else "bf16",
        "method": (("torch._scaled_grouped_mm(A, W.transpose(-2, -1), scale_a [rows], scale_b [E, N], offs=int32 end "
                    "offsets, out_dtype=bf16, use_fast_accum as the row says), e4m3 in, bf16 out; "
                    if args.fp8 else
                    "torch._grouped_mm(A, W.transpose(-2, -1), offs=int32 end offsets), bf16 in and out; ") +
                   "R rotating input sets (A, W; D allocated by the op) with R x bytes > 3x L2 (at least 2, memory permitting); "
                   "iters launches (a multiple of R, replay >= min-replay-ms) captured in one CUDA graph, "
                   "replayed `repeats` times with events; per-call time = replay / iters; median reported."),
        "repeats": args.repeats,
        "min_replay_ms": args.min_replay_ms,
    }

    variants = ([("torch._scaled_grouped_mm", False), ("torch._scaled_grouped_mm/fast_accum", True)]
                if args.fp8 else [("torch._grouped_mm", False)])
    if args.anvil:
        variants.append(("anvil.scaled_grouped_mm" if args.fp8 else "anvil.grouped_mm", False))
    for index, shape in enumerate(shapes):
        counts = suite["routings"][shape["routing"]]
        e, n, k = shape["experts"], shape["N"], shape["K"]
        rows = sum(counts)
        flops = 2.0 * rows * n * k
        in_bytes = 1 if args.fp8 else 2
        set_bytes = in_bytes * (rows * k + e * n * k) + 2 * rows * n
        sets = max(2, math.ceil(3 * l2 / max(set_bytes, 1)))
        sets = min(sets, 64, max(1, int(args.mem_cap_gb * 2**30 // max(set_bytes, 1))))
        print(f"[{index + 1}/{len(shapes)}] {shape['name']}: E={e} N={n} K={k} rows={rows}, {sets} sets",
              file=sys.stderr)
        try:
            torch.manual_seed(args.seed + index)
            offs = torch.tensor(counts, dtype=torch.int32, device=dev).cumsum(0, dtype=torch.int32)
            # Each set drawn in bf16 and, with --fp8, cast to e4m3 at once (one bf16 copy alive).
            cast = (lambda t: t.to(torch.float8_e4m3fn)) if args.fp8 else (lambda t: t)
            a_sets = [cast((torch.rand(rows, k, device=dev) * 2 - 1).to(torch.bfloat16)) for _ in range(sets)]
            w_sets = [cast(torch.empty(e, n, k, device=dev, dtype=torch.bfloat16).uniform_(-1, 1))
                      for _ in range(sets)]
            if args.fp8:
                sa = torch.rand(rows, device=dev) + 0.5
                sb = torch.rand(e, n, device=dev) + 0.5
        except Exception as ex:
            for label, _ in variants:
                rows_out.append({"kernel": label, "name": shape["name"], "experts": e, "N": n, "K": k, "rows": rows,
                                 "status": "error", "message": str(ex)})
            print(f"    error: {ex}", file=sys.stderr)
            torch.cuda.empty_cache()
            continue
        for label, fast in variants:
            row = {"kernel": label, "name": shape["name"], "experts": e, "N": n, "K": k, "rows": rows,
                   "status": "ok"}
            try:
                def call(s, label=label, fast=fast):
                    if label.startswith("anvil."):
                        if args.fp8:
                            return anvil.scaled_grouped_mm(a_sets[s], w_sets[s].transpose(-2, -1), sa, sb, offs)
                        return anvil.grouped_mm(a_sets[s], w_sets[s], offs)
                    if args.fp8:
                        return torch._scaled_grouped_mm(a_sets[s], w_sets[s].transpose(-2, -1), sa, sb, offs=offs,
                                                        out_dtype=torch.bfloat16, use_fast_accum=fast)
                    return torch._grouped_mm(a_sets[s], w_sets[s].transpose(-2, -1), offs=offs,
                                             out_dtype=torch.bfloat16)

                # Check set 0 against an fp32 matmul per expert (of the dequantized operands).
                out = call(0)
                worst = 0.0
                start = 0
                for ex, c in enumerate(counts):
                    if c:
                        a = a_sets[0][start:start + c].float()
                        w = w_sets[0][ex].float()
                        if args.fp8:
                            a = a * sa[start:start + c, None]
                            w = w * sb[ex][:, None]
                        ref = a @ w.T
                        err = (out[start:start + c].float() - ref).norm() / max(ref.norm().item(), 1e-30)
                        worst = max(worst, float(err))
                    start += c
                row["rel_error"] = worst
                row["verified"] = worst < (3e-2 if args.fp8 else 1e-2)
                del out
                # Warm-up and estimate.
                torch.cuda.synchronize()
                n_est = sets
                while True:
                    t0 = torch.cuda.Event(enable_timing=True)
                    t1 = torch.cuda.Event(enable_timing=True)
                    t0.record()
                    for i in range(n_est):
                        call(i % sets)
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
                        call(0)
                    torch.cuda.current_stream().wait_stream(stream)
                    graph = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(graph):
                        for i in range(iters):
                            call(i % sets)
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
                            call(i % sets)
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
                print(f"    {label:40s} {row['us_median']:10.2f} us  {row['tflops']:7.1f} TFLOP/s  rel err {worst:.2e}",
                      file=sys.stderr)
                del graph
            except Exception as ex:
                row["status"] = "error"
                row["message"] = str(ex)
                print(f"    {label}: error: {ex}", file=sys.stderr)
            rows_out.append(row)
        # Speed of each row over the default torch row of the shape.
        base = [r for r in rows_out if r["name"] == shape["name"] and r["kernel"] == variants[0][0]]
        for r in rows_out:
            if r["name"] == shape["name"] and base and "us_median" in r and "us_median" in base[0]:
                r["speedup_vs_torch"] = base[0]["us_median"] / r["us_median"]
        del a_sets, w_sets
        torch.cuda.empty_cache()

    # Geometric-mean speed of each kernel over the first (torch default) row, by token count.
    tokens = {sh["name"]: sh.get("tokens", 0) for sh in shapes}
    for label, _ in variants[1:]:
        by_tokens = {}
        for r in rows_out:
            if r["kernel"] == label and "speedup_vs_torch" in r:
                by_tokens.setdefault(tokens[r["name"]], []).append(r["speedup_vs_torch"])
        for t in sorted(by_tokens):
            v = by_tokens[t]
            geo = math.exp(sum(math.log(x) for x in v) / len(v))
            print(f"{label} over {variants[0][0]}, {t} tokens: geomean {geo:.2f}x (lowest {min(v):.2f}x, "
                  f"{len(v)} shapes)", file=sys.stderr)
        every = [x for v in by_tokens.values() for x in v]
        if every:
            geo = math.exp(sum(math.log(x) for x in every) / len(every))
            print(f"{label} over {variants[0][0]}, all: geomean {geo:.2f}x ({len(every)} shapes)", file=sys.stderr)

    text = json.dumps({"info": info, "rows": rows_out}, indent=1)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
