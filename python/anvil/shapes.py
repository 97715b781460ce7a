"""anvil-tune's shape file for a model's linear layers (docs/tuning.md).

    shapes = anvil.tuning_shapes(model, tokens=(1, 16, 128, 2048))
    python -m anvil shapes MODEL [--tokens 1,16,128,2048] [-o shapes.json]

MODEL is a Hugging Face model id or a local folder with its config.json: the model is built
on the meta device (no weights are read), patched as `anvil.patch` would patch it, and its
linear layers listed. Then, on the GPU the model will run on:

    anvil-tune --shapes shapes.json --out my-cache.json
    ANVIL_TUNING_CACHE=my-cache.json python serve.py   # or anvil.load_tuning_cache(...)

Each layer is listed with its epilogue - nn.Linear's bias, an anvil.nn.Linear's fused
activation, the SwiGLU of the gate/up GEMM that anvil.patch fuses (N = 2F) - since a tuned
entry names its problem whole, epilogue included. Layers anvil does not run (weights other
than bf16/fp16) are listed as skipped.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Iterable, Optional

import torch

from .nn import SwiGLUMLP

# anvil.linear's activation names as tuning caches spell them.
_CACHE_ACTIVATIONS = {"none": "identity", "relu": "relu", "gelu": "gelu-erf", "gelu_tanh": "gelu-tanh", "silu": "silu"}

# Decode batches, prefill chunks and rows per expert: where the planner's choice changes most.
DEFAULT_TOKENS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)


def tuning_shapes(model: torch.nn.Module, tokens: Iterable[int] = DEFAULT_TOKENS) -> dict:
    """The linear problems model runs, at each token count, in anvil-tune's shape format:
    {"about", "shapes": [{"name", "M", "N", "K"[, "bias": true][, "activation"]}],
    "skipped": [[module, why]]}. One entry per problem - weight shape (N, K) and epilogue -
    and token count M, named after the first module of that kind (batch 1, the weight's
    dtype). Modules anvil does not run are in "skipped"."""
    tokens = sorted({int(m) for m in tokens})
    if not tokens or tokens[0] < 1:
        raise ValueError(f"anvil.tuning_shapes: token counts must be positive, got {tokens}")
    layers: dict[tuple[int, int, bool, str], str] = {}
    dtypes: set[str] = set()
    skipped: list[list[str]] = []
    for name, module in model.named_modules():
        if isinstance(module, SwiGLUMLP):  # its gate/up GEMM; down_proj comes as a Linear
            weight, bias, activation = module.gate_up, module.gate_up_bias, "swiglu"
        elif isinstance(module, torch.nn.Linear):
            weight, bias = module.weight, module.bias
            activation = _CACHE_ACTIVATIONS[getattr(module, "activation", "none")]
        else:
            continue
        if weight.dtype not in (torch.bfloat16, torch.float16):
            dtype = str(weight.dtype).replace("torch.", "")
            skipped.append([name, f"weight dtype {dtype} (anvil computes bf16 and fp16)"])
            continue
        dtypes.add("fp16" if weight.dtype == torch.float16 else "bf16")
        n, k = weight.shape
        layers.setdefault((n, k, bias is not None, activation), name or type(module).__name__)
    shapes = [dict(name=f"{layer}-m{m}", M=m, N=n, K=k, **({"bias": True} if bias else {}),
                   **({"activation": act} if act != "identity" else {}))
              for (n, k, bias, act), layer in layers.items() for m in tokens]
    about = (f"{len(layers)} linear weight shapes of {type(model).__name__} at {len(tokens)} token counts "
             f"({', '.join(sorted(dtypes)) or 'no'} weights; anvil-tune --dtype accordingly)")
    return {"about": about, "shapes": shapes, "skipped": skipped}


def _build_meta_model(source: str) -> torch.nn.Module:
    """The model source names, on the meta device in its configured 16-bit dtype (bf16 when
    the config names none): shapes and modules only, no weights read or allocated."""
    try:
        import transformers
    except ImportError as e:
        raise SystemExit(f"python -m anvil shapes: building a model from '{source}' needs transformers ({e})")
    config = transformers.AutoConfig.from_pretrained(source)
    dtype = config.dtype if hasattr(config, "dtype") else getattr(config, "torch_dtype", None)  # transformers 5 / 4
    if isinstance(dtype, str):
        dtype = getattr(torch, dtype, None)
    dtype = dtype if dtype in (torch.bfloat16, torch.float16) else torch.bfloat16
    with torch.device("meta"):
        try:
            model = transformers.AutoModelForCausalLM.from_config(config)
        except ValueError:  # not a causal LM: the bare model
            model = transformers.AutoModel.from_config(config)
    return model.to(dtype)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m anvil shapes", description=__doc__.splitlines()[0])
    parser.add_argument("model", help="a Hugging Face model id, or a folder holding its config.json")
    parser.add_argument("--tokens", default=",".join(map(str, DEFAULT_TOKENS)),
                        help="token counts (M) to list, comma-separated")
    parser.add_argument("--no-patch", action="store_true",
                        help="list the model as it is, without anvil.patch's SwiGLU fusion")
    parser.add_argument("-o", "--out", default=None, help="the shape file (default: standard output)")
    args = parser.parse_args(argv)
    try:
        tokens = [int(t) for t in args.tokens.split(",") if t.strip()]
    except ValueError:
        parser.error(f"--tokens must be comma-separated whole numbers, got '{args.tokens}'")
    model = _build_meta_model(args.model)
    if not args.no_patch:
        from ._patch import patch

        patch(model)
    shapes = tuning_shapes(model, tokens)
    shapes["about"] = f"{args.model}: {shapes['about']}"
    text = json.dumps(shapes, indent=1)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
        print(f"{len(shapes['shapes'])} shapes -> {args.out} ({len(shapes['skipped'])} modules skipped)",
              file=sys.stderr)
    else:
        print(text)
    return 0

