"""GPU tests of the ops (marked gpu; skipped without an sm_90 device): results against
torch at per-dtype tolerances, poisoned outputs, strided operands, gradients, opcheck,
torch.compile with no graph break, CUDA-graph capture, streams, batch invariance.

Tolerances: anvil accumulates in fp32 and rounds once to the output dtype, so the error
against an fp32 reference is one output rounding plus accumulation-order noise. Checked as
max |y - ref| / max |ref| (outputs) with 1.5e-2 for bf16 (8-bit mantissa) and 3e-3 for
fp16 (11-bit); gradients, which pass through one more rounded GEMM, at twice that."""

import pytest
import torch
import torch.nn.functional as F

anvil = pytest.importorskip("anvil")  # skips with the import error (not built, or built for another torch)

pytestmark = pytest.mark.gpu

BF16, FP16 = torch.bfloat16, torch.float16
TOL = {BF16: 1.5e-2, FP16: 3e-3}
DEV = "cuda"


def rel_err(y, ref):
    y, ref = y.float(), ref.float()
    assert torch.isfinite(y).all(), "non-finite values in the result"
    return ((y - ref).abs().max() / ref.abs().max().clamp_min(1e-6)).item()


def rand(*shape, dtype=BF16, scale=1.0):
    return (torch.randn(shape, device=DEV) * scale).to(dtype)


def ref_act(z, act):
    return {
        "none": lambda v: v,
        "relu": F.relu,
        "gelu": F.gelu,
        "gelu_tanh": lambda v: F.gelu(v, approximate="tanh"),
        "silu": F.silu,
    }[act](z)


def ref_linear(x, w, b, act, r):
    z = x.float() @ w.float().t()
    if b is not None:
        z = z + b.float()
    y = ref_act(z, act)
    return y + r.float() if r is not None else y


@pytest.fixture(autouse=True)
def seed():
    torch.manual_seed(1234)


@pytest.mark.parametrize("dtype", [BF16, FP16])
@pytest.mark.parametrize("act", anvil.ACTIVATIONS)
@pytest.mark.parametrize("shape", [(1, 256, 512), (7, 384, 256), (5, 100, 72), (64, 1024, 512), (300, 520, 136), (2048, 256, 1024)])
def test_linear_matches_torch(dtype, act, shape):
    m, n, k = shape
    x, w = rand(m, k, dtype=dtype), rand(n, k, dtype=dtype, scale=k**-0.5)
    b, r = rand(n, dtype=torch.float32), rand(m, n, dtype=dtype)
    for bias, res in [(None, None), (b, None), (b.to(dtype), r)]:
        y = anvil.linear(x, w, bias, act, res)
        assert y.shape == (m, n) and y.dtype == dtype
        assert rel_err(y, ref_linear(x, w, bias, act, res)) < TOL[dtype], (act, bias is not None, res is not None)


def test_linear_leading_dims_and_out_is_fully_written():
    x, w, b = rand(3, 5, 256), rand(384, 256, scale=1 / 16), rand(384)
    out = torch.full((3, 5, 384), float("nan"), device=DEV, dtype=BF16)  # poisoned
    y = anvil.linear(x, w, b, "gelu", out=out)
    assert y is out
    assert rel_err(out, ref_linear(x, w, b, "gelu", None)) < TOL[BF16]
    # Residual aliasing the output: the in-place residual add.
    out2 = rand(3, 5, 384)
    expected = ref_linear(x, w, None, "none", out2)
    anvil.linear(x, w, residual=out2, out=out2)
    assert rel_err(out2, expected) < TOL[BF16]


@pytest.mark.parametrize("dtype", [BF16, FP16])
@pytest.mark.parametrize("m", [1, 16, 200])
def test_linear_swiglu_matches_torch(dtype, m):
    k, f = 512, 768
    x = rand(m, k, dtype=dtype)
    wg, wu = rand(f, k, dtype=dtype, scale=k**-0.5), rand(f, k, dtype=dtype, scale=k**-0.5)
    bg, bu = rand(f, dtype=dtype), rand(f, dtype=dtype)
    gu, gub = anvil.fuse_gate_up(wg, wu), anvil.fuse_gate_up(bg, bu)
    for bias in (None, gub):
        y = anvil.linear_swiglu(x, gu, bias)
        g = x.float() @ wg.float().t() + (bg.float() if bias is not None else 0)
        u = x.float() @ wu.float().t() + (bu.float() if bias is not None else 0)
        assert y.shape == (m, f)
        assert rel_err(y, F.silu(g) * u) < TOL[dtype]


def matmul_cases():
    m, k, n = 96, 200, 136
    base = lambda *s: rand(*s)  # noqa: E731
    return {
        "nn": lambda: (base(m, k), base(k, n)),
        "transposed a": lambda: (base(k, m).t(), base(k, n)),
        "transposed b": lambda: (base(m, k), base(n, k).t()),
        "both transposed": lambda: (base(k, m).t(), base(n, k).t()),
        "sliced (ld > cols)": lambda: (base(m, k + 40)[:, :k], base(k, n + 24)[:, 8 : 8 + n]),
        "batched": lambda: (base(4, m, k), base(4, k, n)),
        "batched transposed": lambda: (base(4, k, m).transpose(1, 2), base(4, n, k).transpose(1, 2)),
        "batch from a permuted tensor": lambda: (base(m, 4, k).transpose(0, 1), base(4, k, n)),
        "3-D x 2-D": lambda: (base(3, m, k), base(k, n)),
        "2-D x 3-D": lambda: (base(m, k), base(3, k, n)),
        "batch 1 broadcast": lambda: (base(1, m, k), base(5, k, n)),
        "expanded batch": lambda: (base(1, m, k).expand(5, m, k), base(5, k, n)),
    }


@pytest.mark.parametrize("case", list(matmul_cases()))
def test_matmul_strided_matches_torch(case):
    a, b = matmul_cases()[case]()
    y = anvil.matmul(a, b)
    ref = torch.matmul(a.float(), b.float())
    assert y.shape == ref.shape
    assert rel_err(y, ref) < TOL[BF16] * 2  # K = 200 of unscaled inputs: larger sums


def test_bmm_and_refusals():
    a, b = rand(3, 64, 128), rand(3, 128, 32)
    assert rel_err(anvil.bmm(a, b), torch.bmm(a.float(), b.float())) < 2 * TOL[BF16]
    with pytest.raises(ValueError, match=r"unit stride"):
        anvil.matmul(rand(64, 256)[:, ::2], rand(128, 32))
    with pytest.raises(ValueError, match=r"must be a CUDA tensor"):
        anvil.matmul(rand(64, 128), torch.randn(128, 32).to(BF16))
    with pytest.raises(TypeError, match=r"must be bf16 or fp16"):
        anvil.matmul(rand(64, 128, dtype=torch.float32), rand(128, 32, dtype=torch.float32))


def test_empty_and_k0():
    y = anvil.linear(rand(0, 64), rand(32, 64))
    assert y.shape == (0, 32)
    x, w, b = torch.empty(5, 0, device=DEV, dtype=BF16), torch.empty(32, 0, device=DEV, dtype=BF16), rand(32)
    y = anvil.linear(x, w, b)
    assert torch.equal(y, b.expand(5, 32))


# ---- gradients -------------------------------------------------------------------------------


def grads(fn, *tensors):
    tensors = [t.detach().clone().requires_grad_() for t in tensors]
    out = fn(*tensors)
    g = torch.randn_like(out.float()).to(out.dtype)
    out.backward(g)
    return out, [t.grad for t in tensors]


@pytest.mark.parametrize("act", anvil.ACTIVATIONS)
def test_linear_gradients(act):
    x, w, b, r = rand(2, 40, 256), rand(384, 256, scale=1 / 16), rand(384), rand(2, 40, 384)
    torch.manual_seed(7)
    _, got = grads(lambda *t: anvil.linear(t[0], t[1], t[2], act, t[3]), x, w, b, r)
    torch.manual_seed(7)
    _, ref = grads(lambda *t: ref_linear(t[0], t[1], t[2], act, t[3]).to(BF16), x.float(), w.float(), b.float(), r.float())
    for name, g, gr in zip(("x", "weight", "bias", "residual"), got, ref):
        assert g.shape == gr.shape and rel_err(g, gr) < 2 * TOL[BF16], name


def test_linear_swiglu_gradients():
    k, f = 256, 384
    x, wg, wu, bg, bu = rand(50, k), rand(f, k, scale=1 / 16), rand(f, k, scale=1 / 16), rand(f), rand(f)
    gu, gub = anvil.fuse_gate_up(wg, wu), anvil.fuse_gate_up(bg, bu)
    torch.manual_seed(7)
    _, got = grads(lambda *t: anvil.linear_swiglu(*t), x, gu, gub)
    torch.manual_seed(7)

    def ref(x, gu, gub):
        wg2, wu2 = anvil.unfuse_gate_up(gu)
        bg2, bu2 = anvil.unfuse_gate_up(gub)
        return (F.silu(x @ wg2.t() + bg2) * (x @ wu2.t() + bu2)).to(BF16)

    _, want = grads(ref, x.float(), gu.float(), gub.float())
    for name, g, gr in zip(("x", "gate_up", "bias"), got, want):
        assert rel_err(g, gr) < 2 * TOL[BF16], name


def test_matmul_gradients_with_broadcast():
    a, b = rand(64, 96), rand(3, 96, 80)
    torch.manual_seed(7)
    _, got = grads(anvil.matmul, a, b)
    torch.manual_seed(7)
    _, want = grads(lambda p, q: torch.matmul(p, q).to(BF16), a.float(), b.float())
    for g, gr in zip(got, want):
        assert g.shape == gr.shape and rel_err(g, gr) < 2 * TOL[BF16]


# ---- opcheck, compile, graphs, streams, batch invariance -----------------------------------------


def test_opcheck_every_op():
    x, w, b, r = rand(8, 128), rand(256, 128, scale=1 / 11), rand(256), rand(8, 256)
    gu = rand(256, 128, scale=1 / 11)
    cases = [
        (torch.ops.anvil.linear.default, (x, w, b, "gelu", r), {}),
        (torch.ops.anvil.linear.default, (x.requires_grad_(), w.requires_grad_(), None, "silu", None), {}),
        (torch.ops.anvil.linear_into.default, (x.detach(), w.detach(), b, "relu", None), {"out": torch.empty(8, 256, device=DEV, dtype=BF16)}),
        (torch.ops.anvil.linear_swiglu.default, (rand(8, 128).requires_grad_(), gu.requires_grad_(), None), {}),
        (torch.ops.anvil.matmul.default, (rand(4, 64, 128).requires_grad_(), rand(128, 32).t().contiguous().t()), {}),
        (torch.ops.anvil.bmm.default, (rand(2, 64, 128), rand(2, 128, 32)), {"batch_invariant": True}),
    ]
    for op, args, kwargs in cases:
        torch.library.opcheck(op, args, kwargs)


def test_compile_fullgraph_matches_eager():
    x, w, b = rand(16, 256), rand(512, 256, scale=1 / 16), rand(512)
    gu, w2 = rand(1024, 512, scale=1 / 22), rand(512, 256, scale=1 / 22)

    def block(x):
        h = anvil.linear(x, w, b, "gelu_tanh")
        h = anvil.linear_swiglu(h, gu)
        return anvil.matmul(h, w2)  # w2 [512, 256] row-major as B

    eager = block(x)
    torch._dynamo.reset()
    compiled = torch.compile(block, fullgraph=True)
    assert torch.equal(compiled(x), eager)
    explain = torch._dynamo.explain(block)(x)
    assert explain.graph_break_count == 0, explain.break_reasons


def test_cuda_graph_replay_equals_eager():
    x, w, b = rand(4, 512), rand(1024, 512, scale=1 / 22), rand(1024)
    gu = rand(2048, 1024, scale=1 / 32)
    step = lambda: anvil.linear_swiglu(anvil.linear(x, w, b, "silu"), gu)  # noqa: E731
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        step()  # warm-up outside capture (plan caches, allocator)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = step()
    x.copy_(rand(4, 512))
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(y, step())


def test_runs_on_the_current_stream():
    x, w = rand(64, 512), rand(2048, 512, scale=1 / 22)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch.cuda._sleep(10_000_000)  # keep the side stream busy: a launch on another stream would race
        x2 = x * 1  # produced on s
        y = anvil.linear(x2, w)
    s.synchronize()
    assert torch.equal(y, anvil.linear(x, w))


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_device_guard():
    x, w = rand(8, 128).to("cuda:1"), rand(64, 128).to("cuda:1")
    with torch.cuda.device(0):
        y = anvil.linear(x, w)
    assert y.device == torch.device("cuda:1")
    assert rel_err(y, ref_linear(x, w, None, "none", None)) < TOL[BF16]


def test_batch_invariance():
    k, n = 1024, 2048
    x, w = rand(96, k), rand(n, k, scale=1 / 32)
    with anvil.batch_invariant():
        full = anvil.linear(x, w)
        for m in (1, 3, 17, 64):
            assert torch.equal(anvil.linear(x[:m], w), full[:m]), m
    assert torch.equal(anvil.matmul(x[:5], w.t(), batch_invariant=True), full[:5])


def test_nn_linear_and_patch_forward():
    ref = torch.nn.Linear(256, 384, device=DEV, dtype=BF16)
    lin = anvil.nn.Linear(256, 384, device=DEV, dtype=BF16)
    lin.load_state_dict(ref.state_dict())
    x = rand(2, 9, 256)
    with torch.no_grad():
        assert rel_err(lin(x), ref(x)) < TOL[BF16]
