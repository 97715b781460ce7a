"""anvil.patch(model): run a model's linear layers on anvil, fusing SwiGLU MLPs."""

from __future__ import annotations

import dataclasses
from typing import Iterable

import torch

from . import nn as anvil_nn

SWIGLU_BLOCK = 64


@dataclasses.dataclass
class PatchReport:
    """What anvil.patch changed: module names with what they became, and what it left alone and why."""

    swapped: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    left_alone: list[tuple[str, str]] = dataclasses.field(default_factory=list)

    @property
    def fused(self) -> list[str]:
        return [name for name, what in self.swapped if what.startswith("SwiGLUMLP")]

    def __str__(self) -> str:
        lines = [f"anvil.patch: {len(self.swapped)} modules swapped ({len(self.fused)} fused SwiGLU MLPs), "
                 f"{len(self.left_alone)} left alone"]
        lines += [f"  swapped  {name}: {what}" for name, what in self.swapped]
        lines += [f"  left     {name}: {why}" for name, why in self.left_alone]
        return "\n".join(lines)


def _linear_refusal(linear: torch.nn.Linear) -> str | None:
    """Why anvil cannot run this nn.Linear, or None."""
    w = linear.weight
    if w.dtype not in (torch.bfloat16, torch.float16):
        return f"weight dtype {str(w.dtype).replace('torch.', '')} (anvil computes bf16 and fp16)"
    if w.device.type == "cpu":
        return "on cpu (anvil runs on CUDA GPUs)"
    if linear.bias is not None and linear.bias.dtype not in (w.dtype, torch.float32):
        return f"bias dtype {linear.bias.dtype} differs from the weight's"
    return None


def _is_silu(act: object) -> bool:
    return isinstance(act, torch.nn.SiLU) or type(act).__name__ in ("SiLU", "SiLUActivation")


def _swiglu_refusal(mlp: torch.nn.Module) -> str | None:
    """Why a module with gate_proj/up_proj/down_proj cannot become a fused SwiGLUMLP, or None."""
    gate, up, down = mlp.gate_proj, mlp.up_proj, mlp.down_proj
    if not all(type(m) is torch.nn.Linear for m in (gate, up, down)):
        return "gate_proj/up_proj/down_proj are not all plain nn.Linear"
    if not _is_silu(getattr(mlp, "act_fn", None)):
        return f"activation {type(getattr(mlp, 'act_fn', None)).__name__} is not SiLU"
    if gate.weight.shape != up.weight.shape:
        return f"gate_proj {tuple(gate.weight.shape)} and up_proj {tuple(up.weight.shape)} differ in shape"
    if (gate.bias is None) != (up.bias is None):
        return "only one of gate_proj and up_proj has a bias"
    if gate.out_features % SWIGLU_BLOCK != 0:
        return f"intermediate size {gate.out_features} is not a multiple of {SWIGLU_BLOCK}"
    # Only the standard forward, down(act(gate(x)) * up(x)), may be replaced; a class that
    # overrides it (e.g. adds dropout or scaling) is left alone.
    if type(mlp).__name__ not in _SWIGLU_MLP_CLASSES:
        return f"{type(mlp).__name__} is not a known SwiGLU MLP class ({', '.join(sorted(_SWIGLU_MLP_CLASSES))})"
    for m in (gate, up, down):
        why = _linear_refusal(m)
        if why is not None:
            return why
    return None


# transformers' MLPs whose forward is exactly down_proj(act_fn(gate_proj(x)) * up_proj(x)).
_SWIGLU_MLP_CLASSES = {
    "LlamaMLP",
    "Qwen2MLP",
    "Qwen3MLP",
    "MistralMLP",
    "Qwen2MoeMLP",
    "Gemma2MLP",  # Gemma's act_fn is gelu_tanh, which the SiLU check refuses
    "Phi3MLP",
}


def patch(
    model: torch.nn.Module,
    *,
    fuse_swiglu: bool = True,
    skip: Iterable[str] = (),
) -> PatchReport:
    """Swaps model's nn.Linear layers for anvil.nn.Linear (sharing the parameters) and, with
    fuse_swiglu, replaces Llama/Qwen2-style MLPs (gate_proj, up_proj, down_proj, SiLU) with
    anvil.nn.SwiGLUMLP. In place; returns a PatchReport. Modules whose names start with an
    entry of skip are left alone."""
    report = PatchReport()
    skip = tuple(skip)
    handled: set[str] = set()

    def skipped(name: str) -> bool:
        return any(name == s or name.startswith(s + ".") for s in skip)

    def replace(name: str, new: torch.nn.Module) -> None:
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, child, new)

    modules = list(model.named_modules())
    if fuse_swiglu:
        for name, module in modules:
            if not all(hasattr(module, p) for p in ("gate_proj", "up_proj", "down_proj")) or skipped(name):
                continue
            why = _swiglu_refusal(module)
            if why is not None:
                report.left_alone.append((name, f"not fused: {why}"))
                continue
            fused = anvil_nn.SwiGLUMLP.from_projections(module.gate_proj, module.up_proj, module.down_proj)
            if name:
                replace(name, fused)
            else:
                report.left_alone.append((name, "not fused: the model itself is the MLP"))
                continue
            report.swapped.append((name, f"SwiGLUMLP (gate+up {tuple(fused.gate_up.shape)} fused, down_proj on anvil)"))
            handled.update(f"{name}.{p}" for p in ("gate_proj", "up_proj", "down_proj"))
    for name, module in modules:
        if not isinstance(module, torch.nn.Linear) or name in handled:
            continue
        if skipped(name):
            report.left_alone.append((name, "skipped by request"))
            continue
        if isinstance(module, anvil_nn.Linear):
            report.left_alone.append((name, "already anvil.nn.Linear"))
            continue
        if type(module) is not torch.nn.Linear:
            report.left_alone.append((name, f"{type(module).__name__} subclasses nn.Linear with its own forward"))
            continue
        why = _linear_refusal(module)
        if why is not None:
            report.left_alone.append((name, why))
            continue
        new = anvil_nn.Linear.from_linear(module)
        if name:
            replace(name, new)
        else:
            report.left_alone.append((name, "the model itself is an nn.Linear; use anvil.nn.Linear.from_linear"))
            continue
        report.swapped.append((name, f"anvil.nn.Linear {module.in_features}->{module.out_features}"))
    return report
