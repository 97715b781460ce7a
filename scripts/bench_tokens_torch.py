#!/usr/bin/env python3
"""One decode-sized linear layer, three ways in one process: F.linear (cuBLAS), anvil.linear,
and F.linear under torch.compile(mode="max-autotune-no-cudagraphs"), which autotunes
Triton GEMMs against cuBLAS for the shape (the same choice as "max-autotune", whose own
CUDA graphs would nest inside the graph used here to time it).

  y[M, N] = x[M, K] @ W[N, K]^T, bf16, no bias

Each variant runs over rotating weight sets larger than 3x L2, launched back to back inside
one CUDA graph (at least --min-replay-ms per replay), replayed --repeats times; the median
per-call time is reported, with its weight-read rate. Variants are interleaved per repeat.
Each output is checked against an fp32 reference first.

Usage: python3 scripts/bench_tokens_torch.py [--m 1,16] [--nk 8192x8192,28672x8192,10240x8192]
                                            [--json OUT.json] [--repeats 7] [--min-replay-ms 10]
                                            [--without-anvil]

--without-anvil times cuBLAS and max-autotune alone, where the anvil package is not built:
anvil-bench then times anvil's kernels beside cuBLAS in its own process, and cuBLAS, timed
in both, carries the comparison across.
"""

import argparse
import datetime
import json
import math
import statistics
import sys


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--m", default="1,16")
    p.add_argument("--nk", default="8192x8192,28672x8192,10240x8192", help="N x K of the weights")
    p.add_argument("--json", default=None)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--min-replay-ms", type=float, default=10.0)
    p.add_argument("--without-anvil", action="store_true", help="cuBLAS and max-autotune only")
    args = p.parse_args()

    import torch
    import torch.nn.functional as F

    anvil = None
    if not args.without_anvil:
        import anvil

    if not torch.cuda.is_available():
        print("bench_tokens_torch: no CUDA device", file=sys.stderr)
        return 2
    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(dev)
    l2 = getattr(props, "L2_cache_size", 50 * 1024 * 1024)
    rows = []
    for nk in args.nk.split(","):
        n, k = (int(v) for v in nk.split("x"))
        sets = max(2, math.ceil(3 * l2 / (2 * n * k)))
        weights = [torch.empty(n, k, device=dev, dtype=torch.bfloat16).uniform_(-1, 1) for _ in range(sets)]
        for m in (int(v) for v in args.m.split(",")):
            xs = [(torch.rand(m, k, device=dev) * 2 - 1).to(torch.bfloat16) for _ in range(sets)]
            torch._dynamo.reset()
            compiled = torch.compile(lambda x, w: F.linear(x, w), mode="max-autotune-no-cudagraphs", dynamic=False)
            variants = {"cuBLAS": lambda x, w: F.linear(x, w), "max-autotune": compiled}
            if anvil is not None:
                variants["anvil"] = lambda x, w: anvil.linear(x, w)
            ref = xs[0].float() @ weights[0].float().T
            graphs, iters = {}, {}
            for name, fn in variants.items():
                out = fn(xs[0], weights[0])  # compiles and autotunes the max-autotune variant
                err = ((out.float() - ref).norm() / ref.norm()).item()
                if not err < 1e-2:
                    raise SystemExit(f"{name} {m}x{n}x{k}: relative error {err:.2e}")
                torch.cuda.synchronize()
                t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                t0.record()
                for i in range(4 * sets):
                    fn(xs[i % sets], weights[i % sets])
                t1.record()
                t1.synchronize()
                est_ms = t0.elapsed_time(t1) / (4 * sets)
                count = max(sets, math.ceil(args.min_replay_ms / max(est_ms, 1e-4)))
                count = (count + sets - 1) // sets * sets
                stream = torch.cuda.Stream()
                stream.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(stream):
                    fn(xs[0], weights[0])
                torch.cuda.current_stream().wait_stream(stream)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    for i in range(count):
                        fn(xs[i % sets], weights[i % sets])
                graphs[name], iters[name] = graph, count
            samples = {name: [] for name in variants}
            for rep in range(args.repeats + 1):
                for name, graph in graphs.items():
                    t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    t0.record()
                    graph.replay()
                    t1.record()
                    t1.synchronize()
                    if rep > 0:  # the first replay warms up
                        samples[name].append(t0.elapsed_time(t1) * 1000.0 / iters[name])
            line = [f"{m:>3} x {n} x {k}:"]
            for name in variants:
                us = statistics.median(samples[name])
                rows.append(dict(kernel=name, M=m, N=n, K=k, us_median=us, samples_us=samples[name],
                                 weight_tb_s=2.0 * n * k / us / 1e6, iters=iters[name], weight_sets=sets))
                line.append(f"{name} {us:8.2f} us ({2.0 * n * k / us / 1e6:.2f} TB/s)")
            print("  ".join(line), flush=True)
    info = dict(gpu=props.name, sm_count=props.multi_processor_count, torch=torch.__version__, cuda=torch.version.cuda,
                anvil=anvil.__version__ if anvil is not None else None,
                date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                repeats=args.repeats, min_replay_ms=args.min_replay_ms)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(info=info, rows=rows), f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
