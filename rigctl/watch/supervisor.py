"""`[supervise] restart`: after the engine died (never after rigctl stopped or switched it), start
the last good profile again, at most `max_restarts` an hour; each restart, and the budget spent,
is said as an alert event. The restart runs on its own thread (a boot takes minutes) while the
service keeps recording and judging. A restart that fails is tried again after a backoff (10 s,
doubling to 5 min) until one serves or the budget is spent. With `start_on_boot` it also brings
up a rig it finds down: what a reboot or a power cut leaves (the state says a profile serves and
its process is gone), or a switch whose rigctl died."""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from rigctl.alerts.model import Alert
from rigctl.state.serving import ServingStatus
from rigctl.state.statefiles import owner_alive

HOUR_S = 3600.0


BACKOFF_S = (10.0, 20.0, 40.0, 80.0, 160.0, 300.0)  # after the 1st, 2nd, ... failed restart in a row


@dataclass(frozen=True)
class RestartResult:
    ok: bool
    profile: str
    message: str
    retry: bool = True  # False: refused because something serves already (nothing to try again)


@dataclass(frozen=True)
class Down:
    """Nothing serves that should: which profile to bring up, and why it is down."""

    profile: str
    why: str


def rig_down(serving: ServingStatus) -> Down | None:
    """Whether the rig should serve and does not, by the state file and the process: the state
    says a profile serves and its process is gone (a reboot, a crash while nothing watched), or a
    switch was interrupted (its rigctl died). A stop, a failed switch the owner saw, a server that
    runs but is not ready yet: not down here (the alerts judge those)."""
    state = serving.state
    if serving.active_profile is not None or state is None or serving.process_alive:
        return None
    if state.status == "serving" and (state.profile or state.last_good):
        profile = state.profile or state.last_good or ""
        return Down(profile, f"the state says {profile} serves and no process of it runs")
    interrupted = state.status == "interrupted" or (
        state.status == "switching" and not owner_alive(state.owner_pid, state.owner_start)
    )
    if interrupted and state.last_good:
        return Down(state.last_good, f"a switch to {state.target or 'another profile'} was interrupted and nothing serves")
    return None


class RestartBudget:
    """At most `per_hour` restarts in any hour (a sliding hour, so a crash loop is cut off)."""

    def __init__(self, per_hour: int) -> None:
        self.per_hour = per_hour
        self.used: deque[float] = deque()

    def take(self, now: float) -> bool:
        while self.used and self.used[0] <= now - HOUR_S:
            self.used.popleft()
        if len(self.used) >= self.per_hour:
            return False
        self.used.append(now)
        return True


class Supervisor:
    def __init__(self, restart: Callable[[], RestartResult], per_hour: int, say: Callable[[Alert], None]) -> None:
        """`restart`: boot the last good profile (blocks for the boot); `say`: an event to send."""
        self.restart, self.budget, self.say = restart, RestartBudget(per_hour), say
        self._thread: threading.Thread | None = None
        self._spent_said = False
        self._lock = threading.Lock()
        self._busy = False  # a restart runs, its ending said or not: set and cleared under the lock
        self._pending: str | None = None  # a death seen while it ran: handled as it ends
        self._failures = 0  # failed restarts in a row
        self._retry: str | None = None  # the profile to try again once _next_try comes
        self._next_try = 0.0
        self._why = "after its engine died"  # what the restart answers, for its event
        # the profiles its restarts booted, for the service's thread to tell its evaluator (a death
        # before the service's next look is then still a death)
        self.served: queue.SimpleQueue[str] = queue.SimpleQueue()

    @property
    def restarting(self) -> bool:
        return self._busy

    def engine_died(self, profile: str) -> None:
        with self._lock:
            if self._busy:
                # the new engine died before its restart was done saying so: still a death, handled
                # when the restart ends (dropped, the rig stayed down with nothing said)
                self._pending = profile
                return
            self._busy = True
            self._why = "after its engine died"
        self._handle(profile)

    def tick(self, serving: str | None, down: Down | None, bring_up: bool, now: float | None = None) -> None:
        """Each look of the service: `serving` what serves (verified), `down` whether the rig
        should serve and does not; `bring_up`: start_on_boot. A failed restart is tried again
        after its backoff; a rig found down is brought up."""
        now = time.monotonic() if now is None else now
        if serving is not None:
            self._failures, self._retry = 0, None
            return
        target = self._retry or (down.profile if down is not None and bring_up else None)
        if target is None or now < self._next_try:
            return
        with self._lock:
            if self._busy:
                return
            self._busy = True
            self._why = "after its restart failed" if self._retry else "after the rig was found down"
        self._handle(target)

    def _handle(self, profile: str) -> None:
        """Restart within the budget, or say it is spent; `_busy` is set by the caller."""
        if not self.budget.take(time.time()):
            if not self._spent_said:
                self._spent_said = True
                self.say(
                    Alert(
                        "restart-budget",
                        "restart-budget",
                        "restarts spent",
                        f"{profile} is down again; {self.budget.per_hour} restart(s) this hour already ([supervise] "
                        "max_restarts): not restarted; `rigctl logs` shows why it dies",
                        "error",
                    )
                )
            self._done()
            return
        self._spent_said = False
        attempt = len(self.budget.used)
        self._thread = threading.Thread(target=self._restart, args=(profile, attempt), name="supervisor", daemon=True)
        self._thread.start()

    def _done(self) -> None:
        """The restart (or the refusal) is over: a death seen meanwhile is handled now."""
        with self._lock:
            pending, self._pending = self._pending, None
            if pending is None:
                self._busy = False
                return
        self._handle(pending)

    def _restart(self, profile: str, attempt: int) -> None:
        began = time.monotonic()
        try:
            result = self.restart()
        except Exception as exc:  # noqa: BLE001 - the service outlives a failed restart and says why
            result = RestartResult(False, profile, f"{type(exc).__name__}: {exc}")
        took = time.monotonic() - began
        of = f"restart {attempt} of {self.budget.per_hour} this hour"
        if result.ok or not result.retry:
            self._failures, self._retry = 0, None
        else:
            self._failures += 1
            self._retry = result.profile or profile
            wait = BACKOFF_S[min(self._failures, len(BACKOFF_S)) - 1]
            self._next_try = time.monotonic() + wait
        if result.ok:
            self.served.put(result.profile)
            alert = Alert(
                "restart",
                "restart",
                "engine restarted",
                f"{result.profile} serves again {self._why} ({of}, {took:.0f} s)",
                "warning",
            )
        else:
            again = f"; tried again in {wait:.0f} s" if result.retry else ""
            alert = Alert(
                "restart",
                "restart",
                "restart failed",
                f"{result.profile} could not be restarted ({of}): {result.message}{again}",
                "error",
            )
        try:
            self.say(alert)
        finally:
            self._done()

    def join(self, timeout: float) -> None:
        if self._thread is not None:
            self._thread.join(timeout)
