"""The exceptions vkhip raises. Every message is the Rust crates' one line."""


class Error(RuntimeError):
    """A Vulkan, CUDA or HIP call failed, or vkhip refused the request."""


class UnavailableError(Error):
    """The machine lacks what was asked: no driver, no GPU, no such device or feature.

    An environment error: a test skips on it.
    """


class InvalidError(Error, ValueError):
    """The caller passed something vkhip refuses (a shape, a dtype, a size, a stream of another
    device), before any GPU call."""


class LimitError(InvalidError):
    """The device cannot hold the object: the message names the Vulkan limit it exceeds."""


class ClosedError(Error):
    """A device, or one of its buffers, was used after ``Device.close()``."""


class WaitTimeoutError(Error, TimeoutError):
    """A wait ran past its limit: something upstream never signalled."""
