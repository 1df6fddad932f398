"""Every refusal is a vkhip exception with the crate's one-line message, raised before any GPU
call where the input says enough; nothing crashes the interpreter."""

from __future__ import annotations

import numpy as np
import pytest

import vkhip


def test_the_exception_classes() -> None:
    assert issubclass(vkhip.InvalidError, ValueError) and issubclass(
        vkhip.InvalidError, vkhip.Error
    )
    assert issubclass(vkhip.LimitError, vkhip.InvalidError)
    assert issubclass(vkhip.UnavailableError, vkhip.Error) and issubclass(vkhip.Error, RuntimeError)
    assert issubclass(vkhip.WaitTimeoutError, TimeoutError)


@pytest.mark.parametrize(
    ("shape", "message"),
    [
        ((0,), r"shape \[0\]: every dimension must be at least 1"),
        ((3, -1), r"shape \[3, -1\]: every dimension must be at least 1"),
        ((), r"shape \[\]: every dimension"),
        ("big", "expected an int or a sequence of ints"),
        ((2**40, 2**40), "overflows 64 bits"),
    ],
)
def test_bad_shapes(dev: vkhip.Device, shape: object, message: str) -> None:
    with pytest.raises(vkhip.InvalidError, match=message):
        dev.buffer(shape)


def test_bad_dtype(dev: vkhip.Device) -> None:
    with pytest.raises(vkhip.InvalidError, match=r'dtype "complex64": expected one of float32'):
        dev.buffer(4, "complex64")


def test_an_object_the_device_cannot_hold(dev: vkhip.Device) -> None:
    with pytest.raises(vkhip.LimitError, match="exceeds maxBufferSize"):
        dev.buffer(2**40, "uint8")


def test_bad_fills_and_writes(dev: vkhip.Device) -> None:
    with pytest.raises(vkhip.InvalidError, match="256 does not fit uint8"):
        dev.buffer(4, "uint8").vulkan_fill(256)
    with pytest.raises(vkhip.InvalidError, match="a fill of int32 takes an int"):
        dev.buffer(4, "int32").vulkan_fill(1.5)
    with pytest.raises(vkhip.InvalidError, match="can be filled with 0 only"):
        dev.buffer(4, "float64").vulkan_fill(1.0)
    with pytest.raises(vkhip.InvalidError, match="not whole 32-bit words"):
        dev.buffer(3, "uint8").vulkan_fill(1)
    with pytest.raises(vkhip.InvalidError, match="a write of 17 bytes into a buffer of 16 bytes"):
        dev.buffer(4, "float32").vulkan_write(b"x" * 17)


def test_bad_api_and_streams(dev: vkhip.Device) -> None:
    with pytest.raises(
        vkhip.InvalidError, match='api "metal": expected "auto", "cuda", "hip" or "host"'
    ):
        vkhip.Device("metal")
    with pytest.raises(vkhip.InvalidError, match="not a stream"):
        dev.buffer(4).release(object())
    assert vkhip.stream_number(None) == 1
    assert vkhip.stream_number(0) == 1, "0 and 1 are both the legacy default stream"
    assert vkhip.stream_number(12345) == 12345

    class TorchLike:
        cuda_stream = 77

    class Protocol:
        def __cuda_stream__(self) -> tuple[int, int]:
            return (0, 99)

    assert vkhip.stream_number(TorchLike()) == 77
    assert vkhip.stream_number(Protocol()) == 99


@pytest.mark.parametrize(
    ("number", "why"),
    [
        (-2, "below -1"),
        (4095, "in the first page of memory"),
        (12345, "not a multiple of 8"),
        (123456789, "not a multiple of 8"),
        (1 << 60, "beyond the process's address space"),
    ],
)
def test_a_number_that_is_no_stream_is_refused_before_any_driver_reads_it(
    dev: vkhip.Device, number: int, why: str
) -> None:
    """The numbers that ended the interpreter with SIGSEGV on CUDA (issue 45) are refused by
    value, on every device: the host checks a stream number as CUDA and HIP do. The refused
    release counts no turn, and the buffer goes on working."""
    buf = dev.buffer(4)
    buf.vulkan_write(b"\x01" * 16)
    with buf:
        assert np.from_dlpack(buf).view(np.uint8).tolist() == [1] * 16
        with pytest.raises(vkhip.InvalidError, match=f"stream {number} .*is no stream: {why}"):
            buf.release(number)
        assert buf.turns == (1, 0), "a refused release counts no turn"
    assert buf.turns == (1, 1)
    assert buf.vulkan_read() == b"\x01" * 16


def test_host_memory_has_no_streams(dev: vkhip.Device) -> None:
    """On the host (lavapipe) a stream number means nothing: DLPack's CPU consumer passes None
    (any stream is a BufferError, as the array API says), and release() takes None, 0, 1 or -1;
    a number that could be a stream elsewhere is refused rather than ignored."""
    buf = dev.buffer(4)
    for stream in (2, 8192, 123456789, -5):
        with pytest.raises(BufferError, match=f"stream {stream} given for host memory"):
            buf.__dlpack__(stream=stream)
    for stream in (2, 8192):
        with pytest.raises(vkhip.InvalidError, match=f"release on stream {stream}: host memory"):
            buf.release(stream)
    for stream in (None, 0, 1, -1):
        buf.release(stream)
    assert buf.turns == (0, 4)


@pytest.mark.skipif(vkhip.cuda_driver_present(), reason="this machine has a CUDA driver")
def test_no_cuda_driver_is_an_environment_error() -> None:
    with pytest.raises(vkhip.UnavailableError, match="libcuda"):
        vkhip.Device("cuda")


def test_hip_without_the_feature_says_how_to_build_it() -> None:
    try:
        vkhip.Device("hip")
    except vkhip.UnavailableError as e:
        assert "HIP" in str(e) or "hip" in str(e)
    else:
        pytest.fail("no HIP device exists here")


def test_a_profiler_stream_needs_cuda(dev: vkhip.Device) -> None:
    prof = vkhip.Profiler(dev)
    with pytest.raises(vkhip.InvalidError, match="stream tracks need a CUDA device"):
        prof.stream("torch", 1)
    with pytest.raises(vkhip.InvalidError, match="has a profiler already"):
        vkhip.Profiler(dev)
    prof.finish()
    with pytest.raises(vkhip.InvalidError, match="finished"):
        prof.end_frame()
    with pytest.raises(vkhip.InvalidError, match="finished already"):
        prof.finish()
    vkhip.Profiler(dev).finish()  # finished: the device takes a new one
