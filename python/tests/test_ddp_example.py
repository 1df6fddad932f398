"""The torch.distributed example (python/examples/ddp_frames.py) learns what its labels say each
frame shows: checked here against the renderer on lavapipe (the training itself needs CUDA GPUs
and torch: scripts/multi-gpu-check.sh). Its label is 2φ, φ = 1.5·t: frames whose labels agree look
the same, frames whose labels differ do not."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

import vkhip


def example() -> ModuleType:
    path = Path(__file__).resolve().parents[1] / "examples" / "ddp_frames.py"
    spec = importlib.util.spec_from_file_location("ddp_frames", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pictures(dt: float, n: int) -> list[np.ndarray]:
    try:
        frames = vkhip.Frames(
            size=(48, 48), slots=2, api="host", grid=(64, 64), args=["--dt", repr(dt)]
        )
    except vkhip.UnavailableError as e:
        pytest.skip(f"needs a Vulkan device the host can map: {e}")
    out = []
    for _ in range(n):
        with frames.render() as f:
            out.append(np.from_dlpack(f)[..., :3].astype(np.float32).copy())
    return out


def distance(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a - b).mean())


def test_the_labels_are_what_the_frames_show() -> None:
    ex = example()
    # φ steps π per frame: the label (2φ) never changes, and neither does the picture.
    dt = math.pi / ex.WAVE_SPEED
    same = pictures(dt, 4)
    assert {round(ex.label(f, dt), 6) % round(2 * math.pi, 6) for f in range(4)} == {0.0}
    assert max(distance(same[0], p) for p in same[1:]) < 1.0
    # φ steps π/2: the label alternates 0, π; the pictures alternate with it.
    dt = math.pi / (2 * ex.WAVE_SPEED)
    alt = pictures(dt, 4)
    assert [round(ex.label(f, dt), 6) for f in range(4)] == [
        0.0,
        round(math.pi, 6),
        0.0,
        round(math.pi, 6),
    ]
    assert distance(alt[0], alt[2]) < 1.0 and distance(alt[1], alt[3]) < 1.0
    assert distance(alt[0], alt[1]) > 5.0, distance(alt[0], alt[1])


def test_the_arguments_are_checked() -> None:
    ex = example()
    a = ex.parse_args([])
    assert (a.steps, a.batch, a.size, a.dt) == (300, 16, 64, 0.8)
    with pytest.raises(SystemExit):
        ex.parse_args(["--steps", "5"])
