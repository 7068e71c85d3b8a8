"""The front door's data path: the apps' connections in, vLLM's connections out.

The I/O stack was chosen by benchmarks/bench_gateway.py (beside nginx with proxy_buffering off, in
one run): asyncio Protocols with httptools (llhttp, uvicorn's parser) for the framing. An answer's
bytes are written to the app as they arrive, unchanged, from the upstream protocol's
data_received; the parser only reads a copy to know where the answer ends. No await per chunk and
no re-framing is what brought the CPU per streamed token near nginx's: the h11/httpcore streams of
the old capture proxy (folded into this door) cost 10.8x nginx's there.

Here: admission, the hold, forwarding and the exact count of requests in flight. The apps' side is
exchange.py, vLLM's side upstream.py. A request is never sent twice: nothing here retries a
request once any byte of it was written.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from rigctl.gateway import wire
from rigctl.gateway.apps_seen import AppsSeen
from rigctl.gateway.bounds import ConnectionBounds
from rigctl.gateway.connections import Connections
from rigctl.gateway.exchange import AppConnection, Exchange
from rigctl.gateway.flight import FLIGHT_DETAIL, flight
from rigctl.gateway.hold import Hold, HoldBounds, Ticket
from rigctl.gateway.judge import ClientOutcomes, Probation, Refusal
from rigctl.gateway.keeping import keep_ended
from rigctl.gateway.recording import Recording
from rigctl.gateway.reuse import PrefixReuse
from rigctl.gateway.upstream import CONNECT_S, CUT_WAIT_S, EnginePool, split_upstream

Resolver = Callable[[], "str | None"]  # the base URL of what serves now (None: nothing)


@dataclass
class Counts:
    """Since the door opened, every request by how it ended."""

    finished: int = 0
    cut: int = 0
    gone: int = 0
    refused: int = 0
    failed: int = 0
    by_client: dict[str, int] = field(default_factory=dict)


@dataclass
class HoldWindow:
    """The hold of one switch: the exchanges that were in flight when it began, and its figures."""

    in_flight: set[Exchange]
    ended: dict[str, int] = field(default_factory=lambda: {"finished": 0, "cut": 0, "gone": 0})
    refused: int = 0


class Gateway:
    """The door itself: admission, the hold, forwarding, the exact count in flight."""

    def __init__(
        self,
        resolve: Resolver,
        bounds: HoldBounds | None = None,
        api_key: str | None = None,
        silent_s: float = 30.0,
        recording: Recording | None = None,
        connection_bounds: ConnectionBounds | None = None,
        cap: int = 512,
    ) -> None:
        """`cap`: the apps' connections kept at once (run.py derives it from the descriptor limit)."""
        self.resolve = resolve
        self.silent_s = silent_s
        self.recording = recording
        self.reuse = PrefixReuse()
        self.hold = Hold(bounds or HoldBounds())
        self.api_key = api_key
        self.pool = EnginePool(recording=recording is not None)
        self.connections = Connections(connection_bounds or ConnectionBounds(), cap)
        self.stopping = False  # SIGTERM: nothing new is admitted; the answers in flight get the grace
        self.body_bytes = 0  # of requests' bodies read since it opened (when to give memory back: gateway/memory.py)
        self.outcomes = ClientOutcomes()  # each client's answers: how the apps judge a switch
        self.probation: Probation | None = None
        self.in_flight: set[Exchange] = set()  # forwarded to vLLM, answer not ended
        self.counts = Counts()
        self.window: HoldWindow | None = None
        self.idle = asyncio.Event()
        self.idle.set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._release_task: asyncio.Task[None] | None = None

    def protocol(self) -> AppConnection:
        return AppConnection(self)

    def key_refused(self, headers: list[tuple[bytes, bytes]]) -> bool:
        """A request without the door's API key (checked on its head: not a byte of its body is read)."""
        if self.api_key is None:
            return False
        given = next((v for k, v in headers if k.lower() == b"authorization"), b"")
        return given != b"Bearer " + self.api_key.encode()

    # -- the life of one request
    def begin(self, exchange: Exchange) -> None:
        task = asyncio.get_running_loop().create_task(self._run(exchange))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, exchange: Exchange) -> None:
        app = exchange.app
        try:
            refusal = self._refusal(exchange)
            if refusal:
                self._answer(exchange, *refusal)
                return
            while True:
                if self.hold.active:
                    size = exchange.buffered + sum(len(v) for _, v in exchange.headers)
                    full = self.hold.full(size)
                    if full and not exchange.requeued:
                        self._answer(exchange, 503, f"rigctl gateway: the rig is switching and {full}", wire.RETRY_AFTER_S)
                        return
                    exchange.ticket = self.hold.enter(size, exchange.who, again=exchange.requeued)
                    self._admit_during_probation(exchange.ticket)
                    try:
                        serving = await self.hold.wait(exchange.ticket)
                    except asyncio.CancelledError:
                        return  # the app hung up while it waited: never sent
                    if not serving:
                        self._answer(exchange, 503, "rigctl gateway: the rig is switching; try again shortly", wire.RETRY_AFTER_S)
                        return
                    exchange.probe = exchange.ticket.probe
                    if exchange.probe and self.probation is not None:
                        self.probation.pending[exchange.who] = exchange
                exchange.requeued = False
                await self._forward(exchange)
                await exchange.done
                if not exchange.requeued:
                    break
                exchange.done = asyncio.get_running_loop().create_future()  # refused by the new server: held again
        finally:
            if exchange.outcome is None:
                exchange.end("gone" if app.gone else "refused")
            app.answered(exchange)

    def _refusal(self, exchange: Exchange) -> tuple[int, str, int | None] | None:
        if exchange.unwelcome:
            return 401, "rigctl gateway: a missing or wrong API key (Authorization: Bearer ...)", None
        if exchange.method == b"CONNECT" or not wire.is_origin_form(exchange.target):
            return 400, "rigctl gateway forwards only to the rig's vLLM: the request-target must be a path (/v1/...)", None
        if self.stopping:
            return 503, "rigctl gateway is stopping (a restart of the door, or its unit stopped)", wire.RETRY_AFTER_S
        return None

    async def _forward(self, exchange: Exchange) -> None:
        url = self.resolve()
        if url is None:
            self._answer(exchange, 503, "rigctl gateway: nothing serves on this rig now", wire.RETRY_AFTER_S)
            return
        try:
            key, host = split_upstream(url)
        except ValueError as exc:
            self._answer(exchange, 502, f"rigctl gateway: the served address cannot be used: {exc}")
            return
        try:
            engine = await self.pool.get(key, host)
        except ConnectionRefusedError:
            # nothing listens there now: a vLLM still booting, or stopped; no request reached it
            message = f"rigctl gateway: vLLM at {host.decode()} refuses connections (booting, or stopped); try again shortly"
            self._answer(exchange, 503, message, wire.RETRY_AFTER_S)
            return
        except (OSError, TimeoutError) as exc:
            self._answer(exchange, 502, f"rigctl gateway: vLLM at {host.decode()} did not answer: {_why(exc)}")
            return
        if exchange.app.gone:
            self.pool.put(engine)
            return
        head = wire.request_head(exchange.method, exchange.target, exchange.version, exchange.headers, host, exchange.chunked)
        self.in_flight.add(exchange)
        self.idle.clear()
        exchange.engine = engine
        exchange.sent = asyncio.get_running_loop().time()
        # the head and the body read so far in one write: two small writes would wait on the
        # first's ACK wherever Nagle is on
        parts = [head, *(wire.chunk(d) if exchange.chunked else d for d in exchange.body)]
        if exchange.complete and exchange.chunked:
            parts.append(wire.LAST_CHUNK)
        if exchange.probe:
            exchange.resend = list(exchange.body)  # to send again, should the new server refuse it
        exchange.body.clear()
        exchange.buffered = 0
        engine.carry(exchange, b"".join(parts))
        if exchange.continue_wanted and not exchange.complete:
            exchange.app.write(wire.CONTINUE)
        exchange.app.resume_reading("body")

    def _answer(self, exchange: Exchange, status: int, message: str, retry_after: int | None = None) -> None:
        exchange.app.write(wire.error_answer(status, message, retry_after))
        exchange.end("failed" if status == 502 else "refused")

    def unreadable(self) -> None:
        """Bytes that were no HTTP request, answered 400 before any exchange began: refused too."""
        self.counts.refused += 1

    def upstream_failed(self, exchange: Exchange, why: str) -> None:
        self._answer(exchange, 502, f"rigctl gateway: {why}")

    # -- the apps judge a switch (gateway/judge.py)
    def judge(self, exchange: Exchange, status: int) -> bool:
        """A probe's status line, read before the app gets a byte: True when it may go on; False
        when its client never got this status before (the new server refuses the apps)."""
        probation = self.probation
        who = exchange.who
        if probation is None:
            return True
        probation.probing.discard(who)
        probation.pending.pop(who, None)
        if self.outcomes.refused(who, status):
            behind = sum(1 for t in self.hold.line if t.who == who)
            probation.refusals[who] = Refusal(status, "", withheld=1 + behind)
            probation.done.set()
            return False
        probation.accepted.add(who)
        for ticket in [t for t in self.hold.line if t.who == who]:
            self.hold.release(ticket)
        probation.check(self.hold.clock())
        return True

    def requeue(self, exchange: Exchange, message: str = "") -> None:
        """A probe the new server refused: out of flight (not ended), its refusal's message kept."""
        self.in_flight.discard(exchange)
        if not self.in_flight:
            self.idle.set()
        probation = self.probation
        refusal = probation.refusals.get(exchange.who) if probation is not None else None
        if refusal is not None and message and not refusal.message:
            refusal.message = message[:200]

    def _admit_during_probation(self, ticket: Ticket) -> None:
        """While the apps judge a switch, a held request goes on at once unless its client is
        judged: the first of an awaited client goes alone, as a probe; the rest wait for its
        status line; a refused client's wait for the restored profile."""
        probation = self.probation
        if probation is None or probation.done.is_set():
            return
        who = ticket.who
        if who in probation.refusals or (who in probation.probing and who not in probation.accepted):
            return
        if who and who not in probation.awaited and self.outcomes.known(who):
            probation.awaited.add(who)  # seen answered before, quiet lately: judged too
        if who in probation.awaited and who not in probation.accepted:
            probation.probing.add(who)
            self.hold.release(ticket, probe=True)
        else:
            self.hold.release(ticket)

    def begin_probation(self, window_s: float) -> Probation | None:
        """The apps judge the switch whose hold ends: the clients seen answered 2xx lately, or with
        a request held, are awaited for `window_s`; None when there is nothing to judge by."""
        if self.window is None or not self.hold.active or window_s <= 0:
            return None
        awaited = self.outcomes.recent() | {t.who for t in self.hold.line if self.outcomes.known(t.who)}
        if not awaited:
            return None
        self.probation = Probation(awaited, self.hold.clock() + window_s)
        for ticket in list(self.hold.line):
            self._admit_during_probation(ticket)
        return self.probation

    def end_probation(self) -> None:
        """The judgement is over: probes still without a status line go on as ordinary answers."""
        probation, self.probation = self.probation, None
        if probation is None:
            return
        for exchange in list(probation.pending.values()):
            if exchange.engine is not None:
                exchange.engine.unprobe()
            exchange.probe = False

    def ended(self, exchange: Exchange) -> None:
        outcome = exchange.outcome
        assert outcome is not None
        self.in_flight.discard(exchange)
        if not self.in_flight:
            self.idle.set()
        if exchange.status is not None and exchange.who:
            self.outcomes.note(exchange.who, exchange.status)
        if exchange.kept is not None and exchange.engine is not None:
            keep_ended(exchange, outcome, self.reuse, self.recording)
        counts = self.counts
        setattr(counts, outcome, getattr(counts, outcome) + 1)
        counts.by_client[exchange.client] = counts.by_client.get(exchange.client, 0) + 1
        window = self.window
        if window is not None:
            if exchange in window.in_flight and outcome in window.ended:
                window.ended[outcome] += 1
            elif outcome == "refused":
                window.refused += 1

    # -- what a switch asks of the door (the control channel)
    def begin_hold(self) -> int:
        """Hold new requests; the count forwarded and unanswered (the drain)."""
        if self.window is None:
            self.window = HoldWindow(set(self.in_flight))
            self.hold.begin()
        return len(self.in_flight)

    async def wait_idle(self, seconds: float) -> int:
        """Until nothing forwarded is unanswered, at most `seconds`; the count then."""
        if self.in_flight:
            try:
                await asyncio.wait_for(self.idle.wait(), max(0.0, seconds))
            except TimeoutError:
                pass
        return len(self.in_flight)

    def cut(self, why: str) -> int:
        """End every answer in flight now (the drain's deadline), each app told `why` (a stream by
        an SSE error event, an answer not begun by a 503: upstream.EngineConnection.cut); vLLM,
        whose connection closes, stops generating them. The count cut."""
        cut = list(self.in_flight)
        for exchange in cut:
            if exchange.engine is not None:
                exchange.engine.cut(f"rigctl gateway: {why}")
            else:
                exchange.app.abort()
                exchange.end("cut")
        return len(cut)

    def end_hold(self, serving: bool = True) -> AppsSeen:
        """Release the held requests, in arrival order, to what serves now (or 503 each when
        nothing does, or when `serving` is False: a switch that died may have left a server
        booting); what the apps saw of the hold."""
        window = self.window
        if window is None:
            return AppsSeen()
        self.window = None
        serving = serving and self.resolve() is not None
        window_s = self.hold.clock() - self.hold.since
        released = self.hold.end(serving)
        waited = [t.released - t.arrived for t in released if t.released]
        return self._seen(window, window_s, waited, 0 if serving else len(released))

    def hold_so_far(self) -> AppsSeen:
        """What the apps have seen of the hold under way (a superseded switch's record)."""
        window = self.window
        if window is None:
            return AppsSeen()
        now = self.hold.clock()
        return self._seen(window, now - self.hold.since, [now - t.arrived for t in self.hold.line], 0)

    def _seen(self, window: HoldWindow, window_s: float, waited: list[float], refused_now: int) -> AppsSeen:
        return AppsSeen(
            held=self.hold.held,
            longest_s=round(max([self.hold.longest, *waited]), 3),
            window_s=round(window_s, 3),
            refused=window.refused + refused_now,
            in_flight=len(window.in_flight),
            finished=window.ended["finished"],
            cut=window.ended["cut"],
            gone=window.ended["gone"],
        )

    def status(self) -> dict[str, object]:
        return {
            "upstream": self.resolve(),
            "in_flight": len(self.in_flight),
            "in_flight_by_client": dict(Counter(e.client for e in self.in_flight)),
            "in_flight_detail": [flight(e, time.monotonic()) for e in list(self.in_flight)[:FLIGHT_DETAIL]],
            "holding": self.hold.active,
            "held": len(self.hold.line),
            "held_bytes": self.hold.kept_bytes,
            "apps": len(self.connections),
            "connections": {
                "open": len(self.connections),
                "cap": self.connections.cap,
                "idle": len(self.connections.idle_ones()),
                "closed": self.connections.closed.to_json(),
            },
            "counts": {k: v for k, v in vars(self.counts).items() if k != "by_client"},
            "clients": dict(self.counts.by_client),
            "reuse": self.reuse.to_json(),
            "recording": None
            if self.recording is None
            else {"kept": self.recording.kept, "file": str(self.recording.path or ""), "stopped": self.recording.stopped},
        }

    def begin_stop(self) -> None:
        """SIGTERM: admit nothing more. The connections with no request in them close now; a request
        arriving on another is answered 503 with Retry-After; each connection closes once its
        answer ends."""
        self.stopping = True
        for app in self.connections.idle_ones():
            self.connections.forget(app)
            app.close()

    async def close(self, grace_s: float, cut_now: asyncio.Event | None = None) -> int:
        """Stop: the answers in flight get up to grace_s to end (less once `cut_now` is set); what
        is left is cut, each app told why (its count)."""
        if self.window is not None:
            self.end_hold()
        if cut_now is None:
            await self.wait_idle(grace_s)
        elif self.in_flight:
            idle = asyncio.ensure_future(self.wait_idle(grace_s))
            told = asyncio.ensure_future(cut_now.wait())
            await asyncio.wait((idle, told), return_when=asyncio.FIRST_COMPLETED)
            idle.cancel()
            told.cancel()
        why = "the front door was stopped" + (
            "" if cut_now is not None and cut_now.is_set() else f" and its {grace_s:g} s grace ran out"
        )
        left = self.cut(why)
        if left:
            await self.wait_idle(CUT_WAIT_S + 0.1)  # a stream cut mid-event ends it first, then its reason goes out
        for app in list(self.connections.open):
            app.close()
        self.pool.close()
        if self.recording is not None:
            self.recording.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        return left


def _why(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return f"no connection within {CONNECT_S:g} s"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__
