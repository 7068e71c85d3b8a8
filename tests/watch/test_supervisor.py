"""`[supervise] restart = true`: the service restarts the last good profile after its engine died,
within its budget, each restart recorded and sent; never after rigctl's own stop."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Callable

from rigctl.alerts.model import Alert
from rigctl.watch.supervisor import RestartResult, Supervisor
from tests.support.waiting import wait_until
from tests.watch.harness import WatchRig, fired


def kill_engine(rig: WatchRig) -> int:
    pid = rig.serving_pid()
    os.killpg(pid, signal.SIGKILL)  # the OOM killer, a driver fault: nothing of rigctl's doing
    return pid


def serving(rig: WatchRig) -> str | None:
    active: str | None = json.loads(rig.rigctl("status", "--json").stdout)["serving"]["active_profile"]
    return active


def count(rig: WatchRig, kind: str, state: str) -> int:
    return sum(1 for c in rig.changes() if c["kind"] == kind and c["state"] == state)


def counted(rig: WatchRig, kind: str, state: str, times: int) -> Callable[[], bool]:
    return lambda: count(rig, kind, state) == times


def test_a_killed_engine_is_restarted_within_the_budget_and_not_after_a_stop(watch_rig: WatchRig) -> None:
    rig = watch_rig
    rig.configure(supervise="restart = true\nmax_restarts = 2\n")
    assert rig.rigctl("switch", "good").returncode == 0
    watch = rig.watch()
    wait_until("the service watching", lambda: (rig.state_dir / "alerts.json").is_file(), watch)
    pids = []
    for attempt in (1, 2):
        pids.append(kill_engine(rig))
        wait_until(f"death {attempt} said", counted(rig, "engine-died", "fired", attempt), watch)
        wait_until(f"restart {attempt} said", counted(rig, "restart", "event", attempt), watch)
        restart = [c for c in rig.changes() if c["kind"] == "restart"][-1]
        assert restart["title"] == "engine restarted" and f"restart {attempt} of 2 this hour" in restart["text"], restart
        assert serving(rig) == "good" and rig.serving_pid() not in pids
    kill_engine(rig)  # a third death within the hour: the budget is spent
    spent = rig.wait_change("the budget spent", fired("restart-budget", "event"), watch)
    assert "2 restart(s) this hour already" in spent["text"] and spent["severity"] == "error"
    assert count(rig, "restart", "event") == 2 and serving(rig) is None
    check = rig.rigctl("status", "--check", "--window", "0.5")
    assert check.returncode == 7 and check.stdout.startswith("down: "), check.stdout
    # the owner starts it again, then stops it: rigctl's own stop is no death
    assert rig.rigctl("start", "good").returncode == 0
    rig.wait_change("the death cleared", fired("engine-died", "cleared"), watch)
    assert rig.rigctl("stop").returncode == 0
    deaths = count(rig, "engine-died", "fired")
    time.sleep(3)  # fifteen of the service's polls
    assert count(rig, "engine-died", "fired") == deaths and count(rig, "restart", "event") == 2 and serving(rig) is None
    code, out = rig.stop_watch(watch)
    assert code == 0 and "Traceback" not in out, out
    recorded = [(e["kind"], e["state"]) for e in json.loads(rig.rigctl("report", "--json").stdout)["alerts"]]
    assert recorded.count(("restart", "event")) == 2 and recorded.count(("engine-died", "fired")) == 3
    assert ("restart-budget", "event") in recorded


def test_without_supervise_a_death_is_said_and_nothing_restarts(watch_rig: WatchRig) -> None:
    rig = watch_rig
    rig.configure()
    assert rig.rigctl("switch", "good").returncode == 0
    watch = rig.watch()
    wait_until("the service watching", lambda: (rig.state_dir / "alerts.json").is_file(), watch)
    pid = kill_engine(rig)
    died = rig.wait_change("the death", fired("engine-died"), watch)
    assert f"good: the vLLM process is gone (pid {pid})" in died["text"]
    text = rig.rigctl("status").stdout
    assert "  alert: engine died: good: the vLLM process is gone" in text, text
    time.sleep(2)
    assert serving(rig) is None and count(rig, "restart", "event") == 0
    rig.stop_watch(watch)


def test_a_death_while_the_restart_is_still_ending_is_not_dropped() -> None:
    """The restarted engine dies before the restart has finished saying so (the service saw it
    serve, then gone): that death is handled as the restart ends, here with the budget spent.
    Driven by events, not by timing: the restart's `say` is held open while the death comes."""
    saying = threading.Event()
    release = threading.Event()
    said: list[Alert] = []

    def say(alert: Alert) -> None:
        said.append(alert)
        if alert.kind == "restart":
            saying.set()
            assert release.wait(30)

    restarts: list[int] = []

    def restart() -> RestartResult:
        restarts.append(1)
        return RestartResult(True, "good", "")

    supervisor = Supervisor(restart, 1, say)
    supervisor.engine_died("good")
    assert saying.wait(30)  # the restart is done booting and is saying so
    supervisor.engine_died("good")  # the new engine dies now
    assert supervisor.restarting
    release.set()
    wait_until("the second death handled", lambda: not supervisor.restarting, timeout=30)
    assert restarts == [1]  # the budget (one an hour) was spent by the first
    assert [a.kind for a in said] == ["restart", "restart-budget"]
