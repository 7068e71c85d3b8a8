"""Alerts fire on edges: a real simulated server that dies, a GPU lost under the fake NVML,
a GPU held at its power limit; never on every poll, never for rigctl's own stop."""

from __future__ import annotations

import os
import signal
import time
from dataclasses import replace
from pathlib import Path

from rigctl.alerts import AlertTracker
from rigctl.config import load_settings
from rigctl.engine.client import Probe
from rigctl.gpu.nvml import NvmlBackend
from rigctl.gpu.sampler import RigSampler
from rigctl.serve import switch as transaction
from rigctl.serve.serving import ServingStatus, observe
from rigctl.serve.statefiles import read_record
from rigctl.serve.steps import ServeContext
from rigctl.sim.rigspec import load_rig
from tests.support.fake_nvml import FakeNvmlLib, installed


def wait_gone(pid: int) -> None:
    for _ in range(100):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.02)


def test_engine_death_is_reported_once_with_the_reason(serve_ctx: ServeContext, profiles: Path) -> None:
    tracker = AlertTracker()
    assert tracker.on_engine(observe(load_settings())) == []  # nothing served yet: nothing to lose
    assert transaction.switch(serve_ctx, "good").status == "switched"
    assert tracker.on_engine(observe(load_settings())) == []
    record = read_record()
    assert record is not None and record.pid
    os.kill(record.pid, signal.SIGKILL)  # the OOM killer, a segfault: nothing of rigctl's doing
    wait_gone(record.pid)
    alerts = tracker.on_engine(observe(load_settings()))
    assert [a.key for a in alerts] == ["engine"] and alerts[0].severity == "error"
    assert f"good: the vLLM process is gone (pid {record.pid})" in alerts[0].text
    assert tracker.on_engine(observe(load_settings())) == []  # said once, not every poll


def test_rigctl_own_stop_and_switch_raise_nothing(serve_ctx: ServeContext, profiles: Path) -> None:
    tracker = AlertTracker()
    assert transaction.switch(serve_ctx, "good").status == "switched"
    tracker.on_engine(observe(load_settings()))
    assert transaction.switch(serve_ctx, "alt").status == "switched"
    assert tracker.on_engine(observe(load_settings())) == []
    transaction.stop(serve_ctx)
    assert tracker.on_engine(observe(load_settings())) == []


def test_health_503_is_named(serve_ctx: ServeContext, profiles: Path) -> None:
    tracker = AlertTracker()
    assert transaction.switch(serve_ctx, "good").status == "switched"
    up = observe(load_settings())
    tracker.on_engine(up)
    sick = ServingStatus(None, up.state, up.record, True, Probe(True, False, (), None, status=503), "not ready")
    assert "/health answers HTTP 503" in tracker.on_engine(sick)[0].text


def test_lost_gpu_and_recovery() -> None:
    lib = FakeNvmlLib(load_rig("2x3090-nvlink"))
    tracker = AlertTracker()
    with installed(lib):
        sampler = RigSampler(NvmlBackend(), with_host=False)
        assert tracker.on_rig(sampler.snapshot()) == []
        lib.lost.add(1)
        alerts = tracker.on_rig(sampler.snapshot())
        assert [(a.key, a.severity) for a in alerts] == [("gpu1-lost", "error")]
        assert tracker.on_rig(sampler.snapshot()) == []
        sampler.close()


def test_power_at_the_limit_only_after_it_lasts() -> None:
    lib = FakeNvmlLib(load_rig("2x3090-nvlink"))
    tracker = AlertTracker(power_seconds=120.0)
    with installed(lib):
        sampler = RigSampler(NvmlBackend(), with_host=False)
        lib.live[0].power_mw = 349_000  # of a 350 W limit
        first = sampler.snapshot()
        assert tracker.on_rig(first) == []
        assert tracker.on_rig(replace(first, timestamp=first.timestamp + 60)) == []  # a burst is normal
        alerts = tracker.on_rig(replace(first, timestamp=first.timestamp + 121))
        assert [a.key for a in alerts] == ["gpu0-power"]
        assert "349 W of its 350 W limit for 2.0 min" in alerts[0].text
        assert tracker.on_rig(replace(first, timestamp=first.timestamp + 200)) == []  # once per episode
        lib.live[0].power_mw = 200_000
        below = sampler.snapshot()
        assert tracker.on_rig(below) == []
        lib.live[0].power_mw = 350_000
        again = sampler.snapshot()
        assert tracker.on_rig(again) == []  # a new episode starts its own clock
        assert [a.key for a in tracker.on_rig(replace(again, timestamp=again.timestamp + 130))] == ["gpu0-power"]
        sampler.close()
