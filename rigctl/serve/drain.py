"""Before a server is stopped, the requests it is serving are let finish. vLLM has no "stop
accepting": rigctl reads num_requests_running and num_requests_waiting from /metrics and waits
until the requests that were there when it began have finished, or the deadline passes, saying the
count as it falls. Under steady traffic the gauges never reach zero (new requests keep coming), so
"finished" is also counted: once request_success_total has grown by as many requests as were in
flight at the start, those have had their turn (vLLM schedules first come, first served). What
still runs at the deadline is cut, and said.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from rigctl.engine.client import EngineClient, EngineHTTPError
from rigctl.engine.prom import ExpositionError
from rigctl.vllm.metric_names import P

DRAIN_NAMES = frozenset({P + "num_requests_running", P + "num_requests_waiting", P + "request_success_total"})
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
        return (
            f"{self.left} request(s) still running at the {deadline:g} s deadline were cut ({self.at_start - self.left} finished)"
        )


def _read(base_url: str, api_key: str | None) -> tuple[int, float] | None:
    """(requests running or waiting, requests finished so far) by the engine's own figures."""
    try:
        with EngineClient(base_url, api_key, timeout=2.0) as client:
            snap = client.metrics(time.time(), DRAIN_NAMES)
    except (EngineHTTPError, ExpositionError):
        return None
    if snap.running is None and snap.waiting is None:
        return None
    return int((snap.running or 0) + (snap.waiting or 0)), sum(snap.finished_by_reason.values())


def in_flight(base_url: str, api_key: str | None) -> int | None:
    """Requests running or waiting now, by the engine's own gauges; None when it does not say."""
    found = _read(base_url, api_key)
    return None if found is None else found[0]


def drain(
    base_url: str, api_key: str | None, deadline_s: float, say: Callable[[str], None], clock: Callable[[], float] = time.monotonic
) -> Drained:
    """Wait until nothing runs or waits, at most `deadline_s`; `say` hears the count as it falls."""
    start = clock()
    found = _read(base_url, api_key)
    if found is None:
        return Drained(0, 0, 0.0, known=False)
    first, finished_at_start = found
    left, said = first, None
    while left and clock() - start < deadline_s:
        if left != said:
            say(f"draining: {left} request(s) running or waiting (up to {deadline_s:g} s; --no-drain cuts them)")
            said = left
        time.sleep(POLL_S)
        now = _read(base_url, api_key)
        if now is not None:
            count, finished = now
            left = min(count, max(0, first - int(finished - finished_at_start)))
    return Drained(first, left, clock() - start)
