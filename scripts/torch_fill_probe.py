#!/usr/bin/env python3
# Usage (GPU machine): OUT=dir python3 scripts/torch_fill_probe.py  - docs/notes/cublas-anchor-gap.md.
# cuBLAS (through torch, the anchor's method) on the same shapes with different input
# distributions, interleaved per repeat, with nvidia-smi power/clock samples.
import json, os, subprocess, time, torch
out = os.environ.get("OUT", ".")
shapes = [("square-4096", 4096, 4096, 4096), ("prefill-qkv", 8192, 10240, 8192),
          ("gemma3", 512, 8192, 5376), ("decode256-attn_out", 256, 8192, 8192),
          ("decode64-attn_out", 64, 8192, 8192)]
dists = {
    "uniform1": lambda s: torch.rand(s, device="cuda", dtype=torch.float32).mul_(2).sub_(1),
    "normal1": lambda s: torch.randn(s, device="cuda", dtype=torch.float32),
    "normal_var3": lambda s: torch.randn(s, device="cuda", dtype=torch.float32).mul_(3 ** -0.5),
    "normal_w002": lambda s: torch.randn(s, device="cuda", dtype=torch.float32).mul_(0.02),
}
L2 = 50 * 2**20
res = []
smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,power.draw,clocks.sm,temperature.gpu",
                        "--format=csv,noheader", "-lms", "50"], stdout=open(f"{out}/smi.csv", "w"))
for name, M, N, K in shapes:
    per_set = (M * K + N * K + M * N) * 2
    R = max(2, min(16, (3 * L2) // per_set + 1))
    graphs = {}
    for dn, gen in dists.items():
        A = [gen((M, K)).to(torch.bfloat16) for _ in range(R)]
        W = [gen((N, K)).to(torch.bfloat16) for _ in range(R)]
        D = [torch.empty((M, N), device="cuda", dtype=torch.bfloat16) for _ in range(R)]
        est = 2 * M * N * K / 600e12
        iters = max(R, int(0.02 / est) // R * R)
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            for i in range(R): torch.matmul(A[i], W[i].t(), out=D[i])
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for i in range(iters): torch.matmul(A[i % R], W[i % R].t(), out=D[i % R])
        g.replay(); torch.cuda.synchronize()
        graphs[dn] = (g, iters, A, W, D)
    times = {dn: [] for dn in dists}
    for rep in range(9):
        order = list(dists)[rep % len(dists):] + list(dists)[:rep % len(dists)]
        for dn in order:
            g, iters, *_ = graphs[dn]
            e0, e1 = torch.cuda.Event(True), torch.cuda.Event(True)
            t0 = time.time()
            e0.record(); g.replay(); e1.record(); e1.synchronize()
            times[dn].append((e0.elapsed_time(e1) * 1000 / iters, t0, time.time()))
    for dn in dists:
        us = sorted(t[0] for t in times[dn])
        med = us[len(us) // 2]
        row = dict(name=name, M=M, N=N, K=K, dist=dn, us_median=med, us_min=us[0], us_max=us[-1],
                   tflops=2 * M * N * K / med / 1e6, windows=[(t[1], t[2]) for t in times[dn]])
        res.append(row)
        print(f"{name:22s} {dn:12s} {med:9.2f} us  {row['tflops']:6.1f} TFLOP/s  [{us[0]:.2f}, {us[-1]:.2f}]", flush=True)
    del graphs; torch.cuda.empty_cache()
smi.terminate()
json.dump(dict(device=torch.cuda.get_device_name(), torch=torch.__version__, rows=res), open(f"{out}/dist_probe.json", "w"), indent=1)
