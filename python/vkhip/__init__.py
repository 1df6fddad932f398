"""vkhip: Vulkan's memory as PyTorch, CuPy, JAX and NumPy tensors, without a copy.

A :class:`Device` is a Vulkan device on the GPU CUDA sees (or on the host, where Vulkan's memory
is host-visible). Its :class:`Buffer` objects are DLPack producers: ``torch.from_dlpack(buffer)``
views Vulkan's memory, and the wait for Vulkan's last write is enqueued on torch's current
stream (``__dlpack__(stream=…)``), on the GPU. ``buffer.release(stream)``, or leaving
``with buffer:``, signals on that stream so that Vulkan's next use waits for the framework's work,
on the GPU too. :class:`Profiler` records both sides on one clock and checks that every two
conflicting accesses are ordered.
"""

from ._errors import (
    ClosedError,
    Error,
    InvalidError,
    LimitError,
    UnavailableError,
    WaitTimeoutError,
)
from ._vkhip import (
    Buffer,
    Capture,
    Device,
    Frame,
    Frames,
    GpuTimes,
    Heights,
    Profiler,
    Scope,
    Stream,
    ViewResult,
    __version__,
    cuda_driver_present,
    stream_number,
    view,
)

__all__ = [
    "Buffer",
    "Capture",
    "ClosedError",
    "Device",
    "Error",
    "Frame",
    "Frames",
    "GpuTimes",
    "Heights",
    "InvalidError",
    "LimitError",
    "Profiler",
    "Scope",
    "Stream",
    "UnavailableError",
    "ViewResult",
    "WaitTimeoutError",
    "__version__",
    "cuda_driver_present",
    "stream_number",
    "view",
]
