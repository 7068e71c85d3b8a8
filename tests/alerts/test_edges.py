"""Alerts fire on edges: a real simulated server that dies, a GPU lost under the fake NVML,
a GPU held at its power limit; never on every poll, never for rigctl's own stop; each clears
once when its cause is gone."""

from __future__ import annotations

import os
import signal
import time
from dataclasses import replace
from pathlib import Path

from rigctl.alerts.evaluator import AlertEvaluator
from rigctl.alerts.limits import AlertLimits
from rigctl.config import load_settings
from rigctl.engine.client import Probe
from rigctl.gpu.nvml import NvmlBackend
from rigctl.gpu.sampler import RigSampler
from rigctl.serve import switch as transaction
from rigctl.serve.context import ServeContext
from rigctl.sim.rigspec import load_rig
from rigctl.state.serving import ServingStatus, observe
from rigctl.state.statefiles import read_record
from tests.support.fake_nvml import FakeNvmlLib, installed


def wait_gone(pid: int) -> None:
    for _ in range(100):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.02)


def test_engine_death_is_reported_once_with_the_reason(serve_ctx: ServeContext, profiles: Path) -> None:
    tracker = AlertEvaluator()
    assert tracker.on_serving(observe(load_settings())) == []  # nothing served yet: nothing to lose
    assert transaction.switch(serve_ctx, "good").status == "switched"
    assert tracker.on_serving(observe(load_settings())) == []
    record = read_record()
    assert record is not None and record.pid
    os.kill(record.pid, signal.SIGKILL)  # the OOM killer, a segfault: nothing of rigctl's doing
    wait_gone(record.pid)
    alerts = tracker.on_serving(observe(load_settings()))
    assert [(c.alert.key, c.state) for c in alerts] == [("engine-died", "fired")] and alerts[0].alert.severity == "error"
    assert f"good: the vLLM process is gone (pid {record.pid})" in alerts[0].alert.text
    assert "engine-died" in tracker.firing  # a lasting mark while nothing serves
    assert tracker.on_serving(observe(load_settings())) == []  # said once, not every poll


def test_an_engine_the_supervisor_booted_is_mourned_even_if_no_poll_saw_it(serve_ctx: ServeContext, profiles: Path) -> None:
    """The supervisor's restart booted it and it died before the service's next look: the
    service is told it served (saw_serving), so its death fires; unseen and untold, nothing would."""
    assert transaction.switch(serve_ctx, "good").status == "switched"
    record = read_record()
    assert record is not None and record.pid
    os.kill(record.pid, signal.SIGKILL)
    wait_gone(record.pid)
    dead = observe(load_settings())
    assert AlertEvaluator().on_serving(dead) == []  # never seen up: nothing to lose, by its own sight
    told = AlertEvaluator()
    told.saw_serving("good")
    alerts = told.on_serving(dead)
    assert [(c.alert.key, c.state) for c in alerts] == [("engine-died", "fired")]
    assert alerts[0].alert.text.startswith("good: the vLLM process is gone")


def test_a_restarted_engine_that_dies_before_any_poll_saw_it_is_a_second_death(serve_ctx: ServeContext, profiles: Path) -> None:
    """CI's race: the service's look predates the restart (the engine still down), the supervisor
    then says the restart served, and the new engine dies before the next look. The first death
    must be over (cleared) and the second said anew: while the first stayed firing, the second
    fired nothing and the supervisor never restarted again."""
    tracker = AlertEvaluator()
    assert transaction.switch(serve_ctx, "good").status == "switched"
    tracker.on_serving(observe(load_settings()))

    def kill() -> ServingStatus:
        record = read_record()
        assert record is not None and record.pid
        os.kill(record.pid, signal.SIGKILL)
        wait_gone(record.pid)
        return observe(load_settings())

    first = kill()
    assert [c.state for c in tracker.on_serving(first)] == ["fired"]
    assert transaction.switch(serve_ctx, "good").status == "switched"  # the supervisor's restart
    assert tracker.on_serving(first) == []  # a look taken before the restart ended: still the first death
    cleared = tracker.saw_serving("good")
    assert [(c.alert.key, c.state) for c in cleared] == [("engine-died", "cleared")]
    second = tracker.on_serving(kill())
    assert [(c.alert.key, c.state) for c in second] == [("engine-died", "fired")]
    assert tracker.saw_serving("good") and "engine-died" not in tracker.firing


def test_the_monitor_looks_again_when_the_state_file_changes_though_the_engine_answers_the_same(
    serve_ctx: ServeContext, profiles: Path
) -> None:
    """The supervisor's restart ends ("switching" -> "serving") while the engine answers alike: the
    next poll must say what serves now, not the "switching" of up to OBSERVE_EVERY polls before
    (a death in them went unsaid: CI's failure of test_supervisor)."""
    from rigctl.monitor import Monitor
    from rigctl.proc import start_id
    from rigctl.state.statefiles import read_state, write_state

    assert transaction.switch(serve_ctx, "good").status == "switched"
    monitor = Monitor(None, load_settings())
    try:
        assert monitor.poll_engine_now()[1].active_profile == "good"
        serving = read_state()
        assert serving is not None and serving.status == "serving"
        mine = os.getpid()
        write_state(replace(serving, status="switching", target="good", owner_pid=mine, owner_start=start_id(mine)))
        assert monitor.poll_engine_now()[1].summary == f"switching to good (rigctl pid {mine})"
        write_state(serving)
        assert monitor.poll_engine_now()[1].active_profile == "good"
    finally:
        monitor.close()


def test_rigctl_own_stop_and_switch_raise_nothing(serve_ctx: ServeContext, profiles: Path) -> None:
    tracker = AlertEvaluator()
    assert transaction.switch(serve_ctx, "good").status == "switched"
    tracker.on_serving(observe(load_settings()))
    assert transaction.switch(serve_ctx, "alt").status == "switched"
    assert tracker.on_serving(observe(load_settings())) == []
    transaction.stop(serve_ctx)
    assert tracker.on_serving(observe(load_settings())) == []


def test_health_503_is_named(serve_ctx: ServeContext, profiles: Path) -> None:
    tracker = AlertEvaluator()
    assert transaction.switch(serve_ctx, "good").status == "switched"
    up = observe(load_settings())
    tracker.on_serving(up)
    sick = ServingStatus(None, up.state, up.record, True, Probe(True, False, (), None, status=503), "not ready")
    assert "/health answers HTTP 503" in tracker.on_serving(sick)[0].alert.text


def test_lost_gpu_and_recovery() -> None:
    lib = FakeNvmlLib(load_rig("2x3090-nvlink"))
    tracker = AlertEvaluator()
    with installed(lib):
        sampler = RigSampler(NvmlBackend(), with_host=False)
        assert tracker.on_rig(sampler.snapshot()) == []
        lib.lost.add(1)
        alerts = tracker.on_rig(sampler.snapshot())
        assert [(c.alert.key, c.alert.severity, c.state) for c in alerts] == [("gpu1-lost", "error", "fired")]
        assert tracker.on_rig(sampler.snapshot()) == []
        lib.lost.discard(1)
        back = tracker.on_rig(sampler.snapshot())
        assert [(c.alert.key, c.state) for c in back] == [("gpu1-lost", "cleared")] and not tracker.firing
        sampler.close()


def test_power_at_the_limit_only_after_it_lasts() -> None:
    lib = FakeNvmlLib(load_rig("2x3090-nvlink"))
    tracker = AlertEvaluator(AlertLimits(power_s=120.0))
    with installed(lib):
        sampler = RigSampler(NvmlBackend(), with_host=False)
        lib.live[0].power_mw = 349_000  # of a 350 W limit
        first = sampler.snapshot()
        assert tracker.on_rig(first) == []
        assert tracker.on_rig(replace(first, timestamp=first.timestamp + 60)) == []  # a burst is normal
        alerts = tracker.on_rig(replace(first, timestamp=first.timestamp + 121))
        assert [c.alert.key for c in alerts] == ["gpu0-power"]
        assert "349 W of its 350 W limit for 2.0 min" in alerts[0].alert.text
        assert tracker.on_rig(replace(first, timestamp=first.timestamp + 200)) == []  # once per episode
        lib.live[0].power_mw = 200_000
        below = sampler.snapshot()
        assert [(c.alert.key, c.state) for c in tracker.on_rig(below)] == [("gpu0-power", "cleared")]
        lib.live[0].power_mw = 350_000
        again = sampler.snapshot()
        assert tracker.on_rig(again) == []  # a new episode starts its own clock
        assert [c.alert.key for c in tracker.on_rig(replace(again, timestamp=again.timestamp + 130))] == ["gpu0-power"]
        sampler.close()


def test_thermal_throttling_fires_once_it_lasts_and_a_power_cap_is_not_throttling() -> None:
    lib = FakeNvmlLib(load_rig("2x3090-nvlink"))
    tracker = AlertEvaluator(AlertLimits(throttle_s=60.0))
    with installed(lib):
        sampler = RigSampler(NvmlBackend(), with_host=False)
        lib.live[0].clocks_event_reasons = 0x4  # sw power cap: the power-cap alert's business, not this one
        first = sampler.snapshot()
        assert tracker.on_rig(first) == [] and tracker.on_rig(replace(first, timestamp=first.timestamp + 90)) == []
        lib.live[0].clocks_event_reasons = 0x40 | 0x4  # hw thermal slowdown
        hot = sampler.snapshot()
        assert tracker.on_rig(hot) == []
        assert tracker.on_rig(replace(hot, timestamp=hot.timestamp + 30)) == []  # a moment of it is not an alert
        fired = tracker.on_rig(replace(hot, timestamp=hot.timestamp + 61))
        assert [(c.alert.key, c.alert.kind, c.state) for c in fired] == [("gpu0-throttle", "throttle", "fired")]
        assert "hw thermal for 61 s" in fired[0].alert.text
        lib.live[0].clocks_event_reasons = 0x1
        cooled = tracker.on_rig(sampler.snapshot())
        assert [(c.alert.key, c.state) for c in cooled] == [("gpu0-throttle", "cleared")]
        sampler.close()
