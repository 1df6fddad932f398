"""The profiler on the host path: Vulkan's fills (GPU timestamps) and NumPy's work (host scopes)
on one clock; the checker proves the correct loop ordered and catches a loop that reads a buffer
without taking its turn."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

import vkhip


def loop(dev: vkhip.Device, frames: int, skip_turn: bool) -> vkhip.Capture:
    prof = vkhip.Profiler(dev)
    bufs = [dev.buffer((64, 64), name=f"slot{i}") for i in range(3)]
    stale = [np.from_dlpack(b) for b in bufs] if skip_turn else []
    for b in bufs:
        b.release()
    total = 0.0
    for f in range(frames):
        b = bufs[f % 3]
        b.vulkan_fill(float(f))
        if skip_turn:
            # A view kept from before: NumPy reads while Vulkan's fill may still run.
            with prof.host_scope("numpy", reads=[b]):
                total += float(stale[f % 3][0, 0])
        else:
            # The turn is taken before the scope: the scope's work is what follows the wait.
            with b:
                a = np.from_dlpack(b)
                with prof.host_scope("numpy", reads=[b]):
                    assert a[0, 0] == f and a[63, 63] == f
        prof.end_frame()
    return prof.finish()


def test_the_correct_loop_is_clean(dev: vkhip.Device, tmp_path: Path) -> None:
    cap = loop(dev, 60, skip_turn=False)
    assert cap.is_clean, cap.violations
    assert cap.pairs_checked >= 50, cap.report
    assert "frame" in cap.report
    trace = tmp_path / "trace.json"
    cap.write_perfetto(trace)
    events = json.loads(trace.read_text())
    names = {e.get("name") for e in (events["traceEvents"] if isinstance(events, dict) else events)}
    assert {"vulkan_fill", "numpy"} <= names


def test_a_read_without_the_turn_is_caught(dev: vkhip.Device) -> None:
    cap = loop(dev, 30, skip_turn=True)
    assert not cap.is_clean
    first = cap.violations[0]
    assert "slot" in first and "numpy" in first and "vulkan_fill" in first, first
