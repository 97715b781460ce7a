"""The README's Python quick start, run as written (marked gpu: it needs an sm_90 device)."""

import pathlib
import re

import pytest

pytestmark = pytest.mark.gpu

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"


def quick_start_code() -> str:
    text = README.read_text()
    section = text.split("## Python quick start", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "README.md: no python block under 'Python quick start'"
    return match.group(1)


def test_readme_quick_start_runs():
    pytest.importorskip("anvil")
    import torch

    scope: dict = {}
    exec(compile(quick_start_code(), "README.md (Python quick start)", "exec"), scope)
    torch.cuda.synchronize()
    # The example's results are real: the fused SwiGLU equals its two-GEMM definition.
    x, w, h = scope["x"], scope["w"], scope["h"]
    gate = x.float() @ w[:14336].float().T
    up = x.float() @ w[14336:].float().T
    ref = torch.nn.functional.silu(gate) * up
    err = ((h.float() - ref).abs().max() / ref.abs().max()).item()
    assert err < 2e-2, f"linear_swiglu in the README example: max relative error {err:.3g}"
    assert scope["report"].swapped, "anvil.patch swapped nothing in the README example"
