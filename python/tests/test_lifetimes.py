"""Lifetimes: the device, the buffer and the tensors die in any order; a capsule is consumed
once; a closed device refuses use."""

from __future__ import annotations

import gc
import os
from typing import Any

import numpy as np
import pytest

import vkhip


class Once:
    """Hands NumPy the same capsule every time: the second use must be refused."""

    def __init__(self, capsule: Any, device: tuple[int, int]) -> None:
        self.capsule, self.device = capsule, device

    def __dlpack__(self, **_: Any) -> Any:
        return self.capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.device


def test_the_tensor_outlives_the_device_and_the_buffer() -> None:
    dev = vkhip.Device("host")
    buf = dev.buffer(4096, "uint32")
    buf.vulkan_fill(0xDEADBEEF)
    a = np.from_dlpack(buf)
    dev.close()
    del dev, buf
    gc.collect()
    assert (a == 0xDEADBEEF).all(), "the Vulkan memory lives as long as the array"
    a[:] = 7  # still writable, still mapped
    assert int(a.sum()) == 7 * 4096
    del a
    gc.collect()


def test_the_device_dies_first_then_the_buffer() -> None:
    dev = vkhip.Device("host")
    buf = dev.buffer(16)
    del dev
    gc.collect()
    buf.vulkan_fill(2.0)  # the buffer holds the device
    with buf:
        assert (np.from_dlpack(buf) == 2.0).all()


def test_a_capsule_is_consumed_once(dev: vkhip.Device) -> None:
    buf = dev.buffer(8)
    buf.vulkan_fill(1.5)
    once = Once(buf.__dlpack__(), buf.__dlpack_device__())
    a = np.from_dlpack(once)
    assert (a == 1.5).all()
    with pytest.raises((RuntimeError, ValueError, BufferError, TypeError)):
        np.from_dlpack(once)
    del once
    gc.collect()
    assert (a == 1.5).all(), "the first consumer's tensor is unaffected"


def test_an_unconsumed_capsule_frees_its_reference(dev: vkhip.Device) -> None:
    buf = dev.buffer(8)
    for _ in range(1000):
        buf.__dlpack__()  # dropped unconsumed: its destructor runs the deleter
    gc.collect()


def test_use_after_close_is_an_error_and_close_twice_is_not(dev: vkhip.Device) -> None:
    buf = dev.buffer(8)
    dev.close()
    dev.close()
    assert dev.closed
    for call in (
        lambda: buf.vulkan_fill(1.0),
        lambda: buf.vulkan_read(),
        lambda: buf.vulkan_write(b"1234"),
        lambda: buf.__dlpack__(),
        lambda: buf.release(),
        lambda: dev.buffer(8),
    ):
        with pytest.raises(vkhip.ClosedError, match=r"used after close\(\)"):
            call()


def test_buffers_come_and_go_with_no_fd_or_memory_growth(dev: vkhip.Device) -> None:
    def one() -> None:
        b = dev.buffer((256, 256))
        b.vulkan_fill(3.0)
        with b:
            assert float(np.from_dlpack(b)[255, 255]) == 3.0

    for _ in range(20):
        one()
    gc.collect()
    fds = len(os.listdir("/proc/self/fd"))
    for _ in range(200):
        one()
    gc.collect()
    assert len(os.listdir("/proc/self/fd")) == fds
