"""Fault 11: NVML errors at start-up crashed every command with a raw pynvml traceback.

The real CLI over the real pynvml module, with a fake libnvidia-ml that fails the calls a
broken driver fails: listing the GPUs, or handing out one GPU's handle.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.faults.rig import Rig, crashed


def nvml_rigctl(rig: Rig, failures: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**rig.env, "RIGCTL_SIM": ""}
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.nvml_cli", "2x3090-nvlink", failures, "--", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert not crashed(done.stderr), done.stderr
    return done


@pytest.mark.parametrize("error", ["GPU_IS_LOST", "NO_PERMISSION", "UNKNOWN"])
def test_a_gpu_count_that_fails_is_one_line(rig: Rig, error: str) -> None:
    for command in (("status",), ("topo",), ("gpus", "--json")):
        done = nvml_rigctl(rig, f"nvmlDeviceGetCount_v2={error}", *command)
        assert done.returncode == 1, done.stdout + done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
        assert "cannot list the GPUs" in done.stderr and "--sim" in done.stderr


@pytest.mark.parametrize("error", ["GPU_IS_LOST", "NO_PERMISSION", "UNKNOWN"])
def test_a_gpu_that_cannot_be_opened_is_shown_lost_and_the_other_works(rig: Rig, error: str) -> None:
    done = nvml_rigctl(rig, f"nvmlDeviceGetHandleByIndex_v2:1={error}", "status", "--json")
    assert done.returncode == 0, done.stderr
    gpus = json.loads(done.stdout)["rig"]["gpus"]
    assert gpus[0]["name"] == "NVIDIA GeForce RTX 3090" and gpus[0]["memory_total"]
    assert "cannot be opened" in gpus[1]["name"] and gpus[1]["sample"]["lost"] is True
    text = nvml_rigctl(rig, f"nvmlDeviceGetHandleByIndex_v2:1={error}", "topo")
    assert text.returncode == 0 and "GPU0" in text.stdout


def test_switch_without_a_driver_or_a_launcher_says_so_in_one_line(rig: Rig) -> None:
    done = rig.rigctl("switch", "good", env={"RIGCTL_SIM": ""})  # this machine has no libnvidia-ml
    assert done.returncode == 1, done.stdout + done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "NVIDIA driver not usable" in line and "--sim" in line and "[server] vllm_command" in line
    assert rig.record_if_any() is None
