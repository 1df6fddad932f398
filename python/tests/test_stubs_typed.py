"""What an editor and a type checker see: CI runs mypy --strict over this file and the stubs
(``vkhip/_vkhip.pyi``), and pytest runs it (the stubs name what the module has)."""

from __future__ import annotations

import inspect

import numpy as np

import vkhip
from vkhip import _vkhip


def typed_use(dev: vkhip.Device) -> float:
    buf: vkhip.Buffer = dev.buffer((8, 8), "float32", name="typed")
    buf.vulkan_fill(1.0)
    with buf:
        total = float(np.from_dlpack(buf).sum())
    shape: tuple[int, ...] = buf.shape
    assert shape == (8, 8)
    prof = vkhip.Profiler(dev)
    with prof.host_scope("sum", reads=[buf]):
        pass
    prof.end_frame()
    cap: vkhip.Capture = prof.finish()
    assert isinstance(cap.is_clean, bool)
    return total


def test_typed_use(dev: vkhip.Device) -> None:
    assert typed_use(dev) == 64.0


def test_the_stubs_name_what_the_module_has() -> None:
    with open(_vkhip.__file__.rsplit("/", 1)[0] + "/_vkhip.pyi") as f:
        stub = f.read()
    for name, obj in vars(_vkhip).items():
        if name.startswith("_") and name != "__version__":
            continue
        if inspect.isclass(obj):
            assert f"class {name}" in stub, f"{name} has no stub"
            for member in vars(obj):
                if not member.startswith("_") or member in ("__dlpack__", "__dlpack_device__"):
                    assert f"def {member}(" in stub, f"{name}.{member} has no stub"
        elif callable(obj):
            assert f"def {name}(" in stub, f"{name} has no stub"
