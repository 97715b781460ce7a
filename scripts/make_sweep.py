#!/usr/bin/env python3
"""Generates suites/sweep.json: the linear layers of public models, and awkward sizes.

    python3 scripts/make_sweep.py                 # writes suites/sweep.json, prints a summary
    python3 scripts/make_sweep.py --check         # fails if suites/sweep.json is not what it writes
    python3 scripts/make_sweep.py --extract tune -o /tmp/sweep-tune.json
                                                  # one half of suites/sweep.json, as its own suite

Every shape is an nn.Linear problem D[M,N] = A[M,K] W[N,K]^T: M tokens (or rows routed to
one expert), N output features, K input features. The model dimensions are those of the
public configurations (hidden size, intermediate size, heads x head_dim, key/value heads);
qkv is the fused projection, N = (heads + 2 kv_heads) x head_dim; gate_up is the fused
gate and up projection, N = 2 x intermediate. MoE expert layers take the rows one expert
receives, tokens x top-k / experts.

Which M each layer gets, the awkward extra shapes and the split into a tuning half and a
held-out half are drawn from one random generator seeded with SEED, so the file is the
same on every run; change SEED only to make a new sweep (and say so: the held-out half is
held out only while nobody tunes on it).

Limits, so that one shape times in about a second and fits next to its rotating input sets:
2 M N K <= MAX_FLOP and (M K + N K + M N) x 2 bytes <= MAX_BYTES.
"""

import argparse
import json
import math
import random
import sys
from collections import Counter, OrderedDict
from pathlib import Path

SEED = 20261202
MAX_FLOP = 4.0e12
MAX_BYTES = 6.0e9
BF16_BYTES = 2
# A row of A or W (K elements) and of D (N elements) starts on a 16-byte boundary only when
# the count is a multiple of 8 bf16 values; TMA and cuBLAS's fast kernels need that.
ALIGN_ELEMS = 8

DECODE_M = [1, 2, 4, 8, 16, 32, 64, 128]
DECODE_ODD_M = [3, 5, 7, 11, 13, 24, 37, 48, 96, 100, 127]
PREFILL_M = [256, 512, 1024, 2048, 4096, 8192, 16384]
# A few rows short of (or past) a multiple of 128, and primes: batches as they come.
PREFILL_ODD_M = [255, 383, 1000, 1531, 2047, 3000, 4090, 4099, 6143, 8191, 12289]
# Rows per expert: tokens x top-k / experts, from small decode batches to long prefills,
# and the uneven counts a router produces.
EXPERT_M = [8, 16, 32, 64, 128, 256, 512, 1024, 2048]
EXPERT_ODD_M = [13, 29, 61, 181, 509, 777, 1021, 1531]

M_BUCKETS = [(1, 16, "1-16"), (17, 128, "17-128"), (129, 1024, "129-1024"),
             (1025, 4096, "1025-4096"), (4097, 16384, "4097-16384")]


def m_bucket(m):
    for lo, hi, label in M_BUCKETS:
        if lo <= m <= hi:
            return label
    raise ValueError(f"M={m} outside every bucket")


def dense(model, family, hidden, inter, heads, kv_heads, head_dim, vocab, gated=True):
    """The layers of a dense decoder: (layer, N, K) in nn.Linear form. A gated MLP's up
    projection is the fused gate_up (N = 2 x intermediate); an ungated one's is mlp_up."""
    return model, family, [
        ("qkv", (heads + 2 * kv_heads) * head_dim, hidden),
        ("o", hidden, heads * head_dim),
        ("gate_up", 2 * inter, hidden) if gated else ("mlp_up", inter, hidden),
        ("down", hidden, inter),
        ("lm_head", vocab, hidden),
    ]


def moe(model, family, hidden, heads, kv_heads, head_dim, vocab, experts, expert_inter):
    """The layers of an MoE decoder: attention, router, one expert's gate_up and down."""
    return model, family, [
        ("qkv", (heads + 2 * kv_heads) * head_dim, hidden),
        ("o", hidden, heads * head_dim),
        ("router", experts, hidden),
        ("expert_gate_up", 2 * expert_inter, hidden),
        ("expert_down", hidden, expert_inter),
        ("lm_head", vocab, hidden),
    ]


# hidden, intermediate, heads, kv_heads, head_dim, vocab from each model's public config.
MODELS = [
    dense("llama2-7b", "llama2", 4096, 11008, 32, 32, 128, 32000),
    dense("llama2-13b", "llama2", 5120, 13824, 40, 40, 128, 32000),
    dense("llama2-70b", "llama2", 8192, 28672, 64, 8, 128, 32000),
    dense("llama3-8b", "llama3", 4096, 14336, 32, 8, 128, 128256),
    dense("llama3-70b", "llama3", 8192, 28672, 64, 8, 128, 128256),
    dense("llama3.1-405b", "llama3", 16384, 53248, 128, 8, 128, 128256),
    dense("llama3.2-3b", "llama3", 3072, 8192, 24, 8, 128, 128256),
    dense("qwen2.5-7b", "qwen2.5", 3584, 18944, 28, 4, 128, 152064),
    dense("qwen2.5-14b", "qwen2.5", 5120, 13824, 40, 8, 128, 152064),
    dense("qwen2.5-32b", "qwen2.5", 5120, 27648, 40, 8, 128, 152064),
    dense("qwen2.5-72b", "qwen2.5", 8192, 29568, 64, 8, 128, 152064),
    dense("qwen3-8b", "qwen3", 4096, 12288, 32, 8, 128, 151936),
    dense("qwen3-32b", "qwen3", 5120, 25600, 64, 8, 128, 151936),
    moe("qwen3-30b-a3b", "qwen3-moe", 2048, 32, 4, 128, 151936, 128, 768),
    moe("qwen3-235b-a22b", "qwen3-moe", 4096, 64, 4, 128, 151936, 128, 1536),
    dense("mistral-7b", "mistral", 4096, 14336, 32, 8, 128, 32768),
    dense("mistral-nemo-12b", "mistral", 5120, 14336, 32, 8, 128, 131072),
    dense("mistral-large-123b", "mistral", 12288, 28672, 96, 8, 128, 32768),
    moe("mixtral-8x7b", "mixtral", 4096, 32, 8, 128, 32000, 8, 14336),
    moe("mixtral-8x22b", "mixtral", 6144, 48, 8, 128, 32768, 8, 16384),
    dense("gemma2-9b", "gemma2", 3584, 14336, 16, 8, 256, 256000),
    dense("gemma2-27b", "gemma2", 4608, 36864, 32, 16, 128, 256000),
    dense("gemma3-12b", "gemma3", 3840, 15360, 16, 8, 256, 262208),
    dense("gemma3-27b", "gemma3", 5376, 21504, 32, 16, 128, 262208),
    dense("phi3-mini", "phi", 3072, 8192, 32, 32, 96, 32064),
    dense("phi3-medium", "phi", 5120, 17920, 40, 10, 128, 32064),
    dense("phi4-14b", "phi", 5120, 17920, 40, 10, 128, 100352),
    moe("gpt-oss-20b", "gpt-oss", 2880, 64, 8, 64, 201088, 32, 2880),
    moe("gpt-oss-120b", "gpt-oss", 2880, 64, 8, 64, 201088, 128, 2880),
    dense("command-r-35b", "command-r", 8192, 22528, 64, 64, 128, 256000),
    dense("yi-34b", "yi", 7168, 20480, 56, 8, 128, 64000),
    dense("falcon-7b", "falcon", 4544, 4 * 4544, 71, 1, 64, 65024, gated=False),
    dense("falcon-40b", "falcon", 8192, 4 * 8192, 128, 8, 64, 65024, gated=False),
    # DeepSeek-V3: multi-head latent attention (q_lora_rank 1536, kv_lora_rank 512, 128
    # heads of 128 + 64 rope dims for q/k, 128 for v), 3 dense layers (intermediate 18432),
    # 256 routed experts of intermediate 2048 (top 8) and one shared expert of the same size.
    ("deepseek-v3", "deepseek-v3", [
        ("q_a", 1536, 7168),
        ("q_b", 128 * (128 + 64), 1536),
        ("kv_a", 512 + 64, 7168),
        ("kv_b", 128 * (128 + 128), 512),
        ("o", 7168, 128 * 128),
        ("dense_gate_up", 2 * 18432, 7168),
        ("dense_down", 7168, 18432),
        ("router", 256, 7168),
        ("expert_gate_up", 2 * 2048, 7168),
        ("expert_down", 7168, 2048),
        ("lm_head", 129280, 7168),
    ]),
]

# Layers whose M is rows per expert rather than tokens.
EXPERT_LAYERS = {"expert_gate_up", "expert_down"}
# How many M values each layer draws (from the decode and from the prefill pools).
# Expert layers draw more: their rows per expert span the widest range of any layer.
DRAWS = {"router": (1, 0), "expert_gate_up": (2, 2), "expert_down": (2, 2)}
DEFAULT_DRAWS = (1, 1)


def fits(m, n, k):
    return (2.0 * m * n * k <= MAX_FLOP and
            (m * k + n * k + m * n) * BF16_BYTES <= MAX_BYTES)


def aligned(n, k):
    return n % ALIGN_ELEMS == 0 and k % ALIGN_ELEMS == 0


def model_shapes(rng):
    out = []
    for model, family, layers in MODELS:
        for layer, n, k in layers:
            if layer in EXPERT_LAYERS:
                small = [m for m in EXPERT_M + EXPERT_ODD_M if m <= 128]
                large = [m for m in EXPERT_M + EXPERT_ODD_M if m > 128]
            else:
                small = DECODE_M + DECODE_ODD_M
                large = PREFILL_M + PREFILL_ODD_M
            n_small, n_large = DRAWS.get(layer, DEFAULT_DRAWS)
            large = [m for m in large if fits(m, n, k)]
            small = [m for m in small if fits(m, n, k)]
            picks = rng.sample(small, min(n_small, len(small)))
            picks += rng.sample(large, min(n_large, len(large)))
            for m in sorted(picks):
                out.append({"name": f"{model}-{layer}-m{m}", "M": m, "N": n, "K": k,
                            "family": family})
    return out


def awkward_shapes(rng):
    """Sizes a planner fitted to round numbers gets wrong."""
    out = []

    def add(name, m, n, k, family):
        out.append({"name": name, "M": m, "N": n, "K": k, "family": family})

    # A few output tiles and a very long K: the work must be split along K to fill the GPU.
    for m, n, k in [(64, 512, 131072), (128, 1024, 65536), (256, 2048, 32768),
                    (64, 2048, 16384), (192, 768, 98304), (128, 512, 49152),
                    (100, 1536, 40960), (256, 1024, 131072)]:
        add(f"longk-m{m}-n{n}-k{k}", m, n, k, "long-k")
    # M a few rows short of a multiple of 128 against 4-12k wide weights.
    for m in [1000, 2047, 4090, 1020, 3070, 6138]:
        n = rng.choice([4096, 5120, 6144, 8192, 10240, 12288])
        k = rng.choice([4096, 5120, 8192])
        add(f"ragged-m{m}-n{n}-k{k}", m, n, k, "ragged-m")
    # Short K: LoRA adapters (rank 16-128 up-projections) and narrow heads; long K: a
    # LoRA down-projection reads the whole hidden state into a few columns.
    for m, n, k in [(4096, 4096, 64), (16384, 8192, 64), (2048, 14336, 128),
                    (8192, 5120, 16), (1024, 8192, 256), (512, 4096, 96)]:
        add(f"lora-up-m{m}-n{n}-k{k}", m, n, k, "lora")
    for m, n, k in [(4096, 64, 4096), (8192, 16, 8192), (2048, 128, 14336), (16384, 32, 5120)]:
        add(f"lora-down-m{m}-n{n}-k{k}", m, n, k, "lora")
    # Odd and prime sizes (about a tenth of the sweep, with the unaligned model layers):
    # rows of W and D off the 16-byte grid, which anvil repacks and cuBLAS takes on its
    # slower kernels.
    primes_small = [3, 7, 13, 31, 61, 127]
    primes_large = [1021, 2039, 4093, 4099, 6151, 8191, 10007, 12289, 14327]
    for i in range(26):
        m = rng.choice(primes_small + [251, 509, 1021, 2039, 4093, 8191])
        n = rng.choice(primes_large + [4096, 8192, 14336])
        k = rng.choice(primes_large + [4096, 8192, 5120])
        if aligned(n, k):
            k += 1  # keep every one of these off the grid
        if fits(m, n, k):
            add(f"odd-m{m}-n{n}-k{k}", m, n, k, "odd")
    # Odd M only (aligned rows): the case every ragged batch hits.
    for m in [17, 33, 65, 129, 257, 769, 1025, 1537, 2049, 4097, 8193]:
        n = rng.choice([4096, 6144, 8192, 11008, 14336, 28672])
        k = rng.choice([4096, 5120, 8192])
        if fits(m, n, k):
            add(f"oddm-m{m}-n{n}-k{k}", m, n, k, "odd")
    # Real vocabularies off the 16-byte grid (GPT-2 / GPT-NeoX style heads).
    for m in [1, 8, 64, 512]:
        add(f"gpt2-lm_head-m{m}", m, 50257, 768, "gpt2")
        add(f"gpt2-xl-lm_head-m{m}", m, 50257, 1600, "gpt2")
    for m in [1, 32, 1024, 4096]:
        add(f"gpt2-xl-qkv-m{m}", m, 3 * 1600, 1600, "gpt2")
        add(f"gpt2-xl-mlp_down-m{m}", m, 1600, 6400, "gpt2")
    # The widest heads, and a 256k one exactly.
    for m in [1, 16, 128, 512]:
        add(f"head256k-m{m}-n262144-k4096", m, 262144, 4096, "lm-head-256k")
    return out


def split(shapes, rng):
    """Stratified halves: within each (family, M bucket) the order is random and the
    shapes go alternately to tune and heldout, the alternation carried across strata so
    that the halves differ in size by at most one."""
    strata = OrderedDict()
    for s in shapes:
        strata.setdefault((s["family"], m_bucket(s["M"])), []).append(s)
    turn = 0
    for key in sorted(strata):
        group = strata[key]
        rng.shuffle(group)
        for s in group:
            s["half"] = "tune" if turn % 2 == 0 else "heldout"
            turn += 1
    return shapes


def build():
    rng = random.Random(SEED)
    raw = model_shapes(rng) + awkward_shapes(rng)
    seen, shapes = set(), []
    for s in raw:
        key = (s["M"], s["N"], s["K"])
        if key in seen or not fits(*key):
            continue
        seen.add(key)
        shapes.append(s)
    names = Counter(s["name"] for s in shapes)
    dup = [n for n, c in names.items() if c > 1]
    if dup:
        sys.exit(f"make_sweep: duplicate names {dup}")
    split(shapes, rng)
    shapes.sort(key=lambda s: (s["family"], s["name"]))
    ordered = [{"name": s["name"], "M": s["M"], "N": s["N"], "K": s["K"],
                "family": s["family"], "half": s["half"]} for s in shapes]
    about = ("Shape sweep: the linear layers of public models (Llama 2/3/3.1, Qwen2.5, Qwen3 dense "
             "and MoE experts, Mistral/Mixtral, DeepSeek-V3 MLA, dense and experts, Gemma 2/3, "
             "Phi-3/4, gpt-oss, Command-R, Yi, Falcon) at decode, prefill and rows-per-expert M, "
             "plus awkward sizes (long K with few tiles, ragged M, LoRA short K, odd and prime "
             "M/N/K, 256k heads). A[M,K] row-major, W[N,K] row-major, D = A W^T. 'half' splits "
             "it once at random (stratified by family and M range, seed "
             f"{SEED}): tune and fit only on 'tune'; 'heldout' is for the final measurement. "
             "Generated by scripts/make_sweep.py; do not edit by hand.")
    return {"about": about, "seed": SEED, "shapes": ordered}


def to_text(doc):
    lines = ["{", f'  "about": {json.dumps(doc["about"])},', f'  "seed": {doc["seed"]},',
             '  "shapes": [']
    rows = [json.dumps(s) for s in doc["shapes"]]
    lines += ["    " + r + ("," if i + 1 < len(rows) else "") for i, r in enumerate(rows)]
    lines += ["  ]", "}"]
    return "\n".join(lines) + "\n"


def summary(doc):
    shapes = doc["shapes"]
    print(f"{len(shapes)} shapes; tune {sum(s['half'] == 'tune' for s in shapes)}, "
          f"heldout {sum(s['half'] == 'heldout' for s in shapes)}")
    unaligned = [s for s in shapes if not aligned(s["N"], s["K"])]
    print(f"rows off the 16-byte grid (N or K not a multiple of {ALIGN_ELEMS}): "
          f"{len(unaligned)} ({100 * len(unaligned) / len(shapes):.0f}%)")
    ms = [s["M"] for s in shapes]
    ns = [s["N"] for s in shapes]
    ks = [s["K"] for s in shapes]
    print(f"M {min(ms)}..{max(ms)}, N {min(ns)}..{max(ns)}, K {min(ks)}..{max(ks)}")
    flop = [2.0 * s["M"] * s["N"] * s["K"] for s in shapes]
    print(f"total {sum(flop) / 1e12:.0f} TFLOP, largest {max(flop) / 1e12:.2f} TFLOP")

    def table(title, key):
        print(f"\n{title:<16} {'tune':>5} {'heldout':>8} {'all':>5}")
        counts = OrderedDict()
        for s in sorted(shapes, key=key):
            c = counts.setdefault(key(s)[-1] if isinstance(key(s), tuple) else key(s), Counter())
            c[s["half"]] += 1
        for label, c in counts.items():
            print(f"{label:<16} {c['tune']:>5} {c['heldout']:>8} {c['tune'] + c['heldout']:>5}")

    table("family", lambda s: s["family"])
    order = {label: i for i, (_, _, label) in enumerate(M_BUCKETS)}
    table("M bucket", lambda s: (order[m_bucket(s["M"])], m_bucket(s["M"])))


def check_coverage(doc):
    """Both halves hold every family and every M bucket."""
    problems = []
    for field in ("family", "bucket"):
        by = {}
        for s in doc["shapes"]:
            v = s["family"] if field == "family" else m_bucket(s["M"])
            by.setdefault(v, set()).add(s["half"])
        for v, halves in by.items():
            if halves != {"tune", "heldout"}:
                problems.append(f"{field} {v} only in {sorted(halves)}")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    root = Path(__file__).resolve().parent.parent
    ap.add_argument("-o", "--out", help="output path [suites/sweep.json]")
    ap.add_argument("--check", action="store_true",
                    help="compare with the committed file instead of writing it")
    ap.add_argument("--extract", choices=["tune", "heldout"],
                    help="write one half of the committed suites/sweep.json (needs -o)")
    ap.add_argument("--sweep", default=str(root / "suites" / "sweep.json"),
                    help="the sweep --extract reads [suites/sweep.json]")
    args = ap.parse_args()

    if args.extract:
        if not args.out:
            ap.error("--extract needs -o FILE")
        with open(args.sweep, encoding="utf-8") as f:
            doc = json.load(f)
        part = [s for s in doc["shapes"] if s["half"] == args.extract]
        out = {"about": f"The '{args.extract}' half of {Path(args.sweep).name}. " + doc["about"],
               "seed": doc["seed"], "shapes": part}
        Path(args.out).write_text(to_text(out), encoding="utf-8")
        print(f"{len(part)} shapes -> {args.out}")
        return

    doc = build()
    problems = check_coverage(doc)
    if problems:
        sys.exit("make_sweep: " + "; ".join(problems))
    text = to_text(doc)
    out = Path(args.out) if args.out else root / "suites" / "sweep.json"
    if args.check:
        if not out.exists() or out.read_text(encoding="utf-8") != text:
            sys.exit(f"make_sweep: {out} differs from what scripts/make_sweep.py generates")
        print(f"{out} is up to date")
        return
    out.write_text(text, encoding="utf-8")
    summary(doc)
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
