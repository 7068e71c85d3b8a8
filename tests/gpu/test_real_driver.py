"""The real NVML path on a real NVIDIA driver (marked `gpu`: skipped, saying so, where no driver
answers; run on a GPU machine with `pytest -m gpu -n 0 tests/gpu/test_real_driver.py`). What the
fake libnvidia-ml tests cannot show: that the driver's own answers come through whole."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from rigctl.errors import NoDriverError
from rigctl.gpu.nvml import NvmlBackend


def _driver() -> str | None:
    """Why there is no driver to test against, or None when there is one."""
    try:
        backend = NvmlBackend()
    except NoDriverError as exc:
        return str(exc)
    backend.close()
    return None


pytestmark = [pytest.mark.gpu]


@pytest.fixture(scope="module")
def driver() -> None:
    why = _driver()
    if why is not None:
        pytest.skip(f"no NVIDIA driver here: {why}")


def rigctl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rigctl", *args], capture_output=True, text=True, timeout=60)


def test_status_json_reports_every_gpu_of_the_driver(driver: None) -> None:
    done = rigctl("status", "--json")
    assert done.returncode == 0, done.stderr
    rig = json.loads(done.stdout)["rig"]
    assert rig is not None and rig["backend"] == "nvml" and rig["gpus"], done.stdout
    for gpu in rig["gpus"]:
        assert gpu["name"] and gpu["memory_total"] > 0 and gpu["uuid"].startswith("GPU-")
        sample = gpu["sample"]
        assert sample["lost"] is False and sample["memory_used"] is not None and sample["power_w"] is not None


def test_topo_prints_the_matrix_for_the_drivers_gpus(driver: None) -> None:
    done = rigctl("topo")
    assert done.returncode == 0, done.stderr
    assert "GPU0" in done.stdout


def test_the_backend_samples_twice_with_moving_timestamps(driver: None) -> None:
    backend = NvmlBackend()
    try:
        first, second = backend.sample(), backend.sample()
    finally:
        backend.close()
    assert len(first) == len(second) >= 1 and all(b.timestamp >= a.timestamp for a, b in zip(first, second, strict=True))
