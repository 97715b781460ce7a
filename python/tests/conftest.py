"""Shared pytest setup: the anvil import (skipped where the package is not built) and the
GPU gate (tests marked gpu skip without an sm_90 device, with the reason)."""

import pytest

try:
    import torch
except ImportError:  # nothing here can run without torch: collect nothing
    torch = None
    collect_ignore_glob = ["test_*.py"]


def _anvil_or_reason():
    if torch is None:
        return None, "torch is not installed"
    try:
        import anvil  # noqa: F401

        return anvil, None
    except ImportError as e:  # not built here, or built for another torch (the message says which)
        return None, f"anvil is not importable: {e}"


ANVIL, ANVIL_MISSING = _anvil_or_reason()


def _gpu_reason():
    if torch is None:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA device"
    major, minor = torch.cuda.get_device_capability()
    if (major, minor) != (9, 0):
        return f"anvil's kernels need sm_90 (device is sm_{major}{minor})"
    return None


GPU_MISSING = _gpu_reason()


def pytest_collection_modifyitems(config, items):
    for item in items:
        if ANVIL_MISSING is not None:
            item.add_marker(pytest.mark.skip(reason=ANVIL_MISSING))
        elif "gpu" in item.keywords and GPU_MISSING is not None:
            item.add_marker(pytest.mark.skip(reason=GPU_MISSING))
