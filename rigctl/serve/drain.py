"""Before a server is stopped, the requests it is serving are let finish. vLLM has no "stop
accepting": rigctl reads num_requests_running and num_requests_waiting from /metrics and waits
until both are zero or the deadline passes, saying the count as it falls. What still runs at the
deadline is cut, and said.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from rigctl.engine.client import EngineClient, EngineHTTPError
from rigctl.engine.metrics import P
from rigctl.engine.prom import ExpositionError

DRAIN_NAMES = frozenset({P + "num_requests_running", P + "num_requests_waiting"})
POLL_S = 0.5


@dataclass(frozen=True)
class Drained:
    at_start: int  # requests running or waiting when the drain began (None-safe: 0 when unknown)
    left: int  # still there when it ended: cut by the stop
    seconds: float
    known: bool = True  # /metrics said; False: it could not be read, so nothing was waited for

    def describe(self, deadline: float) -> str:
        if not self.known:
            return "the running requests could not be read from /metrics: nothing was waited for"
        if not self.at_start:
            return "no request was running"
        if not self.left:
            return f"{self.at_start} request(s) finished in {self.seconds:.1f} s"
        return (f"{self.left} request(s) still running at the {deadline:g} s deadline were cut "
                f"({self.at_start - self.left} finished)")


def in_flight(base_url: str, api_key: str | None) -> int | None:
    """Requests running or waiting now, by the engine's own gauges; None when it does not say."""
    try:
        with EngineClient(base_url, api_key, timeout=2.0) as client:
            snap = client.metrics(time.time(), DRAIN_NAMES)
    except (EngineHTTPError, ExpositionError):
        return None
    if snap.running is None and snap.waiting is None:
        return None
    return int((snap.running or 0) + (snap.waiting or 0))


def drain(base_url: str, api_key: str | None, deadline_s: float, say: Callable[[str], None],
          clock: Callable[[], float] = time.monotonic) -> Drained:
    """Wait until nothing runs or waits, at most `deadline_s`; `say` hears the count as it falls."""
    start = clock()
    first = in_flight(base_url, api_key)
    if first is None:
        return Drained(0, 0, 0.0, known=False)
    count, said = first, None
    while count and clock() - start < deadline_s:
        if count != said:
            say(f"draining: {count} request(s) running or waiting (up to {deadline_s:g} s; --no-drain cuts them)")
            said = count
        time.sleep(POLL_S)
        now = in_flight(base_url, api_key)
        count = count if now is None else now
    return Drained(first, count, clock() - start)
