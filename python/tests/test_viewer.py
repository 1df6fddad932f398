"""The viewer driven from Python on the host path: NumPy writes the heights (the sine wave of
src/sim.rs, computed in NumPy) and the app draws them; the capture equals the one
`vkhip --backend cpu` writes."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import vkhip

FLAGS = ["--frames", "5", "--grid", "64x48", "--size", "160x120", "--slots", "3"]


def vkhip_binary() -> str:
    """The app (its CPU backend's picture is the reference): VKHIP_BIN, else the checkout's."""
    given = os.environ.get("VKHIP_BIN")
    if given:
        return given
    root = Path(__file__).resolve().parents[2]
    for build in ("debug", "release"):
        candidate = root / "target" / build / "vkhip"
        if candidate.exists():
            return str(candidate)
    found = shutil.which("vkhip")
    if found:
        return found
    if os.environ.get("CI"):
        raise RuntimeError("no vkhip binary: set VKHIP_BIN")
    pytest.skip("needs the vkhip binary: `cargo build` in the checkout, or VKHIP_BIN")


def sine(frame: int, t: float, heights: vkhip.Heights) -> None:
    """src/sim.rs's reference: h = 0.25 · sin(6u + p) · cos(6v + p), p = 1.5 t mod 2π, in f32."""
    h = np.from_dlpack(heights)
    rows, cols = h.shape
    p = np.float32((1.5 * t) % (2 * np.pi))
    u = np.float32(2.0) * np.arange(cols, dtype=np.float32) / np.float32(cols - 1) - np.float32(1.0)
    v = np.float32(2.0) * np.arange(rows, dtype=np.float32) / np.float32(rows - 1) - np.float32(1.0)
    s = np.sin(np.float32(6.0) * u + p)
    c = np.cos(np.float32(6.0) * v + p)
    h[...] = np.float32(0.25) * s[None, :] * c[:, None]


def test_numpy_heights_draw_the_cpu_backends_picture(tmp_path: Path) -> None:
    exe = vkhip_binary()
    ref = tmp_path / "cpu.png"
    subprocess.run(
        [exe, "--headless", "--backend", "cpu", *FLAGS, "--capture", str(ref)],
        check=True,
        capture_output=True,
    )
    out = tmp_path / "numpy.png"
    calls: list[tuple[int, float, tuple[int, int]]] = []

    def write(frame: int, t: float, heights: vkhip.Heights) -> None:
        calls.append((frame, t, heights.shape))
        sine(frame, t, heights)

    result = vkhip.view(write, api="host", headless=True, capture=out, args=FLAGS)
    assert result.frames == 5 and result.capture == str(out)
    assert "frame time" in result.report
    assert [c[0] for c in calls] == list(range(len(calls))) and len(calls) >= 5
    assert all(c[2] == (48, 64) for c in calls)
    cmp = subprocess.run([exe, "compare-png", str(out), str(ref)], capture_output=True, text=True)
    assert cmp.returncode == 0, cmp.stdout + cmp.stderr


def test_the_heights_are_valid_during_the_call_only() -> None:
    kept: list[vkhip.Heights] = []

    def write(frame: int, t: float, heights: vkhip.Heights) -> None:
        kept.append(heights)
        np.from_dlpack(heights)[...] = 0.0

    vkhip.view(
        write, api="host", headless=True, args=["--frames", "2", "--grid", "8x8", "--size", "16x16"]
    )
    with pytest.raises(vkhip.InvalidError, match="used after the writer's call returned"):
        kept[0].__dlpack__()


def test_a_writer_that_raises_stops_the_run_with_its_message() -> None:
    def write(frame: int, t: float, heights: vkhip.Heights) -> None:
        if frame == 2:
            raise ValueError("the policy diverged")
        np.from_dlpack(heights)[...] = 0.0

    with pytest.raises(vkhip.Error, match="the writer raised ValueError: the policy diverged"):
        vkhip.view(
            write,
            api="host",
            headless=True,
            args=["--frames", "6", "--grid", "8x8", "--size", "16x16"],
        )


def test_the_apps_flag_errors_and_refusals() -> None:
    with pytest.raises(vkhip.InvalidError, match="--grid"):
        vkhip.view(sine, api="host", headless=True, grid=(1, 5))
    with pytest.raises(vkhip.InvalidError, match="unexpected argument"):
        vkhip.view(sine, api="host", args=["--no-such-flag"])
    with pytest.raises(vkhip.InvalidError, match="callable"):
        vkhip.view(42, api="host")  # type: ignore[arg-type]
