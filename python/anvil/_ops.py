"""The Python face of anvil's ops: wrappers, fake (meta) kernels, autograd, weight helpers.

The ops themselves are registered from C++ (python/csrc/ops.cpp) as torch.ops.anvil.*.
The fake kernels here repeat the C++ argument checks that need only shapes and dtypes, so
that FakeTensorMode, meta tensors and torch.compile reject bad input with the same
messages; stride checks need concrete strides and run only in C++.
"""

from __future__ import annotations

import contextlib
from typing import Iterator, Optional

import torch

ACTIVATIONS = ("none", "relu", "gelu", "gelu_tanh", "silu")
SWIGLU_BLOCK = 64  # anvil::kSwiGLUBlock: gate and up rows alternate in blocks of 64

# The default for ops called without batch_invariant=; set by `with anvil.batch_invariant()`.
# A plain module global, so that torch.compile guards on it and recompiles when it changes.
_batch_invariant_default = False


@contextlib.contextmanager
def batch_invariant(enabled: bool = True) -> Iterator[None]:
    """Within the block, anvil's ops default to batch-invariant GEMMs: each output row is
    bitwise the same whatever the number of rows in the call (anvil::GemmDesc::batch_invariant).
    Enter it outside compiled regions; inside one, pass batch_invariant=True to the op."""
    global _batch_invariant_default
    previous = _batch_invariant_default
    _batch_invariant_default = bool(enabled)
    try:
        yield
    finally:
        _batch_invariant_default = previous


def is_batch_invariant() -> bool:
    """Whether ops called without batch_invariant= run batch-invariant now."""
    return _batch_invariant_default


def _resolve(flag: Optional[bool]) -> bool:
    return _batch_invariant_default if flag is None else bool(flag)


# ---- public wrappers ------------------------------------------------------------------------


def linear(
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: Optional[torch.Tensor] = None,
    activation: str = "none",
    residual: Optional[torch.Tensor] = None,
    *,
    out: Optional[torch.Tensor] = None,
    batch_invariant: Optional[bool] = None,
) -> torch.Tensor:
    """y = activation(x @ weight.T + bias) + residual, as F.linear with a fused epilogue.

    x [..., K] bf16/fp16, weight [N, K] (x's dtype), bias [N] (x's dtype or fp32),
    residual [..., N] (x's dtype), activation one of none, relu, gelu, gelu_tanh, silu.
    Differentiable in x, weight, bias and residual (not with out=)."""
    bi = _resolve(batch_invariant)
    if out is not None:
        _check_linear_into(x, weight, bias, activation, residual, out)
        torch.ops.anvil.linear_into(x, weight, bias, activation, residual, batch_invariant=bi, out=out)
        return out
    _check_linear(x, weight, bias, activation, residual)
    return torch.ops.anvil.linear(x, weight, bias, activation, residual, batch_invariant=bi)


def linear_swiglu(
    x: torch.Tensor,
    gate_up: torch.Tensor,
    bias: Optional[torch.Tensor] = None,
    *,
    batch_invariant: Optional[bool] = None,
) -> torch.Tensor:
    """silu(x @ W_gate.T) * (x @ W_up.T) in one GEMM, from gate_up = fuse_gate_up(W_gate, W_up).

    x [..., K]; gate_up [2F, K] in anvil's fused layout; bias [2F] in the same layout
    (fuse_gate_up(b_gate, b_up)); returns [..., F]. Differentiable in x, gate_up and bias."""
    _check_linear_swiglu(x, gate_up, bias)
    return torch.ops.anvil.linear_swiglu(x, gate_up, bias, batch_invariant=_resolve(batch_invariant))


def matmul(a: torch.Tensor, b: torch.Tensor, *, batch_invariant: Optional[bool] = None) -> torch.Tensor:
    """a @ b for 2-D or 3-D bf16/fp16 operands, any of them transposed or strided with a unit
    stride along rows or columns; a batch of 1 (or a 2-D operand) broadcasts against a batch."""
    _matmul_shape("matmul", a, b, require_3d=False)
    return torch.ops.anvil.matmul(a, b, batch_invariant=_resolve(batch_invariant))


def bmm(a: torch.Tensor, b: torch.Tensor, *, batch_invariant: Optional[bool] = None) -> torch.Tensor:
    """torch.bmm: a [B, M, K] @ b [B, K, N], both 3-D with equal batches."""
    _matmul_shape("bmm", a, b, require_3d=True)
    return torch.ops.anvil.bmm(a, b, batch_invariant=_resolve(batch_invariant))


def dispatch_name(m: int, n: int, k: int, dtype: torch.dtype = torch.bfloat16, batch_invariant: bool = False) -> str:
    """The kernel anvil's dispatcher picks for the nn.Linear problem [m, k] x [n, k]^T."""
    return torch.ops.anvil.dispatch_name(m, n, k, "fp16" if dtype == torch.float16 else "bf16", batch_invariant)


# ---- fused gate/up weights (anvil/swiglu.h) ------------------------------------------------


def fuse_gate_up(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    """Interleaves W_gate [F, K] and W_up [F, K] into anvil's fused [2F, K]: rows
    [128 i, 128 i + 64) are gate rows [64 i, 64 i + 64), the next 64 are the same up rows.
    Also takes 1-D biases [F] (giving [2F]). Any device; F must be a multiple of 64."""
    if gate.shape != up.shape or gate.dim() not in (1, 2):
        raise ValueError(
            f"anvil.fuse_gate_up: gate and up must be [F, K] weights (or [F] biases) of one shape, "
            f"got {tuple(gate.shape)} and {tuple(up.shape)}"
        )
    if gate.dtype != up.dtype:
        raise TypeError(f"anvil.fuse_gate_up: up must have gate's dtype ({gate.dtype}), got {up.dtype}")
    f = gate.shape[0]
    if f % SWIGLU_BLOCK != 0 or f == 0:
        raise ValueError(f"anvil.fuse_gate_up: F (gate's rows) must be a positive multiple of {SWIGLU_BLOCK}, got {f}")
    tail = tuple(gate.shape[1:])
    blocks = (f // SWIGLU_BLOCK, 1, SWIGLU_BLOCK) + tail
    fused = torch.cat([gate.reshape(blocks), up.reshape(blocks)], dim=1)
    return fused.reshape((2 * f,) + tail).contiguous()


def unfuse_gate_up(gate_up: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The inverse of fuse_gate_up: (W_gate [F, K], W_up [F, K]) from gate_up [2F, K]."""
    if gate_up.dim() not in (1, 2) or gate_up.shape[0] % (2 * SWIGLU_BLOCK) != 0 or gate_up.shape[0] == 0:
        raise ValueError(
            f"anvil.unfuse_gate_up: gate_up must be [2F, K] (or [2F]) with 2F a positive multiple of "
            f"{2 * SWIGLU_BLOCK}, got {tuple(gate_up.shape)}"
        )
    f = gate_up.shape[0] // 2
    tail = tuple(gate_up.shape[1:])
    pairs = gate_up.reshape((f // SWIGLU_BLOCK, 2, SWIGLU_BLOCK) + tail)
    return pairs[:, 0].reshape((f,) + tail).contiguous(), pairs[:, 1].reshape((f,) + tail).contiguous()


# ---- argument checks shared by the fake kernels ----------------------------------------------

_DTYPE_NAMES = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}


def _dtype_name(dtype: torch.dtype) -> str:
    return _DTYPE_NAMES.get(dtype, str(dtype).replace("torch.", ""))


def _check_input_dtype(op: str, name: str, t: torch.Tensor) -> None:
    if t.dtype not in (torch.bfloat16, torch.float16):
        raise TypeError(f"anvil.{op}: {name} must be bf16 or fp16, got {_dtype_name(t.dtype)}")


def _check_same_dtype(op: str, name: str, t: torch.Tensor, like: torch.Tensor, like_name: str) -> None:
    if t.dtype != like.dtype:
        raise TypeError(
            f"anvil.{op}: {name} must have {like_name}'s dtype ({_dtype_name(like.dtype)}), got {_dtype_name(t.dtype)}"
        )


def _check_devices(op: str, tensors: list[tuple[str, torch.Tensor]]) -> None:
    first_name, first = tensors[0]
    for name, t in tensors:
        if t.device.type == "cpu":
            raise ValueError(
                f"anvil.{op}: {name} must be a CUDA tensor, got a tensor on cpu (anvil runs on CUDA GPUs only)"
            )
        if t.device != first.device:
            raise ValueError(
                f"anvil.{op}: {name} is on {t.device} but {first_name} is on {first.device}; "
                "all operands must be on one device"
            )


def _linear_shape(op, x, weight, bias, activation, residual, swiglu):
    if not swiglu and activation not in ACTIVATIONS:
        raise ValueError(
            f"anvil.{op}: activation must be one of 'none', 'relu', 'gelu', 'gelu_tanh', 'silu', got '{activation}'"
        )
    _check_input_dtype(op, "x", x)
    _check_same_dtype(op, "weight", weight, x, "x")
    if x.dim() < 1:
        raise ValueError(f"anvil.{op}: x must have at least one dimension [..., K], got a 0-d tensor")
    if weight.dim() != 2:
        raise ValueError(f"anvil.{op}: weight must be 2-D [N, K], got {weight.dim()}-D with sizes {list(weight.shape)}")
    k = x.shape[-1]
    n = weight.shape[0]
    if weight.shape[1] != k:
        raise ValueError(
            f"anvil.{op}: weight is {list(weight.shape)} but x has K = {k} (its last dimension); weight must be [N, {k}]"
        )
    if swiglu and n % (2 * SWIGLU_BLOCK) != 0:
        raise ValueError(
            f"anvil.{op}: gate_up must have a multiple of {2 * SWIGLU_BLOCK} rows (gate and up blocks of "
            f"{SWIGLU_BLOCK}, see anvil.fuse_gate_up), got {n}"
        )
    n_out = n // 2 if swiglu else n
    if bias is not None:
        if bias.dtype not in (x.dtype, torch.float32):
            raise TypeError(
                f"anvil.{op}: bias must be {_dtype_name(x.dtype)} (x's dtype) or fp32, got {_dtype_name(bias.dtype)}"
            )
        if bias.dim() != 1 or bias.shape[0] != n:
            raise ValueError(f"anvil.{op}: bias must be 1-D of length {n} (weight's rows), got sizes {list(bias.shape)}")
    out_shape = list(x.shape[:-1]) + [n_out]
    if residual is not None:
        _check_same_dtype(op, "residual", residual, x, "x")
        if list(residual.shape) != out_shape:
            raise ValueError(f"anvil.{op}: residual must have the output's shape {out_shape}, got {list(residual.shape)}")
    tensors = [("x", x), ("weight", weight)]
    tensors += [("bias", bias)] if bias is not None else []
    tensors += [("residual", residual)] if residual is not None else []
    return out_shape, tensors


def _matmul_shape(op, a, b, require_3d, devices=False):
    _check_input_dtype(op, "a", a)
    _check_same_dtype(op, "b", b, a, "a")
    for name, t in (("a", a), ("b", b)):
        if require_3d and t.dim() != 3:
            raise ValueError(
                f"anvil.{op}: {name} must be 3-D [batch, rows, cols], got {t.dim()}-D with sizes {list(t.shape)}"
            )
        if not require_3d and t.dim() not in (2, 3):
            raise ValueError(
                f"anvil.{op}: {name} must be 2-D or 3-D (anvil computes matrix products; reshape other ranks "
                f"first), got {t.dim()}-D with sizes {list(t.shape)}"
            )
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    if b.shape[-2] != k:
        raise ValueError(
            f"anvil.{op}: a is {list(a.shape)} and b is {list(b.shape)}; b's rows must equal a's columns (K = {k})"
        )
    batch_a = a.shape[0] if a.dim() == 3 else 1
    batch_b = b.shape[0] if b.dim() == 3 else 1
    if require_3d and batch_a != batch_b:
        raise ValueError(f"anvil.{op}: a has batch {batch_a} and b has batch {batch_b}; bmm needs equal batches")
    if not require_3d and not (batch_a == batch_b or batch_a == 1 or batch_b == 1):
        raise ValueError(
            f"anvil.{op}: a has batch {batch_a} and b has batch {batch_b}; batches must be equal or one of them 1"
        )
    if devices:
        _check_devices(op, [("a", a), ("b", b)])
    if a.dim() == 3 or b.dim() == 3:
        return [max(batch_a, batch_b), m, n]
    return [m, n]


# ---- fake kernels ------------------------------------------------------------------------------


# The public wrappers run the dtype and shape checks before calling into C++, so that such
# mistakes are refused in Python; strides and devices (in that order) are checked in C++,
# where the strides are concrete. The fake kernels add the device check.


def _check_linear(x, weight, bias, activation, residual, devices=False):
    out_shape, tensors = _linear_shape("linear", x, weight, bias, activation, residual, swiglu=False)
    if devices:
        _check_devices("linear", tensors)
    return out_shape


def _check_linear_into(x, weight, bias, activation, residual, out, devices=False):
    out_shape, tensors = _linear_shape("linear", x, weight, bias, activation, residual, swiglu=False)
    _check_same_dtype("linear", "out", out, x, "x")
    if list(out.shape) != out_shape:
        raise ValueError(f"anvil.linear: out must have shape {out_shape}, got {list(out.shape)}")
    if devices:
        _check_devices("linear", tensors + [("out", out)])


def _check_linear_swiglu(x, gate_up, bias, devices=False):
    out_shape, tensors = _linear_shape("linear_swiglu", x, gate_up, bias, "none", None, swiglu=True)
    if devices:
        _check_devices("linear_swiglu", tensors)
    return out_shape


@torch.library.register_fake("anvil::linear")
def _linear_fake(x, weight, bias=None, activation="none", residual=None, *, batch_invariant=False):
    return x.new_empty(_check_linear(x, weight, bias, activation, residual, devices=True))


@torch.library.register_fake("anvil::linear_into")
def _linear_into_fake(x, weight, bias=None, activation="none", residual=None, *, batch_invariant=False, out):
    _check_linear_into(x, weight, bias, activation, residual, out, devices=True)


@torch.library.register_fake("anvil::linear_swiglu")
def _linear_swiglu_fake(x, gate_up, bias=None, *, batch_invariant=False):
    return x.new_empty(_check_linear_swiglu(x, gate_up, bias, devices=True))


@torch.library.register_fake("anvil::matmul")
def _matmul_fake(a, b, *, batch_invariant=False):
    return a.new_empty(_matmul_shape("matmul", a, b, require_3d=False, devices=True))


@torch.library.register_fake("anvil::bmm")
def _bmm_fake(a, b, *, batch_invariant=False):
    return a.new_empty(_matmul_shape("bmm", a, b, require_3d=True, devices=True))


# ---- autograd ------------------------------------------------------------------------------------
# The backward GEMMs run on anvil in their other layouts: dX = dZ W (A = dZ row-major,
# B = W row-major) and dW = dZ^T X (A = dZ column-major, B = X row-major), where dZ is the
# gradient before the activation. Activation derivatives use torch's own backward ops on
# the pre-activation, which the backward recomputes with one more anvil GEMM rather than
# keep a second activation-sized tensor alive from the forward.


def _act_backward(activation: str, dy: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    dyf, zf = dy.float(), z.float()
    if activation == "relu":
        dz = torch.where(zf > 0, dyf, torch.zeros_like(dyf))
    elif activation == "gelu":
        dz = torch.ops.aten.gelu_backward(dyf, zf, approximate="none")
    elif activation == "gelu_tanh":
        dz = torch.ops.aten.gelu_backward(dyf, zf, approximate="tanh")
    elif activation == "silu":
        dz = torch.ops.aten.silu_backward(dyf, zf)
    else:
        return dy
    return dz.to(dy.dtype)


def _needs(ctx, i: int) -> bool:
    # The dispatcher may drop trailing arguments equal to their defaults, so the op can have
    # been called with fewer inputs than its schema lists.
    return i < len(ctx.needs_input_grad) and ctx.needs_input_grad[i]


def _trim(ctx, grads: tuple) -> tuple:
    return grads[: len(ctx.needs_input_grad)]


def _weight_grads(ctx, dz: torch.Tensor, x2: torch.Tensor, weight: torch.Tensor, x_shape, bi: bool):
    dx = dw = db = None
    if _needs(ctx, 0):
        dx = torch.ops.anvil.matmul(dz, weight, batch_invariant=bi).reshape(x_shape)
    if _needs(ctx, 1):
        dw = torch.ops.anvil.matmul(dz.t(), x2, batch_invariant=bi)
    if ctx.has_bias and _needs(ctx, 2):
        db = dz.sum(0, dtype=torch.float32).to(ctx.bias_dtype)
    return dx, dw, db


def _linear_setup(ctx, inputs, keyword_only_inputs, output):
    x, weight, bias, activation, residual = inputs
    ctx.activation = activation
    ctx.has_bias = bias is not None
    ctx.bias_dtype = bias.dtype if bias is not None else None
    ctx.batch_invariant = keyword_only_inputs.get("batch_invariant", False)
    ctx.save_for_backward(x, weight, bias)


def _linear_backward(ctx, dy):
    x, weight, bias = ctx.saved_tensors
    bi = ctx.batch_invariant
    k, n = x.shape[-1], weight.shape[0]
    x2 = x.reshape(-1, k)
    dy2 = dy.reshape(-1, n).contiguous()
    if ctx.activation != "none":
        z = torch.ops.anvil.linear(x2, weight, bias, "none", None, batch_invariant=bi)
        dz = _act_backward(ctx.activation, dy2, z)
    else:
        dz = dy2
    dx, dw, db = _weight_grads(ctx, dz, x2, weight, x.shape, bi)
    dres = dy if _needs(ctx, 4) else None
    return _trim(ctx, (dx, dw, db, None, dres))


def _swiglu_setup(ctx, inputs, keyword_only_inputs, output):
    x, gate_up, bias = inputs
    ctx.has_bias = bias is not None
    ctx.bias_dtype = bias.dtype if bias is not None else None
    ctx.batch_invariant = keyword_only_inputs.get("batch_invariant", False)
    ctx.save_for_backward(x, gate_up, bias)


def _swiglu_backward(ctx, dy):
    x, gate_up, bias = ctx.saved_tensors
    bi = ctx.batch_invariant
    k, n = x.shape[-1], gate_up.shape[0]
    f = n // 2
    x2 = x.reshape(-1, k)
    m = x2.shape[0]
    # The pre-activation in the fused layout, split into its gate and up column blocks.
    z = torch.ops.anvil.linear(x2, gate_up, bias, "none", None, batch_invariant=bi)
    pairs = z.float().reshape(m, f // SWIGLU_BLOCK, 2, SWIGLU_BLOCK)
    g, u = pairs[:, :, 0], pairs[:, :, 1]
    dyf = dy.reshape(m, f // SWIGLU_BLOCK, SWIGLU_BLOCK).float()
    s = torch.sigmoid(g)
    dg = dyf * u * (s * (1 + g * (1 - s)))
    du = dyf * (g * s)
    dz = torch.stack([dg, du], dim=2).reshape(m, n).to(dy.dtype)
    dx, dw, db = _weight_grads(ctx, dz, x2, gate_up, x.shape, bi)
    return _trim(ctx, (dx, dw, db))


def _matmul_setup(ctx, inputs, keyword_only_inputs, output):
    a, b = inputs
    ctx.batch_invariant = keyword_only_inputs.get("batch_invariant", False)
    ctx.save_for_backward(a, b)


def _reduce_to(grad: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    # A broadcast operand (2-D against 3-D, or batch 1 against B) sums its batch gradients.
    if like.dim() == 2 and grad.dim() == 3:
        return grad.sum(0)
    if like.dim() == 3 and like.shape[0] == 1 and grad.shape[0] != 1:
        return grad.sum(0, keepdim=True)
    return grad


def _matmul_backward(ctx, dc):
    a, b = ctx.saved_tensors
    bi = ctx.batch_invariant
    dc = dc.contiguous()
    da = db = None
    if _needs(ctx, 0):
        da = _reduce_to(torch.ops.anvil.matmul(dc, b.transpose(-1, -2), batch_invariant=bi), a)
    if _needs(ctx, 1):
        db = _reduce_to(torch.ops.anvil.matmul(a.transpose(-1, -2), dc, batch_invariant=bi), b)
    return da, db


torch.library.register_autograd("anvil::linear", _linear_backward, setup_context=_linear_setup)
torch.library.register_autograd("anvil::linear_swiglu", _swiglu_backward, setup_context=_swiglu_setup)
torch.library.register_autograd("anvil::matmul", _matmul_backward, setup_context=_matmul_setup)
torch.library.register_autograd("anvil::bmm", _matmul_backward, setup_context=_matmul_setup)
