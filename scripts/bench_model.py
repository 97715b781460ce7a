#!/usr/bin/env python3
"""Whole-model timing: a Llama-3-8B-sized stack (or Qwen2-7B, --model qwen2-7b) (random bf16 weights, a few layers) with its
linear layers on cuBLAS (unpatched) and on anvil (anvil.patch: nn.Linear -> anvil.linear,
gate/up -> one linear_swiglu GEMM), each run eagerly and under
torch.compile(mode="max-autotune"), all in one process.

Workloads: prefill of 1 x 2048 tokens (no cache), and one decode step at batch 1, 8 and 64
against a static KV cache holding --context tokens. Eager variants are captured in a CUDA
graph and timed by replaying it, so launch overhead is out of both; compiled variants run
inductor's own CUDA graphs. Each time is the median of --iters event-timed runs after
--warmup runs. Prints a markdown table and writes JSON (--json).

The max-autotune compile autotunes every GEMM shape (a few minutes per workload the first
time; inductor caches the choices on disk), so the workloads can be run one per process
with --workloads and the JSON files merged by the table afterwards:

  python scripts/bench_model.py --workloads prefill --json $OUT/prefill.json
  python scripts/bench_model.py --workloads decode1,decode8,decode64 --json $OUT/decode.json

--tiny runs a small config (for a smoke test of the script itself; on CPU it runs only the
unpatched eager model).
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import time

import torch

LLAMA3_8B = dict(
    vocab_size=128256,
    hidden_size=4096,
    intermediate_size=14336,
    num_attention_heads=32,
    num_key_value_heads=8,
    max_position_embeddings=8192,
    rope_theta=500000.0,
    rms_norm_eps=1e-5,
)
# Qwen2-7B: q/k/v projections carry a bias, which anvil adds in the GEMM's epilogue.
QWEN2_7B = dict(
    vocab_size=152064,
    hidden_size=3584,
    intermediate_size=18944,
    num_attention_heads=28,
    num_key_value_heads=4,
    max_position_embeddings=32768,
    rope_theta=1000000.0,
    rms_norm_eps=1e-6,
)
MODELS = {"llama3-8b": ("Llama-3-8B", LLAMA3_8B), "qwen2-7b": ("Qwen2-7B", QWEN2_7B)}
TINY = dict(vocab_size=1024, hidden_size=256, intermediate_size=768, num_attention_heads=4, num_key_value_heads=2,
            max_position_embeddings=4096)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", choices=sorted(MODELS), default="llama3-8b", help="whose layer dimensions")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--workloads", default="prefill,decode1,decode8,decode64")
    p.add_argument("--prefill-tokens", type=int, default=2048)
    p.add_argument("--context", type=int, default=1024, help="tokens in the KV cache before the decode step")
    p.add_argument("--iters", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--no-compile", action="store_true", help="eager variants only")
    p.add_argument("--tiny", action="store_true", help="small dims, for a smoke run of the script")
    p.add_argument("--device", default="cuda")
    p.add_argument("--json", help="write the results here")
    return p.parse_args()


def build_model(args):
    import transformers

    dims = TINY if args.tiny else MODELS[args.model][1]
    config_class = transformers.Qwen2Config if args.model == "qwen2-7b" else transformers.LlamaConfig
    model_class = transformers.Qwen2ForCausalLM if args.model == "qwen2-7b" else transformers.LlamaForCausalLM
    cfg = config_class(num_hidden_layers=args.layers, **dims)
    torch.manual_seed(0)
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    try:
        with torch.device(args.device):
            model = model_class(cfg)
    finally:
        torch.set_default_dtype(default)
    return model.eval()


def time_runs(fn, args) -> float:
    """Median milliseconds of fn over args.iters runs, after args.warmup."""
    for _ in range(args.warmup):
        fn()
    if args.device == "cpu":
        times = []
        for _ in range(args.iters):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(times)
    torch.cuda.synchronize()
    times = []
    for _ in range(args.iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def graphed(fn, args):
    """fn captured in a CUDA graph (eager variants): returns (replay, output)."""
    if args.device == "cpu":
        return fn, fn()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn()
    return graph.replay, out


def workload_fn(model, runner, name, args):
    """A zero-argument function running one workload through runner (model or its compiled form)."""
    import transformers

    vocab = model.config.vocab_size
    gen = torch.Generator(device=args.device).manual_seed(1)
    if name == "prefill":
        ids = torch.randint(0, vocab, (1, args.prefill_tokens), device=args.device, generator=gen)
        return lambda: runner(ids, use_cache=False).logits
    batch = int(name.removeprefix("decode"))
    cache = transformers.StaticCache(config=model.config, max_cache_len=args.context + 8)
    ids = torch.randint(0, vocab, (batch, args.context), device=args.device, generator=gen)
    with torch.no_grad():
        model(ids, past_key_values=cache, use_cache=True, cache_position=torch.arange(args.context, device=args.device))
    token = torch.randint(0, vocab, (batch, 1), device=args.device, generator=gen)
    position = torch.tensor([args.context], device=args.device)
    # Every timed run is the same step: the token at position `context`. The mask and
    # positions are given, not derived from the cache, and the cache's own count of the
    # tokens it holds (transformers' StaticCache writes at that count, ignoring
    # cache_position) is set back before each step, on the device, so that replays of a
    # captured graph repeat it too.
    mask = torch.ones(batch, args.context + 1, device=args.device, dtype=torch.long)
    position_ids = torch.full((batch, 1), args.context, device=args.device, dtype=torch.long)
    counts = [c for c in (getattr(layer, "cumulative_length", None) for layer in getattr(cache, "layers", []))
              if torch.is_tensor(c)]

    def step():
        for c in counts:
            c.fill_(args.context)
        return runner(token, past_key_values=cache, use_cache=True, cache_position=position, attention_mask=mask,
                      position_ids=position_ids).logits

    return step


def tokens_of(name, args):
    return args.prefill_tokens if name == "prefill" else int(name.removeprefix("decode"))


def main():
    args = parse_args()
    workloads = [w for w in args.workloads.split(",") if w]
    for w in workloads:
        if w != "prefill" and not (w.startswith("decode") and w.removeprefix("decode").isdigit()):
            sys.exit(f"bench_model: unknown workload '{w}' (prefill or decode<batch>)")
    base = build_model(args)
    models = {"cuBLAS": base}
    report = None
    if args.device != "cpu":
        import anvil

        patched = copy.deepcopy(base)
        report = anvil.patch(patched)
        print(report, file=sys.stderr)
        models["anvil"] = patched
    modes = ["eager"] + ([] if args.no_compile or args.device == "cpu" else ["max-autotune"])

    results = []
    for w in workloads:
        outputs = {}
        for label, model in models.items():
            for mode in modes:
                if mode == "eager":
                    runner = model
                else:
                    torch._dynamo.reset()
                    runner = torch.compile(model, mode="max-autotune", dynamic=False)
                with torch.no_grad():
                    fn = workload_fn(model, runner, w, args)
                    if mode == "eager":
                        fn, out = graphed(fn, args)
                        ms = time_runs(fn, args)
                    else:
                        t0 = time.perf_counter()
                        out = fn()
                        compile_s = time.perf_counter() - t0
                        ms = time_runs(fn, args)
                        out = fn()
                    outputs[(label, mode)] = out.float().clone()
                entry = dict(workload=w, tokens=tokens_of(w, args), linear=label, mode=mode, ms=ms)
                if mode != "eager":
                    entry["first_call_s"] = compile_s
                results.append(entry)
                print(f"{w:>9} {label:>6} {mode:>12}: {ms:.3f} ms", file=sys.stderr)
        if ("anvil", "eager") in outputs:
            ref, got = outputs[("cuBLAS", "eager")], outputs[("anvil", "eager")]
            err = ((got - ref).abs().max() / ref.abs().max()).item()
            print(f"{w:>9} logits, anvil vs cuBLAS (eager): max |diff| / max |ref| = {err:.2e}", file=sys.stderr)
            for r in results:
                if r["workload"] == w and r["linear"] == "anvil" and r["mode"] == "eager":
                    r["logits_rel_err_vs_cublas"] = err
        # Written after every workload, so a run cut short keeps the workloads it finished.
        write_json(args, report, results)

    print(markdown(results, modes, args))


def write_json(args, report, results):
    if not args.json:
        return
    env = dict(
        torch=torch.__version__,
        device=torch.cuda.get_device_name() if args.device != "cpu" else "cpu",
        layers=args.layers,
        model=args.model,
        dims=TINY if args.tiny else MODELS[args.model][1],
        context=args.context,
        iters=args.iters,
        warmup=args.warmup,
        patch_report=str(report) if report is not None else None,
    )
    with open(args.json, "w") as f:
        json.dump(dict(env=env, results=results), f, indent=1)


def markdown(results, modes, args) -> str:
    by = {(r["workload"], r["linear"], r["mode"]): r["ms"] for r in results}
    workloads = list(dict.fromkeys(r["workload"] for r in results))
    head = ["workload", "tokens"]
    for mode in modes:
        head += [f"cuBLAS {mode} (ms)", f"anvil {mode} (ms)", f"anvil speedup ({mode})"]
    lines = [
        f"{'tiny' if args.tiny else MODELS[args.model][0]} dims, {args.layers} layers + lm_head, bf16; decode against a {args.context}-token static cache; "
        f"median of {args.iters}",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for w in workloads:
        tokens = next(r["tokens"] for r in results if r["workload"] == w)
        row = [w, str(tokens)]
        for mode in modes:
            c, a = by.get((w, "cuBLAS", mode)), by.get((w, "anvil", mode))
            row += [f"{c:.3f}" if c else "-", f"{a:.3f}" if a else "-", f"{c / a:.3f}x" if c and a else "-"]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
