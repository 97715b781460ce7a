"""Tests that need no GPU: op schemas, fake kernels (meta tensors, FakeTensorMode, symbolic
tracing), argument errors raised before any launch, the fused gate/up layout, autograd
plumbing on meta tensors, and anvil.patch on a model built on the meta device."""

import json
import re
from pathlib import Path

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx
from torch.utils._python_dispatch import TorchDispatchMode

anvil = pytest.importorskip("anvil")  # skips with the import error (not built, or built for another torch)

BF16, FP16 = torch.bfloat16, torch.float16


def meta(*shape, dtype=BF16):
    return torch.empty(shape, dtype=dtype, device="meta")


# ---- schemas -------------------------------------------------------------------------------


def test_schemas():
    schemas = {
        "linear": "anvil::linear(Tensor x, Tensor weight, Tensor? bias=None, str activation=\"none\", "
        "Tensor? residual=None, *, bool batch_invariant=False) -> Tensor",
        "linear_swiglu": "anvil::linear_swiglu(Tensor x, Tensor gate_up, Tensor? bias=None, *, "
        "bool batch_invariant=False) -> Tensor",
        "matmul": "anvil::matmul(Tensor a, Tensor b, *, bool batch_invariant=False) -> Tensor",
        "bmm": "anvil::bmm(Tensor a, Tensor b, *, bool batch_invariant=False) -> Tensor",
    }
    for name, expected in schemas.items():
        assert str(getattr(torch.ops.anvil, name).default._schema) == expected
    into = str(torch.ops.anvil.linear_into.default._schema)
    assert into.endswith("bool batch_invariant=False, Tensor(a!) out) -> ()"), into


def test_grouped_and_fp8_schemas():
    schemas = {
        "grouped_mm": "anvil::grouped_mm(Tensor x, Tensor weight, Tensor offsets, Tensor? bias=None, "
        "str activation=\"none\") -> Tensor",
        "grouped_mm_masked": "anvil::grouped_mm_masked(Tensor x, Tensor weight, Tensor counts, Tensor? bias=None, "
        "str activation=\"none\") -> Tensor",
        "linear_fp8": "anvil::linear_fp8(Tensor x_q, Tensor weight_q, Tensor x_scale, Tensor weight_scale, "
        "Tensor? bias=None, *, str scales=\"block\", str activation=\"none\", ScalarType? out_dtype=None) -> Tensor",
        "quantize_fp8": "anvil::quantize_fp8(Tensor x, int? block=128, ScalarType? dtype=None) -> (Tensor, Tensor)",
        "scaled_grouped_mm": "anvil::scaled_grouped_mm(Tensor mat_a, Tensor mat_b, Tensor scale_a, Tensor scale_b, "
        "Tensor? offs=None, Tensor? bias=None, Tensor? scale_result=None, ScalarType? out_dtype=None, "
        "bool use_fast_accum=False) -> Tensor",
    }
    for name, expected in schemas.items():
        assert str(getattr(torch.ops.anvil, name).default._schema) == expected


def test_scaled_grouped_mm_takes_torchs_arguments_in_torchs_order():
    # anvil.scaled_grouped_mm is a drop-in for torch._scaled_grouped_mm: the same arguments,
    # types and defaults in the same order (torch names its first two self and mat2).
    ours = torch.ops.anvil.scaled_grouped_mm.default._schema.arguments
    theirs = torch.ops.aten._scaled_grouped_mm.default._schema.arguments
    assert len(ours) == len(theirs)
    for a, b in zip(ours[2:], theirs[2:]):
        assert (a.name, str(a.type), a.default_value) == (b.name, str(b.type), b.default_value)
    assert [str(a.type) for a in ours[:2]] == [str(b.type) for b in theirs[:2]]
    import inspect
    params = list(inspect.signature(anvil.scaled_grouped_mm).parameters)
    assert params == ["mat_a", "mat_b"] + [a.name for a in theirs[2:]]


def test_version_mismatch_sentence():
    assert anvil._version_mismatch("2.11.0+cu130", "13.0", "2.11.0+cu130") is None
    msg = anvil._version_mismatch("2.11.0+cu130", "13.0", "2.10.0+cu128")
    assert "built for torch 2.11.0+cu130" in msg and "2.10.0+cu128 is installed" in msg
    assert "--no-build-isolation" in msg and msg.count(".") >= 1 and "\n" not in msg


def test_build_info_matches_this_torch():
    from anvil import _build_info

    assert _build_info.torch_version == torch.__version__
    assert _build_info.torch_cuda.split(".")[0] == _build_info.cuda_toolkit.split(".")[0]


# ---- fake kernels ----------------------------------------------------------------------------


@pytest.mark.parametrize("act", anvil.ACTIVATIONS)
def test_linear_fake_shapes(act):
    x, w, b = meta(2, 5, 64), meta(96, 64), meta(96, dtype=torch.float32)
    assert anvil.linear(x, w, b, act).shape == (2, 5, 96)
    assert anvil.linear(meta(64), w).shape == (96,)
    assert anvil.linear(x, w, None, act, residual=meta(2, 5, 96)).shape == (2, 5, 96)
    out = meta(2, 5, 96)
    assert anvil.linear(x, w, out=out) is out


def test_swiglu_and_matmul_fake_shapes():
    assert anvil.linear_swiglu(meta(3, 64), meta(256, 64)).shape == (3, 128)
    assert anvil.linear_swiglu(meta(2, 3, 64), meta(256, 64), meta(256)).shape == (2, 3, 128)
    assert anvil.matmul(meta(8, 16), meta(16, 4)).shape == (8, 4)
    assert anvil.matmul(meta(5, 8, 16), meta(16, 4)).shape == (5, 8, 4)
    assert anvil.matmul(meta(8, 16), meta(5, 16, 4)).shape == (5, 8, 4)
    assert anvil.matmul(meta(1, 8, 16), meta(5, 16, 4)).shape == (5, 8, 4)
    assert anvil.bmm(meta(5, 8, 16), meta(5, 16, 4)).shape == (5, 8, 4)


def test_fake_tensor_mode_on_cuda_device():
    # FakeTensorMode tensors may claim a CUDA device without one being present: the fake
    # kernels give shapes, and the device check accepts them.
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x = torch.empty(4, 64, dtype=BF16, device="cuda")
        w = torch.empty(32, 64, dtype=BF16, device="cuda")
        y = anvil.linear(x, w, activation="silu")
        assert y.shape == (4, 32) and y.dtype == BF16 and y.device.type == "cuda"
        assert anvil.bmm(torch.empty(2, 4, 64, dtype=FP16, device="cuda"), torch.empty(2, 64, 8, dtype=FP16, device="cuda")).shape == (2, 4, 8)
        with pytest.raises(ValueError, match=r"weight must be a CUDA tensor"):
            anvil.linear(x, torch.empty(32, 64, dtype=BF16, device="cpu"))


def test_symbolic_trace_has_one_node_per_op():
    def f(x, w, gu):
        h = anvil.linear(x, w, activation="gelu")
        return anvil.linear_swiglu(h, gu)

    gm = make_fx(f, tracing_mode="symbolic")(meta(7, 64), meta(64, 64), meta(128, 64))
    targets = [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]
    assert targets.count("anvil.linear.default") == 1 and targets.count("anvil.linear_swiglu.default") == 1


# ---- argument errors: the same type and words from the fake kernels (meta) and C++ (cpu) -----

ERRORS = [
    # (label, call, exception, pattern)
    ("x dtype", lambda d: anvil.linear(t(d, 4, 8, dtype=torch.float32), t(d, 16, 8)), TypeError, r"x must be bf16 or fp16, got fp32"),
    ("weight dtype", lambda d: anvil.linear(t(d, 4, 8), t(d, 16, 8, dtype=FP16)), TypeError, r"weight must have x's dtype \(bf16\), got fp16"),
    ("mismatched K", lambda d: anvil.linear(t(d, 4, 8), t(d, 16, 9)), ValueError, r"weight is \[16, 9\] but x has K = 8"),
    ("weight rank", lambda d: anvil.linear(t(d, 4, 8), t(d, 2, 16, 8)), ValueError, r"weight must be 2-D \[N, K\]"),
    ("bias length", lambda d: anvil.linear(t(d, 4, 8), t(d, 16, 8), t(d, 15)), ValueError, r"bias must be 1-D of length 16"),
    ("bias dtype", lambda d: anvil.linear(t(d, 4, 8), t(d, 16, 8), t(d, 16, dtype=FP16)), TypeError, r"bias must be bf16 \(x's dtype\) or fp32, got fp16"),
    ("activation", lambda d: anvil.linear(t(d, 4, 8), t(d, 16, 8), None, "tanh"), ValueError, r"activation must be one of .* got 'tanh'"),
    ("residual shape", lambda d: anvil.linear(t(d, 4, 8), t(d, 16, 8), residual=t(d, 4, 15)), ValueError, r"residual must have the output's shape \[4, 16\]"),
    ("residual dtype", lambda d: anvil.linear(t(d, 4, 8), t(d, 16, 8), residual=t(d, 4, 16, dtype=FP16)), TypeError, r"residual must have x's dtype"),
    ("out shape", lambda d: anvil.linear(t(d, 4, 8), t(d, 16, 8), out=t(d, 4, 17)), ValueError, r"out must have shape \[4, 16\]"),
    ("swiglu rows", lambda d: anvil.linear_swiglu(t(d, 4, 8), t(d, 192, 8)), ValueError, r"gate_up must have a multiple of 128 rows"),
    ("matmul rank", lambda d: anvil.matmul(t(d, 2, 2, 4, 8), t(d, 8, 4)), ValueError, r"a must be 2-D or 3-D"),
    ("matmul K", lambda d: anvil.matmul(t(d, 4, 8), t(d, 9, 4)), ValueError, r"b's rows must equal a's columns \(K = 8\)"),
    ("matmul batch", lambda d: anvil.matmul(t(d, 2, 4, 8), t(d, 3, 8, 4)), ValueError, r"batches must be equal or one of them 1"),
    ("bmm rank", lambda d: anvil.bmm(t(d, 4, 8), t(d, 8, 4)), ValueError, r"a must be 3-D"),
    ("bmm batch", lambda d: anvil.bmm(t(d, 2, 4, 8), t(d, 1, 8, 4)), ValueError, r"bmm needs equal batches"),
    ("matmul dtype", lambda d: anvil.matmul(t(d, 4, 8, dtype=torch.float64), t(d, 8, 4, dtype=torch.float64)), TypeError, r"a must be bf16 or fp16, got float64"),
]


def t(device, *shape, dtype=BF16):
    if device == "meta":
        return torch.empty(shape, dtype=dtype, device="meta")
    return torch.randn(shape, dtype=torch.float32).to(dtype)


@pytest.mark.parametrize("device", ["meta", "cpu"])
@pytest.mark.parametrize("label,call,exc,pattern", ERRORS, ids=[e[0] for e in ERRORS])
def test_argument_errors(device, label, call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call(device)


def test_direct_op_calls_are_checked_in_cpp():
    # torch.ops.anvil.* bypass the Python wrappers' checks: the C++ op refuses the same input
    # with the same words.
    x, w = torch.randn(4, 8).to(BF16), torch.randn(16, 9).to(BF16)
    with pytest.raises(ValueError, match=r"anvil\.linear: weight is \[16, 9\] but x has K = 8"):
        torch.ops.anvil.linear(x, w, None, "none", None, batch_invariant=False)
    with pytest.raises(ValueError, match=r"b's rows must equal a's columns \(K = 8\)"):
        torch.ops.anvil.matmul(x, torch.randn(9, 4).to(BF16), batch_invariant=False)


def test_cpu_tensors_are_refused_by_name():
    x, w = torch.randn(4, 8).to(BF16), torch.randn(16, 8).to(BF16)
    with pytest.raises(ValueError, match=r"anvil\.linear: x must be a CUDA tensor, got a tensor on cpu"):
        anvil.linear(x, w)
    with pytest.raises(ValueError, match=r"anvil\.matmul: a must be a CUDA tensor"):
        anvil.matmul(x, w.t())
    with pytest.raises(ValueError, match=r"anvil\.linear_swiglu: x must be a CUDA tensor"):
        anvil.linear_swiglu(x, torch.randn(128, 8).to(BF16))


def test_mixed_devices_are_refused():
    with pytest.raises(ValueError, match=r"weight is on meta but x is on cpu|x must be a CUDA tensor"):
        anvil.linear(torch.randn(4, 8).to(BF16), meta(16, 8))


def test_unsupported_strides_are_refused_before_launch():
    a = torch.randn(8, 32).to(BF16)[:, ::2]  # neither stride is 1
    with pytest.raises(ValueError, match=r"anvil\.matmul: a has strides \(32, 2\).*unit stride"):
        anvil.matmul(a, torch.randn(16, 4).to(BF16))
    x = torch.randn(4, 6, 16).to(BF16).transpose(0, 1)  # leading dims do not fold into one stride
    with pytest.raises(ValueError, match=r"anvil\.linear: x has strides .*fold into one row stride"):
        anvil.linear(x, torch.randn(8, 16).to(BF16))
    w = torch.randn(8, 32).to(BF16)[:, ::2]
    with pytest.raises(ValueError, match=r"anvil\.linear: weight has strides \(32, 2\)"):
        anvil.linear(torch.randn(4, 16).to(BF16), w)
    out = torch.empty(16, 4).to(BF16).t()
    with pytest.raises(ValueError, match=r"anvil\.linear: out must be contiguous"):
        anvil.linear(torch.randn(4, 8).to(BF16), torch.randn(16, 8).to(BF16), out=out.t().t())


def test_expressible_strides_reach_the_device_check():
    # Transposed, sliced (ld > cols) and broadcast operands are all expressible: the only
    # complaint on CPU is the device.
    base = torch.randn(16, 40).to(BF16)
    for a, b in [
        (base[:, :8], torch.randn(4, 8).to(BF16).t()),
        (torch.randn(8, 16).to(BF16).t(), base[:8, :4]),
        (torch.randn(3, 16, 8).to(BF16).transpose(1, 2), torch.randn(1, 16, 4).to(BF16).expand(3, 16, 4)),
    ]:
        with pytest.raises(ValueError, match=r"must be a CUDA tensor"):
            anvil.matmul(a, b)


# ---- fused gate/up layout ---------------------------------------------------------------------


def test_fuse_gate_up_layout_and_round_trip():
    f, k = 192, 8
    gate = torch.arange(f * k, dtype=torch.float32).reshape(f, k)
    up = -gate - 1
    fused = anvil.fuse_gate_up(gate, up)
    assert fused.shape == (2 * f, k)
    for i in range(f // 64):
        assert torch.equal(fused[128 * i : 128 * i + 64], gate[64 * i : 64 * i + 64])
        assert torch.equal(fused[128 * i + 64 : 128 * i + 128], up[64 * i : 64 * i + 64])
    g2, u2 = anvil.unfuse_gate_up(fused)
    assert torch.equal(g2, gate) and torch.equal(u2, up)
    gb, ub = anvil.unfuse_gate_up(anvil.fuse_gate_up(gate[:, 0], up[:, 0]))
    assert torch.equal(gb, gate[:, 0]) and torch.equal(ub, up[:, 0])


def test_fuse_gate_up_errors():
    with pytest.raises(ValueError, match=r"F \(gate's rows\) must be a positive multiple of 64, got 100"):
        anvil.fuse_gate_up(torch.zeros(100, 8), torch.zeros(100, 8))
    with pytest.raises(ValueError, match=r"of one shape"):
        anvil.fuse_gate_up(torch.zeros(64, 8), torch.zeros(64, 9))
    with pytest.raises(TypeError, match=r"up must have gate's dtype"):
        anvil.fuse_gate_up(torch.zeros(64, 8), torch.zeros(64, 8, dtype=BF16))
    with pytest.raises(ValueError, match=r"multiple of 128"):
        anvil.unfuse_gate_up(torch.zeros(192, 8))


# ---- batch invariance switch ----------------------------------------------------------------------


class RecordOps(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.calls.append((str(func), dict(kwargs or {})))
        return func(*args, **(kwargs or {}))


def test_batch_invariant_switch_reaches_the_op():
    x, w = meta(4, 64), meta(32, 64)
    with RecordOps() as rec:
        anvil.linear(x, w)
        with anvil.batch_invariant():
            assert anvil.is_batch_invariant()
            anvil.linear(x, w)
            anvil.matmul(x, w.t(), batch_invariant=False)  # the argument wins over the context
        anvil.linear_swiglu(x, meta(128, 64), batch_invariant=True)
    assert not anvil.is_batch_invariant()
    # The dispatcher drops keyword arguments equal to their default (False).
    flags = [(name, kw.get("batch_invariant", False)) for name, kw in rec.calls if name.startswith("anvil.")]
    assert flags == [
        ("anvil.linear.default", False),
        ("anvil.linear.default", True),
        ("anvil.matmul.default", False),
        ("anvil.linear_swiglu.default", True),
    ]


# ---- autograd plumbing on meta tensors ----------------------------------------------------------


@pytest.mark.parametrize("act", anvil.ACTIVATIONS)
def test_linear_backward_shapes(act):
    x = meta(2, 3, 64).requires_grad_()
    w = meta(32, 64).requires_grad_()
    b = meta(32, dtype=torch.float32).requires_grad_()
    r = meta(2, 3, 32).requires_grad_()
    anvil.linear(x, w, b, act, r).sum().backward()
    assert x.grad.shape == x.shape and w.grad.shape == w.shape and b.grad.shape == b.shape
    assert b.grad.dtype == torch.float32 and r.grad.shape == r.shape


def test_swiglu_and_matmul_backward_shapes():
    x, gu, b = meta(5, 64).requires_grad_(), meta(256, 64).requires_grad_(), meta(256).requires_grad_()
    anvil.linear_swiglu(x, gu, b).sum().backward()
    assert x.grad.shape == x.shape and gu.grad.shape == gu.shape and b.grad.shape == b.shape
    a, m = meta(8, 16).requires_grad_(), meta(3, 16, 4).requires_grad_()
    anvil.matmul(a, m).sum().backward()
    assert a.grad.shape == (8, 16) and m.grad.shape == (3, 16, 4)


# ---- patch -----------------------------------------------------------------------------------------


class LlamaMLP(torch.nn.Module):  # the shape of transformers' LlamaMLP
    def __init__(self, hidden, inter, bias=False):
        super().__init__()
        self.gate_proj = torch.nn.Linear(hidden, inter, bias=bias)
        self.up_proj = torch.nn.Linear(hidden, inter, bias=bias)
        self.down_proj = torch.nn.Linear(inter, hidden, bias=bias)
        self.act_fn = torch.nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class GeluMLP(LlamaMLP):
    def __init__(self, hidden, inter):
        super().__init__(hidden, inter)
        self.act_fn = torch.nn.GELU()


class Toy(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.q = torch.nn.Linear(64, 64)
        self.mlp = LlamaMLP(64, 192)
        self.odd = LlamaMLP(64, 100)  # intermediate not a multiple of 64: linears swapped, not fused
        self.gelu = GeluMLP(64, 128)
        self.head = torch.nn.Linear(64, 10, bias=False).float()

    def forward(self, x):
        x = self.q(x)
        x = x + self.mlp(x) + self.odd(x) + self.gelu(x)
        return self.head(x.float())


def test_patch_report_on_meta_model():
    with torch.device("meta"):
        model = Toy()
        model.to(BF16)
        model.head.float()
    state = {k: v.shape for k, v in model.state_dict().items()}
    report = anvil.patch(model)
    swapped = dict(report.swapped)
    left = dict(report.left_alone)
    assert report.fused == ["mlp"] and isinstance(model.mlp, anvil.nn.SwiGLUMLP)
    assert "odd" in left and "intermediate size 100" in left["odd"]
    assert "gelu" in left and "not SiLU" in left["gelu"]
    assert "head" in left and "float32" in left["head"]
    for name in ("q", "odd.gate_proj", "odd.up_proj", "odd.down_proj", "gelu.gate_proj"):
        assert name in swapped and isinstance(model.get_submodule(name), anvil.nn.Linear)
    assert "mlp.gate_proj" not in swapped
    # The patched model keeps the unfused state_dict keys and shapes.
    assert {k: v.shape for k, v in model.state_dict().items()} == state
    assert "left" in str(report) and "swapped" in str(report)
    y = model(meta(2, 3, 64))
    assert y.shape == (2, 3, 10)


def test_patched_state_dict_round_trip_on_cpu():
    # Weights only (no forward on CPU): fuse on patch, unfuse on save, fuse on load.
    torch.manual_seed(0)
    mlp = LlamaMLP(64, 128, bias=True).to(BF16)
    wrap = torch.nn.Sequential()
    wrap.add_module("mlp", mlp)
    original = {k: v.clone() for k, v in wrap.state_dict().items()}
    fused = anvil.nn.SwiGLUMLP.from_projections(mlp.gate_proj, mlp.up_proj, mlp.down_proj)
    wrap.mlp = fused
    saved = wrap.state_dict()
    assert saved.keys() == original.keys()
    for k in original:
        assert torch.equal(saved[k], original[k]), k
    with torch.no_grad():
        fused.gate_up.zero_()
        fused.gate_up_bias.zero_()
    wrap.load_state_dict(original)
    assert torch.equal(fused.gate_up, anvil.fuse_gate_up(original["mlp.gate_proj.weight"], original["mlp.up_proj.weight"]))
    assert torch.equal(fused.gate_up_bias, anvil.fuse_gate_up(original["mlp.gate_proj.bias"], original["mlp.up_proj.bias"]))


def test_nn_linear_loads_torch_state_dict():
    ref = torch.nn.Linear(32, 16).to(BF16)
    lin = anvil.nn.Linear(32, 16, dtype=BF16)
    lin.load_state_dict(ref.state_dict())
    assert torch.equal(lin.weight, ref.weight) and torch.equal(lin.bias, ref.bias)
    assert lin.state_dict().keys() == ref.state_dict().keys()
    with pytest.raises(ValueError, match="activation must be one of"):
        anvil.nn.Linear(4, 4, activation="tanh")


def test_patch_leaves_cpu_model_alone():
    model = torch.nn.Sequential(torch.nn.Linear(8, 8).to(BF16))
    report = anvil.patch(model)
    assert report.swapped == [] and report.left_alone == [("0", "on cpu (anvil runs on CUDA GPUs)")]


def test_patch_transformers_llama_on_meta():
    transformers = pytest.importorskip("transformers")
    cfg = transformers.LlamaConfig(
        vocab_size=256, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2,
    )
    with torch.device("meta"):
        model = transformers.LlamaForCausalLM(cfg).to(BF16)
    report = anvil.patch(model)
    assert report.fused == ["model.layers.0.mlp", "model.layers.1.mlp"]
    names = dict(report.swapped)
    assert all(f"model.layers.{i}.self_attn.{p}" in names for i in range(2) for p in ("q_proj", "k_proj", "v_proj", "o_proj"))
    assert "lm_head" in names and not report.left_alone


def test_dispatch_name_answers_without_a_gpu():
    # The dispatcher's choice needs no GPU (it assumes an H200's SM count without one);
    # production problems go to a Hopper kernel, whichever the planner picks.
    for m, bi in ((1, False), (2048, False), (64, True)):
        assert anvil.dispatch_name(m, 4096, 4096, batch_invariant=bi).startswith("sm90-"), (m, bi)
    assert anvil.dispatch_name(8, 4096, 4096, torch.float16).startswith("sm90-")


def test_every_public_name_is_documented():
    # docs/python.md's API table names everything `from anvil import *` gives.
    doc = (Path(__file__).resolve().parents[2] / "docs" / "python.md").read_text()
    missing = [n for n in anvil.__all__ if f"anvil.{n}" not in doc and f"`{n}`" not in doc]
    assert not missing, f"docs/python.md does not mention {missing}"


def test_tuning_caches_load_or_are_refused_with_the_reason(tmp_path):
    # anvil-tune's format (tests/data holds a one-entry H100 cache); the file is checked as
    # it loads, without a GPU. Its plans apply only on the GPU it was made on.
    example = Path(__file__).resolve().parents[2] / "tests" / "data" / "tuning-cache-example.json"
    assert anvil.load_tuning_cache(example) is None
    anvil.clear_tuning_cache()
    missing = tmp_path / "missing.json"
    with pytest.raises(ValueError, match=r"anvil\.load_tuning_cache: .*missing\.json"):
        anvil.load_tuning_cache(missing)
    not_a_cache = tmp_path / "not-a-cache.json"
    not_a_cache.write_text('{"format": "something else"}')
    with pytest.raises(ValueError, match=r"anvil\.load_tuning_cache: "):
        anvil.load_tuning_cache(str(not_a_cache))
    broken = tmp_path / "broken.json"
    broken.write_text(example.read_text().replace('"narrow"', '"no-such-variant"'))
    with pytest.raises(ValueError, match="no-such-variant"):
        anvil.load_tuning_cache(broken)
    anvil.clear_tuning_cache()


def test_tuning_shapes_list_the_tunable_linear_layers():
    # One entry per problem (weight shape and epilogue) and token count, named after the first
    # layer of the kind; a weight anvil does not compute is listed apart.
    with torch.device("meta"):
        model = torch.nn.Sequential(
            torch.nn.Linear(64, 128, bias=False, dtype=BF16),
            torch.nn.Linear(128, 64, bias=False, dtype=BF16),
            torch.nn.Linear(64, 128, bias=False, dtype=BF16),
            torch.nn.Linear(64, 32, dtype=BF16),
            torch.nn.Linear(64, 16, bias=False),
            anvil.nn.Linear(64, 128, bias=False, dtype=BF16, activation="gelu_tanh"),
        )
    shapes = anvil.tuning_shapes(model, tokens=(16, 1, 16))
    assert shapes["shapes"] == [
        {"name": "0-m1", "M": 1, "N": 128, "K": 64},
        {"name": "0-m16", "M": 16, "N": 128, "K": 64},
        {"name": "1-m1", "M": 1, "N": 64, "K": 128},
        {"name": "1-m16", "M": 16, "N": 64, "K": 128},
        {"name": "3-m1", "M": 1, "N": 32, "K": 64, "bias": True},
        {"name": "3-m16", "M": 16, "N": 32, "K": 64, "bias": True},
        {"name": "5-m1", "M": 1, "N": 128, "K": 64, "activation": "gelu-tanh"},
        {"name": "5-m16", "M": 16, "N": 128, "K": 64, "activation": "gelu-tanh"},
    ]
    assert shapes["skipped"] == [["4", "weight dtype float32 (anvil computes bf16 and fp16)"]]
    with pytest.raises(ValueError, match="token counts must be positive"):
        anvil.tuning_shapes(model, tokens=(0, 8))


def test_tuning_shapes_of_a_patched_model_and_the_command_line(tmp_path):
    # A Llama config in a folder, as `python -m anvil shapes FOLDER` reads it: built on the
    # meta device, patched (gate and up fused into one SwiGLU GEMM of 2F rows), listed.
    transformers = pytest.importorskip("transformers")
    from anvil import shapes as shapes_cli

    cfg = transformers.LlamaConfig(vocab_size=256, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2)
    cfg.save_pretrained(tmp_path)
    out = tmp_path / "shapes.json"
    assert shapes_cli.main([str(tmp_path), "--tokens", "1,8", "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    problems = {(s["N"], s["K"], s.get("activation", "identity")) for s in doc["shapes"]}
    # q_proj and o_proj (128 x 128), k/v_proj (64 x 128: two KV heads of 32), down_proj
    # (128 x 256), lm_head (256 x 128), and the fused gate/up GEMM (2 x 256 rows, SwiGLU).
    assert problems == {(128, 128, "identity"), (64, 128, "identity"), (128, 256, "identity"),
                        (256, 128, "identity"), (512, 128, "swiglu")}, problems
    assert {s["M"] for s in doc["shapes"]} == {1, 8}
    assert doc["skipped"] == []


# ---- grouped GEMM and FP8: fake kernels ---------------------------------------------------------

E4M3, E5M2, I32, I64, F32 = torch.float8_e4m3fn, torch.float8_e5m2, torch.int32, torch.int64, torch.float32


@pytest.mark.parametrize("act", anvil.ACTIVATIONS)
@pytest.mark.parametrize("dtype", [BF16, FP16])
def test_grouped_fake_shapes(act, dtype):
    x, w = meta(37, 64, dtype=dtype), meta(4, 96, 64, dtype=dtype)
    for index_dtype in (I32, I64):
        y = anvil.grouped_mm(x, w, meta(4, dtype=index_dtype), meta(4, 96, dtype=F32), act)
        assert y.shape == (37, 96) and y.dtype == dtype
        y = anvil.grouped_mm_masked(meta(4, 8, 64, dtype=dtype), w, meta(4, dtype=index_dtype), None, act)
        assert y.shape == (4, 8, 96) and y.dtype == dtype
    # No rows at all is a valid problem.
    assert anvil.grouped_mm(meta(0, 64, dtype=dtype), w, meta(4, dtype=I32)).shape == (0, 96)


@pytest.mark.parametrize("out_dtype", [BF16, FP16, F32])
def test_linear_fp8_fake_shapes(out_dtype):
    m, n, k = 5, 200, 272  # K off the 128 grid: 3 K blocks; N: 2 blocks of 128
    xq, wq = meta(m, k, dtype=E4M3), meta(n, k, dtype=E4M3)
    cases = [
        ("block", meta(3, m, dtype=F32), meta(2, 3, dtype=F32)),
        ("tensor", meta(1, dtype=F32), meta(dtype=F32)),
        ("rowcol", meta(m, dtype=F32), meta(n, dtype=F32)),
    ]
    for scales, sx, sw in cases:
        y = anvil.linear_fp8(xq, wq, sx, sw, scales=scales, bias=meta(n, dtype=F32), activation="gelu", out_dtype=out_dtype)
        assert y.shape == (m, n) and y.dtype == out_dtype, scales
    # Mixed e5m2 / e4m3 pairs with tensor or row/column scales.
    assert anvil.linear_fp8(meta(m, k, dtype=E5M2), wq, meta(m, dtype=F32), meta(n, dtype=F32), scales="rowcol").dtype == BF16
    assert anvil.linear_fp8(xq, meta(n, k, dtype=E5M2), meta(1, dtype=F32), meta(1, dtype=F32), scales="tensor").shape == (m, n)


@pytest.mark.parametrize("out_dtype", [None, BF16, FP16, F32])
def test_scaled_grouped_mm_fake_shapes(out_dtype):
    rows, e, n, k = 37, 4, 96, 272
    a, b = meta(rows, k, dtype=E4M3), meta(e, n, k, dtype=E4M3).transpose(-2, -1)
    expected = BF16 if out_dtype is None else out_dtype
    for offs_dtype in (I32, I64):
        offs = meta(e, dtype=offs_dtype)
        y = anvil.scaled_grouped_mm(a, b, meta(rows, dtype=F32), meta(e, n, dtype=F32), offs, out_dtype=out_dtype)
        assert y.shape == (rows, n) and y.dtype == expected
    # Per tensor: scale_b one value or one per expert; a bias per expert.
    for sb in (meta(dtype=F32), meta(1, dtype=F32), meta(e, dtype=F32)):
        y = anvil.scaled_grouped_mm(a, b, meta(1, dtype=F32), sb, meta(e, dtype=I32), meta(e, n, dtype=F32),
                                    out_dtype=out_dtype, use_fast_accum=True)
        assert y.shape == (rows, n) and y.dtype == expected
    # 3-D x 3-D: every expert its M rows, row-wise scales [E, M].
    y = torch.ops.anvil.scaled_grouped_mm(meta(e, 5, k, dtype=E4M3), b, meta(e, 5, dtype=F32), meta(e, n, dtype=F32),
                                          out_dtype=out_dtype)
    assert y.shape == (e, 5, n) and y.dtype == expected
    # DeepSeek-V3 block scales: scale_a [ceil(K/128), rows], scale_b [E, ceil(N/128), ceil(K/128)].
    y = anvil.scaled_grouped_mm(a, b, meta(3, rows, dtype=F32), meta(e, 1, 3, dtype=F32), meta(e, dtype=I32),
                                out_dtype=out_dtype)
    assert y.shape == (rows, n) and y.dtype == expected
    # No rows at all is a valid problem.
    assert anvil.scaled_grouped_mm(meta(0, k, dtype=E4M3), b, meta(0, dtype=F32), meta(e, n, dtype=F32),
                                   meta(e, dtype=I32)).shape == (0, n)


def test_quantize_fp8_fake_shapes_feed_linear_fp8():
    x = meta(6, 272)
    q, s = anvil.quantize_fp8(x)
    assert q.shape == (6, 272) and q.dtype == E4M3 and s.shape == (3, 6) and s.dtype == F32
    q2, s2 = anvil.quantize_fp8(x, block=None, dtype=E5M2)
    assert q2.dtype == E5M2 and s2.shape == (1,) and s2.dtype == F32
    wq, ws = meta(128, 272, dtype=E4M3), meta(1, 3, dtype=F32)
    assert anvil.linear_fp8(q, wq, s, ws).shape == (6, 128)
    assert anvil.linear_fp8(q2, wq, s2, meta(1, dtype=F32), scales="tensor").shape == (6, 128)


def test_grouped_and_fp8_in_fake_tensor_mode_on_cuda():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x = torch.empty(10, 64, dtype=BF16, device="cuda")
        w = torch.empty(3, 32, 64, dtype=BF16, device="cuda")
        y = anvil.grouped_mm(x, w, torch.empty(3, dtype=I32, device="cuda"), activation="silu")
        assert y.shape == (10, 32) and y.device.type == "cuda"
        q, s = anvil.quantize_fp8(x)
        assert q.device.type == "cuda" and s.shape == (1, 10)
        with pytest.raises(ValueError, match=r"anvil\.grouped_mm: offsets must be a CUDA tensor"):
            anvil.grouped_mm(x, w, torch.empty(3, dtype=I32, device="cpu"))


def test_grouped_symbolic_trace_has_one_node():
    def f(x, w, offs):
        return anvil.grouped_mm(x, w, offs, activation="gelu")

    gm = make_fx(f, tracing_mode="symbolic")(meta(7, 64), meta(2, 32, 64), meta(2, dtype=I32))
    targets = [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]
    assert targets.count("anvil.grouped_mm.default") == 1, targets


def test_new_ops_have_no_backward():
    # The forward runs on inputs that require grad; a backward through it raises by name
    # (rather than torch's fallback, which warns and leaves those inputs without a gradient).
    x = meta(6, 16).requires_grad_()
    y = anvil.grouped_mm(x, meta(2, 8, 16), meta(2, dtype=I32))
    with pytest.raises(NotImplementedError, match=r"anvil\.grouped_mm has no backward"):
        y.sum().backward()
    w = meta(2, 8, 16).requires_grad_()
    y = anvil.grouped_mm_masked(meta(2, 3, 16), w, meta(2, dtype=I32))
    with pytest.raises(NotImplementedError, match=r"anvil\.grouped_mm_masked has no backward"):
        y.sum().backward()
    with torch.no_grad():
        assert not anvil.grouped_mm(x, meta(2, 8, 16), meta(2, dtype=I32)).requires_grad
    s = meta(1, dtype=F32).requires_grad_()
    y = anvil.linear_fp8(meta(4, 16, dtype=E4M3), meta(8, 16, dtype=E4M3), s, meta(1, dtype=F32), scales="tensor")
    with pytest.raises(NotImplementedError, match=r"anvil\.linear_fp8 has no backward"):
        y.float().sum().backward()
    y = anvil.scaled_grouped_mm(meta(4, 16, dtype=E4M3), meta(2, 8, 16, dtype=E4M3).transpose(-2, -1), s,
                                meta(1, dtype=F32), meta(2, dtype=I32))
    with pytest.raises(NotImplementedError, match=r"anvil\.scaled_grouped_mm has no backward"):
        y.float().sum().backward()


# ---- grouped GEMM and FP8: argument errors ---------------------------------------------------------
# Each row runs four ways: the Python wrapper on meta and on CPU tensors, and the op itself
# (torch.ops.anvil.*) on meta tensors (the fake kernel) and on CPU tensors (the C++ checks).
# CPU tensors pass every check but the device, so the C++ op reaches each message.


def g_args(d, rows=6, k=16, experts=2, n=8, x=None, w=None, offs=None, bias=None, act="none"):
    x = t(d, rows, k) if x is None else x
    w = t(d, experts, n, k) if w is None else w
    offs = t(d, experts, dtype=I32) if offs is None else offs
    return (x, w, offs, bias, act), {}


def m_args(d, x=None, w=None, counts=None, bias=None, act="none"):
    x = t(d, 2, 5, 16) if x is None else x
    w = t(d, 2, 8, 16) if w is None else w
    counts = t(d, 2, dtype=I64) if counts is None else counts
    return (x, w, counts, bias, act), {}


def f_args(d, xq=None, wq=None, sx=None, sw=None, scales="block", **kw):
    xq = t(d, 4, 32, dtype=E4M3) if xq is None else xq
    wq = t(d, 8, 32, dtype=E4M3) if wq is None else wq
    sx = t(d, 1, 4, dtype=F32) if sx is None else sx
    sw = t(d, 1, 1, dtype=F32) if sw is None else sw
    return (xq, wq, sx, sw), dict(scales=scales, **kw)


def q_args(d, x=None, **kw):
    return (t(d, 4, 32) if x is None else x,), kw


_DEFAULT = object()


def sg_args(d, rows=6, k=32, experts=2, n=8, a=None, b=None, sa=None, sb=None, offs=_DEFAULT, bias=None, **kw):
    # torch._scaled_grouped_mm's 2-D x 3-D case with row-wise scales unless stated.
    a = t(d, rows, k, dtype=E4M3) if a is None else a
    b = t(d, experts, n, k, dtype=E4M3).transpose(-2, -1) if b is None else b
    sa = t(d, rows, dtype=F32) if sa is None else sa
    sb = t(d, experts, n, dtype=F32) if sb is None else sb
    offs = t(d, experts, dtype=I32) if offs is _DEFAULT else offs
    return (a, b, sa, sb, offs, bias), kw


NEW_ERRORS = [
    # (label, op, args(device), exception, pattern)
    ("grouped x dtype", "grouped_mm", lambda d: g_args(d, x=t(d, 6, 16, dtype=F32)), TypeError, r"anvil\.grouped_mm: x must be bf16 or fp16, got fp32"),
    ("grouped weight dtype", "grouped_mm", lambda d: g_args(d, w=t(d, 2, 8, 16, dtype=FP16)), TypeError, r"weight must have x's dtype \(bf16\), got fp16"),
    ("grouped offsets dtype", "grouped_mm", lambda d: g_args(d, offs=t(d, 2, dtype=F32)), TypeError, r"anvil\.grouped_mm: offsets must be int32 or int64, got fp32"),
    ("grouped x rank", "grouped_mm", lambda d: g_args(d, x=t(d, 2, 3, 16)), ValueError, r"x must be 2-D \[rows, K\], got 3-D with sizes \[2, 3, 16\]"),
    ("grouped weight rank", "grouped_mm", lambda d: g_args(d, w=t(d, 8, 16)), ValueError, r"weight must be 3-D \[E, N, K\], got 2-D"),
    ("grouped mismatched K", "grouped_mm", lambda d: g_args(d, w=t(d, 2, 8, 24)), ValueError, r"weight is \[2, 8, 24\] but x has K = 16 \(its last dimension\); weight must be \[E, N, 16\]"),
    ("grouped no experts", "grouped_mm", lambda d: g_args(d, w=t(d, 0, 8, 16), offs=t(d, 0, dtype=I32)), ValueError, r"weight must hold between 1 and 65536 experts, got 0"),
    ("grouped offsets length", "grouped_mm", lambda d: g_args(d, offs=t(d, 3, dtype=I32)), ValueError, r"offsets must be 1-D of length 2 \(the cumulative row ends of the experts, as torch\._grouped_mm's offs\), got sizes \[3\]"),
    ("grouped K multiple of 8", "grouped_mm", lambda d: g_args(d, k=12), ValueError, r"K must be a positive multiple of 8 .*got 12"),
    ("grouped bias dtype", "grouped_mm", lambda d: g_args(d, bias=t(d, 2, 8, dtype=FP16)), TypeError, r"bias must be bf16 \(x's dtype\) or fp32, got fp16"),
    ("grouped bias shape", "grouped_mm", lambda d: g_args(d, bias=t(d, 8, dtype=F32)), ValueError, r"bias must be \[E, N\] = \[2, 8\] \(one row per expert\), got sizes \[8\]"),
    ("grouped activation", "grouped_mm", lambda d: g_args(d, act="swiglu"), ValueError, r"anvil\.grouped_mm: activation must be one of .* got 'swiglu'"),
    ("masked x rank", "grouped_mm_masked", lambda d: m_args(d, x=t(d, 5, 16)), ValueError, r"anvil\.grouped_mm_masked: x must be 3-D \[E, max_rows, K\]"),
    ("masked experts", "grouped_mm_masked", lambda d: m_args(d, x=t(d, 3, 5, 16)), ValueError, r"x has 3 experts \(its first dimension\) but weight has 2"),
    ("masked counts dtype", "grouped_mm_masked", lambda d: m_args(d, counts=t(d, 2, dtype=FP16)), TypeError, r"counts must be int32 or int64, got fp16"),
    ("masked counts length", "grouped_mm_masked", lambda d: m_args(d, counts=t(d, 2, 1, dtype=I32)), ValueError, r"counts must be 1-D of length 2 \(the rows each expert uses\), got sizes \[2, 1\]"),
    ("fp8 scales mode", "linear_fp8", lambda d: f_args(d, scales="channel"), ValueError, r"anvil\.linear_fp8: scales must be one of 'block', 'tensor', 'rowcol', got 'channel'"),
    ("fp8 activation", "linear_fp8", lambda d: f_args(d, activation="tanh"), ValueError, r"anvil\.linear_fp8: activation must be one of .* got 'tanh'"),
    ("fp8 x dtype", "linear_fp8", lambda d: f_args(d, xq=t(d, 4, 32)), TypeError, r"x_q must be float8_e4m3fn or float8_e5m2, got bf16"),
    ("fp8 weight dtype", "linear_fp8", lambda d: f_args(d, wq=t(d, 8, 32, dtype=torch.int8)), TypeError, r"weight_q must be float8_e4m3fn or float8_e5m2, got int8"),
    ("fp8 e5m2 pair", "linear_fp8", lambda d: f_args(d, xq=t(d, 4, 32, dtype=E5M2), wq=t(d, 8, 32, dtype=E5M2), scales="tensor", sx=t(d, 1, dtype=F32), sw=t(d, 1, dtype=F32)), TypeError, r"x_q and weight_q are both float8_e5m2"),
    ("fp8 block e5m2", "linear_fp8", lambda d: f_args(d, xq=t(d, 4, 32, dtype=E5M2)), TypeError, r"scales='block' needs float8_e4m3fn x_q and weight_q, got float8_e5m2 and float8_e4m3fn"),
    ("fp8 out_dtype", "linear_fp8", lambda d: f_args(d, out_dtype=torch.float64), TypeError, r"out_dtype must be bf16, fp16 or fp32, got float64"),
    ("fp8 x rank", "linear_fp8", lambda d: f_args(d, xq=t(d, 1, 4, 32, dtype=E4M3)), ValueError, r"x_q must be 2-D \[M, K\], got 3-D"),
    ("fp8 weight rank", "linear_fp8", lambda d: f_args(d, wq=t(d, 1, 8, 32, dtype=E4M3)), ValueError, r"weight_q must be 2-D \[N, K\], got 3-D"),
    ("fp8 mismatched K", "linear_fp8", lambda d: f_args(d, wq=t(d, 8, 48, dtype=E4M3)), ValueError, r"weight_q is \[8, 48\] but x_q has K = 32"),
    ("fp8 K multiple of 16", "linear_fp8", lambda d: f_args(d, xq=t(d, 4, 24, dtype=E4M3), wq=t(d, 8, 24, dtype=E4M3)), ValueError, r"K must be a positive multiple of 16 \(FP8 rows are read in 16-byte units\), got 24"),
    ("fp8 scale dtype", "linear_fp8", lambda d: f_args(d, sx=t(d, 1, 4)), TypeError, r"x_scale must be fp32, got bf16"),
    ("fp8 block x_scale", "linear_fp8", lambda d: f_args(d, sx=t(d, 4, 1, dtype=F32)), ValueError, r"x_scale must be \[1, 4\] for scales='block' \(one per row of x_q and 128 columns, K-block-major, as anvil\.quantize_fp8 writes\), got sizes \[4, 1\]"),
    ("fp8 block weight_scale", "linear_fp8", lambda d: f_args(d, sw=t(d, 1, dtype=F32)), ValueError, r"weight_scale must be \[1, 1\] for scales='block' \(one per 128 x 128 block of weight_q\), got sizes \[1\]"),
    ("fp8 tensor scale", "linear_fp8", lambda d: f_args(d, scales="tensor", sx=t(d, 4, dtype=F32), sw=t(d, 1, dtype=F32)), ValueError, r"x_scale must hold one value for scales='tensor' \(sizes \[\] or \[1\]\), got sizes \[4\]"),
    ("fp8 rowcol scale", "linear_fp8", lambda d: f_args(d, scales="rowcol", sx=t(d, 4, dtype=F32), sw=t(d, 4, dtype=F32)), ValueError, r"weight_scale must be \[8\] for scales='rowcol' \(one per row of weight_q\), got sizes \[4\]"),
    ("fp8 bias dtype", "linear_fp8", lambda d: f_args(d, bias=t(d, 8, dtype=FP16)), TypeError, r"bias must be bf16 \(out_dtype\) or fp32, got fp16"),
    ("fp8 bias length", "linear_fp8", lambda d: f_args(d, bias=t(d, 7, dtype=F32)), ValueError, r"bias must be 1-D of length 8 \(weight_q's rows\), got sizes \[7\]"),
    ("sgmm a dtype", "scaled_grouped_mm", lambda d: sg_args(d, a=t(d, 6, 32)), TypeError, r"anvil\.scaled_grouped_mm: mat_a must be float8_e4m3fn, got bf16"),
    ("sgmm b e5m2", "scaled_grouped_mm", lambda d: sg_args(d, b=t(d, 2, 8, 32, dtype=E5M2).transpose(-2, -1)), TypeError, r"mat_b must be float8_e4m3fn, got float8_e5m2"),
    ("sgmm out_dtype", "scaled_grouped_mm", lambda d: sg_args(d, out_dtype=torch.float64), TypeError, r"anvil\.scaled_grouped_mm: out_dtype must be bf16, fp16 or fp32, got float64"),
    ("sgmm scale_result", "scaled_grouped_mm", lambda d: sg_args(d, scale_result=t(d, 1, dtype=F32)), ValueError, r"scale_result is not supported \(pass None, as torch\._scaled_grouped_mm requires\)"),
    ("sgmm a rank", "scaled_grouped_mm", lambda d: sg_args(d, a=t(d, 32, dtype=E4M3)), ValueError, r"mat_a must be 2-D \[rows, K\] or 3-D \[E, M, K\], got 1-D with sizes \[32\]"),
    ("sgmm b rank", "scaled_grouped_mm", lambda d: sg_args(d, b=t(d, 8, 32, dtype=E4M3).t()), ValueError, r"mat_b must be 3-D \[E, K, N\] \(the experts' \[E, N, K\] weights transposed\), got 2-D"),
    ("sgmm mismatched K", "scaled_grouped_mm", lambda d: sg_args(d, b=t(d, 2, 8, 48, dtype=E4M3).transpose(-2, -1)), ValueError, r"mat_b is \[2, 48, 8\] but mat_a has K = 32 \(its last dimension\); mat_b must be \[E, 32, N\]"),
    ("sgmm no experts", "scaled_grouped_mm", lambda d: sg_args(d, experts=0, offs=t(d, 0, dtype=I32)), ValueError, r"mat_b must hold between 1 and 65536 experts, got 0"),
    ("sgmm 3d experts", "scaled_grouped_mm", lambda d: sg_args(d, a=t(d, 3, 4, 32, dtype=E4M3), offs=None), ValueError, r"mat_a has 3 experts \(its first dimension\) but mat_b has 2"),
    ("sgmm 3d offs", "scaled_grouped_mm", lambda d: sg_args(d, a=t(d, 2, 4, 32, dtype=E4M3)), ValueError, r"offs must be None when mat_a is 3-D \[E, M, K\]"),
    ("sgmm 2d no offs", "scaled_grouped_mm", lambda d: sg_args(d, offs=None), ValueError, r"offs is required when mat_a is 2-D \(the cumulative row ends of the experts, as torch\._scaled_grouped_mm's offs\)"),
    ("sgmm offs dtype", "scaled_grouped_mm", lambda d: sg_args(d, offs=t(d, 2, dtype=F32)), TypeError, r"offs must be int32 or int64, got fp32"),
    ("sgmm offs length", "scaled_grouped_mm", lambda d: sg_args(d, offs=t(d, 3, dtype=I32)), ValueError, r"offs must be 1-D of length 2 \(the cumulative row ends of the experts\), got sizes \[3\]"),
    ("sgmm K multiple of 16", "scaled_grouped_mm", lambda d: sg_args(d, k=24), ValueError, r"anvil\.scaled_grouped_mm: K must be a positive multiple of 16 .*got 24"),
    ("sgmm scale dtype", "scaled_grouped_mm", lambda d: sg_args(d, sa=t(d, 6)), TypeError, r"scale_a must be fp32, got bf16"),
    ("sgmm rowwise scale_b", "scaled_grouped_mm", lambda d: sg_args(d, sb=t(d, 2, 7, dtype=F32)), ValueError, r"scale_b must be \[E, N\] = \[2, 8\] for row-wise scales \(one per expert and output column\), got sizes \[2, 7\]"),
    ("sgmm rowwise scale_a", "scaled_grouped_mm", lambda d: sg_args(d, sa=t(d, 5, dtype=F32)), ValueError, r"scale_a must be \[6\] for row-wise scales \(one per row of mat_a\), got sizes \[5\]"),
    ("sgmm tensor scale_b", "scaled_grouped_mm", lambda d: sg_args(d, sa=t(d, 1, dtype=F32), sb=t(d, 3, dtype=F32)), ValueError, r"scale_b must be \[E, N\] \(row-wise\), \[E, ceil\(N/128\), ceil\(K/128\)\] \(block\), \[E\] \(one per expert\) or \[\] / \[1\] \(one for all\), got sizes \[3\]"),
    ("sgmm block scale_b", "scaled_grouped_mm", lambda d: sg_args(d, sa=t(d, 1, 6, dtype=F32), sb=t(d, 2, 1, 2, dtype=F32)), ValueError, r"scale_b must be \[E, ceil\(N/128\), ceil\(K/128\)\] = \[2, 1, 1\] for block scales \(one per expert and 128 x 128 block of its weight\), got sizes \[2, 1, 2\]"),
    ("sgmm block scale_a", "scaled_grouped_mm", lambda d: sg_args(d, sa=t(d, 6, dtype=F32), sb=t(d, 2, 1, 1, dtype=F32)), ValueError, r"scale_a must be \[ceil\(K/128\), rows\] = \[1, 6\] for block scales \(one per row of mat_a and 128 columns, K-block-major, as anvil\.quantize_fp8 writes\), got sizes \[6\]"),
    ("sgmm tensor scale_a", "scaled_grouped_mm", lambda d: sg_args(d, sb=t(d, 2, dtype=F32)), ValueError, r"scale_a must hold one value \(sizes \[\] or \[1\]\) when scale_b is per tensor or per expert, got sizes \[6\]"),
    ("sgmm bias dtype", "scaled_grouped_mm", lambda d: sg_args(d, bias=t(d, 2, 8, dtype=FP16)), TypeError, r"anvil\.scaled_grouped_mm: bias must be bf16 \(out_dtype\) or fp32, got fp16"),
    ("sgmm bias shape", "scaled_grouped_mm", lambda d: sg_args(d, bias=t(d, 8, dtype=F32)), ValueError, r"bias must be \[E, N\] = \[2, 8\] \(one row per expert\), got sizes \[8\]"),
    ("sgmm mat_b layout", "scaled_grouped_mm", lambda d: sg_args(d, b=t(d, 2, 32, 8, dtype=E4M3)), ValueError, r"mat_b has strides \(256, 8, 1\); it must be the transpose of a contiguous \[E, N, K\] weight"),
    ("sgmm mat_a layout", "scaled_grouped_mm", lambda d: sg_args(d, a=t(d, 32, 6, dtype=E4M3).t()), ValueError, r"mat_a has strides \(1, 6\); it must be contiguous \(row-major, K contiguous\)"),
    ("quantize block", "quantize_fp8", lambda d: q_args(d, block=64), ValueError, r"anvil\.quantize_fp8: block must be 128 \(one scale per row and 128 columns\) or None \(one scale for the tensor\), got 64"),
    ("quantize dtype", "quantize_fp8", lambda d: q_args(d, dtype=torch.int8), TypeError, r"dtype must be float8_e4m3fn or float8_e5m2, got int8"),
    ("quantize x dtype", "quantize_fp8", lambda d: q_args(d, x=t(d, 4, 32, dtype=F32)), TypeError, r"anvil\.quantize_fp8: x must be bf16 or fp16, got fp32"),
    ("quantize x rank", "quantize_fp8", lambda d: q_args(d, x=t(d, 2, 4, 32)), ValueError, r"x must be 2-D \[M, K\], got 3-D"),
    ("quantize K multiple of 16", "quantize_fp8", lambda d: q_args(d, x=t(d, 4, 40)), ValueError, r"K must be a positive multiple of 16 .*got 40"),
]


@pytest.mark.parametrize("device", ["meta", "cpu"])
@pytest.mark.parametrize("direct", [False, True], ids=["wrapper", "op"])
@pytest.mark.parametrize("label,op,make,exc,pattern", NEW_ERRORS, ids=[e[0] for e in NEW_ERRORS])
def test_grouped_and_fp8_argument_errors(device, direct, label, op, make, exc, pattern):
    args, kwargs = make(device)
    fn = getattr(torch.ops.anvil, op) if direct else getattr(anvil, op)
    with pytest.raises(exc, match=pattern):
        fn(*args, **kwargs)


@pytest.mark.parametrize("op,make", [
    ("grouped_mm", lambda: g_args("cpu")),
    ("grouped_mm_masked", lambda: m_args("cpu", bias=t("cpu", 2, 8, dtype=F32))),
    ("linear_fp8", lambda: f_args("cpu", bias=t("cpu", 8))),
    ("linear_fp8", lambda: f_args("cpu", scales="rowcol", sx=t("cpu", 4, dtype=F32), sw=t("cpu", 8, dtype=F32))),
    ("quantize_fp8", lambda: q_args("cpu", block=None, dtype=E5M2)),
    ("scaled_grouped_mm", lambda: sg_args("cpu")),
    ("scaled_grouped_mm", lambda: sg_args("cpu", sa=t("cpu", 1, dtype=F32), sb=t("cpu", 2, dtype=F32),
                                          bias=t("cpu", 2, 8, dtype=F32), out_dtype=F32, use_fast_accum=True)),
    ("scaled_grouped_mm", lambda: sg_args("cpu", a=t("cpu", 2, 4, 32, dtype=E4M3), sa=t("cpu", 2, 4, dtype=F32), offs=None)),
    ("scaled_grouped_mm", lambda: sg_args("cpu", sa=t("cpu", 1, 6, dtype=F32), sb=t("cpu", 2, 1, 1, dtype=F32))),
    ("scaled_grouped_mm", lambda: sg_args("cpu", a=t("cpu", 2, 4, 32, dtype=E4M3), sa=t("cpu", 1, 8, dtype=F32),
                                          sb=t("cpu", 2, 1, 1, dtype=F32), offs=None)),
])
def test_valid_cpu_calls_reach_the_device_check(op, make):
    # Arguments that pass every check: the only complaint on CPU is the device, from both
    # the wrapper and the C++ op.
    args, kwargs = make()
    first = {"grouped_mm": "x", "grouped_mm_masked": "x", "linear_fp8": "x_q", "quantize_fp8": "x",
             "scaled_grouped_mm": "mat_a"}[op]
    for fn in (getattr(anvil, op), getattr(torch.ops.anvil, op)):
        with pytest.raises(ValueError, match=rf"anvil\.{op}: {first} must be a CUDA tensor, got a tensor on cpu"):
            fn(*args, **kwargs)


def test_fp8_operands_must_be_k_contiguous():
    xq = t("cpu", 32, 4, dtype=E4M3).t()  # [4, 32] with strides (1, 4)
    with pytest.raises(ValueError, match=r"anvil\.linear_fp8: x_q has strides \(1, 4\); FP8 operands must be stored with a unit stride along K"):
        anvil.linear_fp8(xq, t("cpu", 8, 32, dtype=E4M3), t("cpu", 1, 4, dtype=F32), t("cpu", 1, 1, dtype=F32))
    wq = t("cpu", 32, 8, dtype=E4M3).t()
    with pytest.raises(ValueError, match=r"weight_q has strides \(1, 8\)"):
        anvil.linear_fp8(t("cpu", 4, 32, dtype=E4M3), wq, t("cpu", 1, 4, dtype=F32), t("cpu", 1, 1, dtype=F32))


@pytest.mark.parametrize("label,op,make,exc,pattern", NEW_ERRORS, ids=[e[0] for e in NEW_ERRORS])
def test_fake_kernel_and_cpp_messages_are_identical(label, op, make, exc, pattern):
    # The fake kernel (meta tensors) and the C++ op (CPU tensors) raise the same exception
    # type with the same text, word for word.
    raised = []
    for device in ("meta", "cpu"):
        args, kwargs = make(device)
        with pytest.raises(exc) as info:
            getattr(torch.ops.anvil, op)(*args, **kwargs)
        raised.append(str(info.value))
    assert raised[0] == raised[1]
