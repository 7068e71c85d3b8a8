"""One rule for which GPUs a server holds, used by the dashboard's engine panel, `rigctl metrics`,
the serving record and the bench: the same interval has the same J/token in every view."""

from __future__ import annotations

import os
import subprocess
import sys

from rigctl.engine.derive import interval
from rigctl.engine.metrics import EngineSnapshot
from rigctl.gpu.holders import serving_gpus
from rigctl.gpu.model import GpuProcess, GpuSample

WORKER = GpuProcess(pid=999_999, used_memory=20 * 2**30, name="VLLM::Worker_TP0", vllm_role="worker TP0")
DESKTOP = GpuProcess(pid=999_998, used_memory=2**30, name="Xorg")


def sample(index: int, t: float, energy: float, *procs: GpuProcess) -> GpuSample:
    return GpuSample(index=index, timestamp=t, power_w=300.0, energy_j=energy, processes=procs)


def test_the_servers_own_process_family_decides_when_its_pid_is_known() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        mine = GpuProcess(pid=child.pid, used_memory=2**30, name="python")
        samples = (sample(0, 1.0, 0.0, WORKER), sample(1, 1.0, 0.0, mine), sample(2, 1.0, 0.0, DESKTOP))
        assert serving_gpus(samples, os.getpid()) == (1,)  # its child holds GPU1; another vLLM holds GPU0
    finally:
        child.kill()
        child.wait()


def test_without_a_pid_the_gpus_vllms_processes_hold_not_every_gpu() -> None:
    """A container's server (no pid of ours): the desktop's GPU is not the server's."""
    samples = (sample(0, 1.0, 0.0, WORKER), sample(1, 1.0, 0.0, DESKTOP))
    assert serving_gpus(samples, None) == (0,)
    assert serving_gpus(samples, 1) == (0,)  # a pid whose family holds nothing in sight: the same fallback
    assert serving_gpus((sample(0, 1.0, 0.0), sample(1, 1.0, 0.0)), None) == (0, 1)  # nothing seen: all


def test_the_interval_reads_power_from_those_gpus_only() -> None:
    before = EngineSnapshot(timestamp=0.0)
    after = EngineSnapshot(timestamp=10.0)
    gpus_before = (sample(0, 0.0, 0.0, WORKER), sample(1, 0.0, 0.0, DESKTOP))
    gpus_after = (sample(0, 10.0, 3000.0, WORKER), sample(1, 10.0, 3000.0, DESKTOP))
    figures = interval(before, after, None, gpus_before, gpus_after, frozenset(serving_gpus(gpus_after)))
    assert figures.power_w == 300.0  # one card's, not both
