"""Before a server is stopped, the requests it is serving are let finish. vLLM has no "stop
accepting": without the front door, rigctl can see only vLLM's own gauges, so it waits until
num_requests_running + num_requests_waiting (every DP rank) reach 0, or the deadline passes, saying
the count as it falls. What still runs at the deadline is cut, and said.

It never counts requests as finished: the engine's success counter grows for whichever request
ends first, and admission is first come, first served while completion is not (a short request
that arrived later ends before a long one that was running), so "the counter grew by N" says
nothing of the N that were running. Only the front door (rigctl/gateway) sees each request end.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from rigctl.engine.client import EngineClient, EngineHTTPError
from rigctl.engine.prom import ExpositionError
from rigctl.vllm.metric_names import P

DRAIN_NAMES = frozenset({P + "num_requests_running", P + "num_requests_waiting"})
POLL_S = 0.5


@dataclass(frozen=True)
class Drained:
    """What vLLM's gauges showed of a drain. `at_start`: running or waiting when it began; `left`:
    still there when it ended, so cut by the stop; `known` False: /metrics could not be read."""

    at_start: int
    left: int
    seconds: float
    known: bool = True

    def describe(self) -> str:
        if not self.known:
            return "the running requests could not be read from /metrics: nothing was waited for"
        if not self.at_start:
            return "no request was running"
        if not self.left:
            return f"nothing running or waiting after {self.seconds:.1f} s ({self.at_start} request(s) were at the start)"
        return f"{self.left} request(s) still running after {self.seconds:.0f} s: cut"


def in_flight(base_url: str, api_key: str | None) -> int | None:
    """Requests running or waiting now on every DP rank, by the engine's own gauges; None when it
    does not say (an engine that cannot be read, or one without the gauges)."""
    try:
        with EngineClient(base_url, api_key, timeout=2.0) as client:
            snap = client.metrics(time.time(), DRAIN_NAMES)
    except (EngineHTTPError, ExpositionError):
        return None
    if snap.running is None and snap.waiting is None:
        return None
    return int((snap.running or 0) + (snap.waiting or 0))


def drain(
    base_url: str,
    api_key: str | None,
    deadline_s: float,
    say: Callable[[str], None],
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Drained:
    """Wait until nothing runs or waits, at most `deadline_s`; `say` hears the count as it changes.
    A read that fails midway keeps the last count (the engine is still there to be stopped)."""
    start = clock()
    first = in_flight(base_url, api_key)
    if first is None:
        return Drained(0, 0, 0.0, known=False)
    left, said = first, None
    while left and clock() - start < deadline_s:
        if left != said:
            say(f"draining: {left} request(s) running or waiting (up to {deadline_s:g} s; --no-drain cuts them)")
            said = left
        sleep(POLL_S)
        now = in_flight(base_url, api_key)
        if now is not None:
            left = now
    return Drained(first, left, clock() - start)
