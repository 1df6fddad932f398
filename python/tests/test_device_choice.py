"""``device=``: which GPU ``Device``, ``Frames`` and ``view`` use, named the way the frameworks
name it. Every value vkhip cannot read is ``InvalidError`` with its text, before anything is
opened; a GPU this process does not see is ``UnavailableError`` naming what was asked (on
lavapipe: there is no CUDA at all). The GPU rows (same device four ways, device=1 on one GPU,
every GPU of a machine) are in python/gpu_check.py."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, Callable

import pytest

import vkhip


@dataclass
class FakeDevice:
    """Shaped like ``torch.device``: ``.type`` and ``.index`` (torch is not needed here)."""

    type: Any
    index: Any


EXPECTED = r'expected None, an int \(a CUDA ordinal\), "cuda", "cuda:N", "cpu" or a torch\.device'

BAD = [
    (True, r"device=True: " + EXPECTED),
    (-1, r"device=-1: a CUDA ordinal is 0 or more"),
    (2**40, r"device=1099511627776: a CUDA ordinal is 0 or more"),
    ("gpu", r"device='gpu': " + EXPECTED),
    ("cuda:", r"device='cuda:': " + EXPECTED),
    ("cuda:x", r"device='cuda:x': " + EXPECTED),
    ("cuda:-1", r"device='cuda:-1': " + EXPECTED),
    ("cuda:0:1", r"device='cuda:0:1': " + EXPECTED),
    ("CUDA:0", r"device='CUDA:0': " + EXPECTED),
    (1.0, r"device=1\.0: " + EXPECTED),
    ([0], r"device=\[0\]: " + EXPECTED),
    (object(), r"device=<object object at 0x[0-9a-f]+>: " + EXPECTED),
    (
        FakeDevice("mps", 0),
        r"device=FakeDevice\(type='mps', index=0\): a \"mps\" device; vkhip shares memory with "
        r"CUDA devices \(or the host: \"cpu\"\)",
    ),
    (
        FakeDevice("cuda", "a"),
        r"device=FakeDevice\(type='cuda', index='a'\): its index is not an int",
    ),
    (
        FakeDevice("cuda", -2),
        r"device=FakeDevice\(type='cuda', index=-2\): a CUDA ordinal is 0 or more",
    ),
]

OPENERS: dict[str, Callable[[Any], object]] = {
    "Device": lambda d: vkhip.Device(device=d),
    "Frames": lambda d: vkhip.Frames(size=(32, 32), slots=1, device=d),
    "view": lambda d: vkhip.view(lambda *_: None, headless=True, frames=1, device=d),
}


@pytest.mark.parametrize("opener", list(OPENERS))
@pytest.mark.parametrize(("value", "message"), BAD, ids=[repr(v) for v, _ in BAD])
def test_a_value_vkhip_cannot_read_is_invalid(opener: str, value: object, message: str) -> None:
    with pytest.raises(vkhip.InvalidError, match=f"^{message}$"):
        OPENERS[opener](value)


@pytest.mark.parametrize("opener", list(OPENERS))
@pytest.mark.parametrize("value", [0, "cuda:1", FakeDevice("cuda", 0)])
def test_a_gpu_for_the_host_path_is_invalid(opener: str, value: object) -> None:
    n = 1 if value == "cuda:1" else 0
    message = (
        rf'device=cuda:{n} with api="host": the host path opens no CUDA device; choose a GPU '
        r'with api="cuda" \(or "auto"\), or leave device=None'
    )
    with pytest.raises(vkhip.InvalidError, match=f"^{message}$"):
        if opener == "Device":
            vkhip.Device("host", device=value)
        elif opener == "Frames":
            vkhip.Frames(size=(32, 32), slots=1, api="host", device=value)
        else:
            vkhip.view(lambda *_: None, api="host", headless=True, frames=1, device=value)


def test_cpu_for_cuda_is_invalid() -> None:
    with pytest.raises(
        vkhip.InvalidError,
        match=r'^device="cpu" with api="cuda": the host path is api="host" \(or "auto"\)$',
    ):
        vkhip.Device("cuda", device="cpu")


def test_a_device_given_as_api_is_pointed_at_device() -> None:
    with pytest.raises(
        vkhip.InvalidError,
        match=r'^api "cuda:0": expected "auto", "cuda", "hip" or "host" '
        r'\(a device is chosen with device="cuda:0"\)$',
    ):
        vkhip.Device("cuda:0")


@pytest.mark.parametrize("value", [None, "cpu", "cpu:0", FakeDevice("cpu", None)])
def test_the_host_path_takes_none_and_cpu(value: object) -> None:
    try:
        d = vkhip.Device("host", device=value)
    except vkhip.UnavailableError as e:
        if os.environ.get("CI"):
            raise  # CI installs lavapipe: a missing device is a failure there
        pytest.skip(f"needs a Vulkan device the host can map: {e}")
    with d:
        assert d.api == "host"
        assert d.dlpack_device == (1, 0)


@pytest.mark.skipif(vkhip.cuda_driver_present(), reason="lavapipe's answer: a machine without CUDA")
@pytest.mark.parametrize("opener", list(OPENERS))
@pytest.mark.parametrize("value", [0, 3, "cuda:0", FakeDevice("cuda", 1)])
def test_a_gpu_without_cuda_is_unavailable(opener: str, value: object) -> None:
    """device= names a GPU: that GPU or an error, never the host path instead."""
    n = {0: 0, 3: 3, "cuda:0": 0}.get(value, 1) if not isinstance(value, FakeDevice) else 1
    with pytest.raises(vkhip.UnavailableError) as caught:
        OPENERS[opener](value)
    text = str(caught.value)
    assert re.fullmatch(
        rf"cuda: CUDA device {n}: libcuda\.so not found: install the NVIDIA driver", text
    ), text


@pytest.mark.skipif(vkhip.cuda_driver_present(), reason="lavapipe's answer: a machine without CUDA")
def test_the_default_without_cuda_is_the_host() -> None:
    try:
        d = vkhip.Device()
    except vkhip.UnavailableError as e:
        if os.environ.get("CI"):
            raise  # CI installs lavapipe: a missing device is a failure there
        pytest.skip(f"needs a Vulkan device the host can map: {e}")
    with d:
        assert (d.api, d.dlpack_device) == ("host", (1, 0))
    # "cuda" alone is the default CUDA device: on a machine without CUDA, an error naming it.
    with pytest.raises(vkhip.UnavailableError, match=r"libcuda\.so not found"):
        vkhip.Device(device="cuda")
