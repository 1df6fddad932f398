"""The HIP build (``maturin build --features hip``) on a machine without an AMD GPU: it imports,
and ``Device("hip")`` ends in the environment error a test skips on (it never ran on AMD
hardware). Run by CI with VKHIP_EXPECT_HIP=1 against that wheel."""

from __future__ import annotations

import os

import pytest

import vkhip


@pytest.mark.skipif(
    not os.environ.get("VKHIP_EXPECT_HIP"), reason="the HIP wheel's check (VKHIP_EXPECT_HIP=1)"
)
def test_hip_device_is_an_environment_error_without_an_amd_gpu() -> None:
    with pytest.raises(vkhip.UnavailableError) as e:
        vkhip.Device("hip")
    assert "built without HIP" not in str(e.value), "this wheel has the hip feature"
    assert str(e.value).startswith("hip"), str(e.value)
