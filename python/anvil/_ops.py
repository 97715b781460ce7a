"""The Python face of anvil's ops: wrappers, fake (meta) kernels, autograd, weight helpers.

The ops themselves are registered from C++ (python/csrc/ops.cpp) as torch.ops.anvil.*.
The fake kernels here repeat the C++ argument checks that need only shapes and dtypes, so
that FakeTensorMode, meta tensors and torch.compile reject bad input with the same
messages; stride checks need concrete strides and run only in C++.
"""

from __future__ import annotations

import contextlib
import os
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


def load_tuning_cache(path: str) -> None:
    """Loads a tuning cache that anvil-tune wrote (docs/tuning.md), replacing any loaded
    before: the library then runs its plans for the problems it names, on the GPU it was
    made on. Raises ValueError, with the reason, for a file that is not a valid cache. The
    environment variable ANVIL_TUNING_CACHE names one too, read at the first op."""
    torch.ops.anvil.load_tuning_cache(os.fspath(path))


def clear_tuning_cache() -> None:
    """Forgets the loaded tuning cache; the built-in table stays."""
    torch.ops.anvil.clear_tuning_cache()


# ---- grouped GEMM (mixture of experts) ------------------------------------------------------


def grouped_mm(
    x: torch.Tensor,
    weight: torch.Tensor,
    offsets: torch.Tensor,
    bias: Optional[torch.Tensor] = None,
    activation: str = "none",
) -> torch.Tensor:
    """Every expert's nn.Linear over its own rows, in one launch (contiguous layout, prefill).

    x [rows, K] bf16/fp16 with the tokens sorted by expert; weight [E, N, K] (x's dtype, each
    expert's weight in the nn.Linear layout); offsets [E] int32 or int64 on x's device, in
    torch._grouped_mm's ``offs`` convention: the cumulative row ends, expert e owning rows
    ``offsets[e-1] .. offsets[e]`` (``offsets[-1]`` taken as 0), so ``offsets[-1]`` is the
    number of rows routed; bias [E, N] (x's dtype or fp32); activation one of none, relu,
    gelu, gelu_tanh, silu. Returns [rows, N] in x's dtype:
    ``y[r] = act(x[r] @ weight[e].T + bias[e])`` for the expert e owning row r.

    Rows no expert owns (from ``offsets[-1]`` on) are zeros. Invalid offsets (decreasing, or
    outside [0, rows]) cannot be refused, since the host never reads them: anvil skips an
    expert whose bounds are invalid, leaving its rows zero unless a neighbour's range, shifted
    by the bad offset, covers them (sort the tokens by expert). The offsets are never read by
    the host (anvil's kernel reads the row ends as they are), so the op is CUDA-graph capturable and a captured graph replays
    with whatever routing is in ``offsets`` at replay. K must be a multiple of 8. No autograd:
    the op has no backward (an inference kernel)."""
    _check_grouped("grouped_mm", x, weight, offsets, bias, activation)
    return torch.ops.anvil.grouped_mm(x, weight, offsets, bias, activation)


def grouped_mm_masked(
    x: torch.Tensor,
    weight: torch.Tensor,
    counts: torch.Tensor,
    bias: Optional[torch.Tensor] = None,
    activation: str = "none",
) -> torch.Tensor:
    """Every expert's nn.Linear over the first counts[e] rows of its slice (masked layout, decode).

    x [E, max_rows, K] bf16/fp16; weight [E, N, K] (x's dtype); counts [E] int32 or int64 on
    x's device (0 <= counts[e] <= max_rows); bias [E, N] (x's dtype or fp32). Returns
    [E, max_rows, N] in x's dtype; rows ``counts[e]:`` of slice e are zeros (as are all rows of
    an expert whose count is out of range). Shapes are fixed and the counts are read only on
    the device, so one captured CUDA graph serves every routing. K must be a multiple of 8.
    No autograd (an inference kernel)."""
    _check_grouped("grouped_mm_masked", x, weight, counts, bias, activation)
    return torch.ops.anvil.grouped_mm_masked(x, weight, counts, bias, activation)


# ---- FP8 ------------------------------------------------------------------------------------

FP8_DTYPES = (torch.float8_e4m3fn, torch.float8_e5m2)
SCALE_MODES = ("block", "tensor", "rowcol")


def linear_fp8(
    x_q: torch.Tensor,
    weight_q: torch.Tensor,
    x_scale: torch.Tensor,
    weight_scale: torch.Tensor,
    *,
    scales: str = "block",
    bias: Optional[torch.Tensor] = None,
    activation: str = "none",
    out_dtype: torch.dtype = torch.bfloat16,
) -> torch.Tensor:
    """y = act((x_q * sx) @ (weight_q * sw).T + bias) from FP8 operands and fp32 scales.

    x_q [M, K] and weight_q [N, K] torch.float8_e4m3fn or torch.float8_e5m2 (not both e5m2;
    scales="block" needs both e4m3), stored K-contiguous; K a multiple of 16. The scales are
    fp32 tensors on the device, multiplying the values they cover (dequantized = q * scale):

    - "block" (DeepSeek-V3): x_scale [ceil(K/128), M], the scale of row i and columns
      128 b .. 128 b + 127 at [b, i] (what anvil.quantize_fp8(x) returns); weight_scale
      [ceil(N/128), ceil(K/128)], one per 128 x 128 block of weight_q. Sums are promoted to
      fp32 every 128 columns of K.
    - "tensor": one value each (sizes [] or [1]; anvil.quantize_fp8(x, block=None)).
    - "rowcol": x_scale [M] per row of x_q, weight_scale [N] per row of weight_q.

    bias [N] (out_dtype or fp32); activation one of none, relu, gelu, gelu_tanh, silu;
    out_dtype bf16, fp16 or fp32. Returns [M, N]. No autograd (an inference kernel).
    See docs/fp8.md for the accumulation error of each mode."""
    _check_linear_fp8(x_q, weight_q, x_scale, weight_scale, scales, bias, activation, out_dtype)
    return torch.ops.anvil.linear_fp8(
        x_q, weight_q, x_scale, weight_scale, scales=scales, bias=bias, activation=activation, out_dtype=out_dtype
    )


def scaled_grouped_mm(
    mat_a: torch.Tensor,
    mat_b: torch.Tensor,
    scale_a: torch.Tensor,
    scale_b: torch.Tensor,
    offs: Optional[torch.Tensor] = None,
    bias: Optional[torch.Tensor] = None,
    scale_result: Optional[torch.Tensor] = None,
    out_dtype: Optional[torch.dtype] = None,
    use_fast_accum: bool = False,
) -> torch.Tensor:
    """torch._scaled_grouped_mm on anvil's grouped FP8 kernel, same arguments in the same order.

    mat_a [rows, K] float8_e4m3fn, contiguous, the tokens sorted by expert, with ``offs`` [E]
    int32 (or int64) the cumulative row ends (expert e owns rows ``offs[e-1] .. offs[e]``, from
    row 0 for e = 0); or mat_a [E, M, K] with offs None (every expert its M rows).
    mat_b [E, K, N] float8_e4m3fn, the transpose of the experts' weights [E, N, K]
    (``weight.transpose(-2, -1)``, K contiguous), as torch takes it. Scales fp32, multiplying
    the values they cover (dequantized = q * scale):

    - row-wise (torch's recipe): scale_a [rows] (or [E, M]), scale_b [E, N];
    - per tensor: scale_a one value, scale_b one value ([] or [1]) or one per expert ([E]);
    - DeepSeek-V3 blocks: scale_a [ceil(K/128), rows] (one per row and 128 columns,
      K-block-major, as ``quantize_fp8(x, block=128)`` writes; [ceil(K/128), E * M] for a
      3-D mat_a), scale_b [E, ceil(N/128), ceil(K/128)] (one per 128 x 128 block of each
      expert's [N, K] weight). Each 128-wide K block is summed on the tensor cores and added,
      scaled, to an fp32 total (docs/fp8.md).

    bias [E, N] (out_dtype or fp32) or None; scale_result must be None; out_dtype bf16 (the
    default), fp16 or fp32; K a multiple of 16. Returns [rows, N] or [E, M, N]; as with
    torch's op, rows from ``offs[E-1]`` on are left unwritten (the output comes from
    torch.empty: zero-filling it would cost a pass over the whole output).
    ``use_fast_accum`` is accepted for the signature and changes nothing: anvil sums the whole K in the tensor cores' accumulator (torch's
    use_fast_accum=True arithmetic; docs/fp8.md). offs is read on the device only, so the op
    is CUDA-graph capturable. No autograd (an inference kernel)."""
    _check_scaled_grouped_mm(mat_a, mat_b, scale_a, scale_b, offs, bias, scale_result, out_dtype)
    return torch.ops.anvil.scaled_grouped_mm(
        mat_a, mat_b, scale_a, scale_b, offs, bias, scale_result, out_dtype, use_fast_accum
    )


def quantize_fp8(
    x: torch.Tensor, block: Optional[int] = 128, dtype: torch.dtype = torch.float8_e4m3fn
) -> tuple[torch.Tensor, torch.Tensor]:
    """(x_q, scale): x [M, K] bf16/fp16 quantized to FP8 (K a multiple of 16).

    block=128: one scale per row and 128 columns, scale [ceil(K/128), M] fp32 - linear_fp8's
    x_scale for scales="block". block=None: one scale for the tensor, scale [1] - for
    scales="tensor" (three launches: amax, cast, scale). Each scale is amax / fmax of its
    group (fmax 448 for e4m3, 57344 for e5m2; 1 for an all-zero group) and
    x_q = round_to_nearest_even(x / scale), saturated to +-fmax. No host sync."""
    _check_quantize_fp8(x, block, dtype)
    return torch.ops.anvil.quantize_fp8(x, block, dtype)


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


# Grouped and FP8 ops: the same checks, in the same order, as ops.cpp.
MAX_EXPERTS = 1 << 16


def _check_activation(op, activation):
    if activation not in ACTIVATIONS:
        raise ValueError(
            f"anvil.{op}: activation must be one of 'none', 'relu', 'gelu', 'gelu_tanh', 'silu', got '{activation}'"
        )


def _check_grouped(op, x, weight, index, bias, activation, devices=False):
    masked = op == "grouped_mm_masked"
    index_name = "counts" if masked else "offsets"
    meaning = (
        "the rows each expert uses" if masked else "the cumulative row ends of the experts, as torch._grouped_mm's offs"
    )
    x_dims, x_shape = (3, "[E, max_rows, K]") if masked else (2, "[rows, K]")
    _check_activation(op, activation)
    _check_input_dtype(op, "x", x)
    _check_same_dtype(op, "weight", weight, x, "x")
    if index.dtype not in (torch.int32, torch.int64):
        raise TypeError(f"anvil.{op}: {index_name} must be int32 or int64, got {_dtype_name(index.dtype)}")
    if x.dim() != x_dims:
        raise ValueError(f"anvil.{op}: x must be {x_dims}-D {x_shape}, got {x.dim()}-D with sizes {list(x.shape)}")
    if weight.dim() != 3:
        raise ValueError(f"anvil.{op}: weight must be 3-D [E, N, K], got {weight.dim()}-D with sizes {list(weight.shape)}")
    k = x.shape[-1]
    experts, n = weight.shape[0], weight.shape[1]
    if weight.shape[2] != k:
        raise ValueError(
            f"anvil.{op}: weight is {list(weight.shape)} but x has K = {k} (its last dimension); weight must be [E, N, {k}]"
        )
    if not 1 <= experts <= MAX_EXPERTS:
        raise ValueError(f"anvil.{op}: weight must hold between 1 and {MAX_EXPERTS} experts, got {experts}")
    if masked and x.shape[0] != experts:
        raise ValueError(f"anvil.{op}: x has {x.shape[0]} experts (its first dimension) but weight has {experts}")
    if index.dim() != 1 or index.shape[0] != experts:
        raise ValueError(
            f"anvil.{op}: {index_name} must be 1-D of length {experts} ({meaning}), got sizes {list(index.shape)}"
        )
    if k <= 0 or k % 8 != 0:
        raise ValueError(
            f"anvil.{op}: K must be a positive multiple of 8 (the grouped GEMM reads rows 16-byte aligned), got {k}"
        )
    if bias is not None:
        if bias.dtype not in (x.dtype, torch.float32):
            raise TypeError(
                f"anvil.{op}: bias must be {_dtype_name(x.dtype)} (x's dtype) or fp32, got {_dtype_name(bias.dtype)}"
            )
        if bias.dim() != 2 or list(bias.shape) != [experts, n]:
            raise ValueError(
                f"anvil.{op}: bias must be [E, N] = {[experts, n]} (one row per expert), got sizes {list(bias.shape)}"
            )
    if devices:
        tensors = [("x", x), ("weight", weight), (index_name, index)]
        tensors += [("bias", bias)] if bias is not None else []
        _check_devices(op, tensors)
    return list(x.shape[:-1]) + [n]


def _fp8_name(dtype):
    return {torch.float8_e4m3fn: "float8_e4m3fn", torch.float8_e5m2: "float8_e5m2"}.get(dtype, _dtype_name(dtype))


def _check_fp8_k(op, k):
    if k <= 0 or k % 16 != 0:
        raise ValueError(f"anvil.{op}: K must be a positive multiple of 16 (FP8 rows are read in 16-byte units), got {k}")


def _check_scale(op, name, s, mode, expected, meaning):
    if s.dtype != torch.float32:
        raise TypeError(f"anvil.{op}: {name} must be fp32, got {_dtype_name(s.dtype)}")
    if mode == "tensor":
        if s.numel() != 1 or s.dim() > 1:
            raise ValueError(
                f"anvil.{op}: {name} must hold one value for scales='tensor' (sizes [] or [1]), got sizes {list(s.shape)}"
            )
        return
    if list(s.shape) != expected:
        raise ValueError(
            f"anvil.{op}: {name} must be {expected} for scales='{mode}' ({meaning}), got sizes {list(s.shape)}"
        )


def _check_linear_fp8(x_q, weight_q, x_scale, weight_scale, scales, bias, activation, out_dtype, devices=False):
    op = "linear_fp8"
    if scales not in SCALE_MODES:
        raise ValueError(f"anvil.{op}: scales must be one of 'block', 'tensor', 'rowcol', got '{scales}'")
    _check_activation(op, activation)
    out_dtype = torch.bfloat16 if out_dtype is None else out_dtype
    for name, t in (("x_q", x_q), ("weight_q", weight_q)):
        if t.dtype not in FP8_DTYPES:
            raise TypeError(f"anvil.{op}: {name} must be float8_e4m3fn or float8_e5m2, got {_dtype_name(t.dtype)}")
    if x_q.dtype == torch.float8_e5m2 and weight_q.dtype == torch.float8_e5m2:
        raise TypeError(
            f"anvil.{op}: x_q and weight_q are both float8_e5m2; anvil multiplies e4m3 x e4m3, e4m3 x e5m2 and e5m2 x e4m3"
        )
    if scales == "block" and (x_q.dtype != torch.float8_e4m3fn or weight_q.dtype != torch.float8_e4m3fn):
        raise TypeError(
            f"anvil.{op}: scales='block' needs float8_e4m3fn x_q and weight_q, got {_fp8_name(x_q.dtype)} "
            f"and {_fp8_name(weight_q.dtype)}"
        )
    if out_dtype not in (torch.bfloat16, torch.float16, torch.float32):
        raise TypeError(f"anvil.{op}: out_dtype must be bf16, fp16 or fp32, got {_dtype_name(out_dtype)}")
    if x_q.dim() != 2:
        raise ValueError(f"anvil.{op}: x_q must be 2-D [M, K], got {x_q.dim()}-D with sizes {list(x_q.shape)}")
    if weight_q.dim() != 2:
        raise ValueError(
            f"anvil.{op}: weight_q must be 2-D [N, K], got {weight_q.dim()}-D with sizes {list(weight_q.shape)}"
        )
    m, k, n = x_q.shape[0], x_q.shape[1], weight_q.shape[0]
    if weight_q.shape[1] != k:
        raise ValueError(
            f"anvil.{op}: weight_q is {list(weight_q.shape)} but x_q has K = {k} (its last dimension); "
            f"weight_q must be [N, {k}]"
        )
    _check_fp8_k(op, k)
    kb = (k + 127) // 128
    if scales == "block":
        _check_scale(op, "x_scale", x_scale, scales, [kb, m],
                     "one per row of x_q and 128 columns, K-block-major, as anvil.quantize_fp8 writes")
        _check_scale(op, "weight_scale", weight_scale, scales, [(n + 127) // 128, kb], "one per 128 x 128 block of weight_q")
    else:
        _check_scale(op, "x_scale", x_scale, scales, [m], "one per row of x_q")
        _check_scale(op, "weight_scale", weight_scale, scales, [n], "one per row of weight_q")
    if bias is not None:
        if bias.dtype not in (out_dtype, torch.float32):
            raise TypeError(
                f"anvil.{op}: bias must be {_dtype_name(out_dtype)} (out_dtype) or fp32, got {_dtype_name(bias.dtype)}"
            )
        if bias.dim() != 1 or bias.shape[0] != n:
            raise ValueError(f"anvil.{op}: bias must be 1-D of length {n} (weight_q's rows), got sizes {list(bias.shape)}")
    if devices:
        tensors = [("x_q", x_q), ("weight_q", weight_q), ("x_scale", x_scale), ("weight_scale", weight_scale)]
        tensors += [("bias", bias)] if bias is not None else []
        _check_devices(op, tensors)
    return [m, n], out_dtype


def _check_quantize_fp8(x, block, dtype, devices=False):
    op = "quantize_fp8"
    if block is not None and block != 128:
        raise ValueError(
            f"anvil.{op}: block must be 128 (one scale per row and 128 columns) or None (one scale for the tensor), got {block}"
        )
    dtype = torch.float8_e4m3fn if dtype is None else dtype
    if dtype not in FP8_DTYPES:
        raise TypeError(f"anvil.{op}: dtype must be float8_e4m3fn or float8_e5m2, got {_dtype_name(dtype)}")
    _check_input_dtype(op, "x", x)
    if x.dim() != 2:
        raise ValueError(f"anvil.{op}: x must be 2-D [M, K], got {x.dim()}-D with sizes {list(x.shape)}")
    m, k = x.shape
    _check_fp8_k(op, k)
    if devices:
        _check_devices(op, [("x", x)])
    scale_shape = [(k + 127) // 128, m] if block is not None else [1]
    return [m, k], dtype, scale_shape


def _strides(t):
    return "(" + ", ".join(str(v) for v in t.stride()) + ")"


def _check_scaled_grouped_mm(mat_a, mat_b, scale_a, scale_b, offs, bias, scale_result, out_dtype, devices=False):
    op = "scaled_grouped_mm"
    for name, t in (("mat_a", mat_a), ("mat_b", mat_b)):
        if t.dtype != torch.float8_e4m3fn:
            raise TypeError(f"anvil.{op}: {name} must be float8_e4m3fn, got {_fp8_name(t.dtype)}")
    out_dtype = torch.bfloat16 if out_dtype is None else out_dtype
    if out_dtype not in (torch.bfloat16, torch.float16, torch.float32):
        raise TypeError(f"anvil.{op}: out_dtype must be bf16, fp16 or fp32, got {_dtype_name(out_dtype)}")
    if scale_result is not None:
        raise ValueError(f"anvil.{op}: scale_result is not supported (pass None, as torch._scaled_grouped_mm requires)")
    if mat_a.dim() not in (2, 3):
        raise ValueError(
            f"anvil.{op}: mat_a must be 2-D [rows, K] or 3-D [E, M, K], got {mat_a.dim()}-D with sizes {list(mat_a.shape)}"
        )
    if mat_b.dim() != 3:
        raise ValueError(
            f"anvil.{op}: mat_b must be 3-D [E, K, N] (the experts' [E, N, K] weights transposed), "
            f"got {mat_b.dim()}-D with sizes {list(mat_b.shape)}"
        )
    stacked = mat_a.dim() == 3
    experts, k, n = mat_b.shape
    if mat_a.shape[-1] != k:
        raise ValueError(
            f"anvil.{op}: mat_b is {list(mat_b.shape)} but mat_a has K = {mat_a.shape[-1]} (its last dimension); "
            f"mat_b must be [E, {mat_a.shape[-1]}, N]"
        )
    if not 1 <= experts <= MAX_EXPERTS:
        raise ValueError(f"anvil.{op}: mat_b must hold between 1 and {MAX_EXPERTS} experts, got {experts}")
    if stacked:
        if mat_a.shape[0] != experts:
            raise ValueError(
                f"anvil.{op}: mat_a has {mat_a.shape[0]} experts (its first dimension) but mat_b has {experts}"
            )
        if offs is not None:
            raise ValueError(
                f"anvil.{op}: offs must be None when mat_a is 3-D [E, M, K] (every expert uses its M rows)"
            )
    else:
        if offs is None:
            raise ValueError(
                f"anvil.{op}: offs is required when mat_a is 2-D "
                "(the cumulative row ends of the experts, as torch._scaled_grouped_mm's offs)"
            )
        if offs.dtype not in (torch.int32, torch.int64):
            raise TypeError(f"anvil.{op}: offs must be int32 or int64, got {_dtype_name(offs.dtype)}")
        if offs.dim() != 1 or offs.shape[0] != experts:
            raise ValueError(
                f"anvil.{op}: offs must be 1-D of length {experts} (the cumulative row ends of the experts), "
                f"got sizes {list(offs.shape)}"
            )
    _check_fp8_k(op, k)
    for name, t in (("scale_a", scale_a), ("scale_b", scale_b)):
        if t.dtype != torch.float32:
            raise TypeError(f"anvil.{op}: {name} must be fp32, got {_dtype_name(t.dtype)}")
    k_blocks, n_blocks = (k + 127) // 128, (n + 127) // 128
    if scale_b.dim() == 3:
        # DeepSeek-V3 block scales: W's per 128 x 128 block, A's per row and 128 columns, K-block-major.
        if list(scale_b.shape) != [experts, n_blocks, k_blocks]:
            raise ValueError(
                f"anvil.{op}: scale_b must be [E, ceil(N/128), ceil(K/128)] = {[experts, n_blocks, k_blocks]} for "
                f"block scales (one per expert and 128 x 128 block of its weight), got sizes {list(scale_b.shape)}"
            )
        storage_rows = experts * mat_a.shape[1] if stacked else mat_a.shape[0]
        if list(scale_a.shape) != [k_blocks, storage_rows]:
            raise ValueError(
                f"anvil.{op}: scale_a must be [ceil(K/128), rows] = {[k_blocks, storage_rows]} for block scales "
                f"(one per row of mat_a and 128 columns, K-block-major, as "
                f"anvil.quantize_fp8 writes), got sizes {list(scale_a.shape)}"
            )
    elif scale_b.dim() == 2:
        if list(scale_b.shape) != [experts, n]:
            raise ValueError(
                f"anvil.{op}: scale_b must be [E, N] = {[experts, n]} for row-wise scales "
                f"(one per expert and output column), got sizes {list(scale_b.shape)}"
            )
        a_rows = [experts, mat_a.shape[1]] if stacked else [mat_a.shape[0]]
        if list(scale_a.shape) != a_rows:
            raise ValueError(
                f"anvil.{op}: scale_a must be {a_rows} for row-wise scales (one per row of mat_a), "
                f"got sizes {list(scale_a.shape)}"
            )
    else:
        if not (scale_b.numel() == 1 or (scale_b.dim() == 1 and scale_b.shape[0] == experts)):
            raise ValueError(
                f"anvil.{op}: scale_b must be [E, N] (row-wise), [E, ceil(N/128), ceil(K/128)] (block), [E] (one per "
                f"expert) or [] / [1] (one for all), got sizes {list(scale_b.shape)}"
            )
        if scale_a.numel() != 1 or scale_a.dim() > 1:
            raise ValueError(
                f"anvil.{op}: scale_a must hold one value (sizes [] or [1]) when scale_b is per tensor or per expert, "
                f"got sizes {list(scale_a.shape)}"
            )
    if bias is not None:
        if bias.dtype not in (out_dtype, torch.float32):
            raise TypeError(
                f"anvil.{op}: bias must be {_dtype_name(out_dtype)} (out_dtype) or fp32, got {_dtype_name(bias.dtype)}"
            )
        if bias.dim() != 2 or list(bias.shape) != [experts, n]:
            raise ValueError(
                f"anvil.{op}: bias must be [E, N] = {[experts, n]} (one row per expert), got sizes {list(bias.shape)}"
            )
    if not mat_a.is_contiguous():
        raise ValueError(
            f"anvil.{op}: mat_a has strides {_strides(mat_a)}; it must be contiguous (row-major, K contiguous)"
        )
    if not mat_b.transpose(-2, -1).is_contiguous():
        raise ValueError(
            f"anvil.{op}: mat_b has strides {_strides(mat_b)}; it must be the transpose of a contiguous [E, N, K] "
            "weight (weight.transpose(-2, -1), K contiguous)"
        )
    if devices:
        tensors = [("mat_a", mat_a), ("mat_b", mat_b), ("scale_a", scale_a), ("scale_b", scale_b)]
        tensors += [("offs", offs)] if offs is not None else []
        tensors += [("bias", bias)] if bias is not None else []
        _check_devices(op, tensors)
    shape = [experts, mat_a.shape[1], n] if stacked else [mat_a.shape[0], n]
    return shape, out_dtype


@torch.library.register_fake("anvil::scaled_grouped_mm")
def _scaled_grouped_mm_fake(
    mat_a, mat_b, scale_a, scale_b, offs=None, bias=None, scale_result=None, out_dtype=None, use_fast_accum=False
):
    shape, dtype = _check_scaled_grouped_mm(
        mat_a, mat_b, scale_a, scale_b, offs, bias, scale_result, out_dtype, devices=True
    )
    return mat_a.new_empty(shape, dtype=dtype)


@torch.library.register_fake("anvil::grouped_mm")
def _grouped_mm_fake(x, weight, offsets, bias=None, activation="none"):
    return x.new_empty(_check_grouped("grouped_mm", x, weight, offsets, bias, activation, devices=True))


@torch.library.register_fake("anvil::grouped_mm_masked")
def _grouped_mm_masked_fake(x, weight, counts, bias=None, activation="none"):
    return x.new_empty(_check_grouped("grouped_mm_masked", x, weight, counts, bias, activation, devices=True))


@torch.library.register_fake("anvil::linear_fp8")
def _linear_fp8_fake(x_q, weight_q, x_scale, weight_scale, bias=None, *, scales="block", activation="none", out_dtype=None):
    shape, dtype = _check_linear_fp8(
        x_q, weight_q, x_scale, weight_scale, scales, bias, activation, out_dtype, devices=True
    )
    return x_q.new_empty(shape, dtype=dtype)


@torch.library.register_fake("anvil::quantize_fp8")
def _quantize_fp8_fake(x, block=128, dtype=None):
    shape, q_dtype, scale_shape = _check_quantize_fp8(x, block, dtype, devices=True)
    return x.new_empty(shape, dtype=q_dtype), x.new_empty(scale_shape, dtype=torch.float32)


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


# The grouped and FP8 ops are inference kernels with no backward. Their autograd kernel lets
# the forward run on inputs that require grad (a model's weights, in eval) and raises on a
# backward through them, rather than leave torch's fallback, which warns and returns no
# gradient for those inputs.
def _no_backward(op: str):
    def setup(ctx, inputs, output, keyword_only_inputs=None):
        pass

    def backward(ctx, *grads):
        raise NotImplementedError(
            f"anvil.{op} has no backward (an inference kernel): run it under torch.no_grad(), or detach its "
            "inputs, or use a differentiable op where gradients are needed"
        )

    torch.library.register_autograd(f"anvil::{op}", backward, setup_context=setup)


for _op in ("grouped_mm", "grouped_mm_masked", "linear_fp8", "quantize_fp8", "scaled_grouped_mm"):
    _no_backward(_op)
