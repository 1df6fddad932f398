"""Type stubs for the compiled part of vkhip (``vkhip._vkhip``, built from ``python/src``)."""

import os
from collections.abc import Callable
from types import TracebackType
from typing import Any, Literal, Protocol

from typing_extensions import CapsuleType, Self, TypeAlias

__version__: str

class _TorchStream(Protocol):
    @property
    def cuda_stream(self) -> int: ...

class _CupyStream(Protocol):
    @property
    def ptr(self) -> int: ...

class _CudaStreamProtocol(Protocol):
    def __cuda_stream__(self) -> tuple[int, int]: ...

StreamLike: TypeAlias = int | None | _TorchStream | _CupyStream | _CudaStreamProtocol
"""A CUDA (or HIP) stream: an int ``cudaStream_t`` (DLPack's numbering: 0 or 1 the legacy
default stream, 2 the per-thread one), a ``torch.cuda.Stream``, a ``cupy.cuda.Stream``, an object
with ``__cuda_stream__``, or None (the legacy default stream).

The contract: an int handle is a **live stream of the buffer's device**. vkhip raises
:class:`vkhip.InvalidError` for a number that cannot be a stream (below -1, below 4096, not a
multiple of 8, past the address space) and, on CUDA, for a stream of another context; any other
number is read by the driver as its stream object, so a destroyed stream or an unrelated address
is undefined behaviour (usually a crash), as in CUDA itself. On the host (``api="host"``) there are
no streams: pass None."""

DtypeLike: TypeAlias = Any
"""A dtype name ("float32", "uint8", …, or "f4"-style), or an object naming one (``numpy.float32``,
``numpy.dtype("float32")``, ``torch.float32``)."""

Resources: TypeAlias = list[Buffer | str] | tuple[Buffer | str, ...]

class _TorchDevice(Protocol):
    @property
    def type(self) -> str: ...
    @property
    def index(self) -> int | None: ...

DeviceLike: TypeAlias = int | str | _TorchDevice | None
"""Which GPU: ``None`` (the device of the CUDA context current on the calling thread, what
``torch.cuda.set_device(n)`` or ``cupy.cuda.Device(n).use()`` made current; else CUDA device 0),
an int ``n`` or ``"cuda:n"`` (CUDA ordinal n, as this process numbers the GPUs after
``CUDA_VISIBLE_DEVICES``), ``"cuda"`` (as None), ``"cpu"`` (the host path), or a
``torch.device`` (any object with ``.type`` and ``.index``). Anything else raises
:class:`vkhip.InvalidError`; a GPU this process does not see raises
:class:`vkhip.UnavailableError` naming the devices it does see. With ``api="host"`` only None
and ``"cpu"`` are accepted (the host path opens no CUDA device); with ``api="auto"`` a GPU named
means CUDA on that GPU or an error, never the host instead."""

PosesLike: TypeAlias = Any
"""N camera poses: an ``(N, 10)`` array of floats (float32, float64, float16 or bfloat16) —
NumPy, torch (a CUDA tensor is copied to the host), CuPy, JAX, any object with ``__array__`` or
``__dlpack__`` (read through NumPy) — or a list of N lists of 10 numbers. One row a view:
``[ex, ey, ez, tx, ty, tz, ux, uy, uz, fov_y_deg]``: the eye, the point it looks at, the up
direction (y up; the surface spans [-1, 1] in x and z, heights within ±0.25) and the vertical
field of view in degrees."""

def stream_number(stream: StreamLike) -> int:
    """The integer DLPack passes for ``stream`` (0 becomes 1: both the legacy default stream)."""

def cuda_driver_present() -> bool:
    """Whether a CUDA driver library loads here (no GPU needed to answer)."""

class Device:
    """A Vulkan device shared with the compute API PyTorch, CuPy and JAX use.

    ``Device()`` opens the GPU the framework works on (the device of the CUDA context current on
    this thread, else CUDA device 0) through its primary context, the frameworks' own; or Vulkan
    on the host where there is no CUDA device. ``device=`` names the GPU (:data:`DeviceLike`):
    the Vulkan device opened is the one with that CUDA device's UUID, whatever order Vulkan
    lists the GPUs in. Raises :class:`vkhip.InvalidError` for a ``device=`` it cannot read and
    :class:`vkhip.UnavailableError` when no such device exists.
    """

    def __init__(
        self, api: Literal["auto", "cuda", "hip", "host"] = "auto", *, device: DeviceLike = None
    ) -> None: ...
    @property
    def api(self) -> Literal["cuda", "hip", "host"]:
        """Who shares Vulkan's memory."""
    @property
    def name(self) -> str:
        """The Vulkan device and, where there is one, the compute device."""
    @property
    def uuid(self) -> str:
        """Vulkan's deviceUUID."""
    @property
    def dlpack_device(self) -> tuple[int, int]:
        """The DLPack device of this device's tensors: (1, 0) host, (2, n) CUDA, (10, n) ROCm."""
    @property
    def closed(self) -> bool: ...
    def buffer(
        self,
        shape: int | tuple[int, ...] | list[int],
        dtype: DtypeLike = None,
        *,
        name: str | None = None,
    ) -> Buffer:
        """A shared buffer of ``shape`` elements of ``dtype`` (default float32), C-contiguous.

        Raises :class:`vkhip.InvalidError` for a bad shape or dtype and :class:`vkhip.LimitError`
        when the device cannot hold it.
        """
    def close(self) -> None:
        """Stop using the device; later calls raise :class:`vkhip.ClosedError`. Tensors that
        still view its memory keep it alive."""
    def __enter__(self) -> Self: ...
    def __exit__(
        self, t: type[BaseException] | None, v: BaseException | None, tb: TracebackType | None
    ) -> None: ...

class Buffer:
    """Vulkan memory as a DLPack tensor: ``torch.from_dlpack(buffer)`` (CuPy, JAX, NumPy alike)
    views it without a copy, after the wait for Vulkan's last write is enqueued on the consumer's
    stream. ``release(stream)`` (or leaving ``with buffer:``) ends the consumer's turn on the
    GPU."""

    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def dtype(self) -> str: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def data_ptr(self) -> int:
        """The address tensors see: a CUDA device pointer, or the host mapping."""
    @property
    def turns(self) -> tuple[int, int]:
        """(Vulkan's turns, the consumer's releases) so far."""
    def __dlpack__(
        self,
        *,
        stream: int | None = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> CapsuleType:
        """DLPack: a capsule viewing the buffer (what ``from_dlpack`` calls). ``stream`` is the
        consumer's, in DLPack's numbering (None, 0 or 1 the legacy default stream, 2 the
        per-thread one, -1 no synchronisation, else a live stream of the buffer's device: see
        :data:`StreamLike`): the wait for Vulkan's last write is enqueued there. On the host,
        Vulkan's work is waited for and ``stream`` must be None (else ``BufferError``). A number
        that cannot be a stream is :class:`vkhip.InvalidError`."""
    def __dlpack_device__(self) -> tuple[int, int]: ...
    def release(self, stream: StreamLike = None) -> None:
        """End the consumer's turn: Vulkan's next use waits, on the GPU, for the work enqueued on
        ``stream`` (default: the stream ``__dlpack__`` was given last) so far. ``stream`` is a
        live stream of the buffer's device (:data:`StreamLike`), not -1; a refused stream raises
        :class:`vkhip.InvalidError` and ends no turn. HIP: waits on the host for ``stream``'s
        work (no semaphore import on Linux). Host: no stream (None, 0, 1 or -1)."""
    def vulkan_fill(self, value: float) -> None:
        """Vulkan writes ``value`` into every element (after the consumer's release); returns at
        once."""
    def vulkan_write(self, data: bytes | bytearray | memoryview) -> None:
        """Vulkan copies ``data`` into the start of the buffer; returns when done."""
    def vulkan_read(self) -> bytes:
        """Vulkan copies the whole buffer to the host (after the consumer's release)."""
    def __enter__(self) -> Self: ...
    def __exit__(
        self, t: type[BaseException] | None, v: BaseException | None, tb: TracebackType | None
    ) -> None: ...

class Scope:
    """An open profiler scope; ends at ``end()`` or when its ``with`` block ends."""

    def end(self) -> None: ...
    def __enter__(self) -> Self: ...
    def __exit__(
        self, t: type[BaseException] | None, v: BaseException | None, tb: TracebackType | None
    ) -> None: ...

class Stream:
    """A profiler track on one of the framework's streams."""

    def scope(
        self, name: str, *, reads: Resources | None = None, writes: Resources | None = None
    ) -> Scope:
        """A scope around the work you enqueue on the stream next. Take the buffers' turns
        (``torch.from_dlpack(buffer)``) before opening it."""

class Capture:
    """What a profiler recorded."""

    @property
    def is_clean(self) -> bool:
        """Whether the checker found no hazard."""
    @property
    def violations(self) -> list[str]:
        """Each violation as a sentence (rule, resource, both scopes, the overlap)."""
    @property
    def violation_count(self) -> int: ...
    @property
    def pairs_checked(self) -> int: ...
    @property
    def report(self) -> str:
        """The text report: clocks, the checker's verdict, frame time, hand-offs, scopes."""
    def write_perfetto(self, path: str | os.PathLike[str]) -> None:
        """Write the Perfetto (Chrome JSON) trace."""

class Profiler:
    """The frame-sync profiler on a device: Vulkan's work, the framework's streams and the host
    on one clock, and the checker. Use it from the thread that made it."""

    def __init__(self, device: Device, *, enabled: bool = True) -> None: ...
    def stream(self, name: str, stream: StreamLike) -> Stream:
        """A track on the framework's stream (CUDA devices): a live stream of the device
        (:data:`StreamLike`)."""
    def host_scope(
        self, name: str, *, reads: Resources | None = None, writes: Resources | None = None
    ) -> Scope:
        """A scope of host work on the calling thread."""
    def end_frame(self) -> None: ...
    def finish(self) -> Capture:
        """Stop, detach from the device, and return the capture."""

class Frame:
    """One rendered frame: a DLPack producer of ``(height, width, 4)`` uint8 RGBA — ``(N,
    height, width, 4)`` with ``Frames(views=N)`` — in Vulkan's shared memory. Take it
    (``torch.from_dlpack(frame)``), then release it (``with frame:``)."""

    @property
    def index(self) -> int:
        """The frame number (0, 1, …)."""
    @property
    def slot(self) -> int:
        """The shared buffer it is in (index mod K)."""
    @property
    def views(self) -> int:
        """N: the views in it."""
    @property
    def shape(self) -> tuple[int, ...]:
        """``(N, height, width, 4)`` with ``Frames(views=N)``, else ``(height, width, 4)``."""
    def __dlpack__(
        self,
        *,
        stream: int | None = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> CapsuleType:
        """DLPack: the frame's pixels, after a wait for Vulkan's copy enqueued on ``stream`` (as
        :meth:`Buffer.__dlpack__`: a live stream of the device, see :data:`StreamLike`)."""
    def __dlpack_device__(self) -> tuple[int, int]: ...
    def release(self, stream: StreamLike = None) -> None:
        """End the consumer's turn on ``stream`` (a live stream of the device, not -1; default:
        the one ``__dlpack__`` was given). Frames are released in the order they were rendered."""
    def __enter__(self) -> Self: ...
    def __exit__(
        self, t: type[BaseException] | None, v: BaseException | None, tb: TracebackType | None
    ) -> None: ...

class GpuTimes:
    """Vulkan's GPU time per frame, medians in ns: the draw (the clear and every view), the copy
    into the shared buffer, and both (``raster_ns_p50``): ``views / raster_ns_p50 * 1e9`` is the
    GPU's raster limit in views/s, the same frames with no hand-off."""

    @property
    def frames(self) -> int:
        """Frames measured."""
    @property
    def draw_ns_p50(self) -> float: ...
    @property
    def copy_ns_p50(self) -> float: ...
    @property
    def raster_ns_p50(self) -> float: ...

class Frames:
    """The app's renderer as a frame source, K frames in flight. ``api="cuda"``: the frames stay
    in GPU memory CUDA imports (zero copy into torch, CuPy, JAX); ``"host"``: Vulkan copies them
    into memory the host maps (NumPy; on a GPU, what a program without vkhip does).

    ``views=N``: N cameras a frame, drawn in one submission and handed over once; each frame is
    ``(N, height, width, 4)`` (also for ``views=1``; without ``views=`` it stays ``(height,
    width, 4)``). ``poses``: the cameras (:data:`PosesLike`; default: the app's orbit camera at N
    evenly spaced azimuths). ``envs``: 1 (every view sees one height field) or N (view i sees
    field i, each at its own time). Raises :class:`vkhip.InvalidError` for a bad count or bad
    poses, :class:`vkhip.LimitError` for N past the device's limit (the message names the limit,
    e.g. ``maxImageArrayLayers``, or ``maxStorageBufferRange`` for N height fields, and the
    device's value)."""

    def __init__(
        self,
        *,
        size: tuple[int, int] = (1280, 720),
        views: int | None = None,
        poses: PosesLike = None,
        envs: int | None = None,
        slots: int = 3,
        api: Literal["auto", "cuda", "host"] = "auto",
        grid: tuple[int, int] | None = None,
        args: list[str] | None = None,
        device: DeviceLike = None,
        gpu_times: bool = False,
    ) -> None:
        """``device=`` (:data:`DeviceLike`): the GPU that renders and whose CUDA memory holds the
        frames (``dlpack_device`` is ``(2, n)``). ``gpu_times=True``: time every frame's draw and
        copy on the GPU (Vulkan timestamps around each; a little GPU work a frame) for
        :meth:`gpu_times`."""
    @property
    def size(self) -> tuple[int, int]:
        """(width, height) in pixels."""
    @property
    def slots(self) -> int: ...
    @property
    def views(self) -> int:
        """N: the cameras of every frame (1 without ``views=``)."""
    @property
    def envs(self) -> int:
        """E: the height fields (1, or N: one per view)."""
    @property
    def poses(self) -> list[list[float]]:
        """The cameras now: N rows of ``[ex, ey, ez, tx, ty, tz, ux, uy, uz, fov_y_deg]``."""
    @property
    def dlpack_device(self) -> tuple[int, int]: ...
    def set_poses(self, poses: PosesLike) -> None:
        """Set every view's camera (an ``(N, 10)`` array, :data:`PosesLike`) from the next
        ``render()`` on; nothing changes on an error (:class:`vkhip.InvalidError`)."""
    @staticmethod
    def default_poses(n: int) -> list[list[float]]:
        """The default cameras of ``n`` views (view 0 is the app's one camera)."""
    def gpu_times(self) -> GpuTimes | None:
        """Vulkan's GPU time of the frames rendered so far (None: the device has no
        timestamps); waits for nothing."""
    def render(self) -> Frame:
        """Draw the next frame (every view) and copy it into its slot; returns at once."""

class Heights:
    """One frame's height field, ``(rows, cols)`` float32 in the slot the app draws next — ``(E,
    rows, cols)`` with ``view(views=N)``, environment e for view e —: a DLPack producer valid
    during the writer's call only."""

    @property
    def shape(self) -> tuple[int, ...]:
        """``(rows, cols)``, or ``(E, rows, cols)`` with ``view(views=…)``."""
    @property
    def stream(self) -> int | None:
        """The CUDA stream the app orders the slot on (enqueue the writes there); None: host."""
    def __dlpack__(
        self,
        *,
        stream: int | None = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> CapsuleType: ...
    def __dlpack_device__(self) -> tuple[int, int]: ...

class ViewResult:
    """What :func:`view` drew."""

    @property
    def report(self) -> str: ...
    @property
    def capture(self) -> str | None: ...
    @property
    def frames(self) -> int: ...

def view(
    write: Callable[[int, float, Heights], object],
    *,
    api: Literal["auto", "cuda", "host"] = "auto",
    stream: StreamLike = None,
    grid: tuple[int, int] | None = None,
    size: tuple[int, int] | None = None,
    frames: int | None = None,
    slots: int | None = None,
    views: int | None = None,
    envs: int | None = None,
    headless: bool = False,
    capture: str | os.PathLike[str] | None = None,
    trace: str | os.PathLike[str] | None = None,
    args: list[str] | None = None,
    device: DeviceLike = None,
) -> ViewResult:
    """The app's viewer (a window, or headless with the PNG and the frame report) with the height
    field written by ``write(frame, time_s, heights)`` every frame: NumPy on the host path, torch
    or CuPy on ``stream`` on the CUDA path. ``views=N``: N cameras (the window tiles them) and N
    environments, so ``heights`` is ``(N, rows, cols)`` (``envs=1``: one field all views see,
    ``(1, rows, cols)``). ``args`` takes any other ``vkhip`` flag; ``device=``
    (:data:`DeviceLike`) the GPU (``stream`` must be one of that GPU's). Raises
    :class:`vkhip.LimitError` for N past a device limit (``maxImageArrayLayers``, or
    ``maxStorageBufferRange`` for N height fields), naming the device's value."""
