"""A shared buffer on the host path: NumPy and Vulkan each read what the other wrote, every
value checked, through DLPack (no copy)."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import vkhip


def capsule_name(capsule: object) -> bytes:
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype = ctypes.c_char_p
    get_name.argtypes = [ctypes.py_object]
    name = get_name(capsule)
    assert name is not None
    return name


def test_numpy_writes_and_vulkan_reads_every_value(dev: vkhip.Device) -> None:
    buf = dev.buffer((64, 33), "float32", name="heights")
    assert (buf.shape, buf.dtype, buf.nbytes, buf.name) == (
        (64, 33),
        "float32",
        64 * 33 * 4,
        "heights",
    )
    assert buf.__dlpack_device__() == (1, 0) == dev.dlpack_device
    with buf:
        a = np.from_dlpack(buf)
        assert a.shape == (64, 33) and a.dtype == np.float32
        assert a.ctypes.data == buf.data_ptr, "NumPy views Vulkan's memory: no copy"
        want = np.arange(64 * 33, dtype=np.float32).reshape(64, 33) * 0.5 - 7.0
        a[...] = want
    got = np.frombuffer(buf.vulkan_read(), dtype=np.float32).reshape(64, 33)
    np.testing.assert_array_equal(got, want)


def test_vulkan_fills_and_writes_and_numpy_reads_every_value(dev: vkhip.Device) -> None:
    buf = dev.buffer(1000, "int32")
    buf.vulkan_fill(-123456)
    with buf:
        a = np.from_dlpack(buf)
        assert (a == -123456).all()
    data = np.arange(999, -1, -1, dtype=np.int32)
    buf.vulkan_write(data.tobytes())
    with buf:
        np.testing.assert_array_equal(np.from_dlpack(buf), data)
    buf.vulkan_write(b"\x01\x00\x00\x00")  # a prefix only: the rest stays
    with buf:
        b = np.from_dlpack(buf)
        assert b[0] == 1 and (b[1:] == data[1:]).all()


@pytest.mark.parametrize(
    ("dtype", "value", "np_dtype"),
    [
        ("float32", 3.25, np.float32),
        ("uint8", 200, np.uint8),
        ("int8", -5, np.int8),
        ("uint16", 60000, np.uint16),
        ("int16", -300, np.int16),
        ("uint32", 4_000_000_000, np.uint32),
        ("int32", -7, np.int32),
        ("float64", 0, np.float64),
        ("int64", 0, np.int64),
    ],
)
def test_every_dtype_fills_and_reads(
    dev: vkhip.Device, dtype: str, value: float, np_dtype: type
) -> None:
    buf = dev.buffer((4, 16), dtype)
    buf.vulkan_fill(value)
    with buf:
        a = np.from_dlpack(buf)
        assert a.dtype == np_dtype
        assert (a == np_dtype(value)).all()


def test_dtype_spellings(dev: vkhip.Device) -> None:
    for spelling in ["float32", "f4", np.float32, np.dtype("float32"), "torch.float32"]:
        assert dev.buffer(4, spelling).dtype == "float32"
    assert dev.buffer(4, "<u2").dtype == "uint16"


def test_capsules_versioned_when_asked_legacy_otherwise(dev: vkhip.Device) -> None:
    buf = dev.buffer(8)
    assert capsule_name(buf.__dlpack__()) == b"dltensor"
    assert capsule_name(buf.__dlpack__(max_version=(1, 0))) == b"dltensor_versioned"
    assert capsule_name(buf.__dlpack__(max_version=(0, 8))) == b"dltensor"
    buf.release()


def test_dlpack_refuses_a_copy_or_another_device(dev: vkhip.Device) -> None:
    buf = dev.buffer(8)
    with pytest.raises(BufferError, match="never copies"):
        buf.__dlpack__(copy=True)
    with pytest.raises(BufferError, match=r"not \(2, 0\)"):
        buf.__dlpack__(dl_device=(2, 0))
    with pytest.raises(BufferError, match="CPU consumer passes stream=None"):
        buf.__dlpack__(stream=5)
    buf.__dlpack__(copy=False, dl_device=(1, 0))  # what NumPy passes


def test_turns_count_both_sides(dev: vkhip.Device) -> None:
    buf = dev.buffer(16)
    assert buf.turns == (0, 0)
    for i in range(3):
        buf.vulkan_fill(float(i))
        with buf:
            assert (np.from_dlpack(buf) == i).all()
    assert buf.turns == (3, 3)
