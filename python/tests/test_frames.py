"""Frames into the framework on the host path (lavapipe): the app's renderer, K = 3 buffers in
flight, each frame read through DLPack after Vulkan's copy, released in order."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import vkhip

ARGS = {"size": (96, 64), "grid": (32, 24), "slots": 3, "api": "host"}


def test_frames_are_drawn_animated_and_reproducible() -> None:
    a = vkhip.Frames(**ARGS)  # type: ignore[arg-type]
    assert a.size == (96, 64) and a.slots == 3 and a.dlpack_device == (1, 0)
    seen = []
    for i in range(10):
        f = a.render()
        assert (f.index, f.slot, f.shape) == (i, i % 3, (64, 96, 4))
        with f:
            px = np.from_dlpack(f)
            assert px.shape == (64, 96, 4) and px.dtype == np.uint8
            seen.append(px.copy())
    assert all((s[..., 3] == 255).all() for s in seen), "opaque RGBA"
    assert len({s.tobytes() for s in seen}) > 1, "the surface moves from frame to frame"
    assert any(len(np.unique(s.reshape(-1, 4), axis=0)) > 50 for s in seen), (
        "a drawn surface, not a clear"
    )
    # The same flags draw the same frames (simulation time is frame × dt).
    b = vkhip.Frames(**ARGS)  # type: ignore[arg-type]
    for i in range(4):
        with b.render() as f:
            assert np.array_equal(np.from_dlpack(f), seen[i]), f"frame {i} differs between two runs"


def test_k_frames_in_flight_and_no_more() -> None:
    frames = vkhip.Frames(**ARGS)  # type: ignore[arg-type]
    held = [frames.render() for _ in range(3)]
    with pytest.raises(vkhip.InvalidError, match="frame 0 still holds slot 0"):
        frames.render()
    with pytest.raises(vkhip.InvalidError, match="release frames in the order"):
        held[1].release()
    for f in held:
        f.release()
    held[0].release()  # a second release does nothing
    with pytest.raises(vkhip.InvalidError, match="was released"):
        held[0].__dlpack__()
    frames.render().release()


def test_a_frame_tensor_outlives_the_frames() -> None:
    frames = vkhip.Frames(**ARGS)  # type: ignore[arg-type]
    f = frames.render()
    px = np.from_dlpack(f)
    first = px.copy()
    f.release()
    del f, frames
    gc.collect()
    assert np.array_equal(px, first), "the buffer lives as long as the array"


def test_bad_frames_options() -> None:
    with pytest.raises(vkhip.InvalidError, match="K is 1..=8"):
        vkhip.Frames(size=(8, 8), slots=9, api="host")
    with pytest.raises(vkhip.InvalidError, match="--capture"):
        vkhip.Frames(size=(8, 8), api="host", args=["--capture", "x.png"])
    with pytest.raises(vkhip.InvalidError, match="grid"):
        vkhip.Frames(size=(8, 8), api="host", grid=(1, 5))
    with pytest.raises(vkhip.InvalidError, match='api "metal"'):
        vkhip.Frames(api="metal")  # type: ignore[arg-type]
