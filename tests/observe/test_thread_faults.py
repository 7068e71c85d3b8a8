"""A thread of rigctl's own that meets a fault of rigctl's own says it, as a Textual worker's error
is said, and goes on: the TUI's record thread and the alert command's thread used to end silently
on anything but a RigctlError (issue 49). The fault is injected where no real input makes one."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from rigctl.alerts.hook import AlertHook
from rigctl.alerts.model import Alert, AlertChange
from rigctl.config import load_settings
from rigctl.observe.background import BackgroundRecorder
from rigctl.observe.keeper import RecordKeeper
from rigctl.record.recorder import Observation
from tests.support.waiting import wait_until


class BrokenOnce(RecordKeeper):
    """The real keeper, its first observation failing as a bug of rigctl's would."""

    seen = 0

    def observe(self, seen: Observation | None) -> None:
        self.seen += 1
        if self.seen == 1:
            raise KeyError("kv_usage")


def test_the_record_thread_says_its_fault_once_and_keeps_recording() -> None:
    said: list[str] = []
    keeper = BrokenOnce(load_settings(), said.append, lambda row: None, yields=True)
    recorder = BackgroundRecorder(keeper, fault=said.append)
    assert recorder.start(), recorder.problem
    try:
        for _ in range(3):
            recorder.offer(None)  # an observation the keeper is handed (what it holds does not matter here)
        wait_until("the three observations handed over", lambda: keeper.seen == 3)
        assert said == ["keeping the serving record failed: KeyError: 'kv_usage'"]
        assert recorder._thread is not None and recorder._thread.is_alive()
    finally:
        recorder.stop()


class FailsFirst(AlertHook):
    calls = 0

    def _call(self, change: AlertChange) -> None:
        self.calls += 1
        if self.calls == 1:
            raise ValueError("a change it could not send")
        super()._call(change)


def test_the_alert_thread_says_its_fault_and_sends_the_next_alert(tmp_path: Path) -> None:
    out = tmp_path / "hook.out"
    script = tmp_path / "hook.py"
    script.write_text(f"import sys\nopen({str(out)!r}, 'a').write(sys.stdin.read())\n")
    said: list[str] = []
    hook = FailsFirst([sys.executable, str(script)], 10.0, said.append)
    change = AlertChange(
        Alert("stall", "stall", "admission stalled", "3 waiting, no token for 60 s", "error"), "fired", time.time()
    )
    try:
        hook.send(change)
        hook.send(change)
        wait_until("the second alert sent", lambda: hook.ran == 1 and '"stall"' in out.read_text())
        assert said[0].startswith(f"sending the alert to {sys.executable} failed: ValueError: a change it could not send")
        assert said[1:] == [f"the alert command {sys.executable} works again"]
    finally:
        hook.close()
