"""GPU tests of the ops (marked gpu; skipped without an sm_90 device): results against
torch at per-dtype tolerances, poisoned outputs, strided operands, gradients, opcheck,
torch.compile with no graph break, CUDA-graph capture, streams, batch invariance.

Tolerances: anvil accumulates in fp32 and rounds once to the output dtype, so the error
against an fp32 reference is one output rounding plus accumulation-order noise. Checked as
max |y - ref| / max |ref| (outputs) with 1.5e-2 for bf16 (8-bit mantissa) and 3e-3 for
fp16 (11-bit); gradients, which pass through one more rounded GEMM, at twice that.
The grouped GEMM is checked the same way against a per-expert loop of x @ w.T in fp32. The
FP8 GEMM is checked against the dequantized operands (q * scale in fp32) multiplied in fp32,
so only the accumulation and the output rounding count: the output dtype's tolerance above
(1e-3 for fp32), plus docs/fp8.md's accumulation term: 2^-10 with block scales (promoted
every 128 K), 2^-12 (K/32 + 8) with tensor or row/column scales (the whole K in the tensor
cores' truncating accumulator)."""

import json
from pathlib import Path

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


def capture_graph(step):
    """Warms step up on a side stream (plan caches, allocator), then captures one call of it
    in a CUDA graph; returns the graph and what the captured call returned."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        step()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = step()
    return g, out


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
    g, y = capture_graph(step)
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


def test_loaded_tuning_cache_changes_the_plan(tmp_path):
    # A cache made for this GPU (anvil-tune's format, tests/data's example retargeted) that
    # names 1 x 8192 x 8192 with sm90-gemm, where the planner streams the weight on a decode
    # kernel: the dispatcher then runs sm90-gemm, the result still matches, and forgetting
    # the cache restores the planner's choice.
    example = Path(__file__).resolve().parents[2] / "tests" / "data" / "tuning-cache-example.json"
    props = torch.cuda.get_device_properties(0)
    major, minor = (int(v) for v in torch.version.cuda.split(".")[:2])
    cache = json.loads(example.read_text())
    cache.update(gpu=props.name, sm_count=props.multi_processor_count, cuda_runtime=major * 1000 + minor * 10)
    entry = cache["entries"][0]
    entry["problem"].update(m=1, n=8192, k=8192)
    entry["plan"].update(family="sm90-gemm", sm90_variant=None)
    path = tmp_path / "cache.json"
    path.write_text(json.dumps(cache))
    planned = anvil.dispatch_name(1, 8192, 8192)
    assert planned != "sm90-gemm", planned
    anvil.load_tuning_cache(path)
    try:
        assert anvil.dispatch_name(1, 8192, 8192) == "sm90-gemm"
        x, w = rand(1, 8192), rand(8192, 8192, scale=1 / 64)
        assert rel_err(anvil.linear(x, w), ref_linear(x, w, None, "none", None)) < TOL[BF16]
    finally:
        anvil.clear_tuning_cache()
    assert anvil.dispatch_name(1, 8192, 8192) == planned


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


# ---- grouped GEMM (mixture of experts) -------------------------------------------------------------


def ref_grouped(x, w, starts, ends, b, act):
    """Per-expert loop in fp32; rows no expert owns are zeros (what anvil.grouped_mm returns)."""
    y = torch.zeros(x.shape[0], w.shape[1], device=DEV, dtype=torch.float32)
    for e, (s, t) in enumerate(zip(starts, ends)):
        if t > s:
            z = x[s:t].float() @ w[e].float().t()
            if b is not None:
                z = z + b[e].float()
            y[s:t] = ref_act(z, act)
    return y


def routing(counts, index_dtype):
    """torch._grouped_mm's offs (cumulative row ends) for per-expert row counts."""
    ends = torch.tensor(counts, dtype=torch.int64).cumsum(0)
    return ends.to(DEV, index_dtype), [int(v) for v in ends - torch.tensor(counts)], [int(v) for v in ends]


@pytest.mark.parametrize("dtype", [BF16, FP16])
@pytest.mark.parametrize("act", anvil.ACTIVATIONS)
@pytest.mark.parametrize("index_dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("shape", [(384, 256), (200, 136)])  # (N, K): on and off the tile grid
def test_grouped_mm_matches_per_expert_loop(dtype, act, index_dtype, shape):
    n, k = shape
    counts = [0, 1, 37, 0, 300, 64, 129, 5]  # empty, one-row, unaligned and multi-tile experts
    experts, routed = len(counts), sum(counts)
    rows = routed + 11  # trailing rows no expert owns
    x = rand(rows, k, dtype=dtype)
    x[routed:] = float("nan")  # never read into an owned row
    w = rand(experts, n, k, dtype=dtype, scale=k**-0.5)
    offs, starts, ends = routing(counts, index_dtype)
    for b in (None, rand(experts, n, dtype=torch.float32), rand(experts, n, dtype=dtype)):
        y = anvil.grouped_mm(x, w, offs, b, act)
        assert y.shape == (rows, n) and y.dtype == dtype
        assert torch.equal(y[routed:], torch.zeros_like(y[routed:])), "rows no expert owns must be zeros"
        ref = ref_grouped(x[:routed], w, starts, ends, b, act)
        for e, (s, t) in enumerate(zip(starts, ends)):
            if t > s:
                assert torch.isfinite(y[s:t]).all(), f"expert {e}: non-finite output"
        err = rel_err(y[:routed], ref)
        assert err < TOL[dtype], (act, b is not None and b.dtype, err)


@pytest.mark.parametrize("dtype", [BF16, FP16])
def test_grouped_mm_masked_matches_per_expert_loop(dtype):
    counts = [3, 0, 40, 17, 1, 40]
    experts, max_rows, n, k = len(counts), 40, 256, 512
    x = rand(experts, max_rows, k, dtype=dtype)
    for e, c in enumerate(counts):
        x[e, c:] = float("nan")  # rows past the count: never read into a used row
    w, b = rand(experts, n, k, dtype=dtype, scale=k**-0.5), rand(experts, n, dtype=torch.float32)
    cnt = torch.tensor(counts, device=DEV, dtype=torch.int32)
    y = anvil.grouped_mm_masked(x, w, cnt, b, "silu")
    assert y.shape == (experts, max_rows, n) and y.dtype == dtype
    for e, c in enumerate(counts):
        assert torch.equal(y[e, c:], torch.zeros_like(y[e, c:])), f"expert {e}: rows past counts[e] must be zeros"
        if c:
            ref = F.silu(x[e, :c].float() @ w[e].float().t() + b[e])
            err = rel_err(y[e, :c], ref)
            assert err < TOL[dtype], (e, c, err)


def test_grouped_empty_experts_and_empty_input():
    k, n = 64, 128
    w = rand(4, n, k, scale=1 / 8)
    # Every expert empty: all zeros, nothing launched that could write elsewhere.
    x = rand(9, k)
    y = anvil.grouped_mm(x, w, torch.zeros(4, device=DEV, dtype=torch.int32))
    assert torch.equal(y, torch.zeros_like(y))
    y = anvil.grouped_mm_masked(rand(4, 6, k), w, torch.zeros(4, device=DEV, dtype=torch.int64))
    assert torch.equal(y, torch.zeros_like(y))
    # No rows at all.
    assert anvil.grouped_mm(rand(0, k), w, torch.zeros(4, device=DEV, dtype=torch.int32)).shape == (0, n)
    # One expert owning everything (E = 1) equals a plain linear.
    x = rand(33, k)
    y = anvil.grouped_mm(x, w[:1], torch.tensor([33], device=DEV, dtype=torch.int32))
    assert rel_err(y, ref_linear(x, w[0], None, "none", None)) < TOL[BF16]


def test_grouped_invalid_offsets_leave_that_expert_zero():
    # An offset past the rows is refused on the device: that expert is skipped (zeros), the
    # others are computed.
    k, n, rows = 64, 128, 20
    x, w = rand(rows, k), rand(2, n, k, scale=1 / 8)
    y = anvil.grouped_mm(x, w, torch.tensor([8, rows + 5], device=DEV, dtype=torch.int32))
    assert rel_err(y[:8], ref_linear(x[:8], w[0], None, "none", None)) < TOL[BF16]
    assert torch.equal(y[8:], torch.zeros_like(y[8:]))


def test_grouped_cuda_graph_replays_with_new_routing():
    # Captured once; the offsets (and the masked counts) are rewritten on the device before
    # each replay. The host never reads them, so every replay follows the routing it finds.
    experts, k, n, rows = 6, 256, 384, 200
    x, w = rand(rows, k), rand(experts, n, k, scale=1 / 16)
    xm = rand(experts, 32, k)
    offs = torch.zeros(experts, device=DEV, dtype=torch.int32)
    cnt = torch.zeros(experts, device=DEV, dtype=torch.int32)
    routings = [[10, 0, 50, 40, 100, 0], [0, 0, 0, 0, 0, 200], [33, 33, 33, 33, 33, 35], [1, 2, 3, 4, 5, 6]]
    step = lambda: (anvil.grouped_mm(x, w, offs, None, "gelu"), anvil.grouped_mm_masked(xm, w, cnt))  # noqa: E731
    offs.copy_(routing(routings[0], torch.int32)[0])
    g, (y, ym) = capture_graph(step)
    for r in routings:
        o, starts, ends = routing(r, torch.int32)
        offs.copy_(o)
        cnt.copy_(torch.tensor([min(c, 32) for c in r], device=DEV, dtype=torch.int32))
        g.replay()
        torch.cuda.synchronize()
        eager, eager_m = step()
        assert torch.equal(y, eager), f"contiguous replay differs from eager for routing {r}"
        assert torch.equal(ym, eager_m), f"masked replay differs from eager for routing {r}"
        routed = ends[-1]
        assert rel_err(y[:routed], ref_grouped(x, w, starts, ends, None, "gelu")[:routed]) < TOL[BF16], r
        assert torch.equal(y[routed:], torch.zeros_like(y[routed:])), f"routing {r}: unowned rows not zero"


def test_grouped_runs_on_the_current_stream():
    # The output is zeroed and the kernel reads the offsets on the current stream too.
    x, w = rand(256, 512), rand(4, 1024, 512, scale=1 / 22)
    offs = torch.tensor([64, 64, 200, 256], device=DEV, dtype=torch.int32)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch.cuda._sleep(10_000_000)  # keep the side stream busy: work on another stream would race
        offs2 = offs * 1  # produced on s
        y = anvil.grouped_mm(x, w, offs2)
    s.synchronize()
    assert torch.equal(y, anvil.grouped_mm(x, w, offs))


def test_grouped_compile_fullgraph_matches_eager():
    x, w = rand(50, 128), rand(3, 256, 128, scale=1 / 11)
    offs = torch.tensor([20, 20, 50], device=DEV, dtype=torch.int32)
    f = lambda x, offs: anvil.grouped_mm(x, w, offs, None, "relu")  # noqa: E731
    torch._dynamo.reset()
    assert torch.equal(torch.compile(f, fullgraph=True)(x, offs), f(x, offs))


# ---- FP8 -------------------------------------------------------------------------------------------

E4M3, E5M2 = torch.float8_e4m3fn, torch.float8_e5m2
FMAX = {E4M3: 448.0, E5M2: 57344.0}
OUT_TOL = {BF16: 1.5e-2, FP16: 3e-3, torch.float32: 1e-3}


def quantize_ref(x, groups_k, dtype=E4M3):
    """Reference of anvil's rule: per row and 128 columns (groups_k=128) or per tensor (None):
    scale = amax / fmax (1 for an all-zero group), q = satfinite(rn(x / scale)). The division is
    by a tensor: torch divides by a Python scalar as a multiply by its reciprocal, an ulp away."""
    xf = x.float()
    m, k = xf.shape
    if groups_k is None:
        amax = xf.abs().amax()
        scale = torch.where(amax > 0, amax / torch.full_like(amax, FMAX[dtype]), torch.ones_like(amax)).reshape(1)
        q = (xf / scale).clamp(-FMAX[dtype], FMAX[dtype]).to(dtype)
        return q, scale
    kb = (k + 127) // 128
    scale = torch.empty(kb, m, device=x.device)
    q = torch.empty(m, k, device=x.device, dtype=dtype)
    for b in range(kb):
        blk = xf[:, 128 * b : 128 * (b + 1)]
        amax = blk.abs().amax(1)
        s = torch.where(amax > 0, amax / torch.full_like(amax, FMAX[dtype]), torch.ones_like(amax))
        scale[b] = s
        q[:, 128 * b : 128 * (b + 1)] = (blk / s[:, None]).clamp(-FMAX[dtype], FMAX[dtype]).to(dtype)
    return q, scale


def quantize_weight_blocks(w):
    """Per 128 x 128 block of w [N, K] (e4m3): weight_q and weight_scale [ceil(N/128), ceil(K/128)]."""
    n, k = w.shape
    nb, kb = (n + 127) // 128, (k + 127) // 128
    wf = w.float()
    scale = torch.empty(nb, kb, device=w.device)
    q = torch.empty(n, k, device=w.device, dtype=E4M3)
    for i in range(nb):
        for j in range(kb):
            blk = wf[128 * i : 128 * (i + 1), 128 * j : 128 * (j + 1)]
            s = blk.abs().amax().clamp_min(1e-12) / 448.0
            scale[i, j] = s
            q[128 * i : 128 * (i + 1), 128 * j : 128 * (j + 1)] = (blk / s).clamp(-448, 448).to(E4M3)
    return q, scale


def dequant(q, scale, scales, rows_block):
    """q * scale in fp32 for the scale layouts of anvil.linear_fp8 (rows_block: x's layout)."""
    qf = q.float()
    m, k = qf.shape
    if scales == "tensor":
        return qf * scale.reshape(())
    if scales == "rowcol":
        return qf * scale[:, None]
    col_block = torch.arange(k, device=q.device) // 128
    if rows_block:  # x: scale [ceil(K/128), M]
        return qf * scale[col_block].t()
    row_block = torch.arange(m, device=q.device) // 128  # weight: scale [ceil(N/128), ceil(K/128)]
    return qf * scale[row_block][:, col_block]


def fp8_operands(m, n, k, scales, x_dtype=E4M3, w_dtype=E4M3):
    x, w = rand(m, k), rand(n, k, scale=k**-0.5)
    if scales == "block":
        xq, sx = anvil.quantize_fp8(x)
        wq, sw = quantize_weight_blocks(w)
    elif scales == "tensor":
        xq, sx = quantize_ref(x, None, x_dtype)
        wq, sw = quantize_ref(w, None, w_dtype)
        sw = sw.reshape(())  # a 0-d scale is accepted as well as [1]
    else:  # per row of x, per output channel of w; scales in [0.5, 1.5] x amax / fmax
        xf, wf = x.float(), w.float()
        sx = xf.abs().amax(1) / FMAX[x_dtype] * (0.5 + torch.rand(m, device=DEV))
        sw = wf.abs().amax(1) / FMAX[w_dtype] * (0.5 + torch.rand(n, device=DEV))
        xq = (xf / sx[:, None]).clamp(-FMAX[x_dtype], FMAX[x_dtype]).to(x_dtype)
        wq = (wf / sw[:, None]).clamp(-FMAX[w_dtype], FMAX[w_dtype]).to(w_dtype)
    return xq, wq, sx, sw


def fp8_tol(out_dtype, scales, k):
    acc = 2.0**-10 if scales == "block" else 2.0**-12 * (k / 32 + 8)
    return OUT_TOL[out_dtype] + acc


@pytest.mark.parametrize("scales", ["block", "tensor", "rowcol"])
@pytest.mark.parametrize("out_dtype", [BF16, FP16, torch.float32])
@pytest.mark.parametrize("shape", [(128, 256, 512), (5, 200, 272), (1, 384, 1024), (300, 136, 2048)])
def test_linear_fp8_matches_dequantized_reference(scales, out_dtype, shape):
    m, n, k = shape
    xq, wq, sx, sw = fp8_operands(m, n, k, scales)
    b = rand(n, dtype=torch.float32)
    for bias, act in [(None, "none"), (b, "gelu"), (b.to(out_dtype), "silu")]:
        y = anvil.linear_fp8(xq, wq, sx, sw, scales=scales, bias=bias, activation=act, out_dtype=out_dtype)
        assert y.shape == (m, n) and y.dtype == out_dtype
        z = dequant(xq, sx, scales, True) @ dequant(wq, sw, scales, False).t()
        ref = ref_act(z + bias.float() if bias is not None else z, act)
        err = rel_err(y, ref)
        assert err < fp8_tol(out_dtype, scales, k), (scales, act, bias is not None, err)


@pytest.mark.parametrize("pair", [(E5M2, E4M3), (E4M3, E5M2)])
@pytest.mark.parametrize("scales", ["tensor", "rowcol"])
def test_linear_fp8_mixed_pairs(pair, scales):
    m, n, k = 64, 256, 512
    xq, wq, sx, sw = fp8_operands(m, n, k, scales, *pair)
    y = anvil.linear_fp8(xq, wq, sx, sw, scales=scales)
    ref = dequant(xq, sx, scales, True) @ dequant(wq, sw, scales, False).t()
    assert rel_err(y, ref) < fp8_tol(BF16, scales, k)


@pytest.mark.parametrize("block", [128, None])
@pytest.mark.parametrize("dtype", [E4M3, E5M2])
@pytest.mark.parametrize("x_dtype", [BF16, FP16])
def test_quantize_fp8_follows_its_rule_bit_for_bit(block, dtype, x_dtype):
    m, k = 37, 400  # K off the 128 grid: a last block of 16 columns
    x = rand(m, k, dtype=x_dtype, scale=3.0)
    x[5] = 0  # an all-zero row: scale 1 for its blocks
    x[7, :128] = 0
    q, s = anvil.quantize_fp8(x, block, dtype)
    q_ref, s_ref = quantize_ref(x, block, dtype)
    assert q.dtype == dtype and q.shape == (m, k) and s.dtype == torch.float32 and s.shape == s_ref.shape
    bad = (s != s_ref).nonzero()
    assert bad.numel() == 0, f"{bad.shape[0]} scales differ, first at {bad[0].tolist()}: {s[tuple(bad[0])]} vs {s_ref[tuple(bad[0])]}"
    qb, rb = q.view(torch.uint8), q_ref.view(torch.uint8)
    bad = (qb != rb).nonzero()
    assert bad.numel() == 0, (
        f"{bad.shape[0]} of {m * k} values differ, first at {bad[0].tolist()}: x = {x[tuple(bad[0])].item()}, "
        f"got byte {qb[tuple(bad[0])].item():#04x}, expected {rb[tuple(bad[0])].item():#04x}"
    )


def test_fp8_cuda_graph_rereads_scales():
    # The scales are read by the kernel on every launch: a graph replays with new ones.
    m, n, k = 16, 256, 512
    x, (wq, sw) = rand(m, k), quantize_weight_blocks(rand(n, k, scale=k**-0.5))
    def step():
        xq, sx = anvil.quantize_fp8(x)
        return anvil.linear_fp8(xq, wq, sx, sw)

    g, y = capture_graph(step)
    for _ in range(3):
        x.copy_(rand(m, k))
        sw.mul_(1.5)
        g.replay()
        torch.cuda.synchronize()
        assert torch.equal(y, step())


# ---- grouped FP8 (torch._scaled_grouped_mm) ---------------------------------------------------


def grouped_fp8_operands(rows, experts, n, k):
    """Row-wise quantized MoE operands in torch._scaled_grouped_mm's layout: a [rows, K], the
    weights [E, N, K] (pass .transpose(-2, -1)), scale_a [rows], scale_b [E, N], each scale
    amax / fmax times a random factor in [0.5, 1.5]."""
    x, w = rand(rows, k).float(), rand(experts, n, k, scale=k**-0.5).float()
    sa = x.abs().amax(1).clamp_min(1e-12) / FMAX[E4M3] * (0.5 + torch.rand(rows, device=DEV))
    sb = w.abs().amax(2).clamp_min(1e-12) / FMAX[E4M3] * (0.5 + torch.rand(experts, n, device=DEV))
    aq = (x / sa[:, None]).clamp(-FMAX[E4M3], FMAX[E4M3]).to(E4M3)
    wq = (w / sb[:, :, None]).clamp(-FMAX[E4M3], FMAX[E4M3]).to(E4M3)
    return aq, wq, sa, sb


def ref_scaled_grouped(aq, wq, sa, sb, starts, ends, bias=None):
    """fp32 per-expert loop over the dequantized operands; sa one value or [rows], sb one
    value, [E] or [E, N]."""
    a = aq.float() * (sa.reshape(-1, 1) if sa.numel() > 1 else sa.reshape(()))
    y = torch.zeros(aq.shape[0], wq.shape[1], device=DEV)
    for e, (s, t) in enumerate(zip(starts, ends)):
        if t > s:
            se = sb.reshape(()) if sb.numel() == 1 else sb[e].reshape(-1, 1) if sb.dim() == 2 else sb[e]
            y[s:t] = a[s:t] @ (wq[e].float() * se).t()
            if bias is not None:
                y[s:t] += bias[e].float()
    return y


@pytest.mark.parametrize("out_dtype", [None, FP16, torch.float32])
@pytest.mark.parametrize("index_dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("shape", [(384, 256), (208, 144), (512, 2048)])  # (N, K): on and off the tile grid
def test_scaled_grouped_mm_matches_dequantized_reference(out_dtype, index_dtype, shape):
    n, k = shape
    counts = [0, 1, 37, 0, 300, 64, 129, 5]  # empty, one-row, unaligned and multi-tile experts
    experts, routed = len(counts), sum(counts)
    rows = routed + 11  # trailing rows no expert owns
    aq, wq, sa, sb = grouped_fp8_operands(rows, experts, n, k)
    offs, starts, ends = routing(counts, index_dtype)
    out = BF16 if out_dtype is None else out_dtype
    for bias in (None, rand(experts, n, dtype=torch.float32)):
        y = anvil.scaled_grouped_mm(aq, wq.transpose(-2, -1), sa, sb, offs, bias, out_dtype=out_dtype)
        assert y.shape == (rows, n) and y.dtype == out
        ref = ref_scaled_grouped(aq[:routed], wq, sa[:routed], sb, starts, ends, bias)
        assert torch.isfinite(y[:routed]).all()
        err = rel_err(y[:routed], ref)
        assert err < fp8_tol(out, "rowcol", k), (bias is not None, err)


@pytest.mark.parametrize("per_expert", [False, True])
def test_scaled_grouped_mm_per_tensor_scales(per_expert):
    counts, n, k = [3, 0, 140, 1, 257], 256, 512
    experts, rows = len(counts), sum(counts)
    aq, wq, _, _ = grouped_fp8_operands(rows, experts, n, k)
    sa = torch.tensor([0.75], device=DEV)
    sb = (0.5 + torch.rand(experts if per_expert else 1, device=DEV)) * 0.01
    offs, starts, ends = routing(counts, torch.int32)
    y = anvil.scaled_grouped_mm(aq, wq.transpose(-2, -1), sa, sb if per_expert else sb.reshape(()), offs)
    err = rel_err(y, ref_scaled_grouped(aq, wq, sa, sb, starts, ends))
    assert err < fp8_tol(BF16, "tensor", k), err


def test_scaled_grouped_mm_3d_uses_every_row():
    experts, m, n, k = 5, 70, 256, 256
    aq, wq, sa, sb = grouped_fp8_operands(experts * m, experts, n, k)
    y = anvil.scaled_grouped_mm(aq.reshape(experts, m, k), wq.transpose(-2, -1), sa.reshape(experts, m), sb)
    assert y.shape == (experts, m, n)
    starts = [e * m for e in range(experts)]
    ref = ref_scaled_grouped(aq, wq, sa, sb, starts, [s + m for s in starts])
    assert rel_err(y.reshape(experts * m, n), ref) < fp8_tol(BF16, "rowcol", k)


def dequantize_blocks(q, scale, rows_major):
    """q [R, K] times its block scales: scale [ceil(K/128), R] (rows_major: one per row and 128
    columns, quantize_fp8's layout) or [ceil(R/128), ceil(K/128)] (one per 128 x 128 block)."""
    r, k = q.shape
    cols = torch.arange(k, device=q.device) // 128
    if rows_major:
        return q.float() * scale[cols].t()
    return q.float() * scale[torch.arange(r, device=q.device) // 128][:, cols]


@pytest.mark.parametrize("out_dtype", [None, torch.float32])
@pytest.mark.parametrize("shape", [(384, 256), (208, 400), (512, 2048)])  # (N, K): on and off the 128 grid
def test_scaled_grouped_mm_block_scales(out_dtype, shape):
    # DeepSeek-V3 blocks: scale_a [ceil(K/128), rows] from quantize_fp8, scale_b [E, ceil(N/128),
    # ceil(K/128)]; contiguous (2-D, torch's offs) and stacked (3-D) mat_a, with a bias.
    n, k = shape
    counts = [0, 1, 37, 0, 300, 64, 129, 5]
    experts, routed = len(counts), sum(counts)
    rows = routed + 11
    aq, sa = anvil.quantize_fp8(rand(rows, k))
    wq, sb = zip(*(quantize_weight_blocks(rand(n, k, scale=k**-0.5)) for _ in range(experts)))
    wq, sb = torch.stack(wq), torch.stack(sb)
    offs, starts, ends = routing(counts, torch.int32)
    bias = rand(experts, n, dtype=torch.float32)
    a = dequantize_blocks(aq, sa, True)
    ref = torch.zeros(rows, n, device=DEV)
    for e, (s0, s1) in enumerate(zip(starts, ends)):
        if s1 > s0:
            ref[s0:s1] = a[s0:s1] @ dequantize_blocks(wq[e], sb[e], False).t() + bias[e]
    y = anvil.scaled_grouped_mm(aq, wq.transpose(-2, -1), sa, sb, offs, bias, out_dtype=out_dtype)
    out = BF16 if out_dtype is None else out_dtype
    assert y.shape == (rows, n) and y.dtype == out
    assert rel_err(y[:routed], ref[:routed]) < fp8_tol(out, "block", k)
    # Stacked: every expert its M rows; scale_a over the E x M storage rows.
    m = 70
    aq3, sa3 = anvil.quantize_fp8(rand(experts * m, k))
    y3 = anvil.scaled_grouped_mm(aq3.reshape(experts, m, k), wq.transpose(-2, -1), sa3, sb, out_dtype=out_dtype)
    a3 = dequantize_blocks(aq3, sa3, True).reshape(experts, m, k)
    ref3 = torch.stack([a3[e] @ dequantize_blocks(wq[e], sb[e], False).t() for e in range(experts)])
    assert y3.shape == (experts, m, n)
    assert rel_err(y3, ref3) < fp8_tol(out, "block", k)


@pytest.mark.skipif(not hasattr(torch, "_scaled_grouped_mm"), reason="torch has no _scaled_grouped_mm")
def test_scaled_grouped_mm_agrees_with_torch():
    # The same call on torch's op: same arguments, same result up to FP8 accumulation (torch
    # promotes to fp32 with use_fast_accum=False; anvil sums the whole K in the tensor cores).
    counts, n, k = [0, 1, 37, 0, 300, 64, 129, 5], 512, 1024
    experts, rows = len(counts), sum(counts)
    aq, wq, sa, sb = grouped_fp8_operands(rows, experts, n, k)
    offs, _, _ = routing(counts, torch.int32)
    args = (aq, wq.transpose(-2, -1), sa, sb, offs)
    ours = anvil.scaled_grouped_mm(*args, out_dtype=BF16)
    theirs = torch._scaled_grouped_mm(*args, out_dtype=BF16)
    assert rel_err(ours, theirs.float()) < fp8_tol(BF16, "rowcol", k)


def test_scaled_grouped_mm_cuda_graph_replays_with_new_routing_and_scales():
    experts, k, n, rows = 6, 256, 384, 200
    aq, wq, sa, sb = grouped_fp8_operands(rows, experts, n, k)
    offs = torch.zeros(experts, device=DEV, dtype=torch.int32)
    routings = [[10, 0, 50, 40, 100, 0], [0, 0, 0, 0, 0, 200], [1, 2, 3, 4, 5, 6]]
    step = lambda: anvil.scaled_grouped_mm(aq, wq.transpose(-2, -1), sa, sb, offs)  # noqa: E731
    offs.copy_(routing(routings[0], torch.int32)[0])
    g, y = capture_graph(step)
    for r in routings:
        o, starts, ends = routing(r, torch.int32)
        offs.copy_(o)
        sb.mul_(1.25)
        g.replay()
        torch.cuda.synchronize()
        routed = ends[-1]
        assert torch.equal(y[:routed], step()[:routed]), f"replay differs from eager for routing {r}"
        ref = ref_scaled_grouped(aq[:routed], wq, sa[:routed], sb, starts, ends)
        assert rel_err(y[:routed], ref) < fp8_tol(BF16, "rowcol", k), r


def opcheck_fp8(op, args, kwargs):
    """torch.library.opcheck for an op with float8 inputs. torch's schema check compares each
    input before and after the call with ops (mul) that float8 tensors lack on CUDA; the same
    properties are checked here byte for byte: no input changed, the output aliases none."""
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    as_bytes = lambda t: t.view(torch.uint8) if t.dtype in (E4M3, E5M2) else t  # noqa: E731
    before = [as_bytes(t).clone() for t in tensors]
    out = op(*args, **kwargs)
    assert all(torch.equal(b, as_bytes(t)) for b, t in zip(before, tensors)), f"{op} changed an input"
    assert all(out.data_ptr() != t.data_ptr() for t in tensors), f"{op} aliases an input"
    torch.library.opcheck(op, args, kwargs,
                          test_utils=("test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic"))


def test_opcheck_grouped_and_fp8_ops():
    x, w = rand(40, 128), rand(3, 256, 128, scale=1 / 11)
    offs = torch.tensor([10, 10, 40], device=DEV, dtype=torch.int32)
    xq, wq, sx, sw = fp8_operands(8, 256, 256, "block")
    xqt, wqt, sxt, swt = fp8_operands(8, 256, 256, "tensor")
    xqr, wqr, sxr, swr = fp8_operands(8, 256, 256, "rowcol")
    cases = [
        (torch.ops.anvil.grouped_mm.default, (x, w, offs, rand(3, 256), "gelu"), {}),
        (torch.ops.anvil.grouped_mm.default, (x, w, offs.long()), {}),
        (torch.ops.anvil.grouped_mm_masked.default, (rand(3, 16, 128), w, torch.tensor([0, 16, 5], device=DEV), None, "silu"), {}),
        (torch.ops.anvil.linear_fp8.default, (xq, wq, sx, sw), {}),
        (torch.ops.anvil.linear_fp8.default, (xqt, wqt, sxt, swt, rand(256, dtype=FP16)), {"scales": "tensor", "out_dtype": FP16}),
        (torch.ops.anvil.linear_fp8.default, (xqr, wqr, sxr, swr), {"scales": "rowcol", "activation": "relu", "out_dtype": torch.float32}),
        (torch.ops.anvil.quantize_fp8.default, (rand(8, 256),), {}),
        (torch.ops.anvil.quantize_fp8.default, (rand(8, 256, dtype=FP16), None, E5M2), {}),
    ]
    for op, args, kwargs in cases:
        if any(isinstance(a, torch.Tensor) and a.dtype in (E4M3, E5M2) for a in args):
            opcheck_fp8(op, args, kwargs)
        else:
            torch.library.opcheck(op, args, kwargs)


def test_opcheck_scaled_grouped_mm():
    # The output rows past offs[E-1] are left unwritten (torch.empty, as torch's op): every
    # row is routed here, so the runs opcheck compares agree.
    offs = torch.tensor([10, 10, 40], device=DEV, dtype=torch.int32)
    aq, wq, sa, sb = grouped_fp8_operands(40, 3, 256, 128)
    op = torch.ops.anvil.scaled_grouped_mm.default
    cases = [
        ((aq, wq.transpose(-2, -1), sa, sb, offs), {}),
        ((aq, wq.transpose(-2, -1), sa[:1].clone(), sb[:, 0].contiguous(), offs.long(), rand(3, 256, dtype=torch.float32)),
         {"out_dtype": FP16}),
        ((aq[:36].reshape(3, 12, 128), wq.transpose(-2, -1), sa[:36].reshape(3, 12), sb), {"use_fast_accum": True}),
    ]
    for args, kwargs in cases:
        opcheck_fp8(op, args, kwargs)
