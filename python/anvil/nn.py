"""Modules computed by anvil: a drop-in nn.Linear and a fused SwiGLU MLP."""

from __future__ import annotations

from typing import Optional

import torch

from . import _ops


class Linear(torch.nn.Linear):
    """torch.nn.Linear computed by anvil.linear, with an optional fused activation.

    Same parameters (weight [out, in], bias [out]) and state_dict as torch.nn.Linear, which
    it subclasses. Inputs must be bf16/fp16 CUDA tensors of the weight's dtype."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        device=None,
        dtype=None,
        activation: str = "none",
    ) -> None:
        super().__init__(in_features, out_features, bias=bias, device=device, dtype=dtype)
        if activation not in _ops.ACTIVATIONS:
            raise ValueError(f"anvil.nn.Linear: activation must be one of {_ops.ACTIVATIONS}, got '{activation}'")
        self.activation = activation

    @classmethod
    def from_linear(cls, linear: torch.nn.Linear, activation: str = "none") -> "Linear":
        """An anvil Linear sharing linear's parameters (no copy; tied weights stay tied)."""
        new = cls.__new__(cls)
        torch.nn.Module.__init__(new)
        new.in_features = linear.in_features
        new.out_features = linear.out_features
        new.weight = linear.weight
        new.bias = linear.bias
        new.activation = activation
        return new

    def forward(self, x: torch.Tensor, residual: Optional[torch.Tensor] = None) -> torch.Tensor:
        return _ops.linear(x, self.weight, self.bias, self.activation, residual)

    def extra_repr(self) -> str:
        return super().extra_repr() + (f", activation={self.activation}" if self.activation != "none" else "")


class SwiGLUMLP(torch.nn.Module):
    """down_proj(silu(gate_proj(x)) * up_proj(x)), the Llama/Qwen2 MLP, with gate and up in
    one anvil GEMM whose epilogue applies SwiGLU (anvil.linear_swiglu).

    The fused weight gate_up [2F, H] is stored in anvil's layout; state_dict() still writes
    gate_proj.weight and up_proj.weight (and biases), and load_state_dict() reads them, so
    checkpoints stay interchangeable with the unfused model."""

    def __init__(self, gate_up: torch.Tensor, gate_up_bias: Optional[torch.Tensor], down_proj: torch.nn.Linear):
        super().__init__()
        self.gate_up = torch.nn.Parameter(gate_up, requires_grad=gate_up.requires_grad)
        self.gate_up_bias = (
            torch.nn.Parameter(gate_up_bias, requires_grad=gate_up_bias.requires_grad)
            if gate_up_bias is not None
            else None
        )
        self.down_proj = down_proj if isinstance(down_proj, Linear) else Linear.from_linear(down_proj)

    @classmethod
    def from_projections(
        cls, gate_proj: torch.nn.Linear, up_proj: torch.nn.Linear, down_proj: torch.nn.Linear
    ) -> "SwiGLUMLP":
        with torch.no_grad():
            gate_up = _ops.fuse_gate_up(gate_proj.weight, up_proj.weight)
            bias = _ops.fuse_gate_up(gate_proj.bias, up_proj.bias) if gate_proj.bias is not None else None
        gate_up.requires_grad_(gate_proj.weight.requires_grad)
        if bias is not None:
            bias.requires_grad_(gate_proj.bias.requires_grad)
        return cls(gate_up, bias, down_proj)

    @property
    def intermediate_size(self) -> int:
        return self.gate_up.shape[0] // 2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(_ops.linear_swiglu(x, self.gate_up, self.gate_up_bias))

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        gate, up = _ops.unfuse_gate_up(self.gate_up if keep_vars else self.gate_up.detach())
        destination[prefix + "gate_proj.weight"] = gate
        destination[prefix + "up_proj.weight"] = up
        if self.gate_up_bias is not None:
            gate_b, up_b = _ops.unfuse_gate_up(self.gate_up_bias if keep_vars else self.gate_up_bias.detach())
            destination[prefix + "gate_proj.bias"] = gate_b
            destination[prefix + "up_proj.bias"] = up_b

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
        names = ["weight"] + (["bias"] if self.gate_up_bias is not None else [])
        for name in names:
            keys = (prefix + "gate_proj." + name, prefix + "up_proj." + name)
            missing = [k for k in keys if k not in state_dict]
            if missing:
                if strict:
                    missing_keys.extend(missing)
                continue
            target = self.gate_up if name == "weight" else self.gate_up_bias
            fused = _ops.fuse_gate_up(state_dict[keys[0]], state_dict[keys[1]])
            if fused.shape != target.shape:
                error_msgs.append(
                    f"size mismatch for {keys[0]}/{keys[1]}: fused {tuple(fused.shape)}, model {tuple(target.shape)}"
                )
                continue
            with torch.no_grad():
                target.copy_(fused)

    def extra_repr(self) -> str:
        return f"hidden={self.gate_up.shape[1]}, intermediate={self.intermediate_size}, bias={self.gate_up_bias is not None}"
