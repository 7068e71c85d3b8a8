"""`[supervise] restart = true`: the service restarts the last good profile after its engine died,
within its budget, each restart recorded and sent; never after rigctl's own stop."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable

from rigctl.alerts.model import Alert
from rigctl.watch.supervisor import Down, RestartResult, Supervisor
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


def looked_again(rig: WatchRig, watch: subprocess.Popen[str]) -> None:
    """Until the service has looked at the rig since now: a GPU lost from the simulated driver now
    is said at its next look, and cleared at a later one. What it did not say by then (a death, a
    restart), it did not see: an absence held by the service's own looks, never by a sleep."""
    lost, cleared = count(rig, "gpu-lost", "fired"), count(rig, "gpu-lost", "cleared")
    rig.gpu_faults({"lost": [1]})
    wait_until("the service's next look (GPU1 lost)", counted(rig, "gpu-lost", "fired", lost + 1), watch)
    rig.gpu_faults(None)
    wait_until("a later look (GPU1 back)", counted(rig, "gpu-lost", "cleared", cleared + 1), watch)


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
    looked_again(rig, watch)
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
    looked_again(rig, watch)
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


def test_a_rig_down_when_the_service_starts_is_brought_up(watch_rig: WatchRig) -> None:
    """What a reboot leaves: the state says good serves, its process is gone, and no service saw
    it die. With restart on, the service says the rig was down and starts the last good profile."""
    rig = watch_rig
    rig.configure(supervise="restart = true\n")
    assert rig.rigctl("switch", "good").returncode == 0
    kill_engine(rig)  # nothing watches yet
    watch = rig.watch()
    down = rig.wait_change("the rig found down", fired("rig-down", "event"), watch)
    assert down["text"] == "nothing serves: the state says good serves and no process of it runs; starting good", down
    back = rig.wait_change("the start said", fired("restart", "event"), watch)
    assert back["title"] == "engine restarted" and "good serves again after the rig was found down" in back["text"], back
    assert serving(rig) == "good"
    assert count(rig, "rig-down", "event") == 1 and count(rig, "engine-died", "fired") == 0
    code, out = rig.stop_watch(watch)
    assert code == 0 and "Traceback" not in out, out


def test_without_restart_a_rig_down_at_start_is_said_once_and_left_down(watch_rig: WatchRig) -> None:
    rig = watch_rig
    rig.configure()
    assert rig.rigctl("switch", "good").returncode == 0
    kill_engine(rig)
    watch = rig.watch()
    down = rig.wait_change("the rig found down", fired("rig-down", "event"), watch)
    assert down["text"].endswith("; [supervise] restart = true would start it"), down
    looked_again(rig, watch)
    assert count(rig, "rig-down", "event") == 1 and serving(rig) is None
    rig.stop_watch(watch)


def test_a_failed_restart_is_tried_again_after_its_backoff(watch_rig: WatchRig) -> None:
    """The first start of the last good profile crashes (its boot fails, as a GPU still freeing
    memory makes it); the service says so, waits its backoff, and the next try serves."""
    rig = watch_rig
    rig.configure(supervise="restart = true\n")
    assert rig.rigctl("switch", "good").returncode == 0
    kill_engine(rig)
    rig.add_profile("good", '[env]\nRIGCTL_SIM_CRASH_AT = "load"\n')
    watch = rig.watch()
    failed = rig.wait_change("the failed start", lambda c: c["kind"] == "restart" and c["title"] == "restart failed", watch)
    assert "good could not be restarted" in failed["text"] and failed["text"].endswith("; tried again in 10 s"), failed
    rig.add_profile("good", "")  # the cause passes
    back = rig.wait_change(
        "the second try", lambda c: c["kind"] == "restart" and c["title"] == "engine restarted", watch, timeout=120
    )
    assert "good serves again after its restart failed (restart 2 of 3 this hour" in back["text"], back
    assert serving(rig) == "good"
    rig.stop_watch(watch)


def test_the_supervisor_retries_with_a_backoff_until_the_budget_is_spent() -> None:
    """Driven by the supervisor's own clock argument: tries at once, then not before its backoff,
    then again; the budget spent is said once."""
    said: list[Alert] = []
    tries: list[int] = []

    def restart() -> RestartResult:
        tries.append(1)
        return RestartResult(False, "good", "the boot crashed")

    supervisor = Supervisor(restart, 2, said.append)
    down = Down("good", "the state says good serves and no process of it runs")
    supervisor.tick(None, down, bring_up=True, now=0.0)
    wait_until("the first try ended", lambda: not supervisor.restarting, timeout=30)
    supervisor.tick(None, down, bring_up=True, now=time.monotonic())  # within the backoff: nothing
    assert len(tries) == 1 and said[-1].text.endswith("tried again in 10 s")
    supervisor.tick(None, down, bring_up=True, now=time.monotonic() + 11)
    wait_until("the second try ended", lambda: not supervisor.restarting, timeout=30)
    assert len(tries) == 2 and said[-1].text.endswith("tried again in 20 s")
    for _ in range(3):
        supervisor.tick(None, down, bring_up=True, now=time.monotonic() + 25)
        wait_until("the refusal", lambda: not supervisor.restarting, timeout=30)
    assert len(tries) == 2 and [a.kind for a in said] == ["restart", "restart", "restart-budget"]
    supervisor.tick("good", None, bring_up=True)  # it serves (the owner started it): nothing more to try
    supervisor.tick(None, None, bring_up=True, now=time.monotonic() + 1000)
    assert len(tries) == 2
