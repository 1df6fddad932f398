"""N views a frame on the host path (lavapipe): ``Frames(views=N)`` gives ``(N, H, W, 4)``, each
view byte for byte the picture of its camera rendered alone; poses from NumPy, lists and back;
``view(write, views=N)`` hands the writer ``(N, rows, cols)`` heights; every refusal is the
documented exception."""

from __future__ import annotations

import re

import numpy as np
import pytest

import vkhip

# Odd sizes: rows and views that are not multiples of anything.
ARGS = {"size": (37, 23), "grid": (16, 12), "slots": 2, "api": "host"}
H, W = 23, 37


def first_frame(frames: vkhip.Frames) -> np.ndarray:
    with frames.render() as f:
        return np.from_dlpack(f).copy()


def test_n_views_into_numpy() -> None:
    frames = vkhip.Frames(views=5, **ARGS)  # type: ignore[arg-type]
    assert (frames.views, frames.envs, frames.size) == (5, 1, (W, H))
    for i in range(3):
        f = frames.render()
        assert (f.index, f.views, f.shape) == (i, 5, (5, H, W, 4))
        with f:
            px = np.from_dlpack(f)
            assert px.shape == (5, H, W, 4) and px.dtype == np.uint8
            assert px.flags.c_contiguous, "one contiguous (N, H, W, 4) tensor"
            assert (px[..., 3] == 255).all(), "every view opaque RGBA"
            views = {px[v].tobytes() for v in range(5)}
            assert len(views) == 5, "five cameras, five pictures"


def test_each_view_equals_its_camera_rendered_alone() -> None:
    n = 5
    frames = vkhip.Frames(views=n, **ARGS)  # type: ignore[arg-type]
    poses = np.array(frames.poses, dtype=np.float32)
    assert poses.shape == (n, 10)
    assert np.array_equal(poses, np.array(vkhip.Frames.default_poses(n), dtype=np.float32))
    many = first_frame(frames)
    for i in range(n):
        alone = vkhip.Frames(views=1, poses=poses[i : i + 1], **ARGS)  # type: ignore[arg-type]
        one = first_frame(alone)
        assert one.shape == (1, H, W, 4)
        assert np.array_equal(one[0], many[i]), f"view {i} differs from its camera alone"


def test_without_views_a_frame_is_todays_picture() -> None:
    """No ``views=``: ``(H, W, 4)`` as before, the app's one camera, which is view 0 of N."""
    today = vkhip.Frames(**ARGS)  # type: ignore[arg-type]
    assert today.views == 1
    px = first_frame(today)
    assert px.shape == (H, W, 4)
    assert np.array_equal(px, first_frame(vkhip.Frames(views=3, **ARGS))[0])  # type: ignore[arg-type]


def test_envs_give_each_view_its_own_height_field() -> None:
    shared = first_frame(vkhip.Frames(views=3, **ARGS))  # type: ignore[arg-type]
    own = vkhip.Frames(views=3, envs=3, **ARGS)  # type: ignore[arg-type]
    assert own.envs == 3
    px = first_frame(own)
    assert np.array_equal(px[0], shared[0]), "environment 0 is the one field of envs=1"
    for v in (1, 2):
        assert not np.array_equal(px[v], shared[v]), f"view {v} draws environment {v}"


def test_poses_from_numpy_and_lists_move_the_cameras() -> None:
    poses = np.array(vkhip.Frames.default_poses(3), dtype=np.float64)
    poses[1, 0:3] *= 0.7  # view 1's eye closer to the surface
    poses[2, 9] = 30.0  # view 2 zoomed in
    a = vkhip.Frames(views=3, poses=poses, **ARGS)  # type: ignore[arg-type]
    assert np.array_equal(np.array(a.poses, dtype=np.float32), poses.astype(np.float32))
    moved = first_frame(a)
    b = vkhip.Frames(views=3, **ARGS)  # type: ignore[arg-type]
    default = first_frame(b)
    assert np.array_equal(moved[0], default[0]), "view 0 kept its pose"
    assert not np.array_equal(moved[1], default[1]) and not np.array_equal(moved[2], default[2])
    c = vkhip.Frames(views=3, **ARGS)  # type: ignore[arg-type]
    c.set_poses(poses.astype(np.float32).tolist())  # a list of lists, set before the first frame
    assert np.array_equal(first_frame(c), moved)


def test_poses_from_any_array_or_dlpack_producer(dev: vkhip.Device) -> None:
    poses = np.array(vkhip.Frames.default_poses(2), dtype=np.float32)
    poses[:, 9] = [35.0, 55.0]

    class OnlyArray:
        def __array__(self, dtype: object = None, copy: object = None) -> np.ndarray:
            return poses

    frames = vkhip.Frames(views=2, **ARGS)  # type: ignore[arg-type]
    frames.set_poses(OnlyArray())
    assert np.array_equal(np.array(frames.poses, dtype=np.float32), poses)
    buf = dev.buffer((2, 10), "float32")  # a DLPack producer with no __array__ or tolist()
    buf.vulkan_write((poses + np.float32(1.0)).tobytes())
    with buf:
        frames.set_poses(buf)
    assert np.array_equal(np.array(frames.poses, dtype=np.float32), poses + np.float32(1.0))


@pytest.mark.parametrize(
    ("poses", "message"),
    [
        (
            np.zeros((2, 10), np.float32),
            r"poses of shape \(2, 10\): expected \(N, 10\) = \(3, 10\)",
        ),
        (np.zeros((3, 9), np.float32), r"poses of shape \(3, 9\)"),
        (np.zeros(10, np.float32), r"poses of shape \(10,\)"),
        (np.zeros((3, 10, 1), np.float32), r"poses of shape \(3, 10, 1\)"),
        (np.zeros((3, 10), np.int32), "poses of dtype int32: expected a floating dtype"),
        (np.zeros((3, 10), bool), "poses of dtype bool"),
        ([[0.0] * 10, [0.0] * 10, [0.0] * 9], "row 2 has 9 numbers, row 0 has 10"),
        ("eye", "expected an \\(N, 10\\) array of floats"),
    ],
)
def test_bad_pose_shapes_and_dtypes(poses: object, message: str) -> None:
    frames = vkhip.Frames(views=3, **ARGS)  # type: ignore[arg-type]
    before = frames.poses
    with pytest.raises(vkhip.InvalidError, match=message):
        frames.set_poses(poses)
    assert frames.poses == before, "nothing changes on an error"
    with pytest.raises(vkhip.InvalidError, match=message):
        vkhip.Frames(views=3, poses=poses, **ARGS)  # type: ignore[arg-type]


def test_bad_pose_values_name_the_view() -> None:
    frames = vkhip.Frames(views=3, **ARGS)  # type: ignore[arg-type]
    poses = np.array(frames.poses, dtype=np.float32)
    poses[1, 4] = np.nan
    with pytest.raises(vkhip.InvalidError, match="pose 1"):
        frames.set_poses(poses)
    poses = np.array(frames.poses, dtype=np.float32)
    poses[2, 3:6] = poses[2, 0:3]  # looks at its own eye
    with pytest.raises(vkhip.InvalidError, match="pose 2"):
        frames.set_poses(poses)


@pytest.mark.parametrize("n", [0, -3])
def test_bad_view_counts(n: int) -> None:
    with pytest.raises(vkhip.InvalidError, match=f"views={n}: at least 1"):
        vkhip.Frames(views=n, **ARGS)  # type: ignore[arg-type]
    with pytest.raises(vkhip.InvalidError, match=f"envs={n}: at least 1"):
        vkhip.Frames(views=2, envs=n, **ARGS)  # type: ignore[arg-type]


@pytest.mark.parametrize("asked", [60_000, 100_000, 2**32 - 1])
def test_views_past_the_devices_limit(asked: int) -> None:
    # Past any device's layers: the device's limit, whatever the count (no bound of the door's
    # own below u32's last).
    with pytest.raises(vkhip.LimitError) as e:
        vkhip.Frames(size=(8, 8), views=asked, api="host")
    m = re.search(r"past this device's (max\w+) \((\d+)\)", str(e.value))
    assert m, str(e.value)
    assert str(asked) in str(e.value) and 0 < int(m.group(2)) < asked, str(e.value)


def test_the_writer_gets_n_environments() -> None:
    flags = ["--frames", "2", "--grid", "8x6", "--size", "24x16"]
    seen: list[tuple[tuple[int, ...], tuple[int, ...]]] = []

    def write(frame: int, t: float, heights: vkhip.Heights) -> None:
        h = np.from_dlpack(heights)
        seen.append((heights.shape, h.shape))
        for e in range(h.shape[0]):
            h[e] = 0.05 * e  # environment e: a flat surface at its own height

    result = vkhip.view(write, api="host", headless=True, views=3, args=flags)
    assert result.frames == 2 and len(seen) >= 2
    assert all(s == ((3, 6, 8), (3, 6, 8)) for s in seen), seen
    seen.clear()
    vkhip.view(write, api="host", headless=True, views=3, envs=1, args=flags)
    assert all(s == ((1, 6, 8), (1, 6, 8)) for s in seen), seen
    seen.clear()
    vkhip.view(write, api="host", headless=True, args=flags)
    assert all(s == ((6, 8), (6, 8)) for s in seen), "no views=: today's (rows, cols)"


def test_bad_view_options() -> None:
    def write(frame: int, t: float, heights: vkhip.Heights) -> None:
        np.from_dlpack(heights)[...] = 0.0

    with pytest.raises(vkhip.InvalidError, match="views=0: at least 1"):
        vkhip.view(write, api="host", headless=True, views=0)
    with pytest.raises(vkhip.InvalidError, match="envs= without views="):
        vkhip.view(write, api="host", headless=True, envs=2)
    with pytest.raises(vkhip.LimitError, match=r"past this device's max\w+ \(\d+\)"):
        vkhip.view(write, api="host", headless=True, views=60_000, envs=1, args=["--frames", "1"])
    # envs = N (the default): N height fields past maxStorageBufferRange, also a LimitError.
    with pytest.raises(vkhip.LimitError) as e:
        vkhip.view(write, api="host", headless=True, views=60_000, args=["--frames", "1"])
    limit = r"--envs 60000 of --grid \d+x\d+ \(bytes\): (\d+) is past this device's "
    m = re.search(limit + r"maxStorageBufferRange \((\d+)\)", str(e.value))
    assert m and int(m.group(2)) < int(m.group(1)), str(e.value)


def test_gpu_times_only_when_asked() -> None:
    # The raster limit of the benchmark: Vulkan's timestamps around each frame's draw and copy.
    untimed = vkhip.Frames(views=3, **ARGS)  # type: ignore[arg-type]
    for _ in range(12):  # as many frames as the timed run below gives times for
        first_frame(untimed)
    assert untimed.gpu_times() is None, "no timestamps unless gpu_times=True"
    frames = vkhip.Frames(views=3, gpu_times=True, **ARGS)  # type: ignore[arg-type]
    # The draws' times reach gpu_times() as the profiler's batches of frames end (every 8).
    for _ in range(12):
        first_frame(frames)
    g = frames.gpu_times()
    assert g is not None and g.frames >= 1
    assert g.draw_ns_p50 > 0 and g.copy_ns_p50 > 0
    assert g.raster_ns_p50 >= max(g.draw_ns_p50, g.copy_ns_p50)
