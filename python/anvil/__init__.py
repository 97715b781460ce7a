"""anvil: hand-written Hopper (sm_90a) GEMM kernels as PyTorch ops.

    import anvil
    y = anvil.linear(x, weight, bias, activation="gelu")       # F.linear + epilogue
    report = anvil.patch(model)                                  # swap a model's Linears

See docs/python.md for the API, the errors it raises, and how to build it.
"""

from __future__ import annotations

import os
from typing import Optional

import torch

from . import _build_info

__version__ = _build_info.anvil_version


def _version_mismatch(built_torch: str, built_cuda: str, installed_torch: str) -> Optional[str]:
    """The sentence to raise when the installed torch is not the one anvil was built against
    (its C++ ABI is only promised within one release), or None."""
    if built_torch == installed_torch:
        return None
    return (
        f"anvil was built for torch {built_torch} (CUDA {built_cuda}) but torch {installed_torch} is installed: "
        "rebuild anvil under this torch with `pip install --no-build-isolation .` in anvil's source tree."
    )


_mismatch = _version_mismatch(_build_info.torch_version, _build_info.torch_cuda, torch.__version__)
if _mismatch is not None:
    raise ImportError(_mismatch)

torch.ops.load_library(os.path.join(os.path.dirname(os.path.abspath(__file__)), "libanvil_torch.so"))

from ._ops import (  # noqa: E402  (the ops must be loaded before their fake kernels register)
    ACTIVATIONS,
    batch_invariant,
    bmm,
    clear_tuning_cache,
    dispatch_name,
    fuse_gate_up,
    grouped_mm,
    grouped_mm_masked,
    is_batch_invariant,
    linear,
    linear_fp8,
    linear_swiglu,
    load_tuning_cache,
    matmul,
    quantize_fp8,
    scaled_grouped_mm,
    unfuse_gate_up,
)
from . import nn  # noqa: E402
from ._patch import PatchReport, patch  # noqa: E402
from .shapes import tuning_shapes  # noqa: E402

__all__ = [
    "ACTIVATIONS",
    "PatchReport",
    "batch_invariant",
    "bmm",
    "clear_tuning_cache",
    "dispatch_name",
    "fuse_gate_up",
    "grouped_mm",
    "grouped_mm_masked",
    "is_batch_invariant",
    "linear",
    "linear_fp8",
    "linear_swiglu",
    "load_tuning_cache",
    "matmul",
    "nn",
    "patch",
    "quantize_fp8",
    "scaled_grouped_mm",
    "tuning_shapes",
    "unfuse_gate_up",
]
