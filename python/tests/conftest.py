"""Fixtures: a vkhip device on whatever Vulkan the machine has (Mesa's lavapipe in CI: the host
path, Vulkan's memory host-visible)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

import vkhip


@pytest.fixture
def dev() -> Iterator[vkhip.Device]:
    try:
        d = vkhip.Device("host")
    except vkhip.UnavailableError as e:
        if os.environ.get("CI"):
            raise  # CI installs lavapipe: a missing device is a failure there
        pytest.skip(
            f"needs a Vulkan device whose memory the host can map (mesa-vulkan-drivers): {e}"
        )
    yield d
    d.close()
