"""`rigctl watch` keeps the front door up: when vLLM sits behind a door that is gone (a crash, a
kill, a stop), every app is refused, so the door is started again with the words it was started
with (its record, gateway.json), after a backoff that doubles from 1 s to a minute while it
keeps dying. Never when systemd runs the door: its unit's Restart= brings it back, and a second
door started here would take its port. Each spell down, and each door brought back, is an event."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable

from rigctl import paths
from rigctl.alerts.model import Alert
from rigctl.gateway.door_file import API_KEY_ENV, DoorFile, read_door_file
from rigctl.state.serving import ServingStatus, door_down_text

BACKOFF_S = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0)  # after the 1st, 2nd, ... start that did not bring it up


def start_door(door: DoorFile) -> subprocess.Popen[bytes]:
    """`rigctl gateway` with the words of the door that died, in a session of its own (it outlives
    this service, as the rig needs it to), its lines appended to gateway.log in the state dir."""
    paths.ensure_private_dir(paths.state_dir())
    log = os.open(paths.state_dir() / "gateway.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "rigctl", *door.argv],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    finally:
        os.close(log)


class DoorKeeper:
    def __init__(
        self,
        start: Callable[[DoorFile], subprocess.Popen[bytes]] = start_door,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.start, self.clock = start, clock
        self.down_since: float | None = None
        self.tries = 0  # starts since it went down
        self.next_try = 0.0
        self.started: list[subprocess.Popen[bytes]] = []  # reaped as they end

    def tick(self, serving: ServingStatus) -> list[Alert]:
        """One look: the events to send (a door gone, a door back)."""
        self.started = [p for p in self.started if p.poll() is None]
        now = self.clock()
        listen = serving.door_down
        if listen is None:
            if self.down_since is None:
                return []
            took = now - self.down_since
            self.down_since, self.tries = None, 0
            back = f"brought back by rigctl watch after {took:.0f} s" if self.started else f"back after {took:.0f} s"
            return [Alert("front-door", "front-door", "front door back", f"the front door answers again ({back})", "warning")]
        door = read_door_file()
        events: list[Alert] = []
        if self.down_since is None:
            self.down_since, self.next_try = now, now
            text = f"{door_down_text(listen)}; {self._plan(door)}"
            events.append(Alert("front-door", "front-door", "front door down", text, "error"))
        if self._restartable(door) and now >= self.next_try:
            assert door is not None
            try:
                self.started.append(self.start(door))
            except OSError as exc:
                events.append(Alert("front-door", "front-door", "front door not restarted", f"rigctl gateway: {exc}", "error"))
            self.tries += 1
            self.next_try = now + BACKOFF_S[min(self.tries, len(BACKOFF_S)) - 1]
        return events

    def _restartable(self, door: DoorFile | None) -> bool:
        return door is not None and not door.systemd and (not door.key_from_env or bool(os.environ.get(API_KEY_ENV)))

    def _plan(self, door: DoorFile | None) -> str:
        if door is None:
            return "no record of how it was started: start `rigctl gateway` again"
        if door.systemd:
            return "systemd runs it: its unit brings it back (`systemctl --user status rigctl-gateway`)"
        if door.key_from_env and not os.environ.get(API_KEY_ENV):
            return f"its key came from ${API_KEY_ENV}, which this service lacks: start `rigctl gateway` again"
        return f"starting `rigctl {' '.join(door.argv)}` again (its lines: {paths.state_dir() / 'gateway.log'})"
