"""`[supervise] restart`: after the engine died (never after rigctl stopped or switched it), start
the last good profile again, at most `max_restarts` an hour; each restart, and the budget spent,
is said as an alert event. The restart runs on its own thread (a boot takes minutes) while the
service keeps recording and judging."""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from rigctl.alerts.model import Alert

HOUR_S = 3600.0


@dataclass(frozen=True)
class RestartResult:
    ok: bool
    profile: str
    message: str


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
        self._handle(profile)

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
                        f"{profile} died again; {self.budget.per_hour} restart(s) this hour already ([supervise] "
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
        if result.ok:
            self.served.put(result.profile)
            alert = Alert(
                "restart",
                "restart",
                "engine restarted",
                f"{result.profile} serves again after its engine died ({of}, {took:.0f} s)",
                "warning",
            )
        else:
            alert = Alert(
                "restart", "restart", "restart failed", f"{result.profile} could not be restarted ({of}): {result.message}", "error"
            )
        try:
            self.say(alert)
        finally:
            self._done()

    def join(self, timeout: float) -> None:
        if self._thread is not None:
            self._thread.join(timeout)
